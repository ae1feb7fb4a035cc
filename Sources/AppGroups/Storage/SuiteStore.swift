import Dispatch
import Foundation
internal import Synchronization

/// One key's change as a store saw it: the value before and after.
struct StoredChange: Sendable, Equatable {
  var key: String
  var old: PropertyListValue?
  var new: PropertyListValue?
}

/// The per-process store of one property-list file: the in-memory cache, the
/// changes not yet on disk, the commit that merges them key by key into the
/// file under the suite's lock, and the last-update token.
///
/// Storage knows nothing of identities or suites: it is given a path.
/// One store per file per process (``shared(path:options:)``): two would
/// race each other's commits and miss each other's changes.
final class SuiteStore: Sendable {
  struct Options: Sendable, Hashable {
    /// How long a commit waits for another process's lock while its holder makes no progress
    /// (stopped, or asleep without using the CPU) before it keeps its changes pending and
    /// retries later. A holder that makes progress is waited for up to ``progressCeiling``.
    var lockTimeout: Duration = .seconds(1)
    /// The largest estimated encoded size of the domain (4 MiB, as iOS).
    var sizeLimit: Int = 4 * 1024 * 1024
    /// A read-only store (managed preferences) never writes or quarantines.
    var readOnly = false
    /// The folder within which the store may create its own folder again when it was
    /// removed under it (no symbolic link followed below it); `nil`: it may not.
    var makeFolder: String? = nil
    /// The plist size from which a small commit appends its changes to the suite's journal
    /// (``SuiteJournal``) instead of rewriting the whole domain: below it, a rewrite costs
    /// about what the append does.
    var journalThreshold = 16 * 1024
    /// What ``protectionGate`` is asked about (the device the file belongs to); `nil`: the
    /// file is always readable. See `SuiteStore+Protection.swift`.
    var protectionScope: String? = nil
  }

  let path: String
  let directory: String
  let fileName: String
  let options: Options
  private let lockFile: SuiteLockFile?
  private let queue: DispatchQueue

  /// One change not yet on disk. The pending changes are a log in the order they were made
  /// (later ones win when it is applied), not a dictionary: a `set` appends, without hashing
  /// the key a second time or growing a table.
  private struct Pending: Sendable {
    var key: String
    var value: PropertyListValue?
    var sequence: UInt64
  }

  private struct State: Sendable {
    var values: [String: PropertyListValue] = [:]
    var pending: [Pending] = []
    /// A whole-domain replacement (setPersistentDomain / removePersistentDomain)
    /// waiting to be committed, applied before `pending`.
    var replacement: (values: [String: PropertyListValue], sequence: UInt64)?
    var nextSequence: UInt64 = 1
    var flushScheduled = false
    /// A reader found the journal damaged: the next commit re-reads it under the lock, and
    /// folds what it can read into a new plist, even with no change of its own.
    var repairPending = false
    /// How many changes the last commit carried (to tell a burst).
    var lastBatchSize = 0
    var sizeEstimate = 0
    /// In the order they were added; an array, not a dictionary: there are a few, and a
    /// `set` hands them on without building anything.
    var changeHandlers: [(id: UInt64, handler: ChangeHandler)] = []
    var nextHandlerID: UInt64 = 1
    var changeHandler: ChangeHandlers? {
      changeHandlers.isEmpty ? nil : ChangeHandlers(handlers: changeHandlers)
    }
  }

  typealias ChangeHandler = @Sendable ([StoredChange], ChangeOrigin) -> Void

  /// The change handlers of a store at one moment, called in turn.
  struct ChangeHandlers: Sendable {
    fileprivate let handlers: [(id: UInt64, handler: ChangeHandler)]

    func callAsFunction(_ changes: [StoredChange], _ origin: ChangeOrigin) {
      for entry in handlers { entry.handler(changes, origin) }
    }
  }

  /// What this process knows of the file. Held for the length of a read or a write, never
  /// while waiting for the file lock, so that refreshes are not held up by a waiting commit.
  private struct CommitState: Sendable {
    var persisted: [String: PropertyListValue] = [:]
    var identity: FileIdentity?
    /// The identity of an unreadable file not yet moved aside (the lock was busy).
    var unreadableIdentity: FileIdentity?
    /// The identity of the last file read only in part, whose copy is kept aside.
    var salvagedIdentity: FileIdentity?
    /// Why the last re-read failed, said once until a re-read succeeds or the reason changes.
    var refreshFailure: String?
    /// How far the journal of the plist version read has been applied; `nil`: no journal.
    var journal: SuiteJournal.Position?
    /// What is wrong with what lies at the journal's path (the records that could be read are
    /// applied): the next commit rewrites the plist with them and keeps the journal aside.
    var journalDamage: [SuiteJournal.Damage] = []
    /// The journal damage a read-only store last said it ignores, said once.
    var reportedJournalDamage: [SuiteJournal.Damage] = []
    /// About how many bytes of the plist and its journal hold values that are no longer live
    /// (replaced or removed by the journal's records): when a commit would leave more of them
    /// than live ones, it rewrites the plist, so that space is given back.
    var deadBytes = 0
  }

  private struct RetryState: Sendable {
    var lockWaitReported = false
    var retryDelay: Duration = .milliseconds(10)
    /// The last failed commit's reason, said once until a commit lands or the reason changes.
    var reportedFailure: String?
  }

  /// Set by the change monitor while an inotify watch (not polling) covers
  /// this store's folder.
  let watchedByKernel = Atomic<Bool>(false)

  /// The token this process last saw (read or moved): an atomic of its own, so that the
  /// resume check reads it without a lock.
  private let seenToken = Atomic<UInt64>(0)

  /// How long the last commit waited for the suite's lock, in nanoseconds (for the benchmark).
  let lastLockWait = Atomic<UInt64>(0)

  /// Why the file cannot be read now (its protected data is unavailable), or `nil`; see
  /// `SuiteStore+Protection.swift`. Set at open, cleared once when the data comes back.
  let unavailability = Mutex<String?>(nil)
  let isUnavailable = Atomic<Bool>(false)

  private let state: Mutex<State>
  private let commit: Mutex<CommitState>
  private let retry = Mutex(RetryState())
  /// Serialises this process's commits, with a bounded wait (see ``CommitGate``). Order:
  /// gate, then the file lock, then `commit`, then `state`.
  private let gate = CommitGate()

  // MARK: Opening

  private static let registry = WeakRegistry<SuiteStore>()

  /// The store for `path` in this process, opening it on first use.
  static func shared(path: String, options: Options = Options()) throws(AppGroupsError) -> SuiteStore {
    try registry.object(forKey: path) { () throws(AppGroupsError) in
      try SuiteStore(path: path, options: options)
    }
  }

  /// The store for `path` if this process has it open.
  static func existing(path: String) -> SuiteStore? { registry.existing(forKey: path) }

  /// Every open store, for flushing at exit.
  static func openStores() -> [SuiteStore] { registry.all }

  private init(path: String, options: Options) throws(AppGroupsError) {
    self.path = path
    self.directory = FileSystem.folder(of: path)
    self.fileName = FileSystem.lastComponent(of: path)
    self.options = options
    self.queue = DispatchQueue(label: "appgroups.commit.\(fileName)")
    if options.readOnly {
      lockFile = nil
    } else {
      do {
        lockFile = try SuiteLockFile(path: SuiteLockFile.path(of: path), makeFolder: options.makeFolder)
      } catch where error.code == .tooManySymbolicLinkLevels {
        throw AppGroupsError(
          .outsideRoot,
          "\(path).lock is a symbolic link; a suite's lock file must be a regular file, so the suite is refused and nothing was created through the link",
          cause: error)
      } catch {
        throw AppGroupsError(io: error, "opening the lock file of \(path)")
      }
    }
    state = Mutex(State())
    commit = Mutex(CommitState())
    let unavailable = markUnavailableIfProtected()
    let loaded = try commit.withLock { cs throws(AppGroupsError) -> [String: PropertyListValue] in
      if unavailable { return [:] }
      let loaded = try load(&cs, mode: .open) ?? [:]
      cs.persisted = loaded
      return loaded
    }
    seenToken.store(lockFile?.token ?? 0, ordering: .releasing)
    state.withLock {
      $0.values = loaded
      $0.sizeEstimate = Self.estimate(loaded)
    }
    // A damaged journal is folded into the plist and kept aside now, as an unreadable plist
    // is moved aside at open; when the lock is busy, by a retry.
    if commit.withLock({ needsJournalRepair(&$0) }) {
      state.withLock { $0.repairPending = true }
      flush()
    }
  }

  /// Adds a closure told of every change of this store's values, with its
  /// origin. Returns an id for ``removeChangeHandler(_:)``.
  @discardableResult
  func addChangeHandler(_ handler: @escaping ChangeHandler) -> UInt64 {
    state.withLock { st in
      let id = st.nextHandlerID
      st.nextHandlerID &+= 1
      st.changeHandlers.append((id, handler))
      return id
    }
  }

  func removeChangeHandler(_ id: UInt64) {
    state.withLock { $0.changeHandlers.removeAll { $0.id == id } }
  }

  // MARK: Reading

  /// The current value (committed or pending) of `key`.
  func value(forKey key: String) -> PropertyListValue? {
    // An empty layer (managed and global mostly are) answers without hashing the key.
    state.withLock { $0.values.isEmpty ? nil : $0.values[key] }
  }

  /// Every key and value, as this process sees them now.
  func values() -> [String: PropertyListValue] {
    state.withLock { $0.values }
  }

  /// Whether some change has not reached the disk yet.
  var hasPendingChanges: Bool {
    state.withLock { !$0.pending.isEmpty || $0.replacement != nil }
  }

  // MARK: Writing

  /// Sets (or, with `nil`, removes) one value: in memory at once, on disk
  /// soon after. Writing the value already there does nothing.
  /// - Returns: the change, or `nil` when nothing changed.
  /// - Throws: `.sizeLimitExceeded` when the domain would grow past its limit,
  ///   `.unsupportedValue` when the value nests deeper than
  ///   ``PropertyListValue/maximumDepth`` or holds a date that is not a
  ///   number; nothing changes then.
  @discardableResult
  func set(_ value: PropertyListValue?, forKey key: String) throws(AppGroupsError) -> StoredChange? {
    precondition(!options.readOnly, "a read-only store cannot be written")
    if let reason = value?.unstorableReason { throw unstorable(key, reason) }
    // Before the first change is pending (a process that only reads never needs it).
    ProcessLifecycle.installOnce()
    // One pass under the lock, which builds no error (a refusal's size is returned and said
    // outside it) and also reads whether a burst is going on.
    let (change, schedule, inBurst, handler, refusedSize) = state.withLock {
      st -> (StoredChange?, Bool, Bool, ChangeHandlers?, Int?) in
      // One hash of the key: the value goes in at once, and comes out again if refused.
      let old: PropertyListValue?
      if let value {
        old = st.values.updateValue(value, forKey: key)
      } else {
        old = st.values.removeValue(forKey: key)
      }
      if old == value { return (nil, false, false, nil, nil) }
      let oldSize = PropertyListValue.estimatedEntrySize(key: key, value: old)
      let newSize = PropertyListValue.estimatedEntrySize(key: key, value: value)
      let size = st.sizeEstimate - oldSize + newSize
      if newSize > oldSize && size > options.sizeLimit {
        st.values[key] = old
        return (nil, false, false, nil, size)
      }
      st.sizeEstimate = size
      st.pending.append(Pending(key: key, value: value, sequence: st.nextSequence))
      st.nextSequence &+= 1
      // A key set again and again before a commit: keep the log within reach of the domain.
      if st.pending.count > 2 &* st.values.count &+ 64 { Self.compact(&st.pending) }
      let schedule = !st.flushScheduled
      st.flushScheduled = true
      return (
        StoredChange(key: key, old: old, new: value), schedule,
        st.lastBatchSize >= Self.burstBatchSize, st.changeHandler, nil
      )
    }
    if let refusedSize {
      throw AppGroupsError(
        .sizeLimitExceeded,
        "setting \(key.debugDescription) would make \(path) about \(refusedSize) bytes, over its limit of \(options.sizeLimit) bytes; the values already there are kept"
      )
    }
    if schedule { scheduleFlush(after: inBurst ? Self.burstPause : nil) }
    if let change, let handler { handler([change], .thisProcess) }
    return change
  }

  /// Replaces every value of the domain (`nil` or empty removes them all).
  /// The replacement is applied to the file as one unit, so values other
  /// processes wrote before it are replaced too.
  func replaceAll(with values: [String: PropertyListValue]) throws(AppGroupsError) {
    precondition(!options.readOnly, "a read-only store cannot be written")
    try requireAvailable("replacing the whole domain")
    for (key, value) in values {
      if let reason = value.unstorableReason { throw unstorable(key, reason) }
    }
    ProcessLifecycle.installOnce()
    let size = Self.estimate(values)
    if size > options.sizeLimit {
      throw AppGroupsError(
        .sizeLimitExceeded,
        "the new domain for \(path) is about \(size) bytes, over its limit of \(options.sizeLimit) bytes; the values already there are kept")
    }
    let (changes, schedule, handler) = state.withLock { st in
      let changes = Self.diff(st.values, values)
      st.values = values
      st.sizeEstimate = size
      st.pending.removeAll()
      st.replacement = (values, st.nextSequence)
      st.nextSequence &+= 1
      let schedule = !st.flushScheduled
      st.flushScheduled = true
      return (changes, schedule, st.changeHandler)
    }
    if schedule { scheduleFlush() }
    if !changes.isEmpty, let handler { handler(changes, .thisProcess) }
  }

  /// Keeps the last change of each key, in order.
  private static func compact(_ log: inout [Pending]) {
    var seen = Set<String>(minimumCapacity: log.count)
    var kept: [Pending] = []
    for change in log.reversed() where seen.insert(change.key).inserted { kept.append(change) }
    log = kept.reversed()
  }

  private func unstorable(_ key: String, _ reason: String) -> AppGroupsError {
    AppGroupsError(
      .unsupportedValue,
      "the value for \(key.debugDescription) cannot be stored in \(path): \(reason); nothing was changed")
  }

  /// While a burst of writes is going on (the last commit carried at least this many
  /// changes), the next commit waits ``burstPause`` to gather more: a burst costs a few file
  /// writes, not one per commit's worth of `set` calls. A lone write is committed at once.
  private static let burstBatchSize = 64
  /// How long the next commit of a burst waits to gather more changes.
  private static let burstPause: Duration = .milliseconds(2)

  /// After a failed commit (lock busy past the bound, disk error): the
  /// changes stay pending and a retry is scheduled, backing off to 1 s.
  /// Whichever commit failed, the background one or `synchronize()`'s.
  private func retryLater() {
    let schedule = state.withLock { st in
      if st.flushScheduled || (st.pending.isEmpty && st.replacement == nil && !st.repairPending) { return false }
      st.flushScheduled = true
      return true
    }
    guard schedule else { return }
    let delay = retry.withLock { retry in
      let current = retry.retryDelay
      retry.retryDelay = min(current * 2, .seconds(1))
      return current
    }
    scheduleFlush(after: delay)
  }

  private func scheduleFlush(after delay: Duration? = nil) {
    let work: @Sendable () -> Void = { [self] in _ = flush() }
    if let delay {
      let (s, atto) = delay.components
      let nanos = Int(s) * 1_000_000_000 + Int(atto / 1_000_000_000)
      queue.asyncAfter(deadline: .now() + .nanoseconds(nanos), execute: work)
    } else {
      queue.async(execute: work)
    }
  }

  /// Commits every pending change now, on the calling thread.
  /// - Returns: `true` when nothing is left pending.
  @discardableResult
  func flush() -> Bool {
    do {
      try commitPending(timeout: options.lockTimeout)
      return true
    } catch where error.code == .protectedDataUnavailable {
      return false  // kept in memory; they land when the data comes back
    } catch {
      retryLater()
      return false
    }
  }

  /// Forgets every change not yet on disk: the values go back to what this process last read
  /// or wrote. For a tool that reported a failed write and must not let it land later (at
  /// exit). Observers are told of the values that go back.
  ///
  /// A commit in flight (a retry on the commit queue) ends first, within the lock timeout: a
  /// process that exits after this leaves no temporary file behind, and learns whether that
  /// commit landed the changes after all.
  /// - Returns: `true` when nothing was pending any more: every change is on disk.
  @discardableResult
  func discardPendingChanges() -> Bool {
    let entry = gate.enter(before: FileSystem.deadline(after: options.lockTimeout))
    let persisted = commit.withLock { $0.persisted }
    let (changes, handler, landed) = state.withLock { st in
      let landed = st.pending.isEmpty && st.replacement == nil
      st.pending.removeAll()
      st.replacement = nil
      let changes = Self.diff(st.values, persisted)
      st.values = persisted
      st.sizeEstimate = Self.estimate(persisted)
      return (changes, st.changeHandler, landed)
    }
    if case .entered = entry { gate.leave() }
    // Outside the gate: an observer may write or synchronize in turn.
    if !changes.isEmpty, let handler { handler(changes, .thisProcess) }
    return landed
  }

  /// Says why a commit failed, once per reason until a commit lands: the system call, the path
  /// and the errno text are in `error`'s message. A lock held past the bound is said by the
  /// commit itself.
  private func reportFailure(_ error: AppGroupsError) {
    guard error.code != .lockTimeout else { return }
    let count = state.withLock { $0.pending.count + ($0.replacement == nil ? 0 : 1) }
    let report = retry.withLock { retry in
      defer { retry.reportedFailure = error.message }
      return retry.reportedFailure != error.message
    }
    if report {
      Diagnostics.report(
        "\(error.message); \(count) change(s) stay pending and will be retried")
    }
  }

  /// Commits every pending change, waiting at most `timeout` for the lock.
  /// - Throws: `.lockTimeout` or `.io`; the changes then stay pending.
  func commitPending(timeout: Duration) throws(AppGroupsError) {
    try commitLocked(timeout: timeout, extra: nil)
  }

  /// How many times a commit starts over when the lock file or the plist was replaced by
  /// something that ignored the lock, before it reports a failure.
  private static let maximumAttempts = 8

  /// Reads the key's current value from disk under the suite's lock, lets
  /// `body` compute its new value, and commits it before the lock is
  /// released: a read-modify-write that no other process can interleave.
  ///
  /// `body` must be short and must not call back into the store: it runs while this suite's
  /// lock is held, so every other writer of the suite waits for it. Reads inside it work;
  /// a nested update throws `.lockTimeout` at once, and a nested flush returns `false`.
  /// - Returns: the value `body` returned.
  /// - Throws: `.lockTimeout`, `.io`, `.sizeLimitExceeded`, or what `body` throws; then the
  ///   key is not changed (other pending changes may still have landed).
  func update(
    key: String, timeout: Duration, _ body: (PropertyListValue?) throws -> PropertyListValue?
  ) throws -> PropertyListValue? {
    var result: PropertyListValue?
    var bodyError: (any Error)?
    try withoutActuallyEscaping(body) { body throws(AppGroupsError) in
      try commitLocked(timeout: timeout) { current in
        do {
          result = try body(current[key])
        } catch {
          bodyError = error
          return [:]
        }
        if let reason = result?.unstorableReason {
          bodyError = self.unstorable(key, reason)
          return [:]
        }
        let old = current[key]
        let oldSize = PropertyListValue.estimatedEntrySize(key: key, value: old)
        let newSize = PropertyListValue.estimatedEntrySize(key: key, value: result)
        if newSize > oldSize {
          let size = Self.estimate(current) - oldSize + newSize
          if size > self.options.sizeLimit {
            bodyError = AppGroupsError(
              .sizeLimitExceeded,
              "updating \(key.debugDescription) would make \(self.path) about \(size) bytes, over its limit of \(self.options.sizeLimit) bytes; the value was not changed")
            return [:]
          }
        }
        var change: [String: PropertyListValue?] = [:]
        change.updateValue(result, forKey: key)
        return change
      }
    }
    if let bodyError { throw bodyError }
    return result
  }

  /// Reads every value from disk under the suite's lock, lets `body` compute a change set
  /// for any number of keys (`nil` removes a key), and commits it before the lock is
  /// released, as one file write: the changes land together or not at all.
  ///
  /// `body` sees this process's pending changes on top of what is on disk. It has the same
  /// limits as ``update(key:timeout:_:)``'s: short, no nested commits.
  /// - Returns: the change set `body` returned.
  /// - Throws: `.lockTimeout`, `.io`, `.unsupportedValue` or `.sizeLimitExceeded` for a value
  ///   of the change set, or what `body` throws; then none of the changes is made (other
  ///   pending changes may still have landed).
  @discardableResult
  func transaction(
    timeout: Duration,
    _ body: ([String: PropertyListValue]) throws -> [String: PropertyListValue?]
  ) throws -> [String: PropertyListValue?] {
    var result: [String: PropertyListValue?] = [:]
    var bodyError: (any Error)?
    try withoutActuallyEscaping(body) { body throws(AppGroupsError) in
      try commitLocked(timeout: timeout) { current in
        do {
          result = try body(current)
        } catch {
          bodyError = error
          return [:]
        }
        var size = Self.estimate(current)
        for (key, value) in result {
          if let reason = value?.unstorableReason {
            bodyError = self.unstorable(key, reason)
            return [:]
          }
          size -= PropertyListValue.estimatedEntrySize(key: key, value: current[key])
          size += PropertyListValue.estimatedEntrySize(key: key, value: value)
        }
        if size > self.options.sizeLimit && size > Self.estimate(current) {
          bodyError = AppGroupsError(
            .sizeLimitExceeded,
            "a transaction of \(result.count) change(s) would make \(self.path) about \(size) bytes, over its limit of \(self.options.sizeLimit) bytes; nothing was changed")
          return [:]
        }
        return result
      }
    }
    if let bodyError { throw bodyError }
    return result
  }

  /// How long a commit waits at most for a lock whose holder makes progress all along (see
  /// ``LockedFile``): a commit of milliseconds slowed down a thousandfold by a loaded machine
  /// stays well within it, and a holder stuck in a loop under the lock does not hold every
  /// other writer for ever.
  static let progressCeiling: Duration = .seconds(30)

  /// The commit: under the lock, reload the file if it moved, apply the
  /// pending changes (and `extra`, computed from the merged values) key by
  /// key, write durably, advance the token.
  ///
  /// The whole wait, for another thread's commit and then for another process's lock, stays
  /// within `timeout` while no holder makes progress, and within ``progressCeiling`` (or
  /// `timeout`, when longer) while one does: another thread's commit of this process is waited
  /// for as long as its own wait lasts.
  private func commitLocked(
    timeout: Duration,
    extra: (([String: PropertyListValue]) -> [String: PropertyListValue?])?
  ) throws(AppGroupsError) {
    guard let lockFile else { return }
    try requireAvailable(extra == nil ? nil : "an atomic update")
    let deadline = FileSystem.deadline(after: timeout)
    let ceiling = FileSystem.deadline(after: max(timeout, Self.progressCeiling))
    switch gate.enter(before: ceiling) {
    case .entered:
      break
    case .reentered:
      throw AppGroupsError(
        .lockTimeout,
        "\(path): the store was called back from inside an atomic update's closure; the changes stay pending and land after it returns")
    case .timedOut:
      throw AppGroupsError(
        .lockTimeout,
        "\(path): another commit of this process waited for the lock for more than \(max(timeout, Self.progressCeiling)); the changes stay pending")
    }
    var outside: [StoredChange] = []
    var local: [StoredChange] = []
    var handler: ChangeHandlers?
    do {
      defer { gate.leave() }
      var attempt = 1
      while true {
        let outcome: CommitOutcome
        do {
          outcome = try commitBody(
            lockFile: lockFile, deadline: deadline, ceiling: ceiling, timeout: timeout, extra: extra, outside: &outside,
            local: &local, handler: &handler)
        } catch {
          reportFailure(error)
          throw error
        }
        guard case .raced(let reason) = outcome else { break }
        if attempt == Self.maximumAttempts {
          let failure = AppGroupsError(
            .io,
            "writing \(path): \(reason), \(attempt) times in a row; the changes stay pending")
          reportFailure(failure)
          throw failure
        }
        attempt += 1
      }
      retry.withLock { $0.reportedFailure = nil }
    }
    // Outside the gate: an observer may write, update or synchronize in turn.
    if let handler {
      if !outside.isEmpty { handler(outside, .otherProcess) }
      if !local.isEmpty { handler(local, .thisProcess) }
    }
  }

  /// How one pass of a commit ended.
  private enum CommitOutcome {
    /// The changes are on disk (or there was nothing to write).
    case committed
    /// Something that ignores the lock replaced the lock file or the plist during the pass:
    /// nothing was written; the pass starts over.
    case raced(String)
  }

  private func commitBody(
    lockFile: SuiteLockFile, deadline: UInt64, ceiling: UInt64, timeout: Duration,
    extra: (([String: PropertyListValue]) -> [String: PropertyListValue?])?,
    outside: inout [StoredChange], local: inout [StoredChange],
    handler: inout ChangeHandlers?
  ) throws(AppGroupsError) -> CommitOutcome {
    // Snapshot the pending changes; later ones get higher sequences.
    // `through`: the last sequence handed out; every change in the snapshot has one up to it,
    // every later change a higher one.
    let (pending, replacement, through, repair) = state.withLock { st in
      st.flushScheduled = false
      return (st.pending, st.replacement, st.nextSequence &- 1, st.repairPending)
    }
    guard !pending.isEmpty || replacement != nil || extra != nil || repair else { return .committed }
    // On failure nothing is dropped: `pending` is only cleared by finishCommit.

    let waitStart = FileSystem.monotonicNanoseconds()
    do throws(LockedFile.Failure) {
      try lockFile.lock(until: deadline, whileHolderProgresses: ceiling)
      lastLockWait.store(FileSystem.monotonicNanoseconds() &- waitStart, ordering: .relaxed)
    } catch .failed(let error) {
      throw AppGroupsError(io: error, "locking \(path)")
    } catch {
      let count = pending.count + (replacement == nil ? 0 : 1)
      let report = retry.withLock { retry in
        defer { if count > 0 { retry.lockWaitReported = true } }
        return !retry.lockWaitReported && count > 0
      }
      if report {
        Diagnostics.report(
          "\(path): another process has held its lock for more than \(timeout) without making progress (stopped, or idle); \(count) change(s) stay pending and will be retried")
      }
      throw AppGroupsError(
        .lockTimeout,
        "\(path): another process held the lock \(lockFile.path) for more than \(timeout) without making progress (stopped, or idle); \(count) change(s) stay pending")
    }
    defer { lockFile.unlock() }
    gate.holdsFileLock()
    let reportAcquired = retry.withLock { retry in
      defer {
        retry.lockWaitReported = false
        retry.retryDelay = .milliseconds(10)
      }
      return retry.lockWaitReported
    }
    if reportAcquired {
      Diagnostics.report("\(path): lock acquired; the pending changes are being written")
    }
    TestHooks.pauseWhileHoldingLock(path: path)

    // 1. The file as it is now: another process may have committed.
    typealias Values = [String: PropertyListValue]
    let reread: Result<Bool, AppGroupsError> = commit.withLock { cs in
      let current: FileIdentity?
      do throws(SystemCallError) {
        current = try FileSystem.identity(ofPath: path)
      } catch {
        return .failure(AppGroupsError(io: error, "reading \(path)"))
      }
      do throws(AppGroupsError) {
        // The same version of the plist: only what others appended to its journal is read (all
        // of it again when a read outside the lock found it damaged: under the lock, damage is
        // told from a commit in flight).
        if current == cs.identity && cs.unreadableIdentity == nil && cs.journalDamage.isEmpty && !repair,
          let appended = try catchUpJournal(&cs)
        {
          return .success(!appended.isEmpty)
        }
        let before = cs.persisted
        cs.persisted = try load(&cs, mode: .commit) ?? [:]
        return .success(before != cs.persisted)
      } catch {
        return .failure(error)
      }
    }
    guard case .success(let didReload) = reread else {
      if case .failure(let error) = reread { throw error }
      return .committed
    }

    // 2. The atomic update's changes, computed from the merged values without holding
    //    `commit`, so that the closure may read the store.
    var extraChanges: [String: PropertyListValue?] = [:]
    if let extra {
      var merged = commit.withLock { replacement?.values ?? $0.persisted }
      for change in pending { merged[change.key] = change.value }
      extraChanges = extra(merged)
    }

    // 3. This process's changes, key by key, on top of the values on disk: in place (a small
    //    commit to a large domain copies nothing), each old value kept to put back if the
    //    write fails. Then write durably and move the token (skipped when nothing differs).
    //    Just before the commit point, make sure the lock is still the lock of the file at the
    //    path and the plist is still the version merged: else something that ignores the lock
    //    raced this commit, and the pass starts over rather than replace what it wrote.
    var race: String?
    let written: Result<Values, AppGroupsError> = commit.withLock { cs in
      var next: Values
      var replaced = false
      if let replacement {
        replaced = replacement.values != cs.persisted
        next = replacement.values
      } else {
        next = cs.persisted
        cs.persisted = [:]  // `next` is then the one reference: changed in place
      }
      var undo: [(key: String, old: PropertyListValue?)] = []
      func apply(_ key: String, _ value: PropertyListValue?) {
        let old: PropertyListValue?
        if let value {
          old = next.updateValue(value, forKey: key)
        } else {
          old = next.removeValue(forKey: key)
        }
        if old != value { undo.append((key, old)) }
      }
      for change in pending { apply(change.key, change.value) }
      for (key, value) in extraChanges { apply(key, value) }
      // What this commit leaves as it was, when it does not land.
      func keepPersisted() {
        guard replacement == nil else { return }
        for (key, old) in undo.reversed() {
          if let old { next[key] = old } else { next[key] = nil }
        }
        cs.persisted = next
      }
      // A key changed and changed back within the commit counts as a change (a rewrite of
      // the same values): telling that apart would cost a hash of every pending key.
      guard replaced || !undo.isEmpty || (cs.identity == nil && !next.isEmpty) || !cs.journalDamage.isEmpty
      else {
        keepPersisted()
        return .success(next)
      }
      let expected = cs.identity
      let path = self.path
      let check = { () throws(SystemCallError) -> Void in
        TestHooks.pauseBeforeRename(path: path)
        if !lockFile.stillLocksPath() {
          race = "the lock file \(lockFile.path) was replaced during the commit"
        } else if try FileSystem.identity(ofPath: path) != expected {
          race = "\(path) was replaced during the commit by a writer that did not take the lock"
        }
        if race != nil { throw SystemCallError(call: "rename", path: path, .resourceTemporarilyUnavailable) }
      }
      if replacement == nil, let expected, let (record, dead) = journalRecord(cs, next: next, undo: undo) {
        // A small commit to a large domain: appended to the journal, one `fdatasync(2)`.
        var published = false
        do throws(SystemCallError) {
          if let position = cs.journal {
            try check()
            try SuiteJournal.append(record, journalOf: path, at: position) { position in
              lockFile.advance(to: expected, journal: .init(length: position.end, inode: position.inode))
              cs.journal = position
            }
          } else {
            cs.journal = try SuiteJournal.create(record, journalOf: path, base: expected, beforeRename: check) {
              lockFile.advance(to: expected, journal: $0)
              published = true
            }
          }
        } catch {
          // A length published for a journal that did not take its place names none.
          if published { lockFile.advance(to: expected, journal: SuiteJournal.Published.noJournal) }
          keepPersisted()
          if race == nil && error.code == .resourceTemporarilyUnavailable {
            race = "\(SuiteJournal.path(of: path)) was replaced during the commit by a writer that did not take the lock"
          }
          if race != nil { return .success(next) }
          return .failure(AppGroupsError(io: error, "writing \(SuiteJournal.path(of: path))"))
        }
        cs.persisted = next
        cs.deadBytes = dead
        return .success(next)
      }
      do throws(AppGroupsError) {
        let identity = try PropertyListFile.write(
          next, to: path, notBefore: expected?.modified, beforeRename: check,
          afterRename: { lockFile.advance(to: $0, journal: SuiteJournal.Published.noJournal) })
        cs.identity = identity
        cs.unreadableIdentity = nil
        cs.deadBytes = 0
      } catch {
        keepPersisted()
        return .failure(error)
      }
      cs.persisted = next
      retireJournal(&cs)
      return .success(next)
    }
    if let race { return .raced(race) }
    let next: Values
    switch written {
    case .success(let values): next = values
    case .failure(let error): throw error
    }
    finishCommit(
      next: next, didReload: didReload, pending: pending, through: through,
      replacement: replacement, extra: extraChanges, repaired: repair, outside: &outside, local: &local,
      handler: &handler)
    return .committed
  }

  private func finishCommit(
    next: [String: PropertyListValue], didReload: Bool, pending: [Pending], through: UInt64,
    replacement: (values: [String: PropertyListValue], sequence: UInt64)?,
    extra: [String: PropertyListValue?], repaired: Bool,
    outside: inout [StoredChange], local: inout [StoredChange],
    handler: inout ChangeHandlers?
  ) {
    if let token = lockFile?.token { seenToken.store(token, ordering: .releasing) }
    state.withLock { st in
      if repaired { st.repairPending = false }
      st.lastBatchSize = pending.count
      // Drop what was committed, unless it changed again meanwhile: what is left is what
      // came after the snapshot. Nothing, at the end of a burst; else the few late ones,
      // kept without a hash and a delete per committed key.
      if st.nextSequence &- 1 == through {
        st.pending.removeAll()
      } else {
        st.pending.removeAll { $0.sequence <= through }
      }
      if let replacement, st.replacement?.sequence == replacement.sequence {
        st.replacement = nil
      }
      if didReload || !extra.isEmpty {
        // Others' changes (and the atomic update's) become visible, except
        // where this process has a newer change of its own still pending.
        var values = st.replacement?.values ?? next
        for change in st.pending { values[change.key] = change.value }
        for change in Self.diff(st.values, values) {
          if extra.keys.contains(change.key) { local.append(change) } else { outside.append(change) }
        }
        st.values = values
        st.sizeEstimate = Self.estimate(values)
      }
      handler = st.changeHandler
    }
  }

  // MARK: Outside changes

  /// Re-reads the file if it changed since this process last read or wrote
  /// it, and tells the change handler which values changed.
  /// - Returns: the changes, empty when the file had not moved.
  @discardableResult
  func refresh() -> [StoredChange] {
    if isUnavailable.load(ordering: .acquiring) { return [] }
    var changes: [StoredChange] = []
    var handler: ChangeHandlers?
    // A lock file removed or replaced under this process: read the token from the new one.
    lockFile?.refreshIfReplaced()
    commit.withLock { cs in
      let current = try? FileSystem.identity(ofPath: path)
      let token = lockFile?.token
      if cs.unreadableIdentity != nil && cs.unreadableIdentity == current {
        if let token { seenToken.store(token, ordering: .releasing) }
        return
      }
      if current == cs.identity && cs.unreadableIdentity == nil && cs.journalDamage.isEmpty {
        // The plist is the version read: only its journal may have grown.
        let appended: [SuiteJournal.Change]?
        do throws(AppGroupsError) {
          appended = try catchUpJournal(&cs)
        } catch {
          reportRefreshFailure(error, &cs)
          return
        }
        if let appended {
          if appended.isEmpty {
            if let token { seenToken.store(token, ordering: .releasing) }
          } else {
            (changes, handler) = adopt(appended, token: token)
          }
          return
        }
      }
      // An unreadable file (perhaps one being written in place right now)
      // leaves the values as they were; the next event reads it again.
      let read: [String: PropertyListValue]?
      do throws(AppGroupsError) {
        read = try load(&cs, mode: .refresh)
      } catch {
        reportRefreshFailure(error, &cs)
        return
      }
      cs.refreshFailure = nil
      guard let loaded = read else { return }
      cs.persisted = loaded
      (changes, handler) = adopt(loaded, token: token)
      if needsJournalRepair(&cs) { requestJournalRepair() }
    }
    if !changes.isEmpty, let handler { handler(changes, .otherProcess) }
    return changes
  }

  /// Reads the file once its protected data can be read again (see
  /// `SuiteStore+Protection.swift`): what is on disk goes under this process's pending
  /// changes, which then land key by key, merged with what other processes wrote (never as
  /// a replacement of the domain); the change handlers hear every value that changed.
  func loadAfterProtection() throws(AppGroupsError) {
    var changes: [StoredChange] = []
    var handler: ChangeHandlers?
    try commit.withLock { cs throws(AppGroupsError) in
      guard isUnavailable.load(ordering: .acquiring) else { return }
      let loaded = try load(&cs, mode: .open) ?? [:]
      cs.persisted = loaded
      (changes, handler) = adopt(loaded, token: lockFile?.token)
      unavailability.withLock { $0 = nil }
      isUnavailable.store(false, ordering: .releasing)
    }
    if !changes.isEmpty, let handler { handler(changes, .otherProcess) }
    let schedule = state.withLock { st in
      st.flushScheduled = !st.pending.isEmpty || st.replacement != nil
      return st.flushScheduled
    }
    if schedule { scheduleFlush() }
  }

  /// Says once why the file cannot be read again (until a re-read succeeds or the reason
  /// changes): the values read before stay, and so would go unnoticed. Call holding `commit`.
  private func reportRefreshFailure(_ error: AppGroupsError, _ cs: inout CommitState) {
    let reason = error.cause.map { "\($0)" } ?? error.message
    guard cs.refreshFailure != reason else { return }
    cs.refreshFailure = reason
    var text = "a suite's file cannot be read again: \(reason); keeping the values read before"
    if let cause = error.cause as? SystemCallError, cause.code == .permissionDenied {
      // Landlock's rules hold folders, not paths: a container removed and made again is
      // outside a sandbox built before, for the rest of the process's life.
      text += "; in a sandbox (groupctl run), a container removed and created again after"
        + " the process started stays outside it until the process is started again"
    }
    Diagnostics.report(text)
  }

  /// Installs the changes appended to the journal under this process's pending changes.
  /// Call holding `commit` (`cs.persisted` already holds them).
  private func adopt(
    _ appended: [SuiteJournal.Change], token: UInt64?
  ) -> ([StoredChange], ChangeHandlers?) {
    state.withLock { st in
      var changes: [StoredChange] = []
      if st.replacement == nil {
        let mine = st.pending.isEmpty ? [] : Set(st.pending.map(\.key))
        for (key, value) in appended where !mine.contains(key) {
          let old: PropertyListValue?
          if let value {
            old = st.values.updateValue(value, forKey: key)
          } else {
            old = st.values.removeValue(forKey: key)
          }
          guard old != value else { continue }
          st.sizeEstimate +=
            PropertyListValue.estimatedEntrySize(key: key, value: value)
            - PropertyListValue.estimatedEntrySize(key: key, value: old)
          changes.append(StoredChange(key: key, old: old, new: value))
        }
      }
      if let token { seenToken.store(token, ordering: .releasing) }
      return (changes, st.changeHandler)
    }
  }

  /// Installs freshly read values under this process's pending changes.
  /// Call holding `commit`.
  private func adopt(
    _ loaded: [String: PropertyListValue], token: UInt64?
  ) -> ([StoredChange], ChangeHandlers?) {
    state.withLock { st in
      var values = loaded
      if let replacement = st.replacement { values = replacement.values }
      for change in st.pending { values[change.key] = change.value }
      let changes = Self.diff(st.values, values)
      st.values = values
      st.sizeEstimate = Self.estimate(values)
      if let token { seenToken.store(token, ordering: .releasing) }
      return (changes, st.changeHandler)
    }
  }

  /// Whether the file or its token moved since this process last read or
  /// wrote it: one token read from shared memory, and a `stat(2)` only when
  /// no kernel watch covers the folder; no parsing.
  func hasChangedOnDisk() -> Bool {
    if isUnavailable.load(ordering: .acquiring) { return false }
    let seen = seenToken.load(ordering: .acquiring)
    if let lockFile, lockFile.token != seen { return true }
    // Every commit moves the token. An outside edit does not, but while a
    // kernel watch covers the folder the change monitor hears of it and
    // re-reads by itself: no stat(2) is needed here.
    if watchedByKernel.load(ordering: .acquiring) { return false }
    // Without a watch, a lock file removed (or replaced) under this process is found here: the
    // token page read above is then a dead file's.
    if let lockFile, lockFile.refreshIfReplaced() || lockFile.currentIsUnlinked { return true }
    let current = try? FileSystem.identity(ofPath: path)
    return commit.withLock { current != $0.identity || $0.unreadableIdentity != nil }
  }

  /// The suite's last-update token: monotonic, persistent, moved by every
  /// commit and by an outside edit of the file.
  func token() -> UInt64 {
    guard let lockFile else {
      return UInt64(bitPattern: (try? FileSystem.identity(ofPath: path))?.modified ?? 0)
    }
    let deadline = FileSystem.monotonicNanoseconds() &+ Self.tokenWaitBound
    var pause = 20_000  // 20 µs, doubling to 1 ms
    while true {
      guard let record = lockFile.read() else {
        // A writer died in the middle of moving the token (its sequence is left odd): repair
        // it if no commit is in flight; else answer the last token seen, never going back.
        return repairToken(lockFile) ?? lastSeenToken
      }
      let current = try? FileSystem.identity(ofPath: path)
      if record.identity == current { return record.token }
      // The file is not the version the token describes: an outside edit (or
      // a commit in flight). Move the token if no commit is in flight.
      // The file lock is shared by this process's threads: only with the gate may it be taken.
      let moved: UInt64? = {
        guard gate.tryEnter() else { return nil }
        defer { gate.leave() }
        guard lockFile.tryLock() else { return nil }
        defer { lockFile.unlock() }
        guard let again = lockFile.read() else { return nil }
        let now = try? FileSystem.identity(ofPath: path)
        if again.identity == now { return again.token }
        return lockFile.advance(to: now)
      }()
      if let moved { return moved }
      // A commit is in flight, here or in another process: its token is next.
      if FileSystem.monotonicNanoseconds() >= deadline { return record.token }
      Threads.pause(nanoseconds: pause)
      pause = min(pause * 2, 1_000_000)
    }
  }

  static let tokenWaitBound: UInt64 = 20_000_000

  /// Moves a token whose last update never finished forward, under the lock: a live writer
  /// holds the lock while it updates, so a torn record seen under it is a dead writer's.
  private func repairToken(_ lockFile: SuiteLockFile) -> UInt64? {
    // The file lock is shared by this process's threads: only with the gate may it be taken.
    guard gate.tryEnter() else { return nil }
    defer { gate.leave() }
    guard lockFile.tryLock() else { return nil }
    defer { lockFile.unlock() }
    if let record = lockFile.read() { return record.token }
    let token = lockFile.advance(to: try? FileSystem.identity(ofPath: path))
    var seen = seenToken.load(ordering: .acquiring)
    while seen < token {
      let (exchanged, now) = seenToken.compareExchange(
        expected: seen, desired: token, ordering: .acquiringAndReleasing)
      if exchanged { break }
      seen = now
    }
    return token
  }

  /// The token this process last saw.
  var lastSeenToken: UInt64 { seenToken.load(ordering: .acquiring) }

  // MARK: Loading and quarantine

  enum LoadMode {
    /// Opening the suite: an unreadable file is moved aside under the lock.
    case open
    /// Committing, holding the lock: an unreadable file is moved aside.
    case commit
    /// Re-reading after an outside change: an unreadable file is only noted
    /// (it may be in the middle of an in-place write); `nil` is returned.
    case refresh
  }

  /// Reads and parses the file (``PropertyListFile/read(_:)``). An unreadable file is moved
  /// aside (only while holding the lock) and the suite goes on empty.
  private func load(_ cs: inout CommitState, mode: LoadMode) throws(AppGroupsError) -> [String: PropertyListValue]? {
    let holdingLock = mode == .commit
    let identity: FileIdentity
    let reason: String
    do throws(SystemCallError) {
      // Consumed, so that the values bound below are the one reference to their storage and
      // the journal's changes go into it in place, not into a copy of the whole domain.
      let contents = try PropertyListFile.read(path)
      switch consume contents {
      case .missing:
        cs.identity = nil
        cs.unreadableIdentity = nil
        cs.journal = nil
        cs.journalDamage = []
        return [:]
      case .values(var values, let read):
        cs.identity = read
        cs.unreadableIdentity = nil
        try applyJournal(to: &values, base: read, &cs)
        return values
      case .salvaged(var values, let read, let skipped, let data):
        cs.identity = read
        cs.unreadableIdentity = nil
        if cs.salvagedIdentity != read {
          cs.salvagedIdentity = read
          keepSalvagedCopy(data, skipped: skipped, keeping: values.count)
        }
        try applyJournal(to: &values, base: read, &cs)
        return values
      case .unreadable(let why, let read):
        reason = why
        identity = read
      }
    } catch {
      throw AppGroupsError(io: error, "reading \(path)")
    }
    cs.identity = identity
    cs.journal = nil
    cs.journalDamage = []
    if mode == .refresh {
      if cs.unreadableIdentity != identity {
        Diagnostics.report(
          "\(path) could not be read (\(reason)); keeping the values read before; it will be moved aside at the next write unless it is fixed first")
      }
      cs.unreadableIdentity = identity
      return nil
    }
    guard let lockFile, !options.readOnly else {
      if cs.unreadableIdentity != identity {
        Diagnostics.report("\(path) could not be read (\(reason)); its values are ignored until it is fixed")
      }
      cs.unreadableIdentity = identity
      return [:]
    }
    if !holdingLock {
      do throws(LockedFile.Failure) {
        try lockFile.lock(
          until: FileSystem.deadline(after: options.lockTimeout),
          whileHolderProgresses: FileSystem.deadline(after: Self.progressCeiling))
      } catch {
        if cs.unreadableIdentity != identity {
          Diagnostics.report(
            "\(path) could not be read (\(reason)); it will be moved aside at the next write, and the suite reads as empty until then")
        }
        cs.unreadableIdentity = identity
        return [:]
      }
    }
    defer { if !holdingLock { lockFile.unlock() } }
    // Under the lock: is it still the same unreadable file?
    if let now = try? FileSystem.identity(ofPath: path), now != identity {
      return try load(&cs, mode: .commit)
    }
    do throws(SystemCallError) {
      let aside = try PropertyListFile.moveAside(path)
      Diagnostics.report("\(path) could not be read (\(reason)); moved it to \(aside); the suite starts empty")
    } catch {
      throw AppGroupsError(io: error, "moving the unreadable \(path) aside")
    }
    lockFile.advance(to: nil, journal: SuiteJournal.Published.noJournal)
    cs.identity = nil
    cs.unreadableIdentity = nil
    return [:]
  }

  // MARK: The journal

  /// The record of this commit's changes when it goes to the journal: the plist is large
  /// (``Options/journalThreshold``), was read whole, and the journal stays within its bound
  /// (``SuiteJournal/bound(forPlistSize:)``) with it. `nil`: the commit rewrites the plist and
  /// so compacts the journal. Call holding `commit`.
  private func journalRecord(
    _ cs: CommitState, next: [String: PropertyListValue], undo: [(key: String, old: PropertyListValue?)]
  ) -> (record: [UInt8], dead: Int)? {
    guard let identity = cs.identity, cs.unreadableIdentity == nil, cs.journalDamage.isEmpty,
      identity.size >= options.journalThreshold
    else { return nil }
    let bound = SuiteJournal.bound(forPlistSize: Int(identity.size))
    let used = cs.journal?.end ?? SuiteJournal.headerSize
    // Each change takes some bytes: a burst that cannot fit is not encoded to find out.
    guard undo.count < (bound - used) / 8 else { return nil }
    // Each key once, against its value before the commit (its first old value).
    var before: [String: PropertyListValue?] = [:]
    for (key, old) in undo where before.index(forKey: key) == nil { before[key] = .some(old) }
    var changes: [SuiteJournal.Change] = []
    var dead = cs.deadBytes
    for (key, old) in before where next[key] != old {
      changes.append((key, next[key]))
      dead += PropertyListValue.estimatedEntrySize(key: key, value: old)
    }
    guard !changes.isEmpty, let record = SuiteJournal.record(changes), used + record.count <= bound else {
      return nil
    }
    // A commit that would leave the files holding more dead bytes than live ones (a large
    // value removed) rewrites the plist instead: the space is given back.
    guard dead <= Int(identity.size) + used + record.count - dead else { return nil }
    return (record, dead)
  }

  /// Clears the journal's path once a commit has folded the journal into a new plist (which
  /// the journal's header no longer names, so a crash before this leaves it ignored): a
  /// journal is removed (the journal of a plist removed by hand, or the unpublished record of
  /// a writer that died, too: a plist written whole leaves no journal); a damaged one, or
  /// anything else there, is kept aside and the user told where it went, once. Call holding
  /// `commit` and the lock.
  private func retireJournal(_ cs: inout CommitState) {
    let journal = SuiteJournal.path(of: path)
    let damage = cs.journalDamage
    cs.journal = nil
    cs.journalDamage = []
    let aside: String?
    do throws(SystemCallError) {
      aside = try SuiteJournal.retire(journalOf: path, keepAside: !damage.isEmpty)
    } catch {
      Diagnostics.report(
        "\(journal): \(Self.describe(damage)); the records that could be read are in \(path) now, but keeping it aside failed: \(error)")
      return
    }
    guard !damage.isEmpty || aside != nil else { return }
    let readable = damage.allSatisfy {
      switch $0 {
      case .notARegularFile, .notAJournal, .missing, .replaced: return false
      default: return true
      }
    }
    var text = "\(journal): \(damage.isEmpty ? "it is not a journal" : Self.describe(damage))"
    if readable { text += "; the records that could be read are in \(path) now" }
    if let aside { text += "; it was moved to \(aside)" }
    text += readable ? "" : "; the suite's commits go on without it"
    Diagnostics.report(text)
  }

  private static func describe(_ damage: [SuiteJournal.Damage]) -> String {
    damage.map(\.description).joined(separator: "; ")
  }

  /// Whether the journal read last is damaged in a way that a commit must repair: not what a
  /// commit in flight shows a reader outside the lock for a moment (a new journal published
  /// just before its rename, which wakes the reader again). A read-only store repairs
  /// nothing: it says once what it ignores. Call holding `commit`.
  private func needsJournalRepair(_ cs: inout CommitState) -> Bool {
    let damage = cs.journalDamage.filter { !$0.mayBeInFlight }
    guard !damage.isEmpty else { return false }
    guard options.readOnly else { return true }
    if cs.reportedJournalDamage != damage {
      cs.reportedJournalDamage = damage
      Diagnostics.report(
        "\(SuiteJournal.path(of: path)): \(Self.describe(damage)); only the records that could be read are read")
    }
    return false
  }

  /// Schedules a commit that repairs the journal (``needsJournalRepair(_:)``), even with no
  /// change pending.
  private func requestJournalRepair() {
    let schedule = state.withLock { st in
      st.repairPending = true
      defer { st.flushScheduled = true }
      return !st.flushScheduled
    }
    if schedule { scheduleFlush() }
  }

  /// Applies the whole journal of plist version `base` onto `values`. Call holding `commit`.
  private func applyJournal(
    to values: inout [String: PropertyListValue], base: FileIdentity, _ cs: inout CommitState
  ) throws(SystemCallError) {
    cs.journal = nil
    cs.journalDamage = []
    cs.deadBytes = 0
    guard let tail = try readJournal(base: base, after: nil) else { return }
    cs.deadBytes = Self.apply(tail.changes, to: &values)
    cs.journal = tail.position
    cs.journalDamage = tail.damage
  }

  /// Applies a journal's changes to `values`.
  /// - Returns: about how many bytes of the files the values they replace or remove hold.
  private static func apply(_ changes: [SuiteJournal.Change], to values: inout [String: PropertyListValue]) -> Int {
    var dead = 0
    for (key, value) in changes {
      let old = value.map { values.updateValue($0, forKey: key) } ?? values.removeValue(forKey: key)
      dead += PropertyListValue.estimatedEntrySize(key: key, value: old)
    }
    return dead
  }

  /// The changes appended to the journal since this process last read it (applied to
  /// `cs.persisted`), while the plist is the version it read: empty when there are none;
  /// `nil` when the journal was replaced, removed, cut or damaged, and the whole file must be
  /// read again. Call holding `commit`.
  private func catchUpJournal(_ cs: inout CommitState) throws(AppGroupsError) -> [SuiteJournal.Change]? {
    guard let base = cs.identity else { return [] }
    let tail: SuiteJournal.Tail?
    do throws(SystemCallError) {
      tail = try readJournal(base: base, after: cs.journal)
    } catch {
      throw AppGroupsError(io: error, "reading \(SuiteJournal.path(of: path))")
    }
    guard let tail else { return cs.journal == nil ? [] : nil }
    // Read from where this process stood, or (a journal new to it) from the start.
    guard tail.continued == (cs.journal != nil), tail.damage.isEmpty else { return nil }
    cs.deadBytes += Self.apply(tail.changes, to: &cs.persisted)
    cs.journal = tail.position
    return tail.changes
  }

  /// Reads the journal of plist version `base`, no further than the token record says is
  /// durable. Without a record for that version (a lock file made again, or a commit in
  /// flight), as far as the records check.
  private func readJournal(base: FileIdentity, after: SuiteJournal.Position?) throws(SystemCallError) -> SuiteJournal.Tail? {
    try SuiteJournal.read(journalOf: path, base: base, after: after) {
      lockFile?.read()?.journal(of: base)
    }
  }

  /// Says which values of a file read in part were left out, and keeps a copy of the whole
  /// file aside before a commit writes the rest over it (a read-only store only says so).
  private func keepSalvagedCopy(_ data: Data, skipped: [PropertyListSalvage.SkippedKey], keeping kept: Int) {
    let left = skipped.map(\.description).joined(separator: ", ")
    guard !options.readOnly else {
      Diagnostics.report("\(path): \(skipped.count) value(s) could not be read and are ignored: \(left); the other \(kept) key(s) are read")
      return
    }
    do throws(SystemCallError) {
      let copy = try PropertyListFile.keepCopy(data, of: path)
      Diagnostics.report(
        "\(path): \(skipped.count) value(s) could not be read: \(left); the other \(kept) key(s) stay live, and the whole file is kept at \(copy.path)\(copy.existed ? " (kept before)" : "") before anything is written over it")
    } catch {
      Diagnostics.report(
        "\(path): \(skipped.count) value(s) could not be read: \(left); the other \(kept) key(s) stay live; keeping a copy of the file failed: \(error)")
    }
  }

  // MARK: Helpers

  static func estimate(_ values: [String: PropertyListValue]) -> Int {
    values.reduce(8) { $0 + PropertyListValue.estimatedEntrySize(key: $1.key, value: $1.value) }
  }

  static func diff(_ old: [String: PropertyListValue], _ new: [String: PropertyListValue]) -> [StoredChange] {
    var changes: [StoredChange] = []
    for (key, value) in new where old[key] != value {
      changes.append(StoredChange(key: key, old: old[key], new: value))
    }
    for (key, value) in old where new[key] == nil {
      changes.append(StoredChange(key: key, old: value, new: nil))
    }
    return changes
  }
}

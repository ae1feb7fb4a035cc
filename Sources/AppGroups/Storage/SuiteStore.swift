import Dispatch
import Foundation
internal import Synchronization

/// One key's change as a store saw it: the value before and after.
struct StoredChange: Sendable, Equatable {
  var key: String
  var old: PropertyListValue?
  var new: PropertyListValue?
}

/// One change not yet on disk. The pending changes are a log in the order they were made
/// (later ones win when it is applied), not a dictionary: a `set` appends, without hashing
/// the key a second time or growing a table.
struct PendingChange: Sendable {
  var key: String
  var value: PropertyListValue?
  var sequence: UInt64
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
    /// (stopped, or asleep and never woken, its process idle) before it keeps its changes pending and
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
  /// The suite's files and their protocol: everything this store does on disk.
  let file: SuiteFile
  /// Signalled when a re-read's changes have been told (see ``refresh()``).
  let told = NSCondition()
  /// Where commits run, made at the first (a store that is only read never needs it).
  private let commitQueue: LazyQueue
  var queue: DispatchQueue { commitQueue.queue }

  struct State: Sendable {
    /// This process's view of the values: the file's (indexed until the first `set`, see
    /// ``SuiteValues``) with this process's changes on top.
    var values = SuiteValues()
    var pending: [PendingChange] = []
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
    /// ``sizeEstimate`` once computed; `nil`: not yet (a pass over every value, which a
    /// process that only reads never needs).
    var knownSizeEstimate: Int? = 8
    /// About how many bytes the values take encoded (``SuiteStore/estimate(_:)``), computed
    /// the first time it is needed.
    var sizeEstimate: Int {
      mutating get {
        if let known = knownSizeEstimate { return known }
        let estimate = values.sizeEstimate
        knownSizeEstimate = estimate
        return estimate
      }
      set { knownSizeEstimate = newValue }
    }
    /// In the order they were added; an array, not a dictionary: there are a few, and a
    /// `set` hands them on without building anything.
    var changeHandlers: [ChangeHandlerEntry] = []
    var nextHandlerID: UInt64 = 1
    /// The threads whose re-reads have put changes in memory and not yet told the handlers
    /// (a thread once per such re-read); see ``SuiteStore/refresh()``.
    var telling: [Threads.Identity] = []
    var changeHandler: ChangeHandlers? {
      changeHandlers.isEmpty ? nil : ChangeHandlers(handlers: changeHandlers)
    }

    /// Puts `value` (`nil`: removed) under `key` in memory, keeping the size estimate: the
    /// change, or `nil` when memory already held it. For changes read from disk one key at a
    /// time (the journal's records, an atomic update's keys).
    mutating func install(_ value: PropertyListValue?, forKey key: String) -> StoredChange? {
      let old: PropertyListValue?
      if let value {
        old = values.updateValue(value, forKey: key)
      } else {
        old = values.removeValue(forKey: key)
      }
      guard old != value else { return nil }
      if let known = knownSizeEstimate {
        knownSizeEstimate = known
          + PropertyListValue.estimatedEntrySize(key: key, value: value)
          - PropertyListValue.estimatedEntrySize(key: key, value: old)
      }
      return StoredChange(key: key, old: old, new: value)
    }
  }

  /// What a change handler is told: one change (a `set`'s, handed on without an array
  /// around it) or several.
  enum Changes: Sendable {
    case one(StoredChange)
    case many([StoredChange])
  }

  typealias ChangeHandler = @Sendable (Changes, ChangeOrigin) -> Void

  /// A change handler and its id. A class: an array of references uses the storage type
  /// every such array shares, where an array of `(id, handler)` pairs is a tuple type and a
  /// generic one that a process's first open instantiates (~32 k instructions).
  final class ChangeHandlerEntry: Sendable {
    let id: UInt64
    let handler: ChangeHandler

    init(id: UInt64, handler: @escaping ChangeHandler) {
      self.id = id
      self.handler = handler
    }
  }

  /// The change handlers of a store at one moment, called in turn.
  struct ChangeHandlers: Sendable {
    let handlers: [ChangeHandlerEntry]

    func callAsFunction(_ changes: [StoredChange], _ origin: ChangeOrigin) {
      for entry in handlers { entry.handler(.many(changes), origin) }
    }

    func callAsFunction(_ change: StoredChange, _ origin: ChangeOrigin, except id: UInt64 = 0) {
      for entry in handlers where entry.id != id { entry.handler(.one(change), origin) }
    }
  }

  struct RetryState: Sendable {
    var retryDelay: Duration = .milliseconds(10)
    /// The last failed commit's reason, said once until a commit lands or the reason changes.
    var reportedFailure: String?
  }

  /// Set by the change monitor while an inotify watch (not polling) covers
  /// this store's folder.
  var watchedByKernel: Bool {
    get { file.watchedByKernel }
    set { file.watchedByKernel = newValue }
  }

  /// How long the last commit waited for this process's gate and the suite's lock, in
  /// nanoseconds (for the benchmark).
  let lastLockWait = Atomic<UInt64>(0)

  /// Why the file cannot be read now (its protected data is unavailable), or `nil`; see
  /// `SuiteStore+Protection.swift`. Set at open, cleared once when the data comes back.
  let unavailability = Mutex<String?>(nil)
  let isUnavailable = Atomic<Bool>(false)
  /// What the layer that gates this store keeps alive with it while it is open (its device's
  /// monitor), set once by that layer; `nil` for a store it does not watch.
  let protectionWatch = Mutex<(any AnyObject & Sendable)?>(nil)

  /// Order of locks: the file's gate (``SuiteFile/enterGate(before:)``, which serialises this
  /// process's commits with a bounded wait), the file lock, the file's state, then `state`.
  let state: Mutex<State>
  let retry = Mutex(RetryState())

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
    commitQueue = LazyQueue(label: "appgroups.commit.", fileName)
    file = try SuiteFile(path: path, options: options)
    state = Mutex(State())
    let unavailable = markUnavailableIfProtected()
    let (loaded, needsRepair) = try file.load(reading: !unavailable)
    state.withLock {
      $0.values = loaded
      $0.knownSizeEstimate = loaded.isEmpty ? 8 : nil
    }
    // A damaged journal is folded into the plist and kept aside now, as an unreadable plist
    // is moved aside at open; when the lock is busy, by a retry.
    if needsRepair {
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
      st.changeHandlers.append(ChangeHandlerEntry(id: id, handler: handler))
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
    state.withLock { $0.values.isEmpty ? nil : $0.values.value(forKey: key) }
  }

  /// Every key and value, as this process sees them now.
  func values() -> [String: PropertyListValue] {
    state.withLock { st in
      st.values.decodeWhole()
      return st.values.decoded
    }
  }

  /// Whether some change has not reached the disk yet.
  var hasPendingChanges: Bool {
    state.withLock { !$0.pending.isEmpty || $0.replacement != nil }
  }

  // MARK: Writing

  /// Sets (or, with `nil`, removes) one value: in memory at once, on disk
  /// soon after. Writing the value already there does nothing.
  /// - Returns: whether the value changed (writing the value already there does nothing), and
  ///   the value it replaced: not a ``StoredChange``, which the caller builds if it needs one.
  /// - Throws: `.sizeLimitExceeded` when the domain would grow past its limit,
  ///   `.unsupportedValue` when the value nests deeper than
  ///   ``PropertyListValue/maximumDepth`` or holds a date that is not a
  ///   number; nothing changes then.
  /// The change handlers are told, on the calling thread, except the one `notTelling` names:
  /// the caller tells itself.
  @discardableResult
  func set(
    _ value: PropertyListValue?, forKey key: String, notTelling handlerID: UInt64 = 0
  ) throws(AppGroupsError) -> (changed: Bool, old: PropertyListValue?) {
    precondition(!options.readOnly, "a read-only store cannot be written")
    if let reason = value?.unstorableReason { throw unstorable(key, reason) }
    // Before the first change is pending (a process that only reads never needs it).
    Self.installExitFlushOnce()
    // One pass under the lock, which builds no error (a refusal's size is returned and said
    // outside it) and also reads whether a burst is going on.
    let (old, changed, pace, handler, refusedSize) = state.withLock {
      st -> (PropertyListValue?, Bool, CommitPace?, ChangeHandlers?, Int?) in
      // The first change of a process that opened an indexed file decodes it whole, once,
      // and sizes it before the change goes in.
      st.values.decodeWhole()
      if st.knownSizeEstimate == nil { st.knownSizeEstimate = st.values.sizeEstimate }
      // A long burst with no commit since: a small domain takes, now, the room it would reach
      // by growing step by step, each step hashing every key again.
      if st.pending.count == Self.longBurst {
        st.values.reserveCapacity(Self.longBurstRoom)
        st.pending.reserveCapacity(Self.longBurstRoom)
      }
      // One hash of the key: the value goes in at once, and comes out again if refused.
      let old: PropertyListValue?
      if let value {
        old = st.values.updateValue(value, forKey: key)
      } else {
        old = st.values.removeValue(forKey: key)
      }
      // The value in memory is the one asked for: nothing to do, unless another process
      // committed since this one last read the suite (its change not heard yet), when the
      // value on disk may be another; the change then still goes to disk, told to no one.
      let same = PropertyListValue.identical(old, value)
      if same && !file.tokenMovedSinceSeen { return (nil, false, nil, nil, nil) }
      if !same {
        let oldSize = PropertyListValue.estimatedEntrySize(key: key, value: old)
        let newSize = PropertyListValue.estimatedEntrySize(key: key, value: value)
        let size = st.sizeEstimate - oldSize + newSize
        if newSize > oldSize && size > options.sizeLimit {
          st.values[key] = old
          return (nil, false, nil, nil, size)
        }
        st.sizeEstimate = size
      }
      st.pending.append(PendingChange(key: key, value: value, sequence: st.nextSequence))
      st.nextSequence &+= 1
      // A key set again and again before a commit: keep the log within reach of the domain.
      if st.pending.count > 2 &* st.values.count &+ 64 { Self.compact(&st.pending) }
      // The first change since the last commit schedules the next.
      let pace: CommitPace? =
        st.flushScheduled
        ? nil : st.lastBatchSize >= Self.burstBatchSize ? .afterBurst : .soon(st.nextSequence)
      st.flushScheduled = true
      return (
        old, !same, pace,
        !same && st.changeHandlers.contains { $0.id != handlerID } ? st.changeHandler : nil, nil
      )
    }
    if let refusedSize {
      throw AppGroupsError(
        .sizeLimitExceeded,
        "setting \(key.debugDescription) would make \(path) about \(refusedSize) bytes, over its limit of \(options.sizeLimit) bytes; the values already there are kept"
      )
    }
    switch pace {
    case .soon(let seen)?: scheduleFlushUnlessBurst(seen: seen)
    case .afterBurst?: scheduleBurstFlush()
    case nil: break
    }
    if changed, let handler { handler(StoredChange(key: key, old: old, new: value), .thisProcess, except: handlerID) }
    return (changed, old)
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
    Self.installExitFlushOnce()
    let size = Self.estimate(values)
    if size > options.sizeLimit {
      throw AppGroupsError(
        .sizeLimitExceeded,
        "the new domain for \(path) is about \(size) bytes, over its limit of \(options.sizeLimit) bytes; the values already there are kept")
    }
    let (changes, schedule, handler) = state.withLock { st in
      let changes = SuiteValues.changes(from: st.values.decoded, to: values)
      st.values = SuiteValues(values)
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
  private static func compact(_ log: inout [PendingChange]) {
    var seen = Set<String>(minimumCapacity: log.count)
    var kept: [PendingChange] = []
    for change in log.reversed() where seen.insert(change.key).inserted { kept.append(change) }
    log = kept.reversed()
  }

  func unstorable(_ key: String, _ reason: String) -> AppGroupsError {
    AppGroupsError(
      .unsupportedValue,
      "the value for \(key.debugDescription) cannot be stored in \(path): \(reason); nothing was changed")
  }

  /// While a burst of writes is going on (the last commit carried at least this many
  /// changes, or ``burstHead`` came before a scheduled commit began), the next commit waits for
  /// the burst to pause (``scheduleBurstFlush()``): a burst costs one file write at its end, not
  /// one per commit's worth of `set` calls. A lone write is committed at once.
  static let burstBatchSize = 64
  /// How many changes that came after a `set` scheduled a commit, before the commit began,
  /// tell a burst's head from a lone write (or a few keys set together): a worker takes the
  /// commit within tens of microseconds, in which a burst makes dozens of changes.
  static let burstHead: UInt64 = 8
  /// A burst this long with no commit since gives a small domain room for
  /// ``longBurstRoom`` keys at once (the capacity of 16,384 buckets), instead of growing four
  /// times over at 1,536 keys and again at 6,144 (to 32,768 buckets), each time hashing every
  /// key again: a burst of 10,000 new keys hashes about 1,500 keys again instead of 8,000, and
  /// ends in half the buckets. A domain that stops between 1,024 and 6,144 keys holds up to
  /// 16,384 buckets instead of 2,048 or 8,192 (at most about half a mebibyte more). The
  /// pending log takes the same room (about half a mebibyte, given back by the commit).
  static let longBurst = 1_024
  static let longBurstRoom = 12_288
  /// How long the next commit of a burst waits, at a time, to see whether the burst goes on:
  /// it goes on while at least ``burstBatchSize`` changes came in the last pause.
  static let burstPause: Duration = .milliseconds(2)
  /// How long a commit of a burst that never pauses is put off at most: a process that writes
  /// without end still has its changes on disk this soon after they were made (plus the
  /// commit's own time).
  static let burstCeiling: Duration = .milliseconds(100)
  #if DEBUG
  /// For tests: every burst of this store goes on at each look, until ``burstCeiling``.
  let burstNeverPausesForTesting = Atomic(false)
  #endif

  /// When a `set` schedules the next commit.
  enum CommitPace {
    /// As soon as the commit queue gets to it (behind a commit in flight there), unless
    /// ``burstHead`` changes came meanwhile (`seen`: the sequence when it was scheduled): then
    /// a burst has begun, and is committed when it pauses. A lone `set` (or a few together) is
    /// committed at once; a burst's first changes are not written on their own while it goes
    /// on, a durable write that would hold up the burst's own at its `synchronize()`.
    case soon(UInt64)
    /// When the burst pauses: the last commit carried a burst's worth of changes.
    case afterBurst
  }

  /// Schedules a commit on the commit queue: see ``CommitPace/soon(_:)``.
  private func scheduleFlushUnlessBurst(seen: UInt64) {
    queue.async { [self] in
      let goesOn = state.withLock { $0.flushScheduled && $0.nextSequence &- seen >= Self.burstHead }
      if goesOn { scheduleBurstFlush() } else { _ = flush() }
    }
  }

  /// Schedules the commit of a burst: after each ``burstPause`` it looks whether the burst goes
  /// on, and commits once it pauses, or at ``burstCeiling``. So a `synchronize()` at the
  /// burst's end seldom finds a commit in flight that it must wait for before it writes the
  /// rest: it makes the burst's one durable write itself. Call having set `flushScheduled`.
  func scheduleBurstFlush() {
    let ceiling = FileSystem.deadline(after: Self.burstCeiling)
    let seen = state.withLock { $0.nextSequence }
    waitForBurstToPause(seen: seen, ceiling: ceiling)
  }

  private func waitForBurstToPause(seen: UInt64, ceiling: UInt64) {
    let (s, atto) = Self.burstPause.components
    let nanos = Int(s) * 1_000_000_000 + Int(atto / 1_000_000_000)
    queue.asyncAfter(deadline: .now() + .nanoseconds(nanos)) { [self] in
      let now = FileSystem.monotonicNanoseconds()
      // Still going: as many changes came in the pause as a burst's commit carries.
      let next = state.withLock { st -> UInt64? in
        var goesOn = st.nextSequence &- seen >= Self.burstBatchSize
        #if DEBUG
        goesOn = goesOn || burstNeverPausesForTesting.load(ordering: .relaxed)
        #endif
        return st.flushScheduled && goesOn && now < ceiling ? st.nextSequence : nil
      }
      if let next {
        waitForBurstToPause(seen: next, ceiling: ceiling)
      } else {
        _ = flush()
      }
    }
  }

  // MARK: Helpers

  static func estimate(_ values: [String: PropertyListValue]) -> Int {
    values.reduce(8) { $0 + PropertyListValue.estimatedEntrySize(key: $1.key, value: $1.value) }
  }

  static func estimate(_ values: SuiteValues) -> Int { values.sizeEstimate }

}

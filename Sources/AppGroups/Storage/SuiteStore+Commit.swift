import Dispatch
internal import Synchronization

// Committing a store's pending changes (see ``SuiteStore``): scheduling and backing off, the
// commit under the gate with its retries when something that ignores the lock raced it, the
// atomic updates, and this process's memory brought up to date while the file lock is held.
// What happens on disk is ``SuiteFile``'s.
extension SuiteStore {
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

  func scheduleFlush(after delay: Duration? = nil) {
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
    let entry = file.enterGate(before: FileSystem.deadline(after: options.lockTimeout))
    let persisted = file.persisted
    let (changes, handler, landed) = state.withLock { st in
      let landed = st.pending.isEmpty && st.replacement == nil
      st.pending.removeAll()
      st.replacement = nil
      let changes = st.values.changes(to: persisted)
      st.values = persisted
      st.sizeEstimate = Self.estimate(persisted)
      return (changes, st.changeHandler, landed)
    }
    if case .entered = entry { file.leaveGate() }
    releaseHold()
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
      // With nothing pending (a transaction such as `increment` failed, and its caller was
      // told), nothing will be retried: the report says so.
      Diagnostics.report(
        count > 0
          ? "\(error.message); \(count) change(s) stay pending and are retried while this process runs"
          : "\(error.message); no change of this process is pending")
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
          return .keys([:])
        }
        if let reason = result?.unstorableReason {
          bodyError = self.unstorable(key, reason)
          return .keys([:])
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
            return .keys([:])
          }
        }
        var change: [String: PropertyListValue?] = [:]
        change.updateValue(result, forKey: key)
        return .keys(change)
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
    try atomicUpdate(timeout: timeout) { current in
      result = try body(current)
      return .keys(result)
    }
    return result
  }

  /// ``transaction(timeout:_:)``, whose `body` may instead return the whole domain it leaves
  /// (``AtomicChange/domain(_:)``): for a change of much of the domain (a migration), which
  /// the file then writes as it is and this process's memory compares once with what it
  /// held, without a pass key by key in between.
  ///
  /// The values of a returned domain are not checked one by one: every value `body` changed
  /// must be storable (``PropertyListValue/unstorableReason``); the others are the domain's
  /// own. Its size is checked as a change set's is.
  func atomicUpdate(
    timeout: Duration,
    _ body: ([String: PropertyListValue]) throws -> AtomicChange
  ) throws {
    var bodyError: (any Error)?
    try withoutActuallyEscaping(body) { body throws(AppGroupsError) in
      try commitLocked(timeout: timeout) { current in
        let change: AtomicChange
        do {
          change = try body(current)
        } catch {
          bodyError = error
          return .keys([:])
        }
        let size: Int
        let count: Int
        switch change {
        case .domain(let values):
          size = Self.estimate(values)
          count = values.count
        case .keys(let result):
          var estimate = Self.estimate(current)
          for (key, value) in result {
            if let reason = value?.unstorableReason {
              bodyError = self.unstorable(key, reason)
              return .keys([:])
            }
            estimate -= PropertyListValue.estimatedEntrySize(key: key, value: current[key])
            estimate += PropertyListValue.estimatedEntrySize(key: key, value: value)
          }
          size = estimate
          count = result.count
        }
        if size > self.options.sizeLimit && size > Self.estimate(current) {
          var what = "a transaction of \(count) change(s)"
          if case .domain = change { what = "the domain of \(count) key(s) a transaction leaves" }
          bodyError = AppGroupsError(
            .sizeLimitExceeded,
            "\(what) would make \(self.path) about \(size) bytes, over its limit of \(self.options.sizeLimit) bytes; nothing was changed")
          return .keys([:])
        }
        return change
      }
    }
    if let bodyError { throw bodyError }
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
    extra: (([String: PropertyListValue]) -> AtomicChange)?
  ) throws(AppGroupsError) {
    guard !options.readOnly else { return }
    do {
      try requireAvailable(extra == nil ? nil : "an atomic update")
    } catch {
      holdUntilAvailable()
      throw error
    }
    let started = FileSystem.monotonicNanoseconds()
    let deadline = FileSystem.deadline(after: timeout)
    let ceiling = FileSystem.deadline(after: max(timeout, Self.progressCeiling))
    switch file.enterGate(before: ceiling) {
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
    // Once out of the gate (the block below leaves it), whatever way the commit ends: what
    // the change monitor heard meanwhile was left to this commit (see `refreshHeard()`).
    defer { commitLeftGate() }
    var outside: [StoredChange] = []
    var local: [StoredChange] = []
    var handler: ChangeHandlers?
    do {
      defer { file.leaveGate() }
      var attempt = 1
      while true {
        let outcome: SuiteFile.CommitOutcome
        do {
          outcome = try commitPass(
            started: started, deadline: deadline, ceiling: ceiling, timeout: timeout, extra: extra, outside: &outside,
            local: &local, handler: &handler)
        } catch where error.code == .protectedDataUnavailable {
          becameUnavailable()  // the device restarted during the pass: nothing was written
          holdUntilAvailable()
          throw error
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

  /// One pass of a commit: this process's pending changes (a snapshot; later ones get higher
  /// sequences) handed to the file, and this process's memory updated while the file's lock
  /// is still held.
  private func commitPass(
    started: UInt64, deadline: UInt64, ceiling: UInt64, timeout: Duration,
    extra: (([String: PropertyListValue]) -> AtomicChange)?,
    outside: inout [StoredChange], local: inout [StoredChange],
    handler: inout ChangeHandlers?
  ) throws(AppGroupsError) -> SuiteFile.CommitOutcome {
    // `through`: the last sequence handed out; every change in the snapshot has one up to it,
    // every later change a higher one. On failure nothing is dropped: `pending` is only
    // cleared by finishCommit.
    // Taken under the file's state too (the order of locks allows it), so that memory and
    // the version of the file's values it was built on are one moment's.
    let (pending, replacement, through, repair, memory) = file.commit.withLock { cs in
      state.withLock { st in
        st.flushScheduled = false
        return (
          st.pending, st.replacement, st.nextSequence &- 1, st.repairPending,
          extra == nil && Self.rewritesFromMemory(st) ? (st.values, cs.version) : nil
        )
      }
    }
    guard !pending.isEmpty || replacement != nil || extra != nil || repair else { return .committed }
    let request = SuiteFile.CommitRequest(
      pending: pending, replacement: replacement?.values, extra: extra, repair: repair,
      memory: memory, started: started, deadline: deadline, ceiling: ceiling, timeout: timeout)
    // Once the lock was taken: the backoff starts again, after the pass (off the write's path;
    // SuiteFile says at once that a reported wait is over).
    var lockWait: UInt64?
    defer {
      if let lockWait {
        lastLockWait.store(lockWait, ordering: .relaxed)
        retry.withLock { $0.retryDelay = .milliseconds(10) }
      }
    }
    do throws(AppGroupsError) {
      return try file.commit(
        request, lockWait: &lockWait,
        finish: { committed in
          finishCommit(
            next: committed.values, didReload: committed.reloaded, pending: pending, through: through,
            replacement: replacement, extra: committed.extra, domainBase: committed.domainBase,
            repaired: repair, outside: &outside,
            local: &local, handler: &handler)
        })
    } catch where error.code == .lockTimeout {
      let count = pending.count + (replacement == nil ? 0 : 1)
      let report = count > 0 && !file.lockWaitReported.exchange(true, ordering: .acquiringAndReleasing)
      if report {
        Diagnostics.report(
          "\(error.message); \(count) change(s) stay pending and are retried while this process runs")
      }
      throw AppGroupsError(.lockTimeout, "\(error.message); \(count) change(s) stay pending")
    }
  }

  /// Whether a commit hands the file this process's values with its pending changes
  /// (``SuiteFile/CommitRequest/memory``): when they are many for the domain (a burst's
  /// commit), so that a rewrite does not apply them one by one again, each key hashed, for a
  /// dictionary memory already holds. Not for a few changes to a large domain: sharing the
  /// values makes the next `set` copy them, which costs more than applying a few.
  private static func rewritesFromMemory(_ st: State) -> Bool {
    !st.pending.isEmpty && st.replacement == nil && !st.repairPending
      && st.pending.count &* 8 >= st.values.count
  }

  private func finishCommit(
    next: [String: PropertyListValue], didReload: Bool, pending: [PendingChange], through: UInt64,
    replacement: (values: [String: PropertyListValue], sequence: UInt64)?,
    extra: [String: PropertyListValue?], domainBase: [String: PropertyListValue]?, repaired: Bool,
    outside: inout [StoredChange], local: inout [StoredChange],
    handler: inout ChangeHandlers?
  ) {
    state.withLock { st in
      if repaired { st.repairPending = false }
      st.lastBatchSize = pending.count
      // Drop what was committed, unless it changed again meanwhile: what is left is what
      // came after the snapshot. Nothing, at the end of a burst; else the few late ones,
      // kept without a hash and a delete per committed key.
      if st.nextSequence &- 1 == through {
        st.pending.removeAll()
      } else {
        // The log is in the order of its sequence numbers (a `set` appends the next one, and
        // compacting keeps the order): what was committed is a prefix, removed as one range.
        st.pending.removeSubrange(..<(st.pending.firstIndex { $0.sequence > through } ?? st.pending.endIndex))
      }
      if let replacement, st.replacement?.sequence == replacement.sequence {
        st.replacement = nil
      }
      if !didReload && st.replacement == nil && !extra.isEmpty && extra.count < st.values.count / 4 {
        // Only the atomic update's keys changed on disk beyond what memory holds: they become
        // visible, except where this process has a newer change of its own still pending. A
        // few keys of a large domain (an increment) go in one by one, without a pass over the
        // whole domain; many (a migration) take the pass below, which changes nothing in place.
        let newer = st.pending.isEmpty ? [] : Set(st.pending.map(\.key))
        for (key, value) in extra where !newer.contains(key) {
          if let change = st.install(value, forKey: key) { local.append(change) }
        }
      } else if didReload || !extra.isEmpty || domainBase != nil {
        // Others' changes (and the atomic update's) become visible, except
        // where this process has a newer change of its own still pending. After an update of
        // the whole domain, a key is the update's where it left the value it was computed from
        // (every changed key, when nothing was re-read).
        var values = st.replacement?.values ?? next
        for change in st.pending { values[change.key] = change.value }
        for change in SuiteValues.changes(from: st.values.decoded, to: values) {
          let mine: Bool
          if let domainBase {
            mine = !didReload || domainBase[change.key] != next[change.key]
          } else {
            mine = extra.keys.contains(change.key)
          }
          if mine { local.append(change) } else { outside.append(change) }
        }
        st.values = SuiteValues(values)
        st.sizeEstimate = Self.estimate(values)
      }
      handler = st.changeHandler
    }
  }
}

// MARK: What a commit asks of the file, and what it did

extension SuiteStore {
  /// What an atomic update changes, computed from the values under the lock.
  enum AtomicChange {
    /// These keys (`nil` removes one); the others stay as they are.
    case keys([String: PropertyListValue?])
    /// Every value of the domain: the values the update was given, with its changes made.
    /// The file writes them as they are, as it writes a replacement (the plist rewritten,
    /// never a journal record).
    case domain([String: PropertyListValue])
  }
}

extension SuiteFile {
  /// What a commit asks of the file.
  struct CommitRequest {
    /// This process's changes, in the order they were made (later ones win).
    var pending: [PendingChange]
    /// A whole-domain replacement, applied before `pending`.
    var replacement: [String: PropertyListValue]?
    /// An atomic update's changes, computed from the merged values (the file's under this
    /// process's); called without this type's state held, so that it may read the store.
    var extra: (([String: PropertyListValue]) -> SuiteStore.AtomicChange)?
    /// Whether a reader found the journal damaged: read it all again, and repair it.
    var repair: Bool
    /// This process's values, which are the file's values of this `version`
    /// (``CommitState/version``) with exactly `pending` on top: while the file's values are
    /// still that version, a rewrite writes them as they are, instead of applying `pending`
    /// again. A commit the journal may take (which needs each change's old value) or that
    /// finds the file changed applies `pending` key by key, as without them.
    var memory: (values: SuiteValues, version: UInt64)?
    /// When the commit began waiting, for the gate and then for the lock.
    var started: UInt64
    var deadline: UInt64
    var ceiling: UInt64
    var timeout: Duration
  }

  /// What a commit did, handed to its `finish` while the lock is still held.
  struct Committed {
    /// The values on disk now.
    var values: [String: PropertyListValue]
    /// Whether other processes' changes were read first.
    var reloaded: Bool
    /// The atomic update's changes.
    var extra: [String: PropertyListValue?]
    /// For an update of the whole domain: the merged values it was computed from.
    var domainBase: [String: PropertyListValue]?
  }

  /// How one pass of a commit ended.
  enum CommitOutcome {
    /// The changes are on disk (or there was nothing to write).
    case committed
    /// Something that ignores the lock replaced the lock file or the plist during the pass:
    /// nothing was written; the pass starts over.
    case raced(String)
  }
}

// MARK: Landing pending changes when the process ends

/// Makes pending changes land when the process ends normally (`exit`, the end of `main`) or on
/// SIGTERM / SIGINT, so a value set without `synchronize()` is there for the next process.
///
/// Signal handling is installed only for signals still at their default disposition, and only
/// while `GroupDefaults.handlesTerminationSignals` is true: an app that handles SIGTERM itself
/// keeps its handler (and should call `GroupDefaults.synchronizeAll()` in it).
extension SuiteStore {
  /// Set by the first ``installExitFlushOnce()``: what every `set` reads (a lock each time
  /// would cost a write burst).
  private static let exitFlushInstalled = Atomic(false)
  /// Whether ``installExitFlushOnce()`` takes over SIGTERM and SIGINT.
  static let handlesTerminationSignals = Mutex(true)
  nonisolated(unsafe) private static var signalSources: [any DispatchSourceSignal] = []

  /// Installs the handlers, once: called before a process's first change is pending (a
  /// process that only reads has nothing to land and never takes over its signals).
  @inline(__always)
  static func installExitFlushOnce() {
    if exitFlushInstalled.load(ordering: .acquiring) { return }
    installExitFlush()
  }

  private static func installExitFlush() {
    guard exitFlushInstalled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    else { return }
    Processes.atExit {
      SuiteStore.flushAllAtExit()
    }
    guard handlesTerminationSignals.withLock({ $0 }) else { return }
    for signal in [Processes.Signal.terminate, .interrupt] {
      // Only take over a signal nobody else handles or ignores.
      let source = Processes.interceptIfDefault(signal, on: .global()) {
        SuiteStore.flushAllAtExit()
        Processes.raiseWithDefaultAction(signal)
      }
      if let source { signalSources.append(source) }
    }
  }

  /// ``flushAll()`` as the process ends: changes that cannot land because their file is
  /// unavailable (protected data, before the first unlock) go with the process, and each such
  /// store says so, naming its file, how many changes and which keys (never the values).
  private static func flushAllAtExit() {
    for store in openStores() where store.hasPendingChanges {
      guard !store.flush(), let reason = store.unavailabilityReason else { continue }
      let keys = store.state.withLock { st in
        st.replacement.map { Array($0.values.keys) } ?? st.pending.map(\.key)
      }
      let names = Set(keys).sorted()
      let shown = names.prefix(5).map(\.debugDescription).joined(separator: ", ")
      let more = names.count > 5 ? " and \(names.count - 5) more" : ""
      Diagnostics.report(
        "\(store.path): \(names.count) changed key(s) (\(shown)\(more)) were not written: protected"
          + " data is unavailable (\(reason)); the process is ending, and they end with it")
    }
  }

  /// Commits every open store's pending changes on the calling thread: of the stores whose
  /// file's path `include` accepts, by default all.
  @discardableResult
  static func flushAll(including include: (String) -> Bool = { _ in true }) -> Bool {
    var allLanded = true
    for store in openStores() where store.hasPendingChanges && include(store.path) {
      if !store.flush() { allLanded = false }
    }
    return allLanded
  }
}

import Foundation
internal import Synchronization

/// What another process changed: the re-read, the telling, the journal's repair.
extension SuiteStore {
  // MARK: Outside changes

  /// Re-reads the file if it changed since this process last read or wrote
  /// it, and tells the change handlers which values changed.
  ///
  /// What another thread's re-read put in memory is told before this returns: a re-read puts
  /// what it read into memory under the file's lock, and tells the handlers (the view forgets
  /// its cached values, observers hear) after it, outside every lock. A re-read on another
  /// thread in that window finds nothing new; had it returned then, a `synchronize()` let the
  /// view answer from its cache with the value before the change (seen under load: a managed
  /// value written in place, read as the user's value after `synchronize()`). It waits,
  /// for ``tellingBound`` at most, so that two threads' observers that each wait for the other
  /// cannot hang; at the bound it returns as it did before. A thread never waits for its own
  /// telling (an observer that calls `synchronize()` on the suite it is told about).
  /// - Returns: the changes, empty when the file had not moved.
  @discardableResult
  func refresh() -> [StoredChange] {
    if isUnavailable.load(ordering: .acquiring) { return [] }
    var changes: [StoredChange] = []
    var handlers: [ChangeHandlerEntry] = []
    let me = Threads.Identity.current
    let needsRepair = file.reread { read in
      switch read {
      case .appended(let appended): (changes, handlers) = adopt(appended)
      case .reloaded(let loaded): (changes, handlers) = adopt(loaded)
      }
      // Under the file's lock: a re-read after this one finds this thread telling.
      if !changes.isEmpty { state.withLock { $0.telling.append(me) } }
    }
    if needsRepair { requestJournalRepair() }
    if !changes.isEmpty {
      #if DEBUG
      if let hook = Self.beforeTellingForTesting.withLock({ $0 }) { hook(path) }
      #endif
      for entry in handlers { entry.handler(.many(changes), .otherProcess) }
      state.withLock { st in
        if let index = st.telling.firstIndex(of: me) { st.telling.remove(at: index) }
      }
      told.lock()
      told.broadcast()
      told.unlock()
    }
    waitForOthersTelling(me)
    return changes
  }

  /// The change monitor's re-read of a store whose file an event named (see ``refresh()``),
  /// unless a commit of this process has put its plist in place and not yet left
  /// (``SuiteFile/hasRenamedOnAnotherThread()``): then the event is, but for a race with
  /// something that ignores the lock, that commit's own rename, which a re-read would wait for
  /// on the file's state (while the commit syncs the folder) only to find nothing new. It is
  /// left to the commit instead, which looks once it has left the gate (``commitLeftGate()``)
  /// and hands it back to the monitor when the file is not as it wrote it. So a process is
  /// woken once for its own commit, not twice. An event heard while a commit holds the lock
  /// but has not renamed yet is another writer's: re-read at once, as any event.
  ///
  /// Until the commit has looked (or the monitor has re-read), the event counts as one whose
  /// handling is under way (``DirectoryWatcher/Passes``): ``hasChanged(since:)`` looks at the
  /// file meanwhile, as while the monitor handles any event.
  func refreshHeard() {
    let me = ObjectIdentifier(self)
    let left = Self.heardWhileWriting.withLock { heard -> Bool in
      // Under this lock, as the commit's look after it left the gate: either the commit is
      // in the gate now, and finds this store in the list when it leaves, or it has left.
      guard file.hasRenamedOnAnotherThread() else { return false }
      if !heard.contains(me) {
        heard.append(me)
        DirectoryWatcher.Passes.begin()
      }
      return true
    }
    #if DEBUG
    if left, let hook = Self.leftToCommitForTesting.withLock({ $0 }) { hook(path) }
    #endif
    if !left { refresh() }
  }

  /// Called by a commit of this process once it has left the gate: what the change monitor
  /// heard of the file while the commit wrote it (``refreshHeard()``) was only the commit's own
  /// write when the file is as this process last saw it (``SuiteFile/isAsLastSeen()``);
  /// otherwise the monitor re-reads it, on its own thread, as it would have.
  func commitLeftGate() {
    let me = ObjectIdentifier(self)
    let heard = Self.heardWhileWriting.withLock { heard -> Bool in
      guard !heard.isEmpty, let index = heard.firstIndex(of: me) else { return false }
      heard.remove(at: index)
      return true
    }
    guard heard else { return }
    if file.isAsLastSeen() {
      DirectoryWatcher.Passes.end()
      return
    }
    // Handed back: the monitor ends the pass once it has handled the store again.
    if let hearAgain = Self.hearAgain.withLock({ $0 }), hearAgain(self) { return }
    DirectoryWatcher.Passes.end()
    refresh()
  }

  /// Hands a store back to the change monitor, which re-reads it on its own thread and then
  /// ends one ``DirectoryWatcher/Passes`` pass; `false` when it cannot (its thread has ended).
  /// Installed by the monitor, which calls ``refreshHeard()``: Storage does not call up into
  /// Sync.
  static let hearAgain = Mutex<(@Sendable (SuiteStore) -> Bool)?>(nil)

  /// The stores whose events the change monitor left to a commit of this process writing
  /// their file (see ``refreshHeard()``): one at a time, mostly none.
  private static let heardWhileWriting = Mutex<[ObjectIdentifier]>([])

  #if DEBUG
  /// For tests: called on the monitor's thread with the store's path when an event was left
  /// to the commit writing the file.
  static let leftToCommitForTesting = Mutex<(@Sendable (String) -> Void)?>(nil)
  #endif

  /// Makes room for a re-read's telling thread now (an observer is being added), not in the
  /// first change heard: the first array of its type costs the runtime its metadata (about
  /// 11 k instructions), which would fall in the window where every watching process is being
  /// told of one write.
  func prepareTelling() {
    state.withLock { if $0.telling.capacity == 0 { $0.telling.reserveCapacity(1) } }
    Self.prepareAdoption()
  }

  /// Pays now, once per process, what the first re-read that finds a new version of a file
  /// would otherwise pay in the window where every watching process is being told of one
  /// write: the runtime's look-ups by mangled name of the types its copies of the values go
  /// through (four demanglings, about 28 k instructions the first time: more than half of what
  /// a later change heard costs), and the list of events left to a commit (see
  /// ``refreshHeard()``).
  private static func prepareAdoption() {
    guard !adoptionPrepared.exchange(true, ordering: .relaxed) else { return }
    // Each metadata reference is a look-up through its type's cache, which the copies share;
    // folded into a stored value so that none is optimised away.
    var seen = ObjectIdentifier(SuiteValues?.self).hashValue
    seen ^= ObjectIdentifier(BinaryPropertyListIndex?.self).hashValue
    seen ^= ObjectIdentifier(Set<String>.self).hashValue
    seen ^= ObjectIdentifier([String: PropertyListValue].self).hashValue
    preparedTypes.store(seen, ordering: .relaxed)
    heardWhileWriting.withLock { _ in }
  }

  private static let adoptionPrepared = Atomic(false)
  private static let preparedTypes = Atomic(0)

  /// How long a re-read waits for other threads' telling at most (see ``refresh()``).
  static let tellingBound: TimeInterval = 2

  #if DEBUG
  /// For tests: called with the store's path by a re-read that has put changes in memory,
  /// before it tells the handlers.
  static let beforeTellingForTesting = Mutex<(@Sendable (String) -> Void)?>(nil)
  /// For tests: called with the store's path by a re-read about to wait for another thread's
  /// telling.
  static let waitingForTellingForTesting = Mutex<(@Sendable (String) -> Void)?>(nil)
  #endif

  /// Waits until no thread but `me` is telling a re-read's changes, ``tellingBound`` at most.
  /// (The condition's lock is taken before the state's, never the other way round.)
  private func waitForOthersTelling(_ me: Threads.Identity) {
    func othersTelling() -> Bool { state.withLock { $0.telling.contains { $0 != me } } }
    guard othersTelling() else { return }
    #if DEBUG
    if let hook = Self.waitingForTellingForTesting.withLock({ $0 }) { hook(path) }
    #endif
    let deadline = Date(timeIntervalSinceNow: Self.tellingBound)
    told.lock()
    defer { told.unlock() }
    while othersTelling() {
      if !told.wait(until: deadline) { return }
    }
  }

  /// The lock file may have been removed or replaced at its path (the change monitor heard
  /// an entry by its name, or may have missed events): the next re-read looks at the path.
  func lockFileMayHaveMoved() { file.lockFileMayHaveMoved() }

  /// Reads the file once its protected data can be read again (see
  /// `SuiteStore+Protection.swift`): what is on disk goes under this process's pending
  /// changes, which then land key by key, merged with what other processes wrote (never as
  /// a replacement of the domain); the change handlers hear every value that changed.
  func loadAfterProtection() throws(AppGroupsError) {
    var changes: [StoredChange] = []
    var handlers: [ChangeHandlerEntry] = []
    try file.reload(if: { isUnavailable.load(ordering: .acquiring) }) { (loaded: SuiteValues) in
      (changes, handlers) = adopt(loaded)
      unavailability.withLock { $0 = nil }
      isUnavailable.store(false, ordering: .releasing)
    }
    if !changes.isEmpty {
      for entry in handlers { entry.handler(.many(changes), .otherProcess) }
    }
    let schedule = state.withLock { st in
      st.flushScheduled = !st.pending.isEmpty || st.replacement != nil
      return st.flushScheduled
    }
    if schedule { scheduleFlush() }
    releaseHold()  // the scheduled flush holds the store now
  }

  /// Installs the changes appended to the journal under this process's pending changes.
  /// Called by the file's re-read, which holds its state.
  private func adopt(_ appended: [SuiteJournal.Change]) -> ([StoredChange], [ChangeHandlerEntry]) {
    state.withLock { st in
      var changes: [StoredChange] = []
      if st.replacement == nil {
        let mine = st.pending.isEmpty ? [] : Set(st.pending.map(\.key))
        for new in appended where !mine.contains(new.key) {
          if let change = st.install(new.value, forKey: new.key) { changes.append(change) }
        }
      }
      return (changes, st.changeHandlers)
    }
  }

  /// Installs freshly read values under this process's pending changes. Called by the file's
  /// re-read, which holds its state.
  private func adopt(_ loaded: SuiteValues) -> ([StoredChange], [ChangeHandlerEntry]) {
    state.withLock { st in
      // Nothing of this process's on top (a watching process's usual re-read): the values
      // read are installed as they are, not copied into a variable first.
      if st.replacement == nil && st.pending.isEmpty {
        let changes = st.values.changes(to: loaded)
        st.values = loaded
        st.knownSizeEstimate = nil
        return (changes, st.changeHandlers)
      }
      var values = loaded
      if let replacement = st.replacement { values = SuiteValues(replacement.values) }
      for change in st.pending { values[change.key] = change.value }
      // Two indexed files are compared key by key as bytes; only the keys that differ are decoded.
      let changes = st.values.changes(to: values)
      st.values = values
      st.knownSizeEstimate = nil
      return (changes, st.changeHandlers)
    }
  }

  /// Whether the file or its token moved since this process last read or wrote it (see
  /// ``SuiteFile/hasChanged()``); never while its protected data cannot be read.
  func hasChangedOnDisk() -> Bool {
    if isUnavailable.load(ordering: .acquiring) { return false }
    return file.hasChanged()
  }

  /// The suite's last-update token: monotonic, persistent, moved by every commit and by an
  /// outside edit of the file.
  func token() -> UInt64 { file.token() }

  /// Whether the token moved, or the file changed, since `token` was read (see
  /// ``SuiteFile/hasChanged(since:)``).
  func hasChanged(since token: UInt64) -> Bool { file.hasChanged(since: token) }

  /// The token this process last saw.
  var lastSeenToken: UInt64 { file.lastSeenToken }

  // MARK: The journal

  /// Schedules a commit that repairs the journal (``SuiteFile/needsJournalRepair(_:)``), even
  /// with no change pending.
  private func requestJournalRepair() {
    let schedule = state.withLock { st in
      st.repairPending = true
      defer { st.flushScheduled = true }
      return !st.flushScheduled
    }
    if schedule { scheduleFlush() }
  }
}

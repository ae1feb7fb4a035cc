import Foundation
internal import Synchronization

// The suite's last-update token (see ``SuiteLockFile``): read, repaired, moved for an outside
// edit, and compared without a system call while the change monitor vouches for the file.
extension SuiteFile {
  // MARK: The token

  /// Whether an inotify watch (not polling) covers the folder: set by the change monitor.
  var watchedByKernel: Bool {
    get { coverage.load(ordering: .acquiring) & 1 == 1 }
    set {
      // Before the coverage is seen: what happened to the lock file's path before the watch
      // queued no event (see ``SuiteLockFile/readAtPath(covered:)``).
      lockFile?.pathMayHaveChanged()
      var now = coverage.load(ordering: .acquiring)
      while (now & 1 == 1) != newValue {
        let (exchanged, found) = coverage.compareExchange(
          expected: now, desired: now &+ 1, ordering: .acquiringAndReleasing)
        if exchanged {
          // A look made before the watch came (or after it went) vouches for nothing.
          described.store(0, ordering: .releasing)
          return
        }
        now = found
      }
    }
  }

  /// Whether the suite changed on disk since `token` was read (``token()``), without a system
  /// call when nothing changed and the change monitor vouches for the file:
  ///
  /// - The token is read from the lock file's page (shared memory). Another token: changed.
  ///   Every commit of every process moves it before it is acknowledged, so a commit that
  ///   returned before this call is always seen. (A commit still between its rename and its
  ///   token is not yet acknowledged: this call comes before it.)
  /// - The same token answers "unchanged" with no `stat(2)` only when (1) a kernel watch
  ///   covers the folder and covered it when this process last looked; (2) at that look, under
  ///   `commit`, the record with this token described the plist this process then read or
  ///   wrote (``describe(_:coverage:_:)``); and (3) the monitor's thread is not between reading
  ///   events from the kernel and having handled them (``DirectoryWatcher/Passes``), before
  ///   and after the reads. Every change of the plist after that look queues an event: until
  ///   the monitor reads it, the change is not yet heard and this call comes before it; once
  ///   it has read it, (3) sends the call to the slow path; once it has handled it, the
  ///   re-read found a plist the record does not describe (an outside edit, which moves no
  ///   token, an unreadable file, a plist removed with its folder) and cleared (2), or a new
  ///   record that does (a commit, whose token then differs).
  /// - Otherwise, as ``token()`` answers: a `stat(2)`, and the token moved for an outside
  ///   edit. So an edit that ignores the lock shows once the monitor has read its event (at
  ///   once without a kernel watch).
  func hasChanged(since token: UInt64) -> Bool {
    if let lockFile, coverage.load(ordering: .acquiring) & 1 == 1 {
      let pass = DirectoryWatcher.Passes.idle()
      if let pass, let now = lockFile.token {
        if now != token { return true }
        if described.load(ordering: .acquiring) == now, DirectoryWatcher.Passes.stillIdle(since: pass) {
          return false
        }
      }
    }
    return self.token() != token
  }

  /// Whether the file or its token moved since this process last read or wrote it: one token
  /// read from shared memory, and a `stat(2)` only when no kernel watch covers the folder; no
  /// parsing.
  func hasChanged() -> Bool {
    let seen = seenToken.load(ordering: .acquiring)
    if let lockFile, lockFile.token != seen { return true }
    // Every commit moves the token. An outside edit does not, but while a kernel watch covers
    // the folder the change monitor hears of it and re-reads by itself: no stat(2) is needed.
    if watchedByKernel { return false }
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
    let start = FileSystem.monotonicNanoseconds()
    var deadline = start &+ Self.tokenWaitBound
    var holder = LockedFile.HolderLook()
    var pause = 20_000  // 20 µs, doubling to 1 ms
    let coverage = self.coverage.load(ordering: .acquiring)
    while true {
      guard let record = lockFile.read() else {
        // A writer died in the middle of moving the token (its sequence is left odd): repair
        // it if no commit is in flight; else answer the last token seen, never going back.
        return repairToken(lockFile) ?? lastSeenToken
      }
      let current = try? FileSystem.identity(ofPath: path)
      if record.identity == current {
        describeIfFree(record, coverage: coverage)
        return record.token
      }
      // The file is not the version the token describes: an outside edit (or
      // a commit in flight). Move the token if no commit is in flight.
      // The file lock is shared by this process's threads: only with the gate may it be taken.
      let moved: UInt64? = {
        guard tryEnterGate() else { return nil }
        defer { leaveGate() }
        guard lockFile.tryLock() else { return nil }
        defer { lockFile.unlock() }
        guard let again = lockFile.read() else { return nil }
        let now = try? FileSystem.identity(ofPath: path)
        if again.identity == now { return again.token }
        let moved = lockFile.advance(to: now)
        describeIfFree(SuiteLockFile.Record(token: moved, identity: now, journal: .noJournal), coverage: coverage)
        return moved
      }()
      if let moved { return moved }
      // A commit is in flight, here or in another process: its token is next. Past the bound,
      // wait on while that commit makes progress (a loaded machine can hold a writer between
      // its rename and its token for longer than the bound), up to the ceiling; a writer
      // stopped there costs the bound and gets the older token, which only makes a consumer
      // read again.
      let now = FileSystem.monotonicNanoseconds()
      if now >= deadline {
        guard now &- start < Self.tokenWaitCeiling, lockFile.holderProgressed(since: &holder) else {
          return record.token
        }
        deadline = now &+ Self.tokenWaitBound
      }
      Threads.pause(nanoseconds: pause)
      pause = min(pause * 2, 1_000_000)
    }
  }

  /// Records that `record` describes the plist this process last read or wrote (`cs`), when a
  /// kernel watch covered the folder from before the look (`coverage`, read before it) until
  /// now; else that no record is known to. Call holding `commit`.
  func describe(_ record: SuiteLockFile.Record?, coverage: UInt64, _ cs: CommitState) {
    guard coverage & 1 == 1, let record, record.identity == cs.identity, cs.unreadableIdentity == nil else {
      described.store(0, ordering: .releasing)
      return
    }
    described.store(record.token, ordering: .releasing)
    // The coverage changed meanwhile: its change cleared `described` before this store, or
    // will after it; either way nothing is vouched for.
    if self.coverage.load(ordering: .acquiring) != coverage { described.store(0, ordering: .releasing) }
  }

  /// ``describe(_:coverage:_:)`` for a record found describing the plist in place, when
  /// this process's state is free now (never waited for: a commit holds it for its write, and
  /// an observer may call this while a re-read holds it) and holds that plist.
  private func describeIfFree(_ record: SuiteLockFile.Record, coverage: UInt64) {
    _ = commit.withLockIfAvailable { cs in
      if record.identity == cs.identity { describe(record, coverage: coverage, cs) }
    }
  }

  static let tokenWaitBound: UInt64 = 20_000_000
  /// How long ``token()`` waits at most for a commit in flight that makes progress.
  static let tokenWaitCeiling: UInt64 = 1_000_000_000

  /// Moves a token whose last update never finished forward, under the lock: a live writer
  /// holds the lock while it updates, so a torn record seen under it is a dead writer's.
  private func repairToken(_ lockFile: SuiteLockFile) -> UInt64? {
    // The file lock is shared by this process's threads: only with the gate may it be taken.
    guard tryEnterGate() else { return nil }
    defer { leaveGate() }
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
}

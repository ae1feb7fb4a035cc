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
  ///
  /// The lock file is read through optional chaining on the stored reference, not bound to a
  /// name of its own: a binding is a copy, which cost each call a retain and a release (two
  /// atomic instructions, callgrind).
  func hasChanged(since token: UInt64) -> Bool {
    if coverage.load(ordering: .acquiring) & 1 == 1, let pass = DirectoryWatcher.Passes.idle(),
      let now = lockFile?.token
    {
      if now != token { return true }
      if described.load(ordering: .acquiring) == now, DirectoryWatcher.Passes.stillIdle(since: pass) {
        return false
      }
    }
    return self.token() != token
  }

  /// Whether the file or its token moved since this process last read or wrote it: one token
  /// read from shared memory, and a `stat(2)` only when no kernel watch covers the folder; no
  /// parsing.
  func hasChanged() -> Bool {
    let seen = seenToken.load(ordering: .acquiring)
    // Optional chaining, not a binding (see ``hasChanged(since:)``): no retain.
    if lockFile != nil, lockFile?.token != seen { return true }
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
  ///
  /// When the file in place is not the one the token describes and another holds the lock (a
  /// commit between its rename and its token, or in the middle of moving it), this waits for
  /// that commit's token, so that a token read in an observer describes the values it was told
  /// of. It waits the bound, then on while the lock's holder makes progress or is a live
  /// thread of another process (asleep on a lock of its own process under load, say), up to
  /// the ceiling. A holder that is stopped, gone, or a thread of this process asleep (which
  /// may be waiting on the caller) ends the wait at the bound, with the older token: that
  /// only makes a consumer read again.
  func token() -> UInt64 {
    guard let lockFile else {
      return UInt64(bitPattern: (try? FileSystem.identity(ofPath: path))?.modified ?? 0)
    }
    let start = FileSystem.monotonicNanoseconds()
    var deadline = start &+ Self.tokenWaitBound
    var holder = LockedFile.HolderLook()
    var pause = 20_000  // 20 µs, doubling to 1 ms
    var lastPass = false
    let coverage = self.coverage.load(ordering: .acquiring)
    while true {
      let record = lockFile.read()
      if let record {
        let current = try? FileSystem.identity(ofPath: path)
        if record.identity == current {
          describeIfFree(record, coverage: coverage)
          return record.token
        }
        // The file is not the version the token describes: an outside edit (or a commit in
        // flight). Move the token if no commit is in flight.
        if let moved = moveTokenForOutsideEdit(lockFile, coverage: coverage) { return moved }
      } else if let repaired = repairToken(lockFile) {
        // A writer died in the middle of moving the token (its sequence is left odd), and no
        // commit is in flight: repaired. Else a writer is moving it now: wait as below.
        return repaired
      }
      // A commit is in flight, here or in another process: its token is next.
      let now = FileSystem.monotonicNanoseconds()
      if now >= deadline {
        if now &- start < Self.tokenWaitCeiling,
          lockFile.holderProgressed(since: &holder) || holder.livesElsewhere
        {
          deadline = now &+ Self.tokenWaitBound
          lastPass = false
        } else if lastPass {
          // Never going back: the last token seen when the record is torn.
          return record?.token ?? lastSeenToken
        } else {
          // One more pass at once before giving up: the holder may have let go between this
          // pass's look at the lock and the look at the holder, which then saw none.
          lastPass = true
          continue
        }
      }
      Threads.pause(nanoseconds: pause)
      pause = min(pause * 2, 1_000_000)
    }
  }

  /// Moves the token for an outside edit of the file, under the lock, when no commit is in
  /// flight (the lock and this process's gate are free); `nil` otherwise. The token that
  /// describes the file in place when the record already does.
  private func moveTokenForOutsideEdit(_ lockFile: SuiteLockFile, coverage: UInt64) -> UInt64? {
    // The file lock is shared by this process's threads: only with the gate may it be taken.
    guard tryEnterGate() else { return nil }
    defer { leaveGate() }
    guard lockFile.tryLock() else { return nil }
    defer { lockFile.unlock() }
    guard let again = lockFile.read() else { return nil }
    let now = try? FileSystem.identity(ofPath: path)
    if again.identity == now { return again.token }
    let moved = lockFile.advance(to: now, anotherVersion: journalPublished(afterOutsideEditTo: now, before: again))
    describeIfFree(SuiteLockFile.Record(token: moved, identity: now, journal: .noJournal), coverage: coverage)
    return moved
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
    let current = try? FileSystem.identity(ofPath: path)
    let token = lockFile.advance(
      to: current, anotherVersion: journalPublished(afterOutsideEditTo: current, before: nil))
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

  /// Whether a commit moved the token since this process last read or wrote the suite (one
  /// that this process has not heard yet: it was suspended, or its change monitor is busy):
  /// one read of shared memory, no system call. The values in memory may then not be the
  /// ones on disk.
  var tokenMovedSinceSeen: Bool {
    lockFile != nil && lockFile?.token != seenToken.load(ordering: .acquiring)
  }

  // MARK: This process's own commit, heard

  /// Whether a commit of this process, on another thread, has put its plist in place and not
  /// yet left: it holds the gate and the file lock (``enterGate(before:)``), and the token
  /// moved past the one this process last saw. While this process holds the lock, only that
  /// commit moves the token (a reader here moves it only with the gate), right after its
  /// rename, and this process's token follows it once the commit has written.
  ///
  /// Before that rename, an event that names the plist is not the commit's own: something
  /// that ignores the lock replaced the file. Re-read at once (as the commit's closure runs
  /// outside the file's state), it is in memory when the commit checks the file before its
  /// rename; left to the commit, the commit would find the file replaced and start over,
  /// running an atomic update's closure again under the lock.
  func hasRenamedOnAnotherThread() -> Bool {
    inGate { gateOwnerHasFileLock && gateOwner != nil && gateOwner != .current }
      && lockFile?.token != seenToken.load(ordering: .acquiring)
  }

  /// Whether the file, its journal and its token are as this process last read or wrote them:
  /// the token this process saw is the lock file's (no commit since: every commit moves it),
  /// its record describes the plist this process holds, and that plist is still the one at
  /// the path (no outside edit or removal since). A re-read would find nothing then. One
  /// `lstat(2)`, under the file's state.
  func isAsLastSeen() -> Bool {
    guard let lockFile else { return false }
    let coverage = self.coverage.load(ordering: .acquiring)
    return commit.withLock { cs in
      guard cs.unreadableIdentity == nil, cs.journalDamage.isEmpty,
        let record = lockFile.readAtPath(covered: coverage & 1 == 1),
        record.token == seenToken.load(ordering: .acquiring), record.identity == cs.identity,
        let current = try? FileSystem.identity(ofPath: path)
      else { return false }
      return current == cs.identity
    }
  }
}

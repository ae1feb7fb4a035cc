import Foundation
internal import Synchronization

/// A suite's files on disk and the protocol around them: the plist, its journal and its lock
/// file. It owns what this process knows of them (the values last read or written, which
/// version, how far the journal was read, what is damaged), and does every step that touches
/// them: the lock session, re-reading and catching up the journal, appending or rewriting,
/// publishing the token, repair and quarantine.
///
/// Its interface is small: ``load()``, a re-read (``reread(_:)``), a commit that returns an
/// outcome (``commit(_:onLocked:finish:)``), and the token. Memory, the pending changes and
/// scheduling are ``SuiteStore``'s. Order of locks: the store's gate, the file lock, this
/// type's `state`, then the store's state.
final class SuiteFile: Sendable {
  let path: String
  let options: SuiteStore.Options
  let lockFile: SuiteLockFile?
  /// This process's committers' gate, owned by the store: the token's repair takes the file
  /// lock only through it (the lock is shared by the process's threads).
  private let gate: CommitGate

  /// Set by the change monitor while an inotify watch (not polling) covers the folder.
  let watchedByKernel = Atomic<Bool>(false)

  /// The token this process last saw (read or moved): an atomic of its own, so that the
  /// resume check reads it without a lock.
  private let seenToken = Atomic<UInt64>(0)

  /// What this process knows of the file. Held for the length of a read or a write, never
  /// while waiting for the file lock, so that refreshes are not held up by a waiting commit.
  struct CommitState: Sendable {
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

  let commit = Mutex(CommitState())

  /// Opens the suite's lock file (none for a read-only store); reads nothing.
  init(path: String, options: SuiteStore.Options, gate: CommitGate) throws(AppGroupsError) {
    self.path = path
    self.options = options
    self.gate = gate
    lockFile = options.readOnly ? nil : try SuiteLockFile.opening(plistPath: path, makeFolder: options.makeFolder)
  }

  // MARK: Reading

  /// Reads the file as the suite opens (an unreadable one moved aside under the lock); with
  /// `reading` false (its protected data cannot be read yet: ``reload(if:_:)`` reads it
  /// later), reads nothing. Either way the token is seen from now on.
  /// - Returns: the values, and whether the journal is damaged so that a commit must repair it.
  func load(reading: Bool = true) throws(AppGroupsError) -> (
    values: [String: PropertyListValue], needsRepair: Bool
  ) {
    let loaded = try commit.withLock { cs throws(AppGroupsError) -> ([String: PropertyListValue], Bool) in
      guard reading else { return ([:], false) }
      let loaded = try load(&cs, mode: .open) ?? [:]
      cs.persisted = loaded
      return (loaded, needsJournalRepair(&cs))
    }
    seenToken.store(lockFile?.token ?? 0, ordering: .releasing)
    return loaded
  }

  /// The values this process last read from or wrote to the file.
  var persisted: [String: PropertyListValue] { commit.withLock { $0.persisted } }

  /// What a re-read found.
  enum Reread {
    /// Records appended to the journal of the version read: its changes, in order.
    case appended([SuiteJournal.Change])
    /// The file read again whole.
    case reloaded([String: PropertyListValue])
  }

  /// Re-reads the file if it changed since this process last read or wrote it: only what was
  /// appended to the journal of the version read, else the whole file. `adopt` is called with
  /// what was read while this type's state is held, so that no commit of this process
  /// installs its own values in between. An unreadable file (perhaps one being written in
  /// place right now) leaves the values as they were: the next event reads it again; why is
  /// said once.
  /// - Returns: whether the journal is damaged so that a commit must repair it.
  func reread(_ adopt: (Reread) -> Void) -> Bool {
    // A lock file removed or replaced under this process: read the token from the new one.
    lockFile?.refreshIfReplaced()
    return commit.withLock { cs in
      let current = try? FileSystem.identity(ofPath: path)
      let token = lockFile?.token
      // The token read is seen once what it stands for is in memory (not when a re-read failed).
      func seen() { if let token { seenToken.store(token, ordering: .releasing) } }
      if cs.unreadableIdentity != nil && cs.unreadableIdentity == current {
        seen()
        return false
      }
      if current == cs.identity && cs.unreadableIdentity == nil && cs.journalDamage.isEmpty {
        // The plist is the version read: only its journal may have grown.
        let appended: [SuiteJournal.Change]?
        do throws(AppGroupsError) {
          appended = try catchUpJournal(&cs)
        } catch {
          reportRefreshFailure(error, &cs)
          return false
        }
        if let appended {
          if !appended.isEmpty { adopt(.appended(appended)) }
          seen()
          return false
        }
      }
      let read: [String: PropertyListValue]?
      do throws(AppGroupsError) {
        read = try load(&cs, mode: .refresh)
      } catch {
        reportRefreshFailure(error, &cs)
        return false
      }
      cs.refreshFailure = nil
      guard let loaded = read else { return false }
      cs.persisted = loaded
      adopt(.reloaded(loaded))
      seen()
      return needsJournalRepair(&cs)
    }
  }

  /// Reads the file whole, as at open, and hands the values to `adopt` while this type's
  /// state is held (see ``reread(_:)``), if `needed` still says so under it; for a store
  /// whose file could not be read at open.
  func reload(
    if needed: () -> Bool, _ adopt: ([String: PropertyListValue]) -> Void
  ) throws(AppGroupsError) {
    try commit.withLock { cs throws(AppGroupsError) in
      guard needed() else { return }
      let loaded = try load(&cs, mode: .open) ?? [:]
      cs.persisted = loaded
      adopt(loaded)
      if let token = lockFile?.token { seenToken.store(token, ordering: .releasing) }
    }
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

  // MARK: Committing

  /// What a commit asks of the file.
  struct CommitRequest {
    /// This process's changes, in the order they were made (later ones win).
    var pending: [PendingChange]
    /// A whole-domain replacement, applied before `pending`.
    var replacement: [String: PropertyListValue]?
    /// An atomic update's changes, computed from the merged values (the file's under this
    /// process's); called without this type's state held, so that it may read the store.
    var extra: (([String: PropertyListValue]) -> [String: PropertyListValue?])?
    /// Whether a reader found the journal damaged: read it all again, and repair it.
    var repair: Bool
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
  }

  /// How one pass of a commit ended.
  enum CommitOutcome {
    /// The changes are on disk (or there was nothing to write).
    case committed
    /// Something that ignores the lock replaced the lock file or the plist during the pass:
    /// nothing was written; the pass starts over.
    case raced(String)
  }

  /// One pass of a commit: under the lock (`onLocked` is called once it is held), re-read the
  /// file if it moved, apply the request's changes key by key on top of it, write durably
  /// (appending to the journal, or rewriting the plist), move the token; then `finish`, still
  /// under the lock, so that this process's memory takes the new values before any re-read
  /// of a later commit of another process.
  ///
  /// - Throws: `.lockTimeout` (see ``LockedFile/lock(until:bound:whileHolderProgresses:doing:)``)
  ///   or `.io`; nothing was written then.
  func commit(
    _ request: CommitRequest, onLocked: () -> Void, finish: (Committed) -> Void
  ) throws(AppGroupsError) -> CommitOutcome {
    guard let lockFile else { return .committed }
    let pending = request.pending
    let replacement = request.replacement
    let repair = request.repair
    try lockFile.lock(
      until: request.deadline, bound: request.timeout, whileHolderProgresses: request.ceiling, doing: path)
    defer { lockFile.unlock() }
    onLocked()
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
    if let extra = request.extra {
      var merged = commit.withLock { replacement ?? $0.persisted }
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
        replaced = replacement != cs.persisted
        next = replacement
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
    if let token = lockFile.token { seenToken.store(token, ordering: .releasing) }
    finish(Committed(values: next, reloaded: didReload, extra: extraChanges))
    return .committed
  }

  // MARK: The token

  /// Whether the file or its token moved since this process last read or wrote it: one token
  /// read from shared memory, and a `stat(2)` only when no kernel watch covers the folder; no
  /// parsing.
  func hasChanged() -> Bool {
    let seen = seenToken.load(ordering: .acquiring)
    if let lockFile, lockFile.token != seen { return true }
    // Every commit moves the token. An outside edit does not, but while a kernel watch covers
    // the folder the change monitor hears of it and re-reads by itself: no stat(2) is needed.
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
    let start = FileSystem.monotonicNanoseconds()
    var deadline = start &+ Self.tokenWaitBound
    var holder = LockedFile.HolderLook()
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

  static let tokenWaitBound: UInt64 = 20_000_000
  /// How long ``token()`` waits at most for a commit in flight that makes progress.
  static let tokenWaitCeiling: UInt64 = 1_000_000_000

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
          whileHolderProgresses: FileSystem.deadline(after: SuiteStore.progressCeiling))
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

}

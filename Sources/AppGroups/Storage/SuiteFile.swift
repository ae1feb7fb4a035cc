import Foundation
internal import Synchronization

/// A suite's files on disk and the protocol around them: the plist, its journal and its lock
/// file. It owns what this process knows of them (the values last read or written, which
/// version, how far the journal was read, what is damaged), and does every step that touches
/// them: the lock session, re-reading and catching up the journal, appending or rewriting,
/// publishing the token, repair and quarantine.
///
/// Its interface is small: ``load()``, a re-read (``reread(_:)``), the gate and a commit
/// that returns an outcome (``commit(_:lockWait:finish:)``), and the token. Memory,
/// the pending changes and scheduling are ``SuiteStore``'s. Order of locks: the gate, the
/// file lock, this type's `state`, then the store's state.
final class SuiteFile: Sendable {
  let path: String
  let options: SuiteStore.Options
  let lockFile: SuiteLockFile?
  /// The gate of this process's committers (see ``enterGate(before:)``, SuiteFile+Gate.swift):
  /// the two below are read and written only there, while `gate` is locked.
  let gate = NSCondition()
  nonisolated(unsafe) var gateOwner: Threads.Identity?
  nonisolated(unsafe) var gateOwnerHasFileLock = false
  /// A commit said it waits for the lock: the next one to take it says the wait is over.
  let lockWaitReported = Atomic(false)

  /// Whether an inotify watch (not polling) covers the folder, as the change monitor sets it,
  /// and since when: odd while it does, moved on by each change (see ``hasChanged(since:)``).
  let coverage = Atomic<UInt64>(0)

  /// The token whose record this process found describing the plist it last read or wrote,
  /// while a kernel watch covered the folder from before it looked; 0: none. Set only while
  /// holding `commit` (so a later look never loses to an earlier one) and cleared when the
  /// coverage changes. See ``hasChanged(since:)``.
  let described = Atomic<UInt64>(0)

  /// The token this process last saw (read or moved): an atomic of its own, so that the
  /// resume check reads it without a lock.
  let seenToken = Atomic<UInt64>(0)

  /// What this process knows of the file. Held for the length of a read or a write, never
  /// while waiting for the file lock, so that refreshes are not held up by a waiting commit.
  struct CommitState: Sendable {
    /// The values of the file as last read or written (indexed, as read, until this
    /// process's first commit decodes them; see ``SuiteValues``). Each change moves `version`.
    var persisted = SuiteValues() { didSet { version &+= 1 } }
    var version: UInt64 = 0
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

  /// Why the file cannot be written now (its device restarted), asked under the lock before
  /// a commit reads and just before it writes; `nil`: not a protected store (see
  /// `SuiteStore+Protection.swift`).
  let protectedDataReason: (@Sendable () -> String?)?

  /// Opens the suite's lock file (none for a read-only store); reads nothing.
  init(path: String, options: SuiteStore.Options) throws(AppGroupsError) {
    self.path = path
    self.options = options
    protectedDataReason = SuiteStore.protectionProbe(options)
    lockFile = options.readOnly ? nil : try SuiteLockFile.opening(plistPath: path, makeFolder: options.makeFolder)
  }

  // MARK: Reading

  /// Reads the file as the suite opens (an unreadable one moved aside under the lock); with
  /// `reading` false (its protected data cannot be read yet: ``reload(if:_:)`` reads it
  /// later), reads nothing. Either way the token is seen from now on.
  /// - Returns: the values, and whether the journal is damaged so that a commit must repair it.
  func load(reading: Bool = true) throws(AppGroupsError) -> (
    values: SuiteValues, needsRepair: Bool
  ) {
    let loaded = try commit.withLock { cs throws(AppGroupsError) -> (SuiteValues, Bool) in
      guard reading else { return ([:], false) }
      let loaded = try load(&cs, mode: .open) ?? [:]
      cs.persisted = loaded
      reportGoneJournal(cs)
      return (loaded, needsJournalRepair(&cs))
    }
    seenToken.store(lockFile?.token ?? 0, ordering: .releasing)
    return loaded
  }

  /// The values this process last read from or wrote to the file.
  var persisted: SuiteValues { commit.withLock { $0.persisted } }

  /// The lock file may have been removed or replaced at its path: the next re-read looks at
  /// the path (``SuiteLockFile/readAtPath(covered:)``).
  func lockFileMayHaveMoved() { lockFile?.pathMayHaveChanged() }

  /// What a re-read found.
  enum Reread {
    /// Records appended to the journal of the version read: its changes, in order.
    case appended([SuiteJournal.Change])
    /// The file read again whole.
    case reloaded(SuiteValues)
  }

  /// Re-reads the file if it changed since this process last read or wrote it: only what was
  /// appended to the journal of the version read, else the whole file. `adopt` is called with
  /// what was read while this type's state is held, so that no commit of this process
  /// installs its own values in between. An unreadable file (perhaps one being written in
  /// place right now) leaves the values as they were: the next event reads it again; why is
  /// said once.
  /// - Returns: whether the journal is damaged so that a commit must repair it.
  func reread(_ adopt: (Reread) -> Void) -> Bool {
    let coverage = self.coverage.load(ordering: .acquiring)
    return commit.withLock { cs in
      // Read once per pass: its token, and what it publishes of the journal. A lock file
      // removed or replaced under this process: from the new one.
      let record = lockFile?.readAtPath(covered: coverage & 1 == 1)
      // A record naming another version of the plist than the one read says that a commit
      // replaced it: it is read whole below, and its identity is not asked for first. Else the
      // identity (one look, which the read then goes by) tells whether only the journal grew.
      let replaced =
        cs.unreadableIdentity == nil && cs.journalDamage.isEmpty && record?.identity != nil
        && record?.identity != cs.identity
      let looked = replaced ? nil : try? FileSystem.linkEntry(path), current = looked?.identity
      // The token read is seen once what it stands for is in memory (not when a re-read failed).
      func seen() {
        if let token = record?.token { seenToken.store(token, ordering: .releasing) }
        describe(record, coverage: coverage, cs)
      }
      described.store(0, ordering: .releasing)
      if cs.unreadableIdentity != nil && cs.unreadableIdentity == current {
        seen()
        return false
      }
      if !replaced && current == cs.identity && cs.unreadableIdentity == nil && cs.journalDamage.isEmpty {
        // The plist is the version read: only its journal may have grown.
        let appended: [SuiteJournal.Change]?
        do throws(AppGroupsError) {
          appended = try catchUpJournal(&cs, record: record, outsideLock: true)
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
      let read: SuiteValues?
      do throws(AppGroupsError) {
        read = try load(&cs, mode: .refresh, record: record, looked: looked)
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
    if needed: () -> Bool, _ adopt: (SuiteValues) -> Void
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

  /// One pass of a commit, in the gate: under the lock (`lockWait`: how long the commit waited
  /// for the gate and the lock, set once it is held), re-read the
  /// file if it moved, apply the request's changes key by key on top of it, write durably
  /// (appending to the journal, or rewriting the plist), move the token; then `finish`, still
  /// under the lock, so that this process's memory takes the new values before any re-read
  /// of a later commit of another process.
  ///
  /// - Throws: `.lockTimeout` (see ``LockedFile/lock(until:bound:whileHolderProgresses:doing:)``)
  ///   or `.io`; nothing was written then.
  func commit(
    _ request: CommitRequest, lockWait: inout UInt64?,
    finish: (Committed) -> Void
  ) throws(AppGroupsError) -> CommitOutcome {
    guard let lockFile else { return .committed }
    let pending = request.pending
    let replacement = request.replacement
    let repair = request.repair
    try lockFile.lock(
      until: request.deadline, bound: request.timeout, whileHolderProgresses: request.ceiling, doing: path)
    defer { lockFile.unlock() }
    lockWait = FileSystem.monotonicNanoseconds() &- request.started
    try refuseIfProtected(doing: request.extra == nil ? nil : "an atomic update")
    inGate { gateOwnerHasFileLock = true }  // writing from now on, not waiting
    if lockWaitReported.exchange(false, ordering: .acquiringAndReleasing) {
      Diagnostics.report("\(path): lock acquired; the pending changes are being written")
    }
    TestHooks.whileHoldingLock?(path)
    let coverage = self.coverage.load(ordering: .acquiring)

    // 1. The file as it is now: another process may have committed.
    typealias Values = [String: PropertyListValue]
    var lockRecord: SuiteLockFile.Record?
    let reread: Result<Bool, AppGroupsError> = commit.withLock { cs in
      described.store(0, ordering: .releasing)
      let current: FileIdentity?
      do throws(SystemCallError) {
        current = try FileSystem.identity(ofPath: path)
      } catch {
        return .failure(AppGroupsError(io: error, "reading \(path)"))
      }
      // Read once per pass (no other process moves it while the lock is held).
      lockRecord = lockFile.read()
      do throws(AppGroupsError) {
        // The same version of the plist: only what others appended to its journal is read (all
        // of it again when a read outside the lock found it damaged: under the lock, damage is
        // told from a commit in flight).
        if current == cs.identity && cs.unreadableIdentity == nil && cs.journalDamage.isEmpty && !repair,
          let appended = try catchUpJournal(&cs, record: lockRecord)
        {
          return .success(!appended.isEmpty)
        }
        let before = cs.persisted
        cs.persisted = try load(&cs, mode: .commit, record: lockRecord) ?? [:]
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
    /// An update of the whole domain: its values, and the merged values it was computed from.
    var extraDomain: (values: Values, base: Values)?
    if let extra = request.extra {
      var merged = commit.withLock { replacement ?? $0.persisted.decoded }
      for change in pending { merged[change.key] = change.value }
      switch extra(merged) {
      case .keys(let changes): extraChanges = changes
      case .domain(let values): extraDomain = (values, merged)
      }
    }

    // 3. This process's changes, key by key, on top of the values on disk: in place (a small
    //    commit to a large domain copies nothing), each old value kept to put back if the
    //    write fails. Then write durably and move the token (skipped when nothing differs).
    //    Just before the commit point, make sure the lock is still the lock of the file at the
    //    path and the plist is still the version merged: else something that ignores the lock
    //    raced this commit, and the pass starts over rather than replace what it wrote.
    var race: String?
    /// Why the device refused the write at its commit point (it restarted during the pass).
    var refused: String?
    /// The token this pass moved to, describing the plist it leaves.
    var advanced: UInt64?
    func write(_ cs: inout CommitState) -> Result<Values, AppGroupsError> {
      var next: Values
      var replaced = false
      // The store's values are the file's with exactly `pending` on top (see
      // ``CommitRequest/memory``): taken as they are, not rebuilt key by key, for a rewrite.
      let memory = request.memory.flatMap {
        $0.version == cs.version && !journalMayTake(cs, pending.lazy.map(\.key)) ? $0 : nil
      }
      if let extraDomain {
        // The update's whole domain, computed from the file's values and `pending`: written as
        // it is, like a replacement, without a pass key by key.
        replaced = true
        next = extraDomain.values
      } else if let replacement {
        replaced = SuiteValues(replacement) != cs.persisted
        next = replacement
      } else if let memory {
        next = memory.values.decoded
      } else {
        next = cs.persisted.decoded
        cs.persisted = [:]  // `next` is then the one reference: changed in place
      }
      // A burst's commit: room for its keys at once, not grown step by step with every key
      // hashed again at each step (a 10,000-key fill's commit hashed its keys again 14 times).
      if pending.count > 64 && memory == nil { next.reserveCapacity(next.count + pending.count) }
      var undo: [(key: String, old: PropertyListValue?)] = []
      if memory == nil { undo.reserveCapacity(pending.count) }
      func apply(_ key: String, _ value: PropertyListValue?) {
        let old: PropertyListValue?
        if let value {
          old = next.updateValue(value, forKey: key)
        } else {
          old = next.removeValue(forKey: key)
        }
        if !PropertyListValue.identical(old, value) { undo.append((key, old)) }
      }
      if extraDomain == nil && memory == nil {
        for change in pending { apply(change.key, change.value) }
        for (key, value) in extraChanges { apply(key, value) }
      }
      // What this commit leaves as it was, when it does not land.
      func keepPersisted() {
        guard replacement == nil && extraDomain == nil && memory == nil else { return }
        for (key, old) in undo.reversed() {
          if let old { next[key] = old } else { next[key] = nil }
        }
        cs.persisted = SuiteValues(next)
      }
      // A key changed and changed back within the commit counts as a change (a rewrite of
      // the same values): telling that apart would cost a hash of every pending key.
      guard replaced || !undo.isEmpty || memory != nil || (cs.identity == nil && !next.isEmpty) || !cs.journalDamage.isEmpty
      else {
        keepPersisted()
        return .success(next)
      }
      let expected = cs.identity
      let path = self.path
      let check = { () throws(SystemCallError) -> Void in
        TestHooks.beforeRename?(path)
        refused = self.protectedDataReason?()
        if refused != nil {
          throw SystemCallError(call: "rename", path: path, .resourceTemporarilyUnavailable)
        }
        if !lockFile.stillLocksPath() {
          race = "the lock file \(lockFile.path) was replaced during the commit"
        } else if try FileSystem.identity(ofPath: path) != expected {
          race = "\(path) was replaced during the commit by a writer that did not take the lock"
        }
        if race != nil { throw SystemCallError(call: "rename", path: path, .resourceTemporarilyUnavailable) }
      }
      var append = replacement == nil && extraDomain == nil && memory == nil ? journalRecord(cs, next: next, undo: undo) : nil
      if append != nil, cs.journal == nil, let expected {
        // A journal is started: first, what lies at its path (a re-read does not look when the
        // lock file publishes none), so that nothing but an older version's journal is ever
        // renamed over; anything else is damage, which the rewrite keeps aside and says.
        do throws(SystemCallError) {
          if let damage = try readJournal(base: expected, after: nil, record: lockRecord, probing: true)?.damage,
            !damage.isEmpty
          {
            cs.journalDamage = damage
            append = nil
          }
        } catch {
          keepPersisted()
          return .failure(AppGroupsError(io: error, "reading \(SuiteJournal.path(of: path))"))
        }
      }
      if let expected, let (record, dead) = append {
        // A small commit to a large domain: appended to the journal, one `fdatasync(2)`.
        var published = false
        do throws(SystemCallError) {
          if let position = cs.journal {
            try check()
            try SuiteJournal.append(record, journalOf: path, at: position) { position in
              advanced = lockFile.advance(to: expected, journal: .init(length: position.end, inode: position.inode))
              cs.journal = position
            }
          } else {
            // The header names the plist by its bytes too, read again (once a compaction
            // cycle, not once a commit): a plist replaced since it was read races this commit.
            guard let content = try SuiteJournal.contentCheck(ofPlistAt: path, version: expected) else {
              race = "\(path) was replaced during the commit by a writer that did not take the lock"
              throw SystemCallError(call: "open", path: path, .resourceTemporarilyUnavailable)
            }
            cs.journal = try SuiteJournal.create(
              record, journalOf: path, base: expected, check: content, beforeRename: check
            ) {
              advanced = lockFile.advance(to: expected, journal: $0)
              published = true
            }
          }
        } catch {
          // A length published for a journal that did not take its place names none.
          if published {
            advanced = nil
            lockFile.advance(to: expected, journal: SuiteJournal.Published.noJournal)
          }
          keepPersisted()
          if let refused { return .failure(protectedDataRefusal(refused, request)) }
          if race == nil { race = temporaryRemovedByAnotherWriter(error, lockFile) }
          if race == nil && error.code == .resourceTemporarilyUnavailable {
            race = "\(SuiteJournal.path(of: path)) was replaced during the commit by a writer that did not take the lock"
          }
          if race != nil { return .success(next) }
          return .failure(AppGroupsError(io: error, "writing \(SuiteJournal.path(of: path))"))
        }
        cs.persisted = SuiteValues(next)
        cs.deadBytes = dead
        return .success(next)
      }
      do throws(AppGroupsError) {
        let identity = try PropertyListFile.write(
          next, to: path, notBefore: expected?.modified, beforeRename: check,
          afterRename: {
            TestHooks.afterRename?(path)
            advanced = lockFile.advance(to: $0, journal: SuiteJournal.Published.noJournal)
          })
        cs.identity = identity
        cs.unreadableIdentity = nil
        cs.deadBytes = 0
      } catch {
        keepPersisted()
        if race == nil && refused == nil {
          race = temporaryRemovedByAnotherWriter(error.cause as? SystemCallError, lockFile)
        }
        return .failure(refused.map { protectedDataRefusal($0, request) } ?? error)
      }
      cs.persisted = SuiteValues(next)
      retireJournal(&cs, folded: expected)
      return .success(next)
    }
    let written: Result<Values, AppGroupsError> = commit.withLock { cs in
      let written = write(&cs)
      if case .success = written, race == nil {
        // The plist this pass leaves, and the token that describes it: moved by this pass,
        // else the one read under the lock.
        describe(advanced.map { .init(token: $0, identity: cs.identity, journal: .noJournal) } ?? lockRecord,
          coverage: coverage, cs)
      }
      return written
    }
    if let race { return .raced(race) }
    let next: Values
    switch written {
    case .success(let values): next = values
    case .failure(let error): throw error
    }
    if let token = lockFile.token { seenToken.store(token, ordering: .releasing) }
    finish(Committed(values: next, reloaded: didReload, extra: extraChanges, domainBase: extraDomain?.base))
    return .committed
  }

  /// Why a commit whose `rename(2)` found its own temporary file gone (`ENOENT`, its folder
  /// still there) raced: another writer took the temporary for a killed writer's leftover and
  /// removed it. A writer that locked a lock file made again, after the one this commit holds
  /// was removed from the path, holds the lock too; a writer that ignores the lock may do the
  /// same. Nothing was renamed, so the pass starts over (under the lock now at the path) rather
  /// than fail the write; it fails, saying so, only when every attempt raced. `nil` for any
  /// other failure.
  private func temporaryRemovedByAnotherWriter(_ error: SystemCallError?, _ lockFile: SuiteLockFile) -> String? {
    guard let error, error.call == "rename", error.code == .noSuchFileOrDirectory,
      (try? FileSystem.identity(ofPath: FileSystem.folder(of: path))) != nil
    else { return nil }
    return lockFile.stillLocksPath()
      ? "the commit's temporary file was removed during the commit by a writer that did not take the lock"
      : "the lock file \(lockFile.path) was replaced during the commit (a writer holding the new one removed the commit's temporary file)"
  }

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
  /// `record` is the lock file's record read in this pass, if it was (it is read again when
  /// it is not for the version found); `looked`, what this pass's `lstat(2)` found at the path.
  ///
  /// Outside the lock, a commit that folds the journal into a new plist between the plist's
  /// read and its journal's would leave the old plist without the acknowledged commits its
  /// journal held: the file is read again while the token record, read after the journal (and
  /// only when it names another version, `stat(2)`), says the plist read was replaced (see
  /// ``SuiteFile/readingAgainWhileReplaced(plistAt:record:_:)``), as `groupctl` reads it.
  private func load(
    _ cs: inout CommitState, mode: LoadMode, record: SuiteLockFile.Record? = nil, looked: FileSystem.LinkEntry? = nil
  ) throws(AppGroupsError) -> SuiteValues? {
    // Holding the lock, no commit replaces the plist under the read.
    if mode == .commit { return try loadOnce(&cs, mode: mode, record: record, looked: looked) }
    return try SuiteFile.readingAgainWhileReplaced(plistAt: path, record: { lockFile?.read() }) {
      again throws(AppGroupsError) in
      // Read again: what this pass read before the plist was replaced is not used.
      let values = try loadOnce(&cs, mode: mode, record: again ? nil : record, looked: again ? nil : looked)
      // A journal was read only with a plist that could be read.
      return (values, values != nil && cs.unreadableIdentity == nil ? cs.identity : nil)
    }
  }

  /// One read of the file and its journal (see ``load(_:mode:record:looked:)``).
  private func loadOnce(
    _ cs: inout CommitState, mode: LoadMode, record: SuiteLockFile.Record? = nil, looked: FileSystem.LinkEntry? = nil
  ) throws(AppGroupsError) -> SuiteValues? {
    let holdingLock = mode == .commit
    // What lies at the journal's path is looked at on open, and while it is known damaged,
    // even when the lock file publishes no journal (see ``readJournal(base:after:record:probing:)``).
    let probing = mode == .open || !cs.journalDamage.isEmpty
    let identity: FileIdentity
    let reason: String
    do throws(SystemCallError) {
      // Consumed, so that the values bound below are the one reference to their storage and
      // the journal's changes go into it in place, not into a copy of the whole domain.
      let contents = try PropertyListFile.read(path, indexing: true, looked: looked)
      switch consume contents {
      case .missing:
        cs.identity = nil
        cs.unreadableIdentity = nil
        cs.journal = nil
        cs.journalDamage = []
        return [:]
      case .indexed(let index, let read):
        cs.identity = read
        cs.unreadableIdentity = nil
        var values = SuiteValues(indexed: index)
        try applyJournal(to: &values, base: read, record: record, probing: probing, &cs)
        return values
      case .values(let decoded, let read):
        cs.identity = read
        cs.unreadableIdentity = nil
        var values = SuiteValues(decoded)
        try applyJournal(to: &values, base: read, record: record, probing: probing, &cs)
        return values
      case .salvaged(let decoded, let read, let skipped, let data):
        cs.identity = read
        cs.unreadableIdentity = nil
        if cs.salvagedIdentity != read {
          cs.salvagedIdentity = read
          keepSalvagedCopy(data, skipped: skipped, keeping: decoded.count)
        }
        var values = SuiteValues(decoded)
        try applyJournal(to: &values, base: read, record: record, probing: probing, &cs)
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
      return try loadOnce(&cs, mode: .commit, record: record)
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

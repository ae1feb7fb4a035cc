import Foundation
internal import Synchronization

// The journal's part of a suite's on-disk protocol (see ``SuiteJournal``): which commit is
// appended, how the journal is read and caught up, and how a damaged one is repaired.
extension SuiteFile {
  // MARK: Reading the plist with its journal

  /// How many times in all a reader reads a suite's plist and its journal while the plist is
  /// replaced under it (see ``readingAgainWhileReplaced(plistAt:record:_:)``).
  static let readsWhileReplaced = 8

  /// Reads a suite's plist, then its journal, with `read`, and again when the plist was
  /// replaced in between. A commit that folds the journal into a new plist (a compaction, or
  /// any commit after a touch or copy) renames the new plist in, moves the token, then removes
  /// the journal; a reader that read the old plist before the rename and looks for its journal
  /// after finds none of that version (removed, replaced, or no longer vouched for by the
  /// token record), and would give the old plist alone: values from before the acknowledged
  /// commits the journal held.
  ///
  /// `read` is told whether it reads again, and gives what it read with the plist version it
  /// read the journal of (`nil`: none was read, as with no plist). That version is still the
  /// plist when `record`, the token record as it stands after the journal was read, names it
  /// (a commit moves the token before it touches the journal of the plist it replaced), else
  /// when `stat(2)` finds it at the path. Otherwise it is read again: a few times
  /// (``readsWhileReplaced``), then what was read last, the freshest read, is given as it is.
  static func readingAgainWhileReplaced<Value, Failure: Error>(
    plistAt plistPath: String, record: () -> SuiteLockFile.Record? = { nil },
    _ read: (_ again: Bool) throws(Failure) -> (Value, FileIdentity?)
  ) throws(Failure) -> Value {
    var reads = 0
    while true {
      let (value, version) = try read(reads > 0)
      reads += 1
      guard let version, reads < readsWhileReplaced,
        !SuiteJournal.plist(at: plistPath, isStill: version, record: record())
      else { return value }
    }
  }

  // MARK: The journal

  /// The record of this commit's changes when it goes to the journal: the plist is large
  /// (``Options/journalThreshold``), was read whole, and the journal stays within its bound
  /// with it (``SuiteJournal/bound(forPlistSize:)`` for a burst's commit,
  /// ``SuiteJournal/smallCommitBound(forPlistSize:)`` for a small one). `nil`: the commit
  /// rewrites the plist and so compacts the journal. Call holding `commit`.
  func journalRecord(
    _ cs: CommitState, next: [String: PropertyListValue], undo: [(key: String, old: PropertyListValue?)]
  ) -> (record: [UInt8], dead: Int)? {
    guard let identity = cs.identity, journalMayTake(cs, undo.lazy.map(\.key)) else { return nil }
    let plistSize = Int(identity.size)
    let used = cs.journal?.end ?? SuiteJournal.headerSize
    let room = SuiteJournal.bound(forPlistSize: plistSize) - used
    // Each key once, against its value before the commit (its first old value): put in only
    // when absent, with one hash of the key.
    var before: [String: PropertyListValue?] = [:]
    before.reserveCapacity(undo.count)
    func keepFirst(_: inout PropertyListValue?) {}
    for (key, old) in undo { keepFirst(&before[key, default: old]) }
    var changes: [SuiteJournal.Change] = []
    changes.reserveCapacity(before.count)
    var dead = cs.deadBytes
    var estimate = 0
    for (key, old) in before {
      let new = next[key]
      guard !PropertyListValue.identical(new, old) else { continue }
      estimate &+= key.utf8.count &+ 6 &+ (new?.estimatedEncodedSize ?? 0)
      if estimate > room { return nil }
      changes.append(SuiteJournal.Change(key, new))
      dead += PropertyListValue.estimatedEntrySize(key: key, value: old)
    }
    // A small commit keeps the journal within its own, smaller bound.
    let bound =
      changes.count >= SuiteJournal.burstChanges
      ? SuiteJournal.bound(forPlistSize: plistSize) : SuiteJournal.smallCommitBound(forPlistSize: plistSize)
    guard !changes.isEmpty, used + estimate <= bound, let record = SuiteJournal.record(changes),
      used + record.count <= bound
    else { return nil }
    // A commit that would leave the files holding more dead bytes than live ones (a large
    // value removed) rewrites the plist instead: the space is given back.
    guard dead <= plistSize + used + record.count - dead else { return nil }
    return (record, dead)
  }

  /// Whether a record of changes to these keys (one per change) may go to the journal: the
  /// cheap first part of ``journalRecord(_:next:undo:)``'s judgement, made before the changes
  /// are applied. The record's size is estimated as the size limit estimates an entry (its
  /// key, 6 bytes, its value's estimate), and a commit that would not fit is refused before it
  /// is encoded: first from the keys alone, without a hash (each change counted, so a commit
  /// that sets one key over and over goes to a rewrite a little sooner); a burst's commit far
  /// too large for the journal stops there. A journal read by its content
  /// (``SuiteJournal/Position/byContent``: the plist touched or copied since it was started)
  /// takes no record: the commit folds it into the plist. Call holding `commit`.
  func journalMayTake(_ cs: CommitState, _ keys: some Collection<String>) -> Bool {
    guard let identity = cs.identity, cs.unreadableIdentity == nil, cs.journalDamage.isEmpty,
      cs.journal?.byContent != true, identity.size >= options.journalThreshold
    else { return false }
    let plistSize = Int(identity.size)
    let used = cs.journal?.end ?? SuiteJournal.headerSize
    // A small commit finds the journal past its own bound (a burst filled it): it compacts.
    if keys.count < SuiteJournal.burstChanges && used > SuiteJournal.smallCommitBound(forPlistSize: plistSize) {
      return false
    }
    let room = SuiteJournal.bound(forPlistSize: plistSize) - used
    var estimate = 0
    for key in keys {
      estimate &+= key.utf8.count &+ 6
      if estimate > room { return false }
    }
    return true
  }

  /// Clears the journal's path once a commit has folded the journal into a new plist (which
  /// the journal's header no longer names, so a crash before this leaves it ignored): a
  /// journal is removed (the journal of a plist removed by hand, or the unpublished record of
  /// a writer that died, too: a plist written whole leaves no journal); a damaged one, or
  /// anything else there, is kept aside and the user told where it went, once. Call holding
  /// `commit` and the lock.
  func retireJournal(_ cs: inout CommitState, folded: FileIdentity?) {
    let journal = SuiteJournal.path(of: path)
    let damage = cs.journalDamage
    let read = cs.journal
    cs.journal = nil
    cs.journalDamage = []
    let aside: String?
    do throws(SystemCallError) {
      let retired = try SuiteJournal.retire(journalOf: path, keepAside: !damage.isEmpty, folded: folded, read: read)
      if let retired, retired.foreign, damage.isEmpty {
        Diagnostics.report(
          "\(journal) is a journal of another version of \(path) (the plist was replaced or edited"
            + " since it was written, touched or copied under an older build's journal, or a"
            + " compaction was cut short): its records were not read, and may hold changes the suite"
            + " does not have; it was moved to \(retired.aside)")
        return
      }
      aside = retired?.aside
    } catch {
      Diagnostics.report(
        "\(journal): \(Self.describe(damage)); the records that could be read are in \(path) now, but keeping it aside failed: \(error)")
      return
    }
    guard !damage.isEmpty || aside != nil else { return }
    let readable = damage.allSatisfy(\.leavesRecordsReadable)
    var text = "\(journal): \(damage.isEmpty ? "it is not a journal" : Self.describe(damage))"
    if readable { text += "; the records that could be read are in \(path) now" }
    if let aside { text += "; it was moved to \(aside)" }
    text += readable ? "" : "; the suite's commits go on without it"
    Diagnostics.report(text)
  }

  static func describe(_ damage: [SuiteJournal.Damage]) -> String {
    damage.map(\.description).joined(separator: "; ")
  }

  /// Whether the journal read last is damaged in a way that a commit must repair: not what a
  /// commit in flight shows a reader outside the lock for a moment (a new journal published
  /// just before its rename, which wakes the reader again). A read-only store repairs
  /// nothing: it says once what it ignores. Call holding `commit`.
  func needsJournalRepair(_ cs: inout CommitState) -> Bool {
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

  /// Says, as the suite opens, that the journal its lock file publishes for the plist read is
  /// gone (``SuiteJournal/goneProblem(ofSuiteAt:version:)``): the changes acknowledged since
  /// the plist was last written whole are lost. Only once confirmed under the lock file taken
  /// shared, as a commit in flight shows the same for a moment; nothing is written for it
  /// here (the next commit writes the plist whole and publishes no journal, and says so).
  /// Call holding `commit`.
  func reportGoneJournal(_ cs: CommitState) {
    guard !cs.journalDamage.isEmpty, cs.journalDamage.contains(where: { $0.isMissing }), let base = cs.identity,
      let problem = SuiteJournal.goneProblem(ofSuiteAt: path, version: base)
    else { return }
    Diagnostics.report(problem)
  }

  /// Applies the whole journal of plist version `base` onto `values` (`record` and `probing`
  /// as for ``readJournal(base:after:record:probing:)``). Call holding `commit`.
  func applyJournal(
    to values: inout SuiteValues, base: FileIdentity, record: SuiteLockFile.Record?,
    probing: Bool, _ cs: inout CommitState
  ) throws(SystemCallError) {
    cs.journal = nil
    cs.journalDamage = []
    cs.deadBytes = 0
    TestHooks.beforeJournalRead?(path)
    guard let tail = try readJournal(base: base, after: nil, record: record, probing: probing) else { return }
    cs.deadBytes = Self.apply(tail.changes, to: &values)
    cs.journal = tail.position
    cs.journalDamage = tail.damage
  }

  /// Applies a journal's changes to `values`.
  /// - Returns: about how many bytes of the files the values they replace or remove hold.
  static func apply(_ changes: [SuiteJournal.Change], to values: inout SuiteValues) -> Int {
    var dead = 0
    for change in changes {
      let key = change.key
      let old = change.value.map { values.updateValue($0, forKey: key) } ?? values.removeValue(forKey: key)
      dead += PropertyListValue.estimatedEntrySize(key: key, value: old)
    }
    return dead
  }

  /// The changes appended to the journal since this process last read it (applied to
  /// `cs.persisted`), while the plist is the version it read: empty when there are none;
  /// `nil` when the journal was replaced, removed, cut or damaged, and the whole file must be
  /// read again. `record`: the lock file's record read in this pass. Call holding `commit`.
  ///
  /// `outsideLock`: a re-read's catch-up, which a commit may race. One that folds the journal
  /// into a new plist after the plist was looked at and before its journal is read (renamed
  /// in, the token moved, the journal removed, perhaps a new one started at the path) leaves
  /// the journal read not the plist's: `nil` then, when the token record as it stands after
  /// the read no longer names the plist version read (a commit moves the token before it
  /// touches the journal of the plist it replaced) and `stat(2)` does not find it either,
  /// so that the whole file is read again (see
  /// ``SuiteFile/readingAgainWhileReplaced(plistAt:record:_:)``). Asked of the mapped
  /// record first, without a system call; not asked by a store without a lock file.
  func catchUpJournal(
    _ cs: inout CommitState, record: SuiteLockFile.Record?, outsideLock: Bool = false
  ) throws(AppGroupsError) -> [SuiteJournal.Change]? {
    guard let base = cs.identity else { return [] }
    #if DEBUG
    if outsideLock, let hook = Self.beforeCatchUpReadForTesting.withLock({ $0 }) { hook(path) }
    #endif
    let tail: SuiteJournal.Tail?
    do throws(SystemCallError) {
      tail = try readJournal(base: base, after: cs.journal, record: record, probing: false)
    } catch {
      throw AppGroupsError(io: error, "reading \(SuiteJournal.path(of: path))")
    }
    if outsideLock, lockFile != nil, !SuiteJournal.plist(at: path, isStill: base, record: lockFile?.read()) {
      return nil
    }
    guard let tail else { return cs.journal == nil ? [] : nil }
    // Read from where this process stood, or (a journal new to it) from the start.
    guard tail.continued == (cs.journal != nil), tail.damage.isEmpty else { return nil }
    // Nothing new leaves the values' version as it was (see ``CommitRequest/memory``).
    if !tail.changes.isEmpty { cs.deadBytes += Self.apply(tail.changes, to: &cs.persisted) }
    cs.journal = tail.position
    return tail.changes
  }

  #if DEBUG
  /// For tests: called with the plist's path by a re-read's catch-up (``catchUpJournal(_:record:outsideLock:)``)
  /// once the plist was looked at and before the journal is read.
  static let beforeCatchUpReadForTesting = Mutex<(@Sendable (String) -> Void)?>(nil)
  #endif

  /// Reads the journal of plist version `base`, no further than the lock file's record says
  /// is durable. Without a record for that version (a lock file made again, or a commit in
  /// flight), as far as the records check.
  ///
  /// `record` is the record read in this pass after `base` was found; it is read again when
  /// it is for another version (a commit landed in between). When it is for `base` and
  /// publishes no journal, and no journal is known (`after` is `nil`), the journal's path is
  /// not opened unless `probing`: no commit through the lock leaves a journal of `base` then
  /// (a rewrite retires the journal; a new one is published before it is renamed in). What
  /// else may lie there, put there from outside, is looked at when the suite opens, while it
  /// is known damaged, before a journal is started (never renamed over), and kept aside by
  /// the next rewrite (``retireJournal(_:folded:)``).
  func readJournal(
    base: FileIdentity, after: SuiteJournal.Position?, record: SuiteLockFile.Record?, probing: Bool
  ) throws(SystemCallError) -> SuiteJournal.Tail? {
    // The record names exactly the plist read (as it does but while a commit is in flight):
    // its journal is this version's.
    let published: SuiteJournal.Published?
    var latest = record
    if let record, record.identity == base {
      published = record.journal(of: base)
    } else {
      latest = lockFile?.read() ?? record
      published = latest?.journal(of: base)
    }
    if !probing, after == nil, published?.length == 0 { return nil }
    return try SuiteJournal.read(
      journalOf: path, base: base, after: after, published: published,
      latest: latest.map { ($0.identity, $0.journal) })
  }

  /// What the token record publishes of the journal when an outside edit moves the token to
  /// plist version `now` (``SuiteLockFile/advance(to:journal:anotherVersion:)``): nothing
  /// is durable, unless a journal lies at its path that may be `now`'s (the plist touched or
  /// copied), which is then read as far as
  /// its records check, as before the token moved (``SuiteJournal/Published/unpublished``),
  /// no further than the length `before` (the record the move replaces) published for the
  /// version the journal's header names
  /// (``SuiteJournal/publishedAfterOutsideEdit(ofPlistAt:to:before:)``). Call holding the lock.
  func journalPublished(
    afterOutsideEditTo now: FileIdentity?, before: SuiteLockFile.Record?
  ) -> SuiteJournal.Published {
    SuiteJournal.publishedAfterOutsideEdit(
      ofPlistAt: path, to: now, before: before.map { ($0.identity, $0.journal) })
  }

  /// Says which values of a file read in part were left out, and keeps a copy of the whole
  /// file aside before a commit writes the rest over it (a read-only store only says so).
  func keepSalvagedCopy(_ data: Data, skipped: [PropertyListSalvage.SkippedKey], keeping kept: Int) {
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

}

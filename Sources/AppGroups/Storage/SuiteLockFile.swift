internal import Synchronization

/// A suite's lock file, `<suite>.plist.lock`: the commit lock, and the token record, the
/// last-update token readable by every process without parsing the plist.
///
/// The token lives in the first page of the file, mapped shared into every
/// process that has the suite open, and is guarded by a sequence lock: a
/// writer (holding the file lock) makes the sequence odd, writes, and makes
/// it even again; a reader retries while it is odd or moved. Nothing
/// private is ever written into the property list itself.
///
/// Layout (64-bit words): magic, sequence, token, has-identity,
/// device, inode, size, modified-ns, changed-ns, the journal's published
/// length and its inode (see ``SuiteJournal``); words 504 to 506 are the lock's
/// fair wait (`cappgroups_flock_until`), and the page's last word is ``LockedFile``'s
/// retired mark.
package final class SuiteLockFile: Sendable {
  /// The file: its lock, and the page the token lives in (see ``LockedFile``).
  private let file: LockedFile
  /// The address of the page the record is read from, told by ``file`` whenever it changes
  /// (a file replaced at the path): a read asks nothing of the file but when the page it
  /// finds is retired.
  private let page: PageAddress
  /// Whether the next ``readAtPath(covered:)`` compares the file read with the path, even
  /// while a kernel watch covers the folder: set at open and whenever the change monitor
  /// hears of an entry by the lock file's name, or of events it may have missed.
  private let pathCheckDue = Atomic<Bool>(true)
  private static let magic: UInt64 = 0x3154_4e45_4b4f_5447  // "GTOKENT1"

  /// The lock file of the suite whose plist is at `plistPath`: `<plist>.lock`.
  package static func path(of plistPath: String) -> String { plistPath + suffix }

  /// What a suite's lock file adds to its plist's name.
  package static let suffix = ".lock"

  /// The record a committer leaves: the token, and which version of the
  /// plist it describes.
  struct Record: Equatable, Sendable {
    var token: UInt64
    var identity: FileIdentity?
    /// The journal of that version: how many of its bytes are durable (a reader applies no
    /// more), and which file holds them.
    var journal: SuiteJournal.Published

    /// What is published of the journal of plist version `base`; `nil` when this record
    /// describes another version (a commit in flight, a lock file made again, an outside edit)
    /// or publishes nothing of its journal (``SuiteJournal/Published/unpublished``).
    func journal(of base: FileIdentity) -> SuiteJournal.Published? {
      SuiteJournal.sameVersion(identity, base) && !journal.isUnpublished ? journal : nil
    }
  }

  private final class PageAddress: Sendable {
    let address = Atomic<UInt>(0)
  }

  private static func options(makeFolder: String?, page: PageAddress) -> LockedFile.Options {
    var options = LockedFile.Options(mapsPage: true, makeFolder: makeFolder)
    options.publishesPage = { page.address.store(UInt(bitPattern: $0), ordering: .releasing) }
    return options
  }

  /// Opens (creating) the lock file at `path`; `makeFolder` as in ``LockedFile/Options``.
  init(path: String, makeFolder: String?) throws(SystemCallError) {
    let page = PageAddress()
    self.page = page
    file = try LockedFile(path: path, options: Self.options(makeFolder: makeFolder, page: page))
  }

  private init(file: LockedFile, page: PageAddress) {
    self.file = file
    self.page = page
  }

  /// Opens (creating) the lock file of the suite whose plist is at `plistPath`, its failures
  /// said as ``LockedFile/opening(_:options:)`` says them.
  static func opening(plistPath: String, makeFolder: String?) throws(AppGroupsError) -> SuiteLockFile {
    let page = PageAddress()
    return SuiteLockFile(
      file: try LockedFile.opening(path(of: plistPath), options: options(makeFolder: makeFolder, page: page)),
      page: page)
  }

  // MARK: The lock (see ``LockedFile``)

  /// The lock file's path.
  var path: String { file.path }

  /// Takes the lock (see ``LockedFile/lock(until:whileHolderProgresses:)``).
  func lock(until deadline: UInt64, whileHolderProgresses ceiling: UInt64? = nil) throws(LockedFile.Failure) {
    try file.lock(until: deadline, whileHolderProgresses: ceiling)
  }

  /// Takes the lock, its failures said one way (see
  /// ``LockedFile/lock(until:bound:whileHolderProgresses:doing:)``).
  func lock(
    until deadline: UInt64, bound: Duration, whileHolderProgresses ceiling: UInt64?, doing what: String
  ) throws(AppGroupsError) {
    try file.lock(until: deadline, bound: bound, whileHolderProgresses: ceiling, doing: what)
  }

  /// Takes the lock if it is free now.
  func tryLock() -> Bool { file.tryLock() }

  /// Whether the commit holding the lock, in any process, made progress since `look`.
  func holderProgressed(since look: inout LockedFile.HolderLook) -> Bool {
    file.holderProgressed(since: &look)
  }

  func unlock() { file.unlock() }

  /// Whether the lock held is still the lock of the file at the path.
  func stillLocksPath() -> Bool { file.stillLocksPath() }

  /// Opens the file now at the path when another replaced the one read.
  /// - Returns: whether it changed.
  @discardableResult
  func refreshIfReplaced() -> Bool { file.refreshIfReplaced() }

  /// Whether the file read was removed from its folder.
  var currentIsUnlinked: Bool { file.currentIsUnlinked }

  // MARK: The token record

  /// The current record, read without the lock. `nil` only if a writer is
  /// in the middle of an update for the whole bounded retry (it was stopped
  /// or killed there); callers then treat the suite as changed.
  func read() -> Record? {
    guard let words = words() else { return nil }
    for _ in 0..<10_000 {
      let before = words.load(1)
      if before & 1 == 1 { continue }
      let record = Self.record(words.load)
      if words.load(1) == before { return record }
    }
    return nil
  }

  /// The words of the page the record is read from: the file's, or, once a holder found it
  /// replaced at its path and retired it, the file's now at the path. `nil` when nothing is
  /// mapped. No lock and no reference are taken: every page stays mapped while ``file`` lives.
  /// Inlined into the token's read (a resume check's), the rare retired page left to a call.
  @inline(__always)
  private func words() -> SharedWords? {
    guard let base = UnsafeMutablePointer<UInt64>(bitPattern: page.address.load(ordering: .acquiring))
    else { return nil }
    let words = SharedWords(base: base)
    if words.load(LockedFile.retiredWord) != LockedFile.retiredMark { return words }
    return wordsOfReplacement()
  }

  /// ``words()`` once the page read is retired: the file now at the path's.
  @inline(never)
  private func wordsOfReplacement() -> SharedWords? {
    file.refreshIfReplaced()
    return UnsafeMutablePointer(bitPattern: page.address.load(ordering: .acquiring)).map(SharedWords.init)
  }

  /// The current record of the lock file now at the path: the file read is first compared
  /// with the path (`lstat(2)`), and the one there opened when another replaced it (see
  /// ``refreshIfReplaced()``). For a re-read, which must not go on reading a dead file's page.
  ///
  /// `covered`: a kernel watch covers the folder and covered it since the last look at the
  /// path. Then the path is looked at only when ``pathMayHaveChanged()`` was called since:
  /// a lock file removed, renamed over or made again queues an event naming it, which the
  /// change monitor reads before, or in the same pass as, the events of the plist that come
  /// after it. Until then the page read is the one every process of the suite has mapped.
  func readAtPath(covered: Bool) -> Record? {
    if !covered || pathCheckDue.exchange(false, ordering: .acquiringAndReleasing) {
      file.refreshIfReplaced()
    }
    return read()
  }

  /// The next ``readAtPath(covered:)`` compares the file read with the one at the path.
  func pathMayHaveChanged() { pathCheckDue.store(true, ordering: .releasing) }

  /// The record in the lock file at `path`, read as a tool that does not open the suite reads
  /// it (`groupctl read`): with `pread(2)`, nothing created, mapped or locked. `nil` when there
  /// is no record (no file, a page of zeros, or a writer in the middle of an update).
  static func peek(atPath path: String) -> Record? {
    guard let file = try? OpenFile(existing: path, for: .reading) else { return nil }
    let count = 11
    for _ in 0..<100 {
      guard let bytes = try? file.read(at: 0, count: count * 8), bytes.count == count * 8 else { return nil }
      func word(_ index: Int) -> UInt64 { SharedWords.word(index, of: bytes) }
      guard word(0) == magic else { return nil }
      guard word(1) & 1 == 0, let again = try? file.read(at: 8, count: 8),
        SharedWords.word(0, of: again) == word(1)
      else { continue }
      return record(word)
    }
    return nil
  }

  /// The record in words 2 to 10 of the page, as `word(index)` reads them.
  private static func record(_ word: (Int) -> UInt64) -> Record {
    Record(
      token: word(2),
      identity: word(3) == 0
        ? nil
        : FileIdentity(
          device: word(4), inode: word(5), size: Int64(bitPattern: word(6)),
          modified: Int64(bitPattern: word(7)), changed: Int64(bitPattern: word(8))),
      journal: SuiteJournal.Published(length: Int(truncatingIfNeeded: word(9)), inode: word(10)))
  }

  /// The token alone: one sequence-checked read of three words (no identity is built).
  /// `nil` as for ``read()``.
  @inline(__always)
  var token: UInt64? {
    // No lock and no reference: a resume check reads this on every call.
    guard let words = words() else { return nil }
    for _ in 0..<10_000 {
      let before = words.load(1)
      if before & 1 == 1 { continue }
      let token = words.load(2)
      if words.load(1) == before { return token }
    }
    return nil
  }

  /// Moves the token forward and records which version of the plist it
  /// describes, and what of that version's journal is durable (`nil`: as
  /// before while the version is the one recorded, `anotherVersion` for another one: a
  /// length is never published for a version the journal was not written on). Call only
  /// while holding the lock of ``file``.
  @discardableResult
  func advance(
    to identity: FileIdentity?, journal: SuiteJournal.Published? = nil,
    anotherVersion: SuiteJournal.Published = .noJournal
  ) -> UInt64 {
    guard let words = file.heldPageWords else { return 0 }
    let load = words.load
    let store = words.store
    let journal =
      journal ?? (SuiteJournal.sameVersion(Self.record(load).identity, identity) ? nil : anotherVersion)
    var sequence = load(1)
    if sequence & 1 == 0 { sequence &+= 1 }  // odd: update in progress
    store(1, sequence)
    var token = load(2)
    if load(0) != Self.magic {
      // A new lock file (or one deleted by hand) starts from the clock, so the
      // token never goes backwards across its re-creation.
      token = max(token, UInt64(max(FileSystem.nowNanoseconds(), 0)))
      store(0, Self.magic)
    }
    token &+= 1
    store(2, token)
    store(3, identity == nil ? 0 : 1)
    store(4, identity?.device ?? 0)
    store(5, identity?.inode ?? 0)
    store(6, UInt64(bitPattern: identity?.size ?? 0))
    store(7, UInt64(bitPattern: identity?.modified ?? 0))
    store(8, UInt64(bitPattern: identity?.changed ?? 0))
    if let journal {
      store(9, UInt64(journal.length))
      store(10, journal.inode)
    }
    store(1, sequence &+ 1)
    return token
  }
}

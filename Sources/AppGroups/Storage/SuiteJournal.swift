import Foundation

/// A large suite's journal, `<suite>.plist.journal`: the changes of small commits, appended
/// and made durable with one `fdatasync(2)`, instead of the whole domain re-encoded and
/// rewritten for each; folded back into the property list (compacted) when it grows past a
/// share of the plist's size.
///
/// The journal belongs to one version of the plist, which its 40-byte header names: the
/// magic `AGJRNL02`, then four little-endian 64-bit words, a check of the plist's bytes
/// (``contentCheck(_:)``), its inode, size and modification time. A reader that finds the
/// inode, size and modification time of the plist it read takes the journal as that
/// version's without hashing anything. When they differ but the size is the same, it hashes
/// the plist: the same check says the plist was only touched, or copied or restored with its
/// journal (`cp -R`, `cp -a`, `tar`: a new inode or modification time, the same bytes), and
/// the journal is read; another check says the plist was replaced or edited, and the journal
/// is of another version: ignored, never applied to the wrong base. Such a journal is
/// read as far as its records check (its lock file publishes its length for the old identity
/// only), and the next commit folds it into the plist, never appending to it. A compaction
/// writes the new plist before it removes the journal, and publishes that no journal belongs
/// to it: a crash between the two leaves a journal that is not read.
///
/// A journal written by an older build has the magic `AGJRNL01` and names the plist's device
/// in place of the check: it is read by those four fields alone, and the next commit folds it
/// into the plist, adding nothing to it. A journal is never rewritten in place.
///
/// A journal matched by its content is read only as the suite's lock file vouches for it: its
/// record names the version the header names (and the length published for it bounds the
/// records read), or carries that length over a token moved for the touch or copy
/// (``Published/unpublished(bound:)``). A record that names another version (the new plist of
/// a compaction cut short before it removed the journal, whose bytes may equal the old one's
/// when a key was set and set back) leaves it unread.
///
/// After the header come records, each a little-endian `UInt32` length, a `UInt64` check of
/// the payload, and the payload: a binary property list `{s: {key: value}, r: [key]}`, the
/// keys set and the keys removed by one commit. Records are only ever appended, under the
/// suite's lock. How far a reader may go is what the suite's token record publishes once the
/// append is durable (see ``SuiteLockFile``): the length, and which file (its inode). A value
/// is never shown before it is on disk.
///
/// Finding records: the first starts at the fixed offset 40, whatever the header holds, and
/// each length leads to the next; a record counts only when its payload checks and decodes,
/// which confirms the length that led to it. So a damaged header hides no record behind it
/// (the published inode, not the header, tells that the file is this version's journal), and
/// a reader stops at the first record that does not check, never guessing where the next
/// one starts. Anything short of the published length is damage: the records read are kept,
/// the next commit folds them into the plist, and the journal is moved aside, never deleted.
package enum SuiteJournal {
  /// The first 8 bytes of a journal this build writes; an older build's end in `1`.
  static let magicText: StaticString = "AGJRNL02"
  /// "AGJRNL02", as an array (for the writer).
  static let magic: [UInt8] = magicText.withUTF8Buffer { Array($0) }

  /// The header's format, told by the last byte of its magic: 1 (device, inode, size,
  /// modification time) or 2 (content check, inode, size, modification time); `nil` when
  /// `bytes` do not start with a journal's magic. Compared byte by byte with the literal's
  /// bytes: a process's first journal read makes no array for it (an `Array` of a slice, or of
  /// a string's UTF-8, instantiates the copy's types at every new process's first open).
  static func headerFormat(_ bytes: [UInt8]) -> Int? {
    magicText.withUTF8Buffer { magic -> Int? in
      guard bytes.count >= magic.count else { return nil }
      for index in magic.indices.dropLast() where bytes[index] != magic[index] { return nil }
      switch bytes[magic.count - 1] {
      case UInt8(ascii: "1"): return 1
      case UInt8(ascii: "2"): return 2
      default: return nil
      }
    }
  }

  static let headerSize = 40
  private static let recordHeaderSize = 12

  /// One key's change in a record: its new value, `nil` when it was removed.
  ///
  /// A class, not a tuple or a struct: a new process that opens a suite with a journal makes
  /// the first array of these, and an array of a labelled tuple with an optional costs its
  /// storage type's first instantiation through the runtime's demangler (~50 k instructions),
  /// an array of a struct ~12 k; an array of references uses the storage every such array
  /// shares, instantiated already.
  final class Change: Sendable {
    let key: String
    let value: PropertyListValue?

    init(_ key: String, _ value: PropertyListValue?) {
      self.key = key
      self.value = value
    }
  }

  /// Where a reader of the journal stands: which file (its inode), and the offset past the
  /// last record it applied.
  struct Position: Equatable, Sendable {
    var inode: UInt64
    var end: Int
    /// Whether the next commit folds the journal into the plist instead of appending to it:
    /// its header names the plist by its content only, not by its identity (the plist was
    /// touched, copied or restored since the journal was started), as the lock file cannot
    /// publish its length for a version its header does not name; or it is an older build's
    /// journal (`AGJRNL01`), whose header names no content, which this build does not add to.
    var byContent = false
  }

  /// What a suite's lock file publishes of the journal of one plist version (see
  /// ``SuiteLockFile``): how many of its bytes are durable, and which file holds them.
  struct Published: Equatable, Sendable {
    /// The durable length: a reader applies no record past it.
    var length: Int
    /// The journal's inode; 0 with a length of 0 (no journal), or in a record written
    /// before the inode was recorded.
    var inode: UInt64

    /// No journal is published.
    static let noJournal = Published(length: 0, inode: 0)

    /// The record names the plist version but not what of its journal is durable: a reader
    /// reads the journal as far as its records check, as with no record for the version.
    /// Published when the token moves for an outside edit while a journal lies there that may
    /// be the new version's (its plist touched or copied: see ``SuiteFile``'s token), so that
    /// moving the token does not hide it. An older build reads it as ``noJournal``.
    static let unpublished = Published(length: 0, inode: .max)

    /// ``unpublished``, with the length that was published for the version the journal's
    /// header names before the token moved: a reader of the journal by its content reads no
    /// further (a record whose writer died before publishing it is not read). An older build
    /// reads it as a length published for another file, which it does not read.
    static func unpublished(bound: Int) -> Published { Published(length: bound, inode: .max) }

    /// Whether this is ``unpublished`` (with or without a bound): nothing is published for
    /// the version's own journal.
    var isUnpublished: Bool { inode == .max }
  }

  /// What is wrong with what lies at a journal's path.
  enum Damage: Equatable, Sendable, CustomStringConvertible {
    /// Something other than a regular file is there (a folder, a symbolic link, a fifo), and
    /// `published` bytes of the journal were durable.
    case notARegularFile(kind: String, published: Int)
    /// A regular file without a journal's header, and no published length vouches for it.
    case notAJournal
    /// Nothing is there, though a length is published for the journal.
    case missing(published: Int)
    /// Another file is there than the one whose length is published.
    case replaced(published: Int)
    /// It is shorter than its published length: durable records were cut off.
    case short(size: Int, published: Int)
    /// Its header does not name the plist version its published length is for (the records
    /// behind the header are still read, from their fixed offset).
    case header
    /// Bytes from `offset` to `end` are not whole records: the reader stopped at `offset`.
    case unparsed(offset: Int, end: Int)
    /// More is to be read than ``PropertyListFile/maximumBytes``, which no journal comes near
    /// (a large one is folded into the plist long before): nothing of it was read.
    case tooLarge(size: Int)

    /// Whether the records at the journal's path can still be read past this (a damaged header,
    /// a cut, bytes that are not records): not when something else is there or nothing is, or
    /// it is too large to be read.
    var leavesRecordsReadable: Bool {
      switch self {
      case .notARegularFile, .notAJournal, .missing, .replaced, .tooLarge: return false
      case .short, .header, .unparsed: return true
      }
    }

    /// Whether a reader that does not hold the suite's lock may see this while a commit is in
    /// flight: a new journal's length is published just before it is renamed into place, and
    /// a compaction removes the journal after it moved the token. Under the lock it is damage;
    /// outside it, a missing journal is said once looked at again under the lock file taken
    /// shared (``goneProblem(ofSuiteAt:version:)``).
    var mayBeInFlight: Bool {
      switch self {
      case .missing, .replaced: return true
      default: return false
      }
    }

    /// Whether this is ``missing(published:)``: what a commit in flight may show a reader
    /// outside the lock, said once confirmed (``goneProblem(ofSuiteAt:version:)``).
    var isMissing: Bool {
      if case .missing = self { return true }
      return false
    }

    var description: String {
      switch self {
      case .notARegularFile(let kind, let published):
        return "it is \(kind), not a regular file"
          + (published > 0 ? ", and the \(published) bytes its lock file publishes as durable are gone" : "")
      case .notAJournal:
        return "it is not a journal (it does not start with a journal's header)"
      case .missing(let published):
        return "it is gone, though its lock file publishes \(published) bytes of it as durable"
      case .replaced(let published):
        return
          "the file at its path is not the one whose \(published) bytes its lock file publishes as durable"
      case .short(let size, let published):
        return "it is \(size) bytes long, shorter than the \(published) its lock file publishes as durable"
      case .header:
        return "its header is damaged (it does not name the plist it belongs to)"
      case .unparsed(let offset, let end):
        return "bytes \(offset) to \(end) of its durable length are not whole records"
      case .tooLarge(let size):
        return "it holds \(size) bytes, more than the \(PropertyListFile.maximumBytes) bytes a journal is read for"
      }
    }
  }

  /// What a read found past a position.
  struct Tail {
    /// The changes, in the order they were committed (later ones win).
    var changes: [Change]
    var position: Position
    /// Whether the read went on from the position given (the same file), not from the start.
    var continued: Bool
    /// What is wrong with the journal; empty when nothing is. The changes are those of the
    /// records that could be read.
    var damage: [Damage]

    fileprivate init(changes: [Change] = [], position: Position, continued: Bool = false, damage: [Damage]) {
      self.changes = changes
      self.position = position
      self.continued = continued
      self.damage = damage
    }
  }

  /// The journal of the plist at `plistPath`: `<plist>.journal`.
  package static func path(of plistPath: String) -> String { plistPath + suffix }

  /// What a suite's journal adds to its plist's name.
  package static let suffix = ".journal"

  /// How large the journal of a plist of `plistSize` bytes may grow at most: a quarter of it
  /// (at least 1 KiB), which a commit of a burst may fill (see ``burstChanges``); a small
  /// commit keeps it within ``smallCommitBound(forPlistSize:)``, and folds into the plist a
  /// journal a burst left larger. A record's change costs a reader about two and a half times
  /// what a key of the plist does, so a new process's load of the suite grows by up to about
  /// half while a burst's journal is at this bound, and by about a sixth at most once a small
  /// commit has folded it.
  static func bound(forPlistSize plistSize: Int) -> Int { max(1024, plistSize / 4) }

  /// How large a small commit lets the journal grow before it folds it into the plist: a
  /// sixteenth of the plist (at least 1 KiB). The rewrite, in proportion to the plist, comes
  /// once per that many bytes of records, so its share of each small commit stays the same
  /// at any size.
  static func smallCommitBound(forPlistSize plistSize: Int) -> Int { max(1024, plistSize / 16) }

  /// From how many changes a commit is a burst's, whose record may fill the journal up to
  /// ``bound(forPlistSize:)``: the commit that follows a burst of `set` calls (the one that
  /// `synchronize()` waits for) appends a few thousand changes with one `fdatasync(2)`
  /// instead of encoding and rewriting the whole domain once more.
  static let burstChanges = 64

  // MARK: Reading

  /// Reads the journal of the plist at `plistPath` for the plist version `base`: from `after`
  /// when it names the same journal file, else from the start; never past the length
  /// `published` gives (what the suite's lock file publishes for `base`, read after `base`
  /// was: see ``SuiteLockFile/Record/journal(of:)``; `nil`: no record for this version, so
  /// as far as records check).
  ///
  /// What the lock file publishes decides what the file is. A published length vouches for
  /// the file it names: its records are read from their fixed offset even behind a damaged
  /// header, and a file shorter than the length, or not that file, is damage. Without one,
  /// only the header vouches: a journal of another version of the plist is not read, and a
  /// file that is not a journal is damage (so that it is kept aside, never deleted). A header
  /// that names another inode or modification time but the plist's size is checked against
  /// the plist's bytes (read again, and only then: see ``contentCheck(ofPlistAt:version:)``):
  /// the same content makes it this version's journal (``Position/byContent``).
  ///
  /// - Returns: `nil` when there is no journal of this version: nothing there and nothing
  ///   published, a journal of another version, or one of which nothing is durable.
  /// - Throws: the failed call when the journal exists but cannot be read.
  ///
  /// `latest`: the lock file's record as it stands, whatever version it names. A journal read
  /// by its content (its plist touched or copied since) is read no further than the length
  /// that record publishes for the version the journal's header names, or carries over a
  /// token move (a record whose writer died before it was published is not read), and not at
  /// all when it publishes nothing durable of it or names another version (see
  /// ``vouchedByContent(_:_:)``).
  static func read(
    journalOf plistPath: String, base: FileIdentity, after: Position?, published: Published?,
    latest: (identity: FileIdentity?, journal: Published)? = nil
  ) throws(SystemCallError) -> Tail? {
    let path = path(of: plistPath)
    let nothing = Position(inode: 0, end: 0)
    let opened: OpenFile?
    do {
      opened = try OpenFile(existing: path, for: .reading)
    } catch where error.code == .tooManySymbolicLinkLevels || error.code == .noSuchDeviceOrAddress {
      let kind = error.code == .noSuchDeviceOrAddress ? "a socket" : "a symbolic link"
      return Tail(position: nothing, damage: [.notARegularFile(kind: kind, published: published?.length ?? 0)])
    }
    guard let file = opened else {
      guard let published, published.length > 0 else { return nil }
      return Tail(position: nothing, damage: [.missing(published: published.length)])
    }
    let status = try file.status()
    let inode = status.identity.inode
    guard status.isRegularFile else {
      return Tail(
        position: Position(inode: inode, end: 0),
        damage: [.notARegularFile(kind: status.kind, published: published?.length ?? 0)])
    }
    // A length published for this version vouches for the file it names (any file, in a
    // record from before the inode was recorded).
    let vouched = published.flatMap { $0.length > 0 ? $0 : nil }
    if let vouched, vouched.inode != 0, vouched.inode != inode {
      return Tail(position: Position(inode: inode, end: 0), damage: [.replaced(published: vouched.length)])
    }
    var damage: [Damage] = []
    if let vouched, vouched.length > status.size {
      damage.append(.short(size: status.size, published: vouched.length))
    }
    var end = min(status.size, vouched?.length ?? (published == nil ? .max : 0))
    // The same file as before: its header was checked then (a journal is never rewritten in
    // place; a new one is renamed in), and only what was appended since is read.
    let start: Int
    // A journal read by its content is read again from its start, so that the lock file's
    // record as it stands now bounds it (an append that raced the touch publishes more).
    if let after, after.inode == inode, after.end >= headerSize, after.end <= end, !after.byContent {
      start = after.end
    } else {
      start = 0
    }
    // From the start, the header is read even when nothing is durable: it tells a journal of
    // another version (left by a compaction that crashed) from a file that is none.
    let count = start == 0 ? max(end, min(status.size, headerSize)) : end - start
    guard count <= PropertyListFile.maximumBytes else {
      return Tail(position: Position(inode: inode, end: 0), damage: [.tooLarge(size: status.size)])
    }
    let bytes = try file.read(at: start, count: count)
    var offset = 0
    var byContent = false
    // How far the records of a journal read by its content go (see `latest`).
    var contentBound = Int.max
    if start == 0 {
      let isJournal = bytes.count >= headerSize && headerFormat(bytes) != nil
      var ours = isJournal && header(bytes, names: base)
      if vouched == nil {
        guard isJournal else { return Tail(position: Position(inode: inode, end: 0), damage: [.notAJournal]) }
        // No record for this version: the plist may have been touched or copied since.
        if !ours, published == nil, let bound = vouchedByContent(bytes, latest),
          try header(bytes, namesContentOf: plistPath, version: base)
        {
          contentBound = bound
          ours = true
          byContent = true
        }
        guard ours, published == nil else { return nil }
      } else if !ours {
        damage.append(.header)
      }
      // An older build's journal names the plist by its identity alone: this build does not
      // add to it, so that no change it acknowledges rests on that header; the next commit
      // folds it into the plist, and a journal started after names the plist's bytes too.
      if ours, headerFormat(bytes) == 1 { byContent = true }
      offset = headerSize
    }
    var changes: [Change] = []
    end = min(end, contentBound)
    while min(bytes.count, end - start) - offset >= recordHeaderSize {
      let length = Int(UInt32(truncatingIfNeeded: word(bytes, offset)))
      let check = word(bytes, offset + 4)
      let payloadStart = offset + recordHeaderSize
      guard length > 0, min(bytes.count, end - start) - payloadStart >= length else { break }
      let payload = bytes[payloadStart..<(payloadStart + length)]
      guard checksum(payload) == check, recordChanges(payload, into: &changes) else { break }
      offset = payloadStart + length
    }
    let readable = min(status.size, end)
    if start + offset < readable {
      damage.append(.unparsed(offset: start + offset, end: vouched?.length ?? readable))
    }
    return Tail(
      changes: changes,
      position: Position(inode: inode, end: start + offset, byContent: byContent),
      continued: start > 0, damage: damage)
  }

  // MARK: Writing

  /// One commit's changes as a record; `nil` when they cannot be encoded.
  static func record(_ changes: [Change]) -> [UInt8]? {
    var set: [String: PropertyListValue] = [:]
    set.reserveCapacity(changes.count)
    var removed: [PropertyListValue] = []
    for change in changes {
      if let value = change.value { set[change.key] = value } else { removed.append(.string(change.key)) }
    }
    let payload: PropertyListValue = .dictionary(["s": .dictionary(set), "r": .array(removed)])
    guard let data = try? payload.propertyListData(format: .binary), data.count < Int(UInt32.max) else {
      return nil
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(recordHeaderSize + data.count)
    append(UInt64(data.count), width: 4, to: &bytes)
    append(data.withUnsafeBytes { checksum($0) }, width: 8, to: &bytes)
    bytes.append(contentsOf: data)
    return bytes
  }

  /// Appends `record` at `position.end` of the journal (cutting off whatever lies past it:
  /// the unpublished record of a writer that died) and makes it durable with `fdatasync(2)`;
  /// `published` is called with the new position before the journal is closed, so that a
  /// watcher woken by the close reads a token that covers the record. Call holding the suite's
  /// lock.
  /// - Throws: the failed call; `open` with `EAGAIN` when the file at the journal's path is not
  ///   the one at `position` (something replaced it outside the lock).
  static func append(
    _ record: [UInt8], journalOf plistPath: String, at position: Position,
    published: (Position) -> Void
  ) throws(SystemCallError) {
    let path = path(of: plistPath)
    let replaced = SystemCallError(call: "open", path: path, .resourceTemporarilyUnavailable)
    let opened: OpenFile?
    do {
      opened = try OpenFile(existing: path, for: .writing)
    } catch where error.code == .tooManySymbolicLinkLevels {
      throw replaced
    }
    guard let file = opened else { throw replaced }
    let status = try file.status()
    guard status.isRegularFile, status.identity.inode == position.inode, status.size >= position.end else {
      throw replaced
    }
    if status.size > position.end {
      try file.truncate(to: position.end)
    }
    try file.write(record, at: position.end)
    try file.syncData()
    TestHooks.beforePublish?(path)
    published(Position(inode: position.inode, end: position.end + record.count))
  }

  /// Starts the journal of plist version `base` with `record`: written to a temporary file,
  /// `fsync`ed and renamed into place, a journal of another version first kept aside and said
  /// (see
  /// ``FileSystem/writeAtomically(_:to:mode:notBefore:beforeRename:afterRename:)``).
  /// `publish` is called with what to publish of the journal (its length and the inode it
  /// keeps through the rename) just before the rename, after `beforeRename`: a watcher woken
  /// by the rename must find the length published (one that reads the length before the
  /// rename finds no journal of this version, or another file than the one published, and is
  /// woken again by the rename).
  ///
  /// The header names `base` by `check`, the ``contentCheck(ofPlistAt:version:)`` of its
  /// bytes, and by its inode, size and modification time.
  ///
  /// Call holding the suite's lock, once what is at the journal's path was read (a file that
  /// is not a journal of an older version is kept aside with
  /// ``retire(journalOf:keepAside:folded:read:)`` first, never renamed over).
  /// - Returns: the journal's position.
  static func create(
    _ record: [UInt8], journalOf plistPath: String, base: FileIdentity, check: UInt64,
    beforeRename: () throws(SystemCallError) -> Void, publish: (Published) -> Void
  ) throws(SystemCallError) -> Position {
    var bytes = magic
    bytes.reserveCapacity(headerSize + record.count)
    append(check, width: 8, to: &bytes)
    append(base.inode, width: 8, to: &bytes)
    append(UInt64(bitPattern: base.size), width: 8, to: &bytes)
    append(UInt64(bitPattern: base.modified), width: 8, to: &bytes)
    bytes.append(contentsOf: record)
    let count = bytes.count
    let journal = path(of: plistPath)
    // A journal of another version is not renamed over: its records may hold changes the
    // plist does not (it was touched, copied or restored since the journal was written).
    if isJournal(journal, ofAnotherVersionThan: base) {
      let aside = try PropertyListFile.moveAside(journal)
      Diagnostics.report(
        "\(journal) is a journal of another version of \(plistPath) (the plist was replaced or edited"
          + " since it was written, touched or copied under an older build's journal, or a compaction"
          + " was cut short): its records are not read, and may hold changes the suite does not have;"
          + " it was moved to \(aside)")
    }
    FileSystem.removeLeftoverTemporaries(for: FileSystem.lastComponent(of: journal), in: FileSystem.folder(of: journal))
    let identity = try FileSystem.writeAtomically(
      Data(bytes), to: journal,
      beforeRename: { (temporary: FileIdentity) throws(SystemCallError) in
        try beforeRename()
        publish(Published(length: count, inode: temporary.inode))
      })
    return Position(inode: identity.inode, end: count)
  }

  /// Clears the journal's path once a commit has folded the journal into a new plist (which
  /// its header no longer names, so a crash before this leaves it ignored): a journal is
  /// removed; with `keepAside` (what was there could not be read whole), or when what is there
  /// is no journal at all (a folder, a file of something else), it is moved to
  /// `<journal>.unreadable-<time>` instead, never deleted. Call holding the suite's lock.
  /// - Returns: where it was kept, when it was.
  /// - Throws: the failed `rename(2)` of what is kept aside.
  ///
  /// The journal the commit read (`read`: the same file, by its inode) is the one folded,
  /// whatever its header names (a journal of `folded` by content: see ``Position/byContent``).
  /// Another whose header names another version than `folded` (the plist the commit
  /// replaced) is not: the plist was replaced since it was written, or a compaction crashed
  /// before removing it. Its records may hold changes the plist does not, so it is kept aside
  /// too (`foreign`), never deleted.
  @discardableResult
  static func retire(
    journalOf plistPath: String, keepAside: Bool, folded: FileIdentity?, read: Position?
  ) throws(SystemCallError) -> (aside: String, foreign: Bool)? {
    let journal = path(of: plistPath)
    guard let entry = try? FileSystem.linkEntry(journal) else { return nil }
    let foreign =
      entry.isRegularFile && entry.identity.inode != read?.inode
      && isJournal(journal, ofAnotherVersionThan: folded)
    if !keepAside, !foreign, entry.isRegularFile,
      let prefix = FileSystem.readPrefix(magic.count, of: journal), headerFormat(prefix) != nil
    {
      try? FileSystem.remove(journal)
      return nil
    }
    return (try PropertyListFile.moveAside(journal), foreign)
  }

  // MARK: Bytes

  /// FNV-1a, 64 bits: enough to tell a torn or damaged record from a whole one.
  private static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
      hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
    }
    return hash
  }

  static func word(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
    var value: UInt64 = 0
    for i in (0..<8).reversed() where offset + i < bytes.count {
      value = value << 8 | UInt64(bytes[offset + i])
    }
    return value
  }

  private static func append(_ value: UInt64, width: Int, to bytes: inout [UInt8]) {
    for i in 0..<width { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * i))) }
  }
}

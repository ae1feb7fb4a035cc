import Foundation
import Glibc

/// A large suite's journal, `<suite>.plist.journal`: the changes of small commits, appended
/// and made durable with one `fdatasync(2)`, instead of the whole domain re-encoded and
/// rewritten for each; folded back into the property list (compacted) when it grows past a
/// share of the plist's size.
///
/// The journal belongs to one version of the plist: its header names that version's device,
/// inode, size and modification time. A journal whose header names another version (the
/// plist was compacted, replaced or edited since) is ignored, never applied to the wrong base.
/// A compaction writes the new plist before it removes the journal, so a crash between the two
/// leaves a journal that names the old version and is ignored.
///
/// After the header come records, each a little-endian `UInt32` length, a `UInt64` check of
/// the payload, and the payload: a binary property list `{s: {key: value}, r: [key]}`, the
/// keys set and the keys removed by one commit. Records are only ever appended, under the
/// suite's lock; a reader applies them in order and stops at the first that is incomplete or
/// does not check (a writer that died in the middle of an append). How far a reader may go is
/// the length the suite's token record publishes once the append is durable (see
/// ``SuiteSidecar``): a value is never shown before it is on disk.
package enum SuiteJournal {
  /// "AGJRNL01".
  private static let magic: [UInt8] = Array("AGJRNL01".utf8)
  static let headerSize = 40
  private static let recordHeaderSize = 12

  /// One key's change in a record: its new value, `nil` when it was removed.
  typealias Change = (key: String, value: PropertyListValue?)

  /// Where a reader of the journal stands: which file (its inode), and the offset past the
  /// last record it applied.
  struct Position: Equatable, Sendable {
    var inode: UInt64
    var end: Int
  }

  /// What a read found past a position.
  struct Tail {
    /// The changes, in the order they were committed (later ones win).
    var changes: [Change]
    var position: Position
    /// Whether the read went on from the position given (the same file), not from the start.
    var continued: Bool
    /// Bytes within the readable length that are not a whole record: damage, or the record of
    /// a writer that died before its append was published.
    var unparsed: Bool
  }

  static func path(of plistPath: String) -> String { plistPath + ".journal" }

  /// How large the journal of a plist of `plistSize` bytes may grow before a commit folds it
  /// into the plist: a sixteenth of it (at least 1 KiB). A record costs a reader more per
  /// byte than the plist does, so a new process's load grows by a few percent at most; and
  /// the rewrite, in proportion to the plist, comes once per that many bytes of records, so
  /// its share of each small commit stays the same at any size.
  static func bound(forPlistSize plistSize: Int) -> Int { max(1024, plistSize / 16) }

  /// Whether `identity` is the plist version a journal's header (or a token record) names:
  /// its inode, size and modification time; a `chmod(2)` of the plist does not orphan it.
  static func sameVersion(_ a: FileIdentity?, _ b: FileIdentity?) -> Bool {
    guard let a, let b else { return false }
    return a.device == b.device && a.inode == b.inode && a.size == b.size && a.modified == b.modified
  }

  // MARK: Reading

  /// Reads the journal of the plist at `plistPath` for the plist version `base`: from `after`
  /// when it names the same journal file, else from the start; never past `limit()` bytes (the
  /// published length, asked for only when there is a journal; `nil`: as far as records
  /// check). A position past that length (read when none was published) starts over.
  ///
  /// - Returns: `nil` when there is no journal, or it belongs to another version of the plist
  ///   or is not a journal at all (a file of another kind in its place is not opened).
  /// - Throws: the failed call when the journal exists but cannot be read.
  static func read(
    journalOf plistPath: String, base: FileIdentity, after: Position?, limit: () -> Int?
  ) throws(SystemCallError) -> Tail? {
    let path = path(of: plistPath)
    let fd: CInt
    do {
      fd = try FileSystem.open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW)
    } catch where error.errno == ENOENT || error.errno == ELOOP {
      return nil
    }
    defer { FileSystem.close(fd) }
    var s = stat()
    _ = try valueOrErrno("fstat", path: path) { fstat(fd, &s) }
    guard s.st_mode & S_IFMT == S_IFREG else { return nil }
    let inode = UInt64(s.st_ino)
    let size = Int(s.st_size)
    let end = min(size, limit() ?? .max)
    // The same file as before: its header was checked then (a journal is never rewritten in
    // place; a new one is renamed in), and only what was appended since is read.
    let start: Int
    if let after, after.inode == inode, after.end >= headerSize, after.end <= end {
      start = after.end
    } else {
      start = 0
    }
    guard end > start || start > 0 else { return nil }
    let bytes = try readBytes(fd, path: path, from: start, count: max(end - start, 0))
    var offset = 0
    if start == 0 {
      guard bytes.count >= headerSize, Array(bytes[0..<8]) == magic else { return nil }
      let named = FileIdentity(
        device: word(bytes, 8), inode: word(bytes, 16), size: Int64(bitPattern: word(bytes, 24)),
        modified: Int64(bitPattern: word(bytes, 32)), changed: 0)
      guard sameVersion(named, base) else { return nil }
      offset = headerSize
    }
    var changes: [Change] = []
    while bytes.count - offset >= recordHeaderSize {
      let length = Int(UInt32(truncatingIfNeeded: word(bytes, offset)))
      let check = word(bytes, offset + 4)
      let payloadStart = offset + recordHeaderSize
      guard length > 0, bytes.count - payloadStart >= length else { break }
      let payload = bytes[payloadStart..<(payloadStart + length)]
      guard checksum(payload) == check, let record = decode(Data(payload)) else { break }
      changes.append(contentsOf: record)
      offset = payloadStart + length
    }
    return Tail(
      changes: changes, position: Position(inode: inode, end: start + offset), continued: start > 0,
      unparsed: offset < bytes.count)
  }

  private static func readBytes(_ fd: CInt, path: String, from start: Int, count: Int) throws(SystemCallError) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    let read = bytes.withUnsafeMutableBytes { buffer in
      Result { () throws(SystemCallError) -> Int in
        var used = 0
        while used < count, let base = buffer.baseAddress {
          let n = try valueOrErrno("pread", path: path) { pread(fd, base + used, count - used, off_t(start + used)) }
          if n == 0 { break }
          used += n
        }
        return used
      }
    }
    bytes.removeLast(count - (try read.get()))
    return bytes
  }

  /// A suite's stored values as a tool that does not open the suite reads them
  /// (`groupctl read`, `export`, `explain`): the plist at `plistPath` (a link followed), then
  /// the records of its journal as far as its lock file publishes them. Nothing is created,
  /// locked or moved aside.
  ///
  /// - Returns: `nil` when there is no plist.
  /// - Throws: `.io` when the plist or its journal cannot be read, the message the system's
  ///   reason alone; `.corruptPreferences` when the plist cannot be parsed or its root is not
  ///   a dictionary, the message the reason.
  package static func storedValues(ofSuiteAt plistPath: String) throws(AppGroupsError) -> [String: PropertyListValue]? {
    let read: (Data, FileIdentity)?
    do {
      read = try FileSystem.read(plistPath)
    } catch {
      throw AppGroupsError(.io, error.reason ?? String(cString: strerror(error.errno)), cause: error)
    }
    guard let (data, identity) = read else { return nil }
    let value = try PropertyListValue(propertyListData: data)
    guard case .dictionary(var values) = value else {
      throw AppGroupsError(.corruptPreferences, "its root is a \(value.typeName), not a dictionary")
    }
    let tail: Tail?
    do {
      tail = try SuiteJournal.read(journalOf: plistPath, base: identity, after: nil) {
        SuiteSidecar.peek(atPath: plistPath + ".lock")?.journalLength(of: identity)
      }
    } catch {
      throw AppGroupsError(.io, error.reason ?? String(cString: strerror(error.errno)), cause: error)
    }
    for (key, value) in tail?.changes ?? [] { values[key] = value }
    return values
  }

  /// What is wrong with the journal of the suite whose plist is at `plistPath`, for
  /// `groupctl doctor`: `nil` when there is none, when it belongs to another version of the
  /// plist or none is published for it, and when every byte within its published length is
  /// a whole record.
  package static func damage(ofSuiteAt plistPath: String) -> String? {
    guard let identity = try? FileSystem.identity(ofPath: plistPath),
      let length = SuiteSidecar.peek(atPath: plistPath + ".lock")?.journalLength(of: identity)
    else { return nil }
    do {
      guard let tail = try read(journalOf: plistPath, base: identity, after: nil, limit: { length }),
        tail.unparsed
      else { return nil }
      return "bytes \(tail.position.end) to \(length) of its durable length are not whole records"
    } catch {
      return "it cannot be read: \(error)"
    }
  }

  // MARK: Writing

  /// One commit's changes as a record; `nil` when they cannot be encoded.
  static func record(_ changes: [Change]) -> [UInt8]? {
    var set: [String: PropertyListValue] = [:]
    var removed: [PropertyListValue] = []
    for (key, value) in changes {
      if let value { set[key] = value } else { removed.append(.string(key)) }
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
    let fd: CInt
    do {
      fd = try FileSystem.open(path, O_WRONLY | O_NOFOLLOW)
    } catch where error.errno == ENOENT || error.errno == ELOOP {
      throw SystemCallError(call: "open", path: path, .resourceTemporarilyUnavailable)
    }
    defer { FileSystem.close(fd) }
    var s = stat()
    _ = try valueOrErrno("fstat", path: path) { fstat(fd, &s) }
    guard UInt64(s.st_ino) == position.inode, Int(s.st_size) >= position.end else {
      throw SystemCallError(call: "open", path: path, .resourceTemporarilyUnavailable)
    }
    if Int(s.st_size) > position.end {
      _ = try valueOrErrno("ftruncate", path: path) { ftruncate(fd, off_t(position.end)) }
    }
    let written = record.withUnsafeBytes { buffer in
      Result { () throws(SystemCallError) in
        var written = 0
        while written < buffer.count, let base = buffer.baseAddress {
          written += try valueOrErrno("pwrite", path: path) {
            pwrite(fd, base + written, buffer.count - written, off_t(position.end + written))
          }
        }
      }
    }
    try written.get()
    _ = try valueOrErrno("fdatasync", path: path) { fdatasync(fd) }
    TestHooks.pauseBeforePublish(path: path)
    published(Position(inode: position.inode, end: position.end + record.count))
  }

  /// Starts the journal of plist version `base` with `record`: written to a temporary file,
  /// `fsync`ed and renamed over any journal of an older version (see
  /// ``FileSystem/writeAtomically(_:to:mode:notBefore:beforeRename:afterRename:)``).
  /// `publish` is called with the journal's length just before the rename, after
  /// `beforeRename`: a watcher woken by the rename must find the length published (one that
  /// reads the length before the rename finds no journal of this version, or the old one,
  /// which names another version, and is woken again by the rename).
  /// - Returns: the journal's position.
  static func create(
    _ record: [UInt8], journalOf plistPath: String, base: FileIdentity,
    beforeRename: () throws(SystemCallError) -> Void, publish: (Int) -> Void
  ) throws(SystemCallError) -> Position {
    var bytes = magic
    bytes.reserveCapacity(headerSize + record.count)
    append(base.device, width: 8, to: &bytes)
    append(base.inode, width: 8, to: &bytes)
    append(UInt64(bitPattern: base.size), width: 8, to: &bytes)
    append(UInt64(bitPattern: base.modified), width: 8, to: &bytes)
    bytes.append(contentsOf: record)
    let count = bytes.count
    let journal = path(of: plistPath)
    FileSystem.removeLeftoverTemporaries(for: FileSystem.lastComponent(of: journal), in: FileSystem.folder(of: journal))
    let identity = try FileSystem.writeAtomically(
      Data(bytes), to: journal,
      beforeRename: { () throws(SystemCallError) in
        try beforeRename()
        publish(count)
      })
    return Position(inode: identity.inode, end: count)
  }

  // MARK: Bytes

  private static func decode(_ payload: Data) -> [Change]? {
    guard case .dictionary(let root)? = try? BinaryPropertyList.decode(payload),
      case .dictionary(let set)? = root["s"], case .array(let removed)? = root["r"]
    else { return nil }
    var changes: [Change] = []
    changes.reserveCapacity(set.count + removed.count)
    for case .string(let key) in removed { changes.append((key, nil)) }
    for (key, value) in set { changes.append((key, value)) }
    return changes.count == set.count + removed.count ? changes : nil
  }

  /// FNV-1a, 64 bits: enough to tell a torn or damaged record from a whole one.
  private static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
      hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
    }
    return hash
  }

  private static func word(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
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

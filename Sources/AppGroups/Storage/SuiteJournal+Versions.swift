import Foundation

// Which version of a suite's plist a journal belongs to (see ``SuiteJournal``): its header
// against the plist's identity or content, and what the lock file's record vouches for.
extension SuiteJournal {
  /// Whether `identity` is the plist version a token record names: its device, inode, size
  /// and modification time; a `chmod(2)` of the plist does not orphan it.
  static func sameVersion(_ a: FileIdentity?, _ b: FileIdentity?) -> Bool {
    guard let a, let b else { return false }
    return a.device == b.device && a.inode == b.inode && a.size == b.size && a.modified == b.modified
  }

  /// Whether plist version `version` is still the plist at `plistPath`: `record` (the token
  /// record) names it, without a system call; else `stat(2)` finds it there.
  static func plist(at plistPath: String, isStill version: FileIdentity, record: SuiteLockFile.Record?) -> Bool {
    if sameVersion(record?.identity, version) { return true }
    return sameVersion(try? FileSystem.identity(ofPath: plistPath), version)
  }

  /// What to say of the file at the journal's path of the suite whose plist is at
  /// `plistPath` when it is a journal of another version of the plist, which no reader
  /// applies (call when ``read(journalOf:base:after:published:)`` found no journal of this
  /// version): the plist was replaced or edited since the journal was written; or touched,
  /// copied or restored under an older build's journal, whose header names no content; or a
  /// compaction was cut short. The next commit keeps it aside. `nil` otherwise. A compaction
  /// in flight shows one for a moment (its new plist is renamed in before the old journal
  /// goes): it is said only once looked at again while no commit holds the suite's lock, and
  /// not while one does (the next read looks again).
  package static func otherVersionProblem(ofSuiteAt plistPath: String) -> String? {
    let journal = path(of: plistPath)
    func foreign() -> Bool {
      isJournal(journal, ofAnotherVersionThan: try? FileSystem.identity(ofPath: plistPath))
    }
    guard foreign(),
      LockedFile.withSharedLockIfFree(path: SuiteLockFile.path(of: plistPath), { foreign() }) ?? false
    else { return nil }
    return "\(journal) is a journal of another version of the plist (replaced or edited since the"
      + " journal was written, touched or copied under an older build's journal, or a compaction"
      + " was cut short): its records are not read, and may hold changes the suite does not have;"
      + " the next commit keeps it aside"
  }

  /// What to say when the journal that the suite's lock file publishes for plist version
  /// `base` is gone (call when ``read(journalOf:base:after:published:latest:)`` found
  /// ``Damage/missing(published:)``): removed from outside, or left out of a restore that kept
  /// the plist's inode. The changes acknowledged since the plist was last written whole are
  /// lost; the next commit writes the plist whole, without them, and publishes no journal.
  /// `nil` otherwise.
  ///
  /// A reader outside the lock sees the same for a moment while a commit is in flight: a
  /// compaction renames its new plist in, moves the token, then removes the journal; a commit
  /// that starts a journal publishes its length just before it renames it in. So it is said
  /// only when, looked at again under the suite's lock file taken shared (not while a commit
  /// holds it), the token record still names `base`, `base` is still the plist at the path,
  /// the record publishes a length above 0 for its journal, and nothing lies at the journal's
  /// path.
  package static func goneProblem(ofSuiteAt plistPath: String, version base: FileIdentity) -> String? {
    let journal = path(of: plistPath)
    func gone() -> Int? {
      guard let record = SuiteLockFile.peek(atPath: SuiteLockFile.path(of: plistPath)),
        let published = record.journal(of: base), published.length > 0,
        sameVersion(try? FileSystem.identity(ofPath: plistPath), base)
      else { return nil }
      do {
        return try FileSystem.linkEntry(journal) == nil ? published.length : nil
      } catch {
        return nil
      }
    }
    guard let length = LockedFile.withSharedLockIfFree(path: SuiteLockFile.path(of: plistPath), gone) ?? nil
    else { return nil }
    return "\(journal), the suite's last small commits, is gone, though its lock file publishes"
      + " \(length) bytes of it as durable: the changes acknowledged since the plist was last"
      + " written whole are lost; the next commit writes the plist whole, without them, and"
      + " publishes no journal"
  }

  /// Whether the file at `journal` is a journal whose header does not name plist version
  /// `base` by its identity (see ``retire(journalOf:keepAside:folded:read:)``): its first 40
  /// bytes, no content compared. So a journal that may be `base`'s by content only is never
  /// renamed over or removed without its records read.
  static func isJournal(_ journal: String, ofAnotherVersionThan base: FileIdentity?) -> Bool {
    guard let header = FileSystem.readPrefix(headerSize, of: journal), header.count == headerSize,
      headerFormat(header) != nil
    else { return false }
    return !self.header(header, names: base)
  }

  /// What the token record publishes of the journal when an outside edit moves the token to
  /// plist version `now`, the record before being `before`: ``Published/noJournal`` unless a
  /// journal lies there that may be `now`'s (a version-2 journal whose header names a plist of
  /// `now`'s size, which may be `now`'s by its content, the plist touched or copied; or one
  /// that names `now` itself, read as far as its records check: ``Published/unpublished``).
  /// Of one that may be `now`'s by content: ``Published/unpublished(bound:)`` with the length
  /// `before` published for the version its header names, or carried by an earlier move;
  /// ``Published/noJournal`` when `before` named another version or nothing durable of it,
  /// as `before` did not vouch for it either. Its first 40 bytes; nothing is hashed.
  static func publishedAfterOutsideEdit(
    ofPlistAt plistPath: String, to now: FileIdentity?,
    before: (identity: FileIdentity?, journal: Published)?
  ) -> Published {
    guard let now, let header = FileSystem.readPrefix(headerSize, of: path(of: plistPath)),
      header.count == headerSize
    else { return .noJournal }
    guard self.header(header, names: now)
      || (headerFormat(header) == 2 && Int64(bitPattern: word(header, 24)) == now.size)
    else { return .noJournal }
    // A journal that names `now` itself (the lock file made again) is read as its records check.
    if self.header(header, names: now) { return .unpublished }
    guard let before, let named = before.identity else { return .unpublished }
    // A bound carried by an earlier move (the plist touched again) still bounds the journal.
    if before.journal.isUnpublished { return before.journal }
    // The record named the version the header names: its length bounds the journal. One that
    // named another version vouched for none of it (a compaction's new plist, cut short
    // before the journal's removal), and neither does the new record.
    guard self.header(header, namesFileOf: named), before.journal.length > 0 else { return .noJournal }
    return .unpublished(bound: before.journal.length)
  }

  /// Whether a journal's header (its first ``headerSize`` bytes) names plist version `base` by
  /// its identity: its inode, size and modification time, and its device in a version-1
  /// header (a version-2 header holds the content check there).
  static func header(_ header: [UInt8], names base: FileIdentity?) -> Bool {
    guard let base, let format = headerFormat(header) else { return false }
    return (format == 2 || word(header, 8) == base.device) && self.header(header, namesFileOf: base)
  }

  /// How far the lock file's record as it stands, `latest`, lets a journal matched by its
  /// content be read (see ``read(journalOf:base:after:published:latest:)``): `nil` when it does
  /// not vouch for it. A record for the version the header names vouches for its published
  /// length (for none when nothing of it was durable); one that carries a length over a token
  /// moved for a touch or copy (``Published/unpublished(bound:)``) for that length; one that
  /// publishes nothing for its version (a lock file made again, a torn record repaired), or no
  /// record, for as far as the records check. A record that names another version does not:
  /// the new plist of a compaction cut short before it removed this journal.
  static func vouchedByContent(
    _ header: [UInt8], _ latest: (identity: FileIdentity?, journal: Published)?
  ) -> Int? {
    guard let latest, let named = latest.identity else { return .max }
    if latest.journal.isUnpublished { return latest.journal.length > 0 ? latest.journal.length : .max }
    guard self.header(header, namesFileOf: named), latest.journal.length > 0 else { return nil }
    return latest.journal.length
  }

  /// Whether a journal's header names the file of plist version `named` (its inode, size and
  /// modification time; the device, which a copy moves, left aside).
  private static func header(_ header: [UInt8], namesFileOf named: FileIdentity) -> Bool {
    word(header, 16) == named.inode && Int64(bitPattern: word(header, 24)) == named.size
      && Int64(bitPattern: word(header, 32)) == named.modified
  }

  /// Whether a version-2 journal's header names plist version `base` by its content: the same
  /// size, and the check of the plist's bytes, read again for it.
  static func header(
    _ header: [UInt8], namesContentOf plistPath: String, version base: FileIdentity
  ) throws(SystemCallError) -> Bool {
    guard headerFormat(header) == 2, Int64(bitPattern: word(header, 24)) == base.size
    else { return false }
    return try contentCheck(ofPlistAt: plistPath, version: base) == word(header, 8)
  }

  /// The ``contentCheck(_:)`` of the plist at `plistPath` when it is version `base`: read
  /// whole, its `fstat(2)` naming `base` before and after the read; `nil` when another file
  /// or version is there now (replaced since it was read), or no regular file.
  /// - Throws: the failed `open`, `fstat` or `pread`.
  static func contentCheck(
    ofPlistAt plistPath: String, version base: FileIdentity
  ) throws(SystemCallError) -> UInt64? {
    let opened: OpenFile?
    do {
      opened = try OpenFile(existing: plistPath, for: .reading)
    } catch where error.code == .tooManySymbolicLinkLevels || error.code == .noSuchDeviceOrAddress {
      return nil
    }
    guard let file = opened, sameVersion(try file.status().identity, base) else { return nil }
    let bytes = try file.read(at: 0, count: Int(base.size))
    guard bytes.count == Int(base.size), sameVersion(try file.status().identity, base) else { return nil }
    return bytes.withUnsafeBytes { contentCheck($0) }
  }

  // MARK: The check of a plist's bytes

  /// The check of a plist's bytes that a version-2 header holds: 64 bits, not cryptographic,
  /// enough to tell the plist a journal was written on (whose size the header holds too) from
  /// one replaced or edited since. A word at a time, little-endian (the last one padded with
  /// zeros), each folded in by `hash = (hash <<< 5 ^ word) &* 0x9e3779b97f4a7c15` from a seed
  /// of `0x243f6a8885a308d3 ^ count`, then MurmurHash3's 64-bit finalizer: about a sixth of
  /// the instructions of the records' FNV-1a, a byte at a time. Each step is a bijection of
  /// the running value, so two files of one size that differ in one word never check the same.
  static func contentCheck(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    let multiplier: UInt64 = 0x9e37_79b9_7f4a_7c15
    var hash: UInt64 = 0x243f_6a88_85a3_08d3 ^ UInt64(bytes.count)
    var offset = 0
    while bytes.count &- offset >= 8 {
      let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
      hash = ((hash &<< 5 | hash &>> 59) ^ word) &* multiplier
      offset &+= 8
    }
    if offset < bytes.count {
      var word: UInt64 = 0
      for index in offset..<bytes.count { word |= UInt64(bytes[index]) &<< (8 &* UInt64(index &- offset)) }
      hash = ((hash &<< 5 | hash &>> 59) ^ word) &* multiplier
    }
    hash ^= hash &>> 33
    hash &*= 0xff51_afd7_ed55_8ccd
    hash ^= hash &>> 33
    hash &*= 0xc4ce_b9fe_1a85_ec53
    hash ^= hash &>> 33
    return hash
  }
}

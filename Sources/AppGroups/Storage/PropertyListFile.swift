import Foundation

/// One property-list file of preferences on disk: reading it (only a regular file, screened,
/// its root a dictionary), moving an unreadable one aside, and writing a new version durably.
///
/// It is the one place that turns bytes on disk into a domain's values and back; the locking
/// around it is ``LockedFile``'s. Nothing here ever deletes or overwrites a file it could not
/// read: such a file is moved aside to `<file>.unreadable-<time>`.
enum PropertyListFile {
  /// What was found at a path.
  enum Contents {
    /// No file.
    case missing
    /// The file's values, and the identity of the version read.
    case values([String: PropertyListValue], FileIdentity)
    /// A file whose values are readable but for some (a keyed-archiver uid, a set, a damaged
    /// object): the rest of them, what was left out and why, and the bytes read, so that
    /// the whole file can be kept aside before anything writes over it.
    case salvaged([String: PropertyListValue], FileIdentity, skipped: [PropertyListSalvage.SkippedKey], data: Data)
    /// A file that cannot be read as a domain: why, and the identity of what is there.
    case unreadable(reason: String, FileIdentity)
  }

  /// Reads the file at `path`.
  ///
  /// Only a regular file is read. A symbolic link (which could lead out of the container), a
  /// fifo (which would block the reader), a folder, a socket or a device in its place is
  /// unreadable, without being followed or opened.
  /// - Throws: a ``SystemCallError`` when the file exists but cannot be read (`EACCES`, `EIO`).
  static func read(_ path: String) throws(SystemCallError) -> Contents {
    if let entry = try FileSystem.linkEntry(path), !entry.isRegularFile {
      return .unreadable(reason: "it is \(entry.kind), not a regular file", entry.identity)
    }
    guard let (data, identity) = try FileSystem.read(path, followLinks: false) else { return .missing }
    let strictFailure: String
    do {
      let value = try PropertyListValue(propertyListData: data)
      guard case .dictionary(let values) = value else {
        let article = value.typeName == "array" ? "an" : "a"
        return .unreadable(reason: "its root is \(article) \(value.typeName), not a dictionary", identity)
      }
      return .values(values, identity)
    } catch {
      strictFailure = error.message
    }
    // One value the model cannot hold must not cost every other key.
    guard let salvage = try? PropertyListValue.salvaging(propertyListData: data),
      !salvage.skipped.isEmpty, !salvage.values.isEmpty
    else {
      return .unreadable(reason: strictFailure, identity)
    }
    return .salvaged(salvage.values, identity, skipped: salvage.skipped, data: data)
  }

  /// Keeps `data` (a file that was read only in part) beside `path` as
  /// `<path>.unreadable-<UTC time>`, created new, durably; unless a copy with these bytes is
  /// there already (another process that read the same file kept it).
  /// - Returns: where the copy is, and whether it was there already.
  static func keepCopy(_ data: Data, of path: String) throws(SystemCallError) -> (path: String, existed: Bool) {
    let folder = FileSystem.folder(of: path)
    let prefix = FileSystem.lastComponent(of: path) + ".unreadable-"
    for name in FileSystem.entryNames(in: folder) where name.hasPrefix(prefix) {
      let candidate = folder + "/" + name
      if let entry = try? FileSystem.linkEntry(candidate), entry.isRegularFile,
        entry.identity.size == Int64(data.count),
        let (bytes, _) = try? FileSystem.read(candidate, followLinks: false), bytes == data
      {
        return (candidate, true)
      }
    }
    let aside = asidePath(for: path)
    try FileSystem.writeAtomically(data, to: aside)
    return (aside, false)
  }

  /// Moves the file at `path` aside to `<path>.unreadable-<UTC time>` (never over another
  /// file) and makes the rename durable. Call holding the file's lock.
  /// - Returns: where the file went.
  /// - Throws: the failed `rename(2)` (or the folder's `fsync(2)`).
  static func moveAside(_ path: String) throws(SystemCallError) -> String {
    let aside = asidePath(for: path)
    try FileSystem.rename(path, to: aside)
    try FileSystem.syncDirectory(FileSystem.folder(of: path))
    return aside
  }

  /// Writes `values` as a binary property list durably and atomically in place of `path`
  /// (see ``FileSystem/writeAtomically(_:to:mode:notBefore:beforeRename:afterRename:)``),
  /// after removing temporary files that killed writers left. Call holding the file's lock.
  /// - Returns: the identity of the new file.
  static func write(
    _ values: [String: PropertyListValue], to path: String, notBefore: Int64?,
    beforeRename: () throws(SystemCallError) -> Void = {},
    afterRename: (FileIdentity) -> Void = { _ in }
  ) throws(AppGroupsError) -> FileIdentity {
    let data = try PropertyListValue.dictionary(values).propertyListData(format: .binary)
    let folder = FileSystem.folder(of: path)
    FileSystem.removeLeftoverTemporaries(for: (path as NSString).lastPathComponent, in: folder)
    do {
      return try FileSystem.writeAtomically(
        data, to: path, notBefore: notBefore, beforeRename: { _ throws(SystemCallError) in try beforeRename() },
        afterRename: afterRename)
    } catch {
      throw AppGroupsError(io: error, "writing \(path)")
    }
  }

  private static func asidePath(for path: String) -> String {
    let stamp = FileSystem.utcStamp()
    var candidate = "\(path).unreadable-\(stamp)"
    var counter = 1
    while Paths.exists(candidate) {
      counter += 1
      candidate = "\(path).unreadable-\(stamp)-\(counter)"
    }
    return candidate
  }
}

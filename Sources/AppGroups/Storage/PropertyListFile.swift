import Foundation

/// One property-list file of preferences on disk: reading it (only a regular file, screened,
/// its root a dictionary), moving an unreadable one aside, and writing a new version durably.
///
/// It is the one place that turns bytes on disk into a domain's values and back; the locking
/// around it is ``LockedFile``'s. Nothing here ever deletes or overwrites a file it could not
/// read: such a file is moved aside to `<file>.unreadable-<time>`.
package enum PropertyListFile {
  /// What was found at a path.
  enum Contents {
    /// No file.
    case missing
    /// The file's values, and the identity of the version read.
    case values([String: PropertyListValue], FileIdentity)
    /// A binary file's values held as its bytes and an index of its keys, decoded when read
    /// (see ``BinaryPropertyListIndex``); only when asked for (`indexing`).
    case indexed(BinaryPropertyListIndex, FileIdentity)
    /// A file whose values are readable but for some (a keyed-archiver uid, a set, a damaged
    /// object): the rest of them, what was left out and why, and the bytes read, so that
    /// the whole file can be kept aside before anything writes over it.
    case salvaged([String: PropertyListValue], FileIdentity, skipped: [PropertyListSalvage.SkippedKey], data: Data)
    /// A file that cannot be read as a domain: why, and the identity of what is there.
    case unreadable(reason: String, FileIdentity)
  }

  /// The most bytes a preferences file is read for, 256 MiB (``FileSystem/readBound``): 64
  /// times a domain's default size limit, 4 times the largest
  /// (``GroupDefaults/Options/maximumSizeLimit``). A larger file (a sparse one, a file some other
  /// tool grew) is unreadable, as a damaged one is, without a byte of it read: read whole, it
  /// would end every member that opens the suite for want of memory.
  package static let maximumBytes = FileSystem.readBound

  /// Reads the file at `path`.
  ///
  /// Only a regular file is read. A symbolic link (which could lead out of the container), a
  /// fifo (which would block the reader), a folder, a socket or a device in its place is
  /// unreadable, and never followed or read: the open does not follow a link and does not
  /// wait (`O_NOFOLLOW | O_NONBLOCK`), and what it opened is read only when `fstat(2)` says it
  /// is a regular file. Only when the open or that check fails is the path looked at
  /// (`lstat(2)`), to say what is there instead: a read of a regular file, which every change
  /// heard makes, costs no look of its own.
  ///
  /// With `indexing`, a binary file that ``BinaryPropertyListIndex`` accepts (checked whole,
  /// as the full decode checks it) and is not small (``BinaryPropertyListIndex/minimumSize``)
  /// is returned `.indexed`; any other (XML, a UTF-16 key, anything malformed) is read as
  /// without it, and says what it always said.
  ///
  /// `looked` is what the caller's `lstat(2)` of `path` found just before, in the same pass
  /// (``FileSystem/linkEntry(_:)``): the kind it says is the one screened, before anything is
  /// opened, and the path is not looked at again (what the open finds is the identity
  /// returned).
  ///
  /// A regular file of more than ``maximumBytes`` is unreadable, and not read.
  /// - Throws: a ``SystemCallError`` when the file exists but cannot be read (`EACCES`, `EIO`).
  static func read(
    _ path: String, indexing: Bool = false, looked: FileSystem.LinkEntry? = nil
  ) throws(SystemCallError) -> Contents {
    if let looked, !looked.isRegularFile {
      return .unreadable(reason: "it is \(looked.kind), not a regular file", looked.identity)
    }
    let read: FileSystem.WholeFile
    do {
      // Nothing there: no look to be told so again (a file made since is as one made after
      // the read; the watch's look after the load sees it).
      guard let whole = try FileSystem.readWhole(path, followLinks: false, atMost: maximumBytes)
      else { return .missing }
      read = whole
    } catch where error.isTooLarge {
      // Over the bound (said by its size, before the read): what is there is a regular file.
      var entry = looked
      if entry == nil { entry = try FileSystem.linkEntry(path) }
      guard let entry else { return .missing }
      return .unreadable(reason: error.reason ?? "\(error)", entry.identity)
    } catch {
      // The open or the check refused what is there (a link: `ELOOP`; a fifo, a folder: not
      // a regular file), or the read failed: what is at the path says which.
      guard looked == nil else { throw error }
      guard let entry = try FileSystem.linkEntry(path) else { return .missing }
      guard entry.isRegularFile else {
        return .unreadable(reason: "it is \(entry.kind), not a regular file", entry.identity)
      }
      throw error
    }
    let data = read.data, identity = read.identity
    if indexing, data.count >= BinaryPropertyListIndex.minimumSize, let index = BinaryPropertyListIndex(data) {
      return .indexed(index, identity)
    }
    let strictFailure: String
    do {
      // A binary file (what this package writes) goes to its reader directly, whose header
      // check tells any other format: that one goes through the value's decoding of every
      // format, which fails a binary file as the reader does (a damaged one says the same).
      let value: PropertyListValue
      do {
        value = try BinaryPropertyList.decode(data)
      } catch {
        value = try PropertyListValue(propertyListData: data)
      }
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
  package static func moveAside(_ path: String) throws(SystemCallError) -> String {
    let aside = asidePath(for: path)
    try FileSystem.rename(path, to: aside)
    try FileSystem.syncDirectory(FileSystem.folder(of: path))
    return aside
  }

  /// The folder, inside a preferences file's own, where its new versions are written and
  /// named before they are renamed over it (see
  /// ``FileSystem/writeAtomically(_:to:mode:notBefore:attribute:staging:beforeRename:afterRename:)``):
  /// nobody watches it, so a commit wakes the suite's watchers once, at the rename.
  static let stagingFolderName = ".staging"

  /// Writes `values` as a binary property list durably and atomically in place of `path`
  /// (see ``FileSystem/writeAtomically(_:to:mode:notBefore:attribute:staging:beforeRename:afterRename:)``),
  /// staged in ``stagingFolderName``; then removes the temporary files that killed writers left
  /// (in the file's folder and in the staging folder), also when the write failed. A write that
  /// finds the disk full (`ENOSPC`, `EDQUOT`) is tried once more after that removal: what killed
  /// writers left may be what filled it. Call holding the file's lock.
  /// - Returns: the identity of the new file.
  static func write(
    _ values: [String: PropertyListValue], to path: String, notBefore: Int64?,
    beforeRename: () throws(SystemCallError) -> Void = {},
    afterRename: (FileIdentity) -> Void = { _ in }
  ) throws(AppGroupsError) -> FileIdentity {
    let data = BinaryPropertyList.encode(.dictionary(values))
    let folder = FileSystem.folder(of: path)
    let name = FileSystem.lastComponent(of: path)
    let staging = folder + "/" + stagingFolderName
    // Removed once the file is in place (or the write failed), not before: the rename, and the
    // watchers it wakes, do not wait for a scan of the folder. (The staging folder's are
    // removed by the write, through the descriptor it writes through.)
    defer { FileSystem.removeLeftoverTemporaries(for: name, in: folder) }
    var full = false
    while true {
      do throws(SystemCallError) {
        return try FileSystem.writeAtomically(
          data, to: path, notBefore: notBefore, staging: staging,
          beforeRename: { _ throws(SystemCallError) in try beforeRename() },
          afterRename: afterRename)
      } catch where !full && (error.code == .noSpace || error.code == .diskQuotaExceeded) {
        // The staging folder's leftovers went with the failed write; the folder's go now.
        full = true
        FileSystem.removeLeftoverTemporaries(for: name, in: folder)
      } catch {
        throw AppGroupsError(io: error, "writing \(path)")
      }
    }
  }

  /// Reads the domain at `path`, lets `body` change its values, and writes them back durably
  /// and atomically (a binary property list, mode 0600; the file removed when no value is
  /// left), holding `lock` all along: a whole preferences file's read-modify-write (see
  /// ``LockedFile/withLock(timeout:whileHolderProgresses:doing:_:)``). Nothing is written
  /// when the values did not change or `body` threw.
  ///
  /// - Returns: the values now in the file.
  /// - Throws: what the lock throws; `.corruptPreferences` when the file cannot be read whole
  ///   (it is left as it is: a rewrite would drop what could not be read); `.io` naming the
  ///   call; or what `body` throws.
  @discardableResult
  static func update(
    _ path: String, holding lock: LockedFile, timeout: Duration, doing what: String,
    _ body: (inout [String: PropertyListValue]) throws -> Void
  ) throws -> [String: PropertyListValue] {
    var bodyError: (any Error)?
    let values = try lock.withLock(timeout: timeout, doing: what) { () throws(AppGroupsError) in
      let folder = FileSystem.folder(of: path)
      FileSystem.removeLeftoverTemporaries(for: FileSystem.lastComponent(of: path), in: folder)
      let contents: Contents
      do throws(SystemCallError) {
        contents = try read(path)
      } catch {
        throw AppGroupsError(io: error, "\(what): reading \(path)")
      }
      var current: (values: [String: PropertyListValue], identity: FileIdentity)?
      switch contents {
      case .missing: current = nil
      case .values(let values, let identity): current = (values, identity)
      case .indexed(let index, let identity): current = (index.decoded, identity)
      case .unreadable(let reason, _): throw AppGroupsError(.corruptPreferences, "\(path): \(reason)")
      case .salvaged(_, _, let skipped, _):
        let left = skipped.map(\.description).joined(separator: ", ")
        throw AppGroupsError(.corruptPreferences, "\(path): some values cannot be read: \(left)")
      }
      var values = current?.values ?? [:]
      do {
        try body(&values)
      } catch {
        bodyError = error
        return values
      }
      if current?.values == values || (current == nil && values.isEmpty) { return values }
      if values.isEmpty {
        do throws(SystemCallError) {
          try FileSystem.removeDurably(path)
        } catch {
          throw AppGroupsError(io: error, "\(what): removing \(path)")
        }
      } else {
        _ = try write(values, to: path, notBefore: current?.identity.modified)
      }
      return values
    }
    if let bodyError { throw bodyError }
    return values
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

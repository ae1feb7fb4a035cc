import AppGroups
import Foundation
internal import Synchronization

/// One access group's items on disk: `<root>/Keychains/<group>/keychain.plist`, with its lock
/// file `keychain.plist.lock` beside it, alone in the group's folder so that a sandbox rule
/// can admit an app to exactly its own groups' folders.
///
/// - Readers never lock. A write renames a whole new file over the old one, so a reader sees
///   one version or the next, never a mixture. A process keeps the last version it read and
///   checks, at every call, that the file at the path is still that version (device, inode,
///   size, modification and change times): a change made by another process is seen by the
///   next call, without a stale cache.
/// - Writers take the lock file's `flock(2)` through ``LockedFile`` (a bounded wait woken by
///   the kernel; never held across a suspension, see `SuspensionBarrier`), re-read the file
///   under it, change it, and write it durably (temporary file, `fsync(2)`, `rename(2)`,
///   `fsync(2)` of the folder) before they unlock. Two processes adding the same item are
///   serialised: the second finds the first's item.
/// - A file that is not this format is moved aside (`keychain.plist.unreadable-<time>`),
///   never deleted or overwritten, and the keychain says so on stderr.
/// - A file another version of the keychain wrote (its `Format` another
///   `AppGroups keychain …`) is not damage: every call on the group is refused
///   (`errSecDecode`) naming the file and its format, and it is left where it is, unchanged,
///   for the version that wrote it.
/// - A file larger than ``Keychain/maximumAccessGroupBytes`` is refused before a byte is read
///   (`errSecAllocate`) and left where it is; a write that would make it larger is refused
///   (`errSecDiskFull`) before anything is written.
final class AccessGroupFile: @unchecked Sendable {
  let group: String
  let folder: String
  let path: String
  let rootPath: String

  /// The file's name in the group's folder.
  static let fileName = "keychain.plist"
  /// How long a writer waits for another process's lock: 5 seconds.
  static let lockTimeout: Duration = .seconds(5)

  /// The last version read: its identity and contents.
  private struct Snapshot {
    var identity: FileIdentity?
    var contents: GroupContents
  }
  private let cache = Mutex<Snapshot?>(nil)
  /// Serialises this process's writers of the group: one `LockedFile` per lock file per
  /// process, and its lock belongs to the process's open file description.
  private let gate = NSLock()
  // Read and written only while `gate` is held.
  private var lockedFile: LockedFile?

  init(root: ContainerRoot, group: String) {
    self.group = group
    rootPath = root.path
    folder = root.keychainFolderURL(forAccessGroup: group).path
    path = folder + "/" + Self.fileName
  }

  // MARK: Reading

  /// The group's items now, read again only when the file changed since the last read.
  ///
  /// Creates nothing. A missing folder or file holds no items.
  ///
  /// - Throws: `errSecDecode` for a file another version wrote (left as it is),
  ///   `errSecAllocate` for one over the bound, `errSecIO`.
  func contents() throws(KeychainError) -> GroupContents {
    let (identity, cached) = try cachedContents()
    if let cached { return cached }
    guard identity != nil else {
      cache.withLock { $0 = Snapshot(identity: nil, contents: GroupContents()) }
      return GroupContents()
    }
    if let fresh = try readFile() { return fresh }
    // Not this format: moved aside under the lock, then empty.
    return try transaction { _ throws(KeychainError) in }.contents
  }

  /// The items as ``contents()`` reads them, except that a file that is not this format is
  /// left where it is: `nil` then. For tools that look without changing anything. A file
  /// another version wrote is refused as ``contents()`` refuses it.
  func contentsLeavingDamage() throws(KeychainError) -> GroupContents? {
    let (identity, cached) = try cachedContents()
    if let cached { return cached }
    guard identity != nil else { return GroupContents() }
    return try readFile()
  }

  /// The file's identity now (`nil`: no file), and the items read last if it is still that file.
  private func cachedContents() throws(KeychainError) -> (FileIdentity?, GroupContents?) {
    let identity: FileIdentity?
    do {
      identity = try FileSystem.identity(ofPath: path)
    } catch {
      throw ioError(error, "reading")
    }
    if let cached = cache.withLock({ $0 }), cached.identity == identity {
      return (identity, cached.contents)
    }
    return (identity, nil)
  }

  /// Reads the file now; `nil` when it is not this format (damaged: the caller may move it
  /// aside).
  ///
  /// - Throws: `errSecDecode` when another version of the keychain wrote it: see
  ///   ``GroupContents/otherVersion(_:)``.
  private func readFile() throws(KeychainError) -> GroupContents? {
    let read: (Data, FileIdentity)?
    do {
      // A folder on the way that is a symbolic link (out of the root) is refused, as the
      // writers' `makeDirectory` refuses it: the items where it leads are not this group's.
      read =
        try FileSystem.requireFolders(folder, within: rootPath)
        ? FileSystem.readFile(path, atMost: Keychain.maximumAccessGroupBytes) : nil
    } catch where error.errno == EFBIG {
      // Left where it is: moving it aside would hide items nothing else shows.
      throw KeychainError(
        errSecAllocate,
        "access group \(group): \(error): an access group's file holds at most 16 MiB"
          + " (Keychain.maximumAccessGroupBytes); it was not read, and it is left as it is")
    } catch {
      throw ioError(error, "reading")
    }
    guard let (data, identity) = read else {
      cache.withLock { $0 = Snapshot(identity: nil, contents: GroupContents()) }
      return GroupContents()
    }
    guard let contents = GroupContents.decode(data, group: group) else {
      if let format = GroupContents.otherVersion(data) { throw otherVersionError(format) }
      return nil
    }
    cache.withLock { $0 = Snapshot(identity: identity, contents: contents) }
    return contents
  }

  /// The refusal of a file another version of the keychain wrote: its items are that
  /// version's, not damage, so it is neither read nor moved aside nor written over (a
  /// downgrade would otherwise empty every group it wrote).
  ///
  /// - Parameter format: The file's `Format`, quoted and cut to 80 characters in the message.
  private func otherVersionError(_ format: String) -> KeychainError {
    let shown = KeychainService.quoted(String(format.prefix(80))) + (format.count > 80 ? "…" : "")
    return KeychainError(
      errSecDecode,
      "access group \(group): \(path) was written by another version of the keychain (its format"
        + " is \(shown); this version reads \(KeychainService.quoted(GroupContents.format))); its"
        + " items were not read or changed, and it is left as it is: use the version that wrote it")
  }

  // MARK: Writing

  /// Runs `body` on the group's items under its lock, and writes them when `body` changed them.
  ///
  /// - Returns: What `body` returned, and the contents now on disk.
  func transaction<Result>(
    _ body: (inout GroupContents) throws(KeychainError) -> Result
  ) throws(KeychainError) -> (result: Result, contents: GroupContents) {
    var outcome: (Result, GroupContents)?
    try Self.transaction([self]) { (all: inout [GroupContents]) throws(KeychainError) in
      let result = try body(&all[0])
      outcome = (result, all[0])
    }
    guard let outcome else {
      throw KeychainError(errSecInternalComponent, "a transaction ended without a result")
    }
    return outcome
  }

  /// Runs `body` on several groups' items, all of them locked (in the order of their names, so
  /// that two writers never wait for each other), and writes those it changed: first the ones
  /// that gained an item, so that an item moved between groups is never in neither after a
  /// crash (it may be in both).
  static func transaction(
    _ files: [AccessGroupFile], _ body: (inout [GroupContents]) throws(KeychainError) -> Void
  ) throws(KeychainError) {
    // A lock file replaced under a writer (removed by hand, say) makes it start over.
    for _ in 0..<3 {
      if try attempt(files, body) { return }
    }
    throw KeychainError(
      errSecIO,
      "the lock files of access groups \(files.map(\.group).joined(separator: ", ")) kept being"
        + " replaced while this process wrote; nothing was written")
  }

  /// One attempt of ``transaction(_:_:)``: `false` when a lock file was replaced before the
  /// commit point.
  private static func attempt(
    _ files: [AccessGroupFile], _ body: (inout [GroupContents]) throws(KeychainError) -> Void
  ) throws(KeychainError) -> Bool {
    let order = files.indices.sorted { files[$0].group < files[$1].group }
    var locked: [AccessGroupFile] = []
    defer { for file in locked.reversed() { file.unlock() } }
    for index in order {
      try files[index].lock()
      locked.append(files[index])
    }
    var before: [GroupContents] = []
    for file in files { before.append(try file.readLocked()) }
    var after = before
    try body(&after)
    let changed = files.indices.filter { !same(before[$0], after[$0]) }
    let gaining = changed.filter { index in
      !Set(after[index].items.map(\.identifier)).isSubset(of: before[index].items.map(\.identifier))
    }
    // Every file encoded and measured before the first is written: a change that one group's
    // bound refuses writes none.
    var encoded: [(index: Int, data: Data)] = []
    for index in gaining + changed.filter({ !gaining.contains($0) }) {
      encoded.append((index, try files[index].encodeWithinBound(after[index])))
    }
    for (index, data) in encoded {
      guard try files[index].write(after[index], data) else { return false }
    }
    return true
  }

  private static func same(_ a: GroupContents, _ b: GroupContents) -> Bool {
    a.items.count == b.items.count && a.unreadable == b.unreadable
      && zip(a.items, b.items).allSatisfy {
        $0.identifier == $1.identifier && $0.sealed == $1.sealed
      }
  }

  /// Takes this process's gate and the lock file's lock.
  private func lock() throws(KeychainError) {
    gate.lock()
    do throws(KeychainError) {
      do {
        // Every time: a folder on the way replaced by a symbolic link (out of the root) is
        // refused (ELOOP), never written through.
        try FileSystem.makeDirectory(folder, within: rootPath)
        if lockedFile == nil {
          lockedFile = try LockedFile(
            path: path + ".lock", options: LockedFile.Options(makeFolder: rootPath))
        }
      } catch {
        throw ioError(error, "opening the lock of")
      }
      guard let lockedFile else { throw KeychainError(errSecInternalComponent, "no lock file") }
      var attempts = 0
      while true {
        let deadline = FileSystem.deadline(after: Self.lockTimeout)
        do throws(LockedFile.Failure) {
          try lockedFile.lock(until: deadline)
          break
        } catch .failed(let error) {
          throw ioError(error, "locking")
        } catch {
          // Woken well past the bound: this process was stopped (suspended) or not run while
          // it waited; that time does not count against another process's hold.
          attempts += 1
          if attempts < 3 && FileSystem.monotonicNanoseconds() > deadline &+ 500_000_000 {
            continue
          }
          throw KeychainError(
            errSecIO,
            "timed out after \(Self.lockTimeout) waiting for the lock of access group \(group)"
              + " (\(path).lock); another process holds it")
        }
      }
    } catch {
      gate.unlock()
      throw error
    }
  }

  private func unlock() {
    lockedFile?.unlock()
    gate.unlock()
  }

  /// The contents under the lock: the file now, an unreadable one moved aside first; one
  /// another version wrote is refused (`errSecDecode`) and left as it is.
  private func readLocked() throws(KeychainError) -> GroupContents {
    let entry: FileSystem.LinkEntry?
    do {
      entry = try FileSystem.linkEntry(path)
    } catch {
      throw ioError(error, "reading")
    }
    if let cached = cache.withLock({ $0 }), cached.identity == entry?.identity { return cached.contents }
    // Not a regular file (a symbolic link another member of the group planted, a fifo, a
    // folder): never read or written through, moved aside as a file of another format is. The
    // folders on the way were checked when the lock was taken.
    let other = entry.flatMap { $0.isRegularFile ? nil : $0.kind }
    if other == nil, let contents = try readFile() { return contents }
    // Under a name no earlier damaged file holds (two in one second were one name).
    let aside: String
    do {
      aside = try PropertyListFile.moveAside(path)
    } catch {
      throw ioError(error, "moving aside the unreadable")
    }
    Self.report(
      "keychain: \(path) is \(other.map { "\($0), not a keychain file" } ?? "not a keychain file");"
        + " it was moved to \(aside) and access group \(group) starts empty")
    cache.withLock { $0 = Snapshot(identity: nil, contents: GroupContents()) }
    return GroupContents()
  }

  /// `contents`' bytes, refused with `errSecDiskFull` when they are more than
  /// ``Keychain/maximumAccessGroupBytes``.
  private func encodeWithinBound(_ contents: GroupContents) throws(KeychainError) -> Data {
    let data = try contents.encode()
    guard data.count > Keychain.maximumAccessGroupBytes else { return data }
    throw KeychainError(
      errSecDiskFull,
      "access group \(group) (\(path)) would hold \(data.count) bytes, more than the"
        + " \(Keychain.maximumAccessGroupBytes) bytes (16 MiB) an access group's file may hold;"
        + " nothing was written: delete items of the group to make room")
  }

  /// Writes `data`, the bytes of `contents`, durably in place of the file, and keeps
  /// `contents` as the last version read.
  ///
  /// - Returns: `false`, having written nothing, when the lock file at the path is no longer
  ///   the one locked (checked just before the commit point).
  private func write(_ contents: GroupContents, _ data: Data) throws(KeychainError) -> Bool {
    FileSystem.removeLeftoverTemporaries(for: Self.fileName, in: folder)
    let previous = cache.withLock { $0?.identity }
    let lockedFile = self.lockedFile
    let lockPath = path + ".lock"
    do {
      let identity = try FileSystem.replaceDurably(
        path, with: data, notBefore: previous?.modified,
        beforeRename: { () throws(SystemCallError) in
          if let lockedFile, !lockedFile.stillLocksPath() {
            throw SystemCallError(call: "flock", path: lockPath, .resourceTemporarilyUnavailable)
          }
        })
      cache.withLock { $0 = Snapshot(identity: identity, contents: contents) }
      return true
    } catch where error.call == "flock" && error.code == .resourceTemporarilyUnavailable {
      return false
    } catch {
      cache.withLock { $0 = nil }
      throw ioError(error, "writing")
    }
  }

  private func ioError(_ error: SystemCallError, _ doing: String) -> KeychainError {
    let reason =
      error.code == .tooManySymbolicLinkLevels
      ? "\(error.path ?? path) is a symbolic link; the keychain never reads or writes through one"
      : "\(error)"
    return KeychainError(
      errSecIO, "\(doing) the items of access group \(group) (\(path)): \(reason)")
  }

  /// One line on stderr, `appgroups: …`, as the library says what it did on a person's behalf.
  static func report(_ message: String) {
    FileHandle.standardError.write(Data("appgroups: \(message)\n".utf8))
  }
}

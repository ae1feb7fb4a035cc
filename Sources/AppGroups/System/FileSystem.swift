import CAppGroupsLinux
import Foundation
import Glibc

/// What identifies one version of a file on disk: which inode, how large,
/// and when it was last modified and changed, to the nanosecond.
///
/// Every commit gives the new file a modification time strictly later than
/// the one it replaces, so two versions written under the suite's lock never
/// share an identity even when the inode number is reused. The change time
/// counts too: an edit in place that keeps the size and sets the modification
/// time back (`touch -r`, a restore) still moves it. A `chmod(2)` moves it as
/// well, which costs one needless re-read, never a missed change.
package struct FileIdentity: Hashable, Sendable {
  package var device: UInt64
  package var inode: UInt64
  package var size: Int64
  package var modified: Int64  // nanoseconds since 1970
  package var changed: Int64  // nanoseconds since 1970

  init(_ s: stat) {
    device = UInt64(s.st_dev)
    inode = UInt64(s.st_ino)
    size = Int64(s.st_size)
    modified = Int64(s.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(s.st_mtim.tv_nsec)
    changed = Int64(s.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(s.st_ctim.tv_nsec)
  }

  init(device: UInt64, inode: UInt64, size: Int64, modified: Int64, changed: Int64) {
    self.device = device
    self.inode = inode
    self.size = size
    self.modified = modified
    self.changed = changed
  }
}

/// Thin wrappers over the file calls the stores make. Each one names the
/// system call it makes; every failure is a ``SystemCallError``.
package enum FileSystem {
  /// The identity of the file at `path`, or `nil` when there is none; of the link itself
  /// when `path` is a symbolic link (a link is never followed to the file it names).
  /// The corresponding system call is `lstat(2)`.
  package static func identity(ofPath path: String) throws(SystemCallError) -> FileIdentity? {
    var s = stat()
    let found = try valueOrErrnoUnlessMissing("lstat", path: path, orAlso: ENOTDIR) { Status.link(path, &s) }
    guard found != nil else { return nil }
    return FileIdentity(s)
  }

  /// What kind of entry `s` describes, for messages: "a regular file", "a folder",
  /// "a symbolic link", "a fifo", "a socket", "a device".
  static func kind(of s: stat) -> String {
    switch s.fileType {
    case FileMode.regular: return "a regular file"
    case FileMode.folder: return "a folder"
    case FileMode.symbolicLink: return "a symbolic link"
    case FileMode.fifo: return "a fifo"
    case FileMode.socket: return "a socket"
    default: return "a device"
    }
  }

  /// What an `lstat(2)` found at a path: whether it is a regular file, what it is in words
  /// ("a fifo"), and its identity. A class, not a tuple or a struct: an optional tuple is two
  /// generic types (the tuple's and its `Optional`'s), and an optional struct of these fields
  /// one, that a new process instantiates when it opens its first suite (~35 k and ~9 k
  /// instructions); an optional reference is none.
  package final class LinkEntry: Sendable {
    package let isRegularFile: Bool
    package let kind: String
    package let identity: FileIdentity

    init(isRegularFile: Bool, kind: String, identity: FileIdentity) {
      self.isRegularFile = isRegularFile
      self.kind = kind
      self.identity = identity
    }
  }

  /// What `path` is, without following a link (`lstat(2)`); `nil` when nothing is there.
  package static func linkEntry(_ path: String) throws(SystemCallError) -> LinkEntry? {
    guard let s = try linkStatus(path) else { return nil }
    return LinkEntry(
      isRegularFile: s.fileType == FileMode.regular, kind: kind(of: s), identity: FileIdentity(s))
  }

  /// Renames `path` to `newPath`, replacing what is there.
  /// The corresponding system call is `rename(2)`.
  package static func rename(_ path: String, to newPath: String) throws(SystemCallError) {
    _ = try valueOrErrno("rename", path: path) { Glibc.rename(path, newPath) }
  }

  /// This instant in UTC as `YYYYMMDDTHHMMSSZ`, for names of files kept aside.
  /// The corresponding C functions are `time(2)` and `gmtime_r(3)`.
  package static func utcStamp() -> String {
    var time = time_t(Glibc.time(nil))
    var parts = tm()
    gmtime_r(&time, &parts)
    return String(
      format: "%04d%02d%02dT%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
      parts.tm_hour, parts.tm_min, parts.tm_sec)
  }

  /// `lstat(2)`: the identity of the link itself when `path` is a symbolic link.
  static func linkStatus(_ path: String) throws(SystemCallError) -> stat? {
    var s = stat()
    let found = try valueOrErrnoUnlessMissing("lstat", path: path) { Status.link(path, &s) }
    guard found != nil else { return nil }
    return s
  }

  /// Opens a file, retrying on EINTR. Always close-on-exec.
  /// The corresponding system call is `open(2)`.
  static func open(_ path: String, _ flags: CInt, mode: mode_t = 0o600) throws(SystemCallError) -> CInt {
    // The C target's non-variadic `open`: not the Glibc overlay's wrapper around the variadic
    // one, a second lazy binding at a new process's first open.
    try valueOrErrno("open", path: path) { cappgroups_open(path, flags | O_CLOEXEC, mode) }
  }

  /// ``open(_:_:mode:)``, or `nil` when nothing is at the path (`ENOENT`).
  static func openUnlessMissing(_ path: String, _ flags: CInt) throws(SystemCallError) -> CInt? {
    try valueOrErrnoUnlessMissing("open", path: path) { cappgroups_open(path, flags | O_CLOEXEC, 0) }
  }

  /// Sets the open file's access and modification times to now, which makes an inotify
  /// `IN_ATTRIB` event where a change through a mapping makes none; a failure is ignored.
  /// The corresponding system call is `futimens(2)`.
  static func touch(_ fd: CInt) { _ = futimens(fd, nil) }

  static func close(_ fd: CInt) {
    // close(2) must not be retried on EINTR on Linux: the descriptor is gone.
    _ = Glibc.close(fd)
  }

  /// Reads a whole regular file and the identity of the version that was read.
  /// Returns `nil` when the file does not exist.
  ///
  /// Only a regular file is read: a fifo (which would block the reader for ever), a folder,
  /// a socket or a device is refused with a `SystemCallError` whose ``SystemCallError/reason``
  /// says what it is. With `followLinks: false`, a symbolic link is refused too (`ELOOP`). A
  /// file of more than ``readBound`` bytes is refused (`EFBIG`) before a byte is read.
  static func read(_ path: String, followLinks: Bool = true) throws(SystemCallError) -> (Data, FileIdentity)? {
    try readWhole(path, followLinks: followLinks).map { ($0.data, $0.identity) }
  }

  /// A file's bytes and the identity of the version read. A class, not a
  /// `(Data, FileIdentity)` or a struct: an optional tuple is two generic types (the tuple's
  /// and its `Optional`'s), and an optional struct one, that a new process instantiates when
  /// it opens its first suite; an optional reference is none.
  final class WholeFile: Sendable {
    let data: Data
    let identity: FileIdentity

    init(data: Data, identity: FileIdentity) {
      self.data = data
      self.identity = identity
    }
  }

  /// The most a whole-file read takes when not told a bound of its own, 256 MiB: no file
  /// this package reads whole comes near it, and a sparse file of a terabyte (or a log grown
  /// without end) must not end the process that reads it for want of memory.
  static let readBound = 256 << 20

  /// ``read(_:followLinks:)``, for the reads of a suite's open (its plist, the manifest). A file
  /// of more than `atMost` bytes is refused (`EFBIG`) before a byte is read, or as soon as one
  /// that grows while it is read passes the bound.
  static func readWhole(
    _ path: String, followLinks: Bool = true, atMost: Int = readBound
  ) throws(SystemCallError) -> WholeFile? {
    let fd: CInt
    do {
      // O_NONBLOCK: opening a fifo with no writer must not wait (a regular file ignores it);
      // O_NOCTTY: a terminal device in a file's place never becomes the process's terminal.
      fd = try open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | (followLinks ? 0 : O_NOFOLLOW))
    } catch where error.errno == ENOENT {
      return nil
    }
    defer { close(fd) }
    var s = stat()
    _ = try valueOrErrno("fstat", path: path) { Status.open(fd, &s) }
    guard s.fileType == FileMode.regular else {
      throw SystemCallError(
        call: "read", path: path, errno: EINVAL, reason: "it is \(kind(of: s)), not a regular file")
    }
    func refuseOver(_ size: Int64) throws(SystemCallError) {
      guard size > atMost else { return }
      throw SystemCallError(
        call: "read", path: path, errno: EFBIG,
        reason: "it holds \(size) bytes, more than the \(atMost) bytes it may hold")
    }
    try refuseOver(Int64(s.st_size))
    let identity = FileIdentity(s)
    // Read into memory of its own that the `Data` then owns: not a `Data(count:)` zeroed first
    // and cut to size after, whose first use in a process runs Foundation's set-up of its
    // storage (two once-only initialisers) on pages an open touches for nothing else.
    var capacity = max(Int(s.st_size), 0) + 1
    guard var bytes = malloc(capacity) else {
      throw SystemCallError(call: "read", path: path, errno: ENOMEM)
    }
    var used = 0
    do throws(SystemCallError) {
      while true {
        if used == capacity {
          guard let grown = realloc(bytes, capacity * 2) else {
            throw SystemCallError(call: "read", path: path, errno: ENOMEM)
          }
          bytes = grown
          capacity *= 2
        }
        let base = bytes
        let n = try valueOrErrno("read", path: path) {
          Glibc.read(fd, base + used, capacity - used)
        }
        if n == 0 { break }
        used += n
        try refuseOver(Int64(used))
        // The size `fstat(2)` gave, read whole and short of the byte more asked for: the end of
        // the file, without a read of 0 bytes to say so. (A file of /proc says 0 bytes, and is
        // read until a read returns none.)
        if s.st_size > 0 && used == Int(s.st_size) { break }
      }
    } catch {
      free(bytes)
      throw error
    }
    let data = Data(bytesNoCopy: bytes, count: used, deallocator: .free)
    return WholeFile(data: data, identity: identity)
  }

  /// Writes `data` durably and atomically in place of `path`: a temporary
  /// file in the same folder, `fsync(2)`, `rename(2)` over the target, then
  /// `fsync(2)` of the folder. A reader sees the old file or the new one,
  /// never a mixture, and a crash at any point leaves one of the two.
  ///
  /// The temporary file is made unnamed where the file system allows (`O_TMPFILE`), and
  /// given its name (``temporaryPrefix(for:)``) only once it is durable, just before
  /// `beforeRename`: a watcher of the folder (``DirectoryWatcher``, which excludes unlinked
  /// entries) hears nothing while the data is written and `fsync`ed. With `staging`, a folder
  /// on the same file system that nobody watches (a subfolder of the target's), made (0700)
  /// when missing, the file is made and named there and renamed across (the temporary files for
  /// the target's name that killed writers left there are removed once the write is done or
  /// has failed, through the same descriptor: call holding the lock that serialises the
  /// target's writers): the target's folder hears
  /// the rename alone (`IN_MOVED_TO`), one event and one wake-up for the write. Named in the
  /// target's folder, the name wakes every watcher, and many watching processes on a few
  /// cores take the CPU from the writer between its name and its rename, then the rename's two
  /// events (`IN_MOVED_FROM`, `IN_MOVED_TO`) wake them again, sometimes one by one. A staging
  /// folder that cannot be used (a symbolic link, not a folder, refused) names the file in the
  /// target's folder instead; so does a rename across refused (`EXDEV`: Landlock's first
  /// version never allows one), after which the file is written again, named in the target's
  /// folder, as every later one through that staging folder in this process. A writer killed
  /// before the name leaves nothing; after it, the temporary file (in `staging`, or the
  /// target's folder) that the next writer removes, as before. Elsewhere (no `O_TMPFILE`, no
  /// way to name it) the file is named in the target's folder from its creation.
  ///
  /// The new file's modification time is set strictly later than
  /// `notBefore` (nanoseconds), so successive versions differ in identity.
  /// `beforeRename` runs once the temporary file is durable, just before the
  /// commit point, with the temporary file's identity (its inode is the one the file keeps
  /// at `path`); what it throws abandons the write (the temporary file is removed). It runs
  /// twice, the first time for a file that is then dropped, when a rename across is refused.
  /// `attribute`, when given, is recorded on the temporary file before its contents.
  /// `afterRename` is called with the new identity as soon as the new file is
  /// in place, before the folder's `fsync(2)`: other processes can read the
  /// new file from then on, so a token describing it must move then.
  /// - Returns: the identity of the file now at `path`.
  @discardableResult
  static func writeAtomically(
    _ data: Data, to path: String, mode: mode_t = 0o600, notBefore: Int64? = nil,
    attribute: ExtendedAttribute? = nil, staging: String? = nil,
    beforeRename: (FileIdentity) throws(SystemCallError) -> Void = { _ in },
    afterRename: (FileIdentity) -> Void = { _ in }
  ) throws(SystemCallError) -> FileIdentity {
    // Split here, not by `NSString`, whose path methods cost tens of thousands of
    // instructions a call: this runs in every commit.
    let directory = folder(of: path)
    let name = lastComponent(of: path)
    let unique = temporaryName(for: name)
    let temporary = directory + "/" + unique
    if let identity = try writeUnnamed(
      data, to: path, in: directory, as: unique, staging: staging, mode: mode, notBefore: notBefore,
      attribute: attribute, beforeRename: beforeRename, afterRename: afterRename)
    {
      return identity
    }
    var fd = try open(temporary, O_WRONLY | O_CREAT | O_EXCL, mode: mode)
    // Closed once written, before the `fsync(2)` (see below); -1 then.
    var writer = fd
    var renamed = false
    defer {
      if writer >= 0 { close(writer) }
      if fd != writer { close(fd) }
      if !renamed { unlink(temporary) }
    }
    if let attribute { try setExtendedAttribute(attribute, descriptor: fd, path: temporary) }
    try writeAll(data, to: fd, path: temporary)
    if let notBefore {
      var now = timespec()
      clock_gettime(CLOCK_REALTIME, &now)
      let nowNanos = Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
      let stamp = max(nowNanos, notBefore &+ 1)
      let time = timespec(tv_sec: Int(stamp / 1_000_000_000), tv_nsec: Int(stamp % 1_000_000_000))
      var times = [time, time]
      _ = try valueOrErrno("futimens", path: temporary) { futimens(fd, &times) }
    }
    // The rest goes through a read-only descriptor, and the writing one is closed now: a
    // watcher of the folder hears the temporary file's last event (`IN_CLOSE_WRITE`) together
    // with its creation, while the `fsync(2)` below waits on the disk, and nothing after the
    // rename; closing a written file after the rename would report it under the new name, a
    // second wake-up of every watcher for one commit. (`fsync(2)` flushes the file, whichever
    // descriptor names it.)
    let reader = try open(temporary, O_RDONLY | O_NOFOLLOW)
    fd = reader
    var original = stat()
    var reopened = stat()
    _ = try valueOrErrno("fstat", path: temporary) { Status.open(writer, &original) }
    _ = try valueOrErrno("fstat", path: temporary) { Status.open(reader, &reopened) }
    guard original.st_dev == reopened.st_dev, original.st_ino == reopened.st_ino else {
      throw SystemCallError(call: "open", path: temporary, .resourceTemporarilyUnavailable)
    }
    close(writer)
    writer = -1
    _ = try valueOrErrno("fsync", path: temporary) { fsync(reader) }
    try beforeRename(FileIdentity(reopened))
    _ = try valueOrErrno("rename", path: path) { Glibc.rename(temporary, path) }
    renamed = true
    var s = stat()
    _ = try valueOrErrno("fstat", path: path) { Status.open(fd, &s) }
    afterRename(FileIdentity(s))
    try syncDirectory(directory)
    return FileIdentity(s)
  }

  /// Writes all of `data` to `fd` (the file at `path`, for the error), one `write(2)` after
  /// another until every byte is written.
  private static func writeAll(_ data: Data, to fd: Int32, path: String) throws(SystemCallError) {
    let written: Result<Void, SystemCallError> = data.withUnsafeBytes { buffer in
      Result { () throws(SystemCallError) in
        var offset = 0
        while offset < buffer.count {
          guard let base = buffer.baseAddress else { break }
          let n = try valueOrErrno("write", path: path) {
            Glibc.write(fd, base + offset, buffer.count - offset)
          }
          offset += n
        }
      }
    }
    try written.get()
  }

  /// ``writeAtomically(_:to:mode:notBefore:attribute:beforeRename:afterRename:)`` through an
  /// unnamed file (`O_TMPFILE`): written, its time set only when the clock has not passed
  /// `notBefore` (`futimens(2)` on it is an event the watch hears), `fsync`ed, named
  /// `temporary`, then renamed over `path`.
  /// - Returns: the identity of the file now at `path`; `nil`, having changed nothing, when
  ///   no unnamed file can be made or named here (the caller writes a named one).
  private static func writeUnnamed(
    _ data: Data, to path: String, in directory: String, as name: String, staging: String?, mode: mode_t,
    notBefore: Int64?, attribute: ExtendedAttribute?,
    beforeRename: (FileIdentity) throws(SystemCallError) -> Void,
    afterRename: (FileIdentity) -> Void
  ) throws(SystemCallError) -> FileIdentity? {
    let temporary = directory + "/" + name
    let refused = staging.map { folder in refusedStaging.withLock { !$0.isEmpty && $0.contains(folder) } } ?? true
    let stagingFD = refused ? -1 : staging.map(openStagingFolder) ?? -1
    defer { if stagingFD >= 0 { close(stagingFD) } }
    // Killed writers' temporary files in the staging folder: removed once this write is done
    // or has failed (still under the writers' lock), so that the rename and what watchers hear
    // of it do not wait for a scan of the folder, and a failed write (the disk full of them)
    // has them gone before it is retried. Through the descriptor the file is made in (its
    // offset is never moved), else (a staging folder this process does not write through) by
    // its path, not through a symbolic link. This write's own temporary is renamed away or
    // unlinked by then (that `defer` is declared later, so it runs first).
    defer {
      if stagingFD >= 0 {
        removeLeftoverTemporaries(for: lastComponent(of: path), inFolder: stagingFD)
      } else if let staging {
        removeLeftoverTemporaries(for: lastComponent(of: path), in: staging, followingLink: false)
      }
    }
    let fd =
      stagingFD >= 0
      ? cappgroups_open_unnamed(stagingFD, ".", UInt32(mode))
      : cappgroups_open_unnamed(AT_FDCWD, directory, UInt32(mode))
    // Any failure (no O_TMPFILE here, or the folder refused): the named file's `open(2)`
    // fails the same way and says so under the temporary file's name, as before.
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    if let attribute { try setExtendedAttribute(attribute, descriptor: fd, path: temporary) }
    try writeAll(data, to: fd, path: temporary)
    var s = stat()
    if let notBefore {
      _ = try valueOrErrno("fstat", path: temporary) { Status.open(fd, &s) }
      let modified = Int64(s.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(s.st_mtim.tv_nsec)
      if modified <= notBefore {
        let stamp = max(nowNanoseconds(), notBefore &+ 1)
        let time = timespec(tv_sec: Int(stamp / 1_000_000_000), tv_nsec: Int(stamp % 1_000_000_000))
        var times = [time, time]
        _ = try valueOrErrno("futimens", path: temporary) { futimens(fd, &times) }
      }
    }
    _ = try valueOrErrno("fsync", path: temporary) { fsync(fd) }
    // Named in the staging folder, or else in `directory`.
    let (folder, named) = stagingFD >= 0 ? (stagingFD, name) : (AT_FDCWD, temporary)
    guard cappgroups_link_unnamed(fd, folder, named) == 0 else { return nil }
    var renamed = false
    defer { if !renamed { unlinkat(folder, named, 0) } }
    _ = try valueOrErrno("fstat", path: temporary) { Status.open(fd, &s) }
    try beforeRename(FileIdentity(s))
    let moved = renameAcross(folder, named, to: path)
    if moved != 0 && errno == EXDEV && stagingFD >= 0, let staging {
      // A rename between folders needs a right that a sandbox may withhold (Landlock's
      // `refer`, which its first version never grants), and a file named once cannot be
      // named again in another folder: the caller writes it again in `directory`, and this
      // staging folder is not used again by this process.
      refusedStaging.withLock { _ = $0.insert(staging) }
      return nil
    }
    _ = try valueOrErrno("rename", path: path, retryOnInterrupt: false) { moved }
    renamed = true
    _ = try valueOrErrno("fstat", path: path) { Status.open(fd, &s) }
    afterRename(FileIdentity(s))
    try syncDirectory(directory)
    return FileIdentity(s)
  }

  /// Staging folders that a rename out of was refused (`EXDEV`): this process names its
  /// temporary files in the target's folder instead (see ``writeAtomically``).
  private static let refusedStaging = Mutex<Set<String>>([])

  #if DEBUG
  /// Fault injection for tests: a rename from a staging folder onto a path listed here fails
  /// with `EXDEV`, as every rename between folders does under Landlock's first version.
  static let injectRenameAcrossFailure = Mutex<Set<String>>([])
  #endif

  /// `renameat(2)` of the entry `name` of the folder open as `folder` (or AT_FDCWD) to `path`.
  private static func renameAcross(_ folder: CInt, _ name: String, to path: String) -> CInt {
    #if DEBUG
    if folder != AT_FDCWD, injectRenameAcrossFailure.withLock({ $0.contains(path) }) {
      errno = EXDEV
      return -1
    }
    #endif
    return renameat(folder, name, AT_FDCWD, path)
  }

  /// The staging folder at `path`, open, made (mode 0700) when it is missing; -1 when it
  /// cannot be used (not a folder, a symbolic link, refused): the caller names its
  /// temporary file in the target's folder then.
  private static func openStagingFolder(_ path: String) -> CInt {
    let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
    let fd = Glibc.open(path, flags)
    guard fd < 0, errno == ENOENT, mkdir(path, 0o700) == 0 || errno == EEXIST else { return fd }
    return Glibc.open(path, flags)
  }

  /// `fsync(2)` of a folder, so that a rename in it survives a crash.
  package static func syncDirectory(_ directory: String) throws(SystemCallError) {
    let dfd = try open(directory, O_RDONLY | O_DIRECTORY)
    defer { close(dfd) }
    _ = try valueOrErrno("fsync", path: directory) { fsync(dfd) }
  }

  /// The prefix of every temporary file written for `name`; a leftover one
  /// (its writer was killed) is removed by the next writer under the lock.
  static func temporaryPrefix(for name: String) -> String { ".\(name).tmp-" }

  private static func temporaryName(for name: String) -> String {
    "\(temporaryPrefix(for: name))\(getpid())-\(UInt32.random(in: 0 ... .max))"
  }

  /// Removes temporary files for `name` left in `directory` by writers that
  /// were killed mid-write. Call only while holding the lock that serialises
  /// those writers. Returns how many were removed. A staging folder (`followingLink` false)
  /// is not looked in when a symbolic link is at its path.
  @discardableResult
  package static func removeLeftoverTemporaries(
    for name: String, in directory: String, followingLink: Bool = true
  ) -> Int {
    let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (followingLink ? 0 : O_NOFOLLOW))
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    return removeLeftoverTemporaries(for: name, inFolder: fd)
  }

  /// ``removeLeftoverTemporaries(for:in:followingLink:)`` in the folder open as `folder`, a
  /// descriptor just opened (the folder is read from its offset); the descriptor stays open.
  @discardableResult
  private static func removeLeftoverTemporaries(for name: String, inFolder folder: CInt) -> Int {
    max(Int(cappgroups_remove_prefixed(folder, temporaryPrefix(for: name))), 0)
  }

  /// Creates a folder and any missing parents with mode 0700. Refuses to
  /// follow a symbolic link for any component below `within`.
  ///
  /// A folder that is already there costs one `lstat(2)`, not a `mkdir(2)` that fails with
  /// `EEXIST` and then the `lstat(2)`: opening a suite walks folders that exist.
  package static func makeDirectory(_ path: String, within root: String) throws(SystemCallError) {
    // The common shape (an ASCII root, then plain components) is walked on the path's bytes.
    if try makeDirectoryInPlace(path, within: root) { return }
    for current in levels(of: path, within: root) {
      if let s = try linkStatus(current) {
        try requireFolder(s, current)
        continue
      }
      // See: man 2 mkdir (EEXIST: something was made there since the lstat; checked below).
      do {
        _ = try valueOrErrno("mkdir", path: current) { mkdir(current, 0o700) }
        continue
      } catch where error.errno == EEXIST {}
      guard let s = try linkStatus(current) else {
        throw SystemCallError(call: "mkdir", path: current, errno: ENOENT)
      }
      try requireFolder(s, current)
    }
  }

  /// Looks at the folders from `root` down to `path` as ``makeDirectory(_:within:)`` does,
  /// making none, for a reader of a file in `path`: a symbolic link on the way (never followed)
  /// or anything but a folder is refused with the error `makeDirectory` throws for it (`ELOOP`,
  /// `ENOTDIR`, naming it). The corresponding system call is `lstat(2)`, once a level.
  ///
  /// - Returns: `false` when a folder on the way is missing: nothing below it can be read.
  package static func requireFolders(_ path: String, within root: String) throws(SystemCallError)
    -> Bool
  {
    for current in levels(of: path, within: root) {
      guard let s = try linkStatus(current) else { return false }
      try requireFolder(s, current)
    }
    return true
  }

  /// The folders from `root` (excluded) down to `path`, one component more each.
  private static func levels(of path: String, within root: String) -> [String] {
    var current = root
    let relative = path.hasPrefix(root) ? path.dropFirst(root.count) : path[...]
    return relative.utf8.split(separator: UInt8(ascii: "/")).map { component in
      current.append("/")
      current.append(contentsOf: Substring(component))
      return current
    }
  }

  /// Refuses what `makeDirectory` finds on its way that is not a folder: a link (`ELOOP`, never
  /// followed) or anything else (`ENOTDIR`).
  private static func requireFolder(_ s: stat, _ path: String) throws(SystemCallError) {
    if s.fileType == FileMode.symbolicLink {
      throw SystemCallError(call: "mkdir", path: path, errno: ELOOP)
    }
    if s.fileType != FileMode.folder {
      throw SystemCallError(call: "mkdir", path: path, errno: ENOTDIR)
    }
  }

  /// Whether a regular file (not a link) of at least `size` bytes is at `path`, and this
  /// process may read and write it: a lock file that opening will not need to create or
  /// grow. Any doubt answers `false`.
  static func isReadyLockFile(_ path: String, size: Int) -> Bool {
    var s = stat()
    guard Status.link(path, &s) == 0, s.fileType == FileMode.regular, Int(s.st_size) >= size else {
      return false
    }
    return access(path, R_OK | W_OK) == 0
  }

  /// The last component of `path`: everything after its last `/`.
  static func lastComponent(of path: String) -> String {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
    return String(path[path.utf8.index(after: slash)...])
  }

  /// The folder that holds `path`: everything before its last `/` (`/` for a file at the top).
  static func folder(of path: String) -> String {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
    if slash == path.utf8.startIndex { return "/" }
    return String(path[..<slash])
  }

  /// The current wall-clock time in nanoseconds since 1970.
  static func nowNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
  }

  /// The ``monotonicNanoseconds()`` at which `duration` from now has passed.
  package static func deadline(after duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    let span = UInt64(max(seconds, 0)) &* 1_000_000_000 &+ UInt64(max(attoseconds, 0) / 1_000_000_000)
    return monotonicNanoseconds() &+ span
  }

  /// A monotonic clock in nanoseconds, for deadlines.
  package static func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
  }
}

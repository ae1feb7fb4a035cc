import Glibc

/// What an open file is: the kind of entry, its identity and size.
struct OpenFileStatus: Sendable {
  /// Whether it is a regular file.
  var isRegularFile: Bool
  /// What it is in words ("a folder"), for messages.
  var kind: String
  var identity: FileIdentity
  var size: Int { Int(identity.size) }
}

/// A file that is there already, opened by path and closed when this goes: for files read
/// and written in place by offset (a suite's journal, a lock file's record read by a tool).
///
/// Opening never follows a symbolic link at the path (`ELOOP`) unless asked to, never waits for a fifo's
/// writer, and never creates anything. Each call names the system call it makes; every
/// failure is a ``SystemCallError`` naming the path.
final class OpenFile {
  let path: String
  fileprivate let descriptor: CInt

  enum Access {
    case reading, writing
  }

  /// Opens the file at `path`; with `followingLinks`, what a symbolic link there leads to
  /// (a program's files, which a system links). The corresponding system call is `open(2)`.
  /// - Returns: `nil` when nothing is at the path.
  /// - Throws: the failed `open`: `ELOOP` for a symbolic link, `ENXIO` for a socket.
  convenience init?(existing path: String, for access: Access, followingLinks: Bool = false)
    throws(SystemCallError)
  {
    let flags =
      (access == .reading ? O_RDONLY : O_WRONLY) | (followingLinks ? 0 : O_NOFOLLOW) | O_NONBLOCK
    // Nothing at the path is told by the errno alone: no error made and caught, no object made
    // and given back (a new device's state file, looked for a few times at each open).
    guard let descriptor = try FileSystem.openUnlessMissing(path, flags) else { return nil }
    self.init(path: path, descriptor: descriptor)
  }

  private init(path: String, descriptor: CInt) {
    self.path = path
    self.descriptor = descriptor
  }

  deinit { FileSystem.close(descriptor) }

  /// What the file is. The corresponding system call is `fstat(2)`.
  func status() throws(SystemCallError) -> OpenFileStatus {
    var s = stat()
    _ = try valueOrErrno("fstat", path: path) { Status.open(descriptor, &s) }
    return OpenFileStatus(
      isRegularFile: s.fileType == FileMode.regular, kind: FileSystem.kind(of: s), identity: FileIdentity(s))
  }

  /// Up to `count` bytes from `offset`: fewer only at the end of the file. The array is not
  /// filled with zeros first (a plist read whole for its check, a journal read at a new
  /// process's open): it holds the bytes read, and only those.
  /// The corresponding system call is `pread(2)`.
  func read(at offset: Int, count: Int) throws(SystemCallError) -> [UInt8] {
    var failure: SystemCallError?
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, used in
      used = 0
      while used < count, let base = buffer.baseAddress {
        let n: Int
        do throws(SystemCallError) {
          n = try valueOrErrno("pread", path: path) {
            pread(descriptor, base + used, count - used, off_t(offset + used))
          }
        } catch {
          failure = error
          return
        }
        if n == 0 { break }
        used += n
      }
    }
    if let failure { throw failure }
    return bytes
  }

  /// Writes all of `bytes` at `offset`. The corresponding system call is `pwrite(2)`.
  func write(_ bytes: [UInt8], at offset: Int) throws(SystemCallError) {
    let written = bytes.withUnsafeBytes { buffer in
      Result { () throws(SystemCallError) in
        var written = 0
        while written < buffer.count, let base = buffer.baseAddress {
          written += try valueOrErrno("pwrite", path: path) {
            pwrite(descriptor, base + written, buffer.count - written, off_t(offset + written))
          }
        }
      }
    }
    try written.get()
  }

  /// Cuts the file to `length` bytes. The corresponding system call is `ftruncate(2)`.
  func truncate(to length: Int) throws(SystemCallError) {
    _ = try valueOrErrno("ftruncate", path: path) { ftruncate(descriptor, off_t(length)) }
  }

  /// Makes the data written durable (and the size, not the times).
  /// The corresponding system call is `fdatasync(2)`.
  func syncData() throws(SystemCallError) {
    _ = try valueOrErrno("fdatasync", path: path) { fdatasync(descriptor) }
  }
}

/// The first bytes of an open file mapped read-only and shared: a reader follows what a
/// writer publishes in the file's page with loads from memory (``SharedWords``), without a
/// system call. Unmapped when this goes; the file stays open while the page is mapped.
final class MappedPage: @unchecked Sendable {
  /// The file mapped.
  let file: OpenFile
  /// The mapped words.
  let words: SharedWords
  private let size: Int

  /// Maps the first `size` bytes of `file`. The corresponding system call is `mmap(2)`.
  /// - Returns: `nil` when the file is not a regular file of `size` bytes or more, or cannot
  ///   be mapped.
  init?(readOnly file: OpenFile, size: Int) {
    guard let status = try? file.status(), status.isRegularFile, status.size >= size,
      let base = try? pointerOrErrno(
        "mmap", path: file.path, { mmap(nil, size, PROT_READ, MAP_SHARED, file.descriptor, 0) })
    else { return nil }
    self.file = file
    self.size = size
    words = SharedWords(base: base.bindMemory(to: UInt64.self, capacity: size / 8))
  }

  deinit { munmap(words.base, size) }
}

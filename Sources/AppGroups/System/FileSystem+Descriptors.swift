import Glibc

/// What an open file is: the kind of entry, its identity and size.
struct OpenFileStatus: Sendable {
  /// Whether it is a regular file.
  var isRegularFile: Bool
  /// What it is in words ("a folder"), for messages.
  var kind: String
  var identity: FileIdentity
  var size: Int { Int(identity.size) }
  /// How many names it has: 0 once it was removed from its folder.
  var linkCount: Int
}

// Calls on an open descriptor, for files read and written in place by offset (a suite's
// journal, a lock file's record). Each names the system call it makes; every failure is a
// ``SystemCallError`` naming `path`.
extension FileSystem {
  /// What the open file `fd` is. The corresponding system call is `fstat(2)`.
  static func status(of fd: CInt, path: String) throws(SystemCallError) -> OpenFileStatus {
    var s = stat()
    _ = try valueOrErrno("fstat", path: path) { fstat(fd, &s) }
    return OpenFileStatus(
      isRegularFile: s.st_mode & S_IFMT == S_IFREG, kind: kind(of: s), identity: FileIdentity(s),
      linkCount: Int(s.st_nlink))
  }

  /// Up to `count` bytes of `fd` from `offset`: fewer only at the end of the file.
  /// The corresponding system call is `pread(2)`.
  static func read(_ fd: CInt, path: String, at offset: Int, count: Int) throws(SystemCallError) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    let read = bytes.withUnsafeMutableBytes { buffer in
      Result { () throws(SystemCallError) -> Int in
        var used = 0
        while used < count, let base = buffer.baseAddress {
          let n = try valueOrErrno("pread", path: path) {
            pread(fd, base + used, count - used, off_t(offset + used))
          }
          if n == 0 { break }
          used += n
        }
        return used
      }
    }
    bytes.removeLast(count - (try read.get()))
    return bytes
  }

  /// Writes all of `bytes` to `fd` at `offset`. The corresponding system call is `pwrite(2)`.
  static func write(_ bytes: [UInt8], to fd: CInt, path: String, at offset: Int) throws(SystemCallError) {
    let written = bytes.withUnsafeBytes { buffer in
      Result { () throws(SystemCallError) in
        var written = 0
        while written < buffer.count, let base = buffer.baseAddress {
          written += try valueOrErrno("pwrite", path: path) {
            pwrite(fd, base + written, buffer.count - written, off_t(offset + written))
          }
        }
      }
    }
    try written.get()
  }

  /// Cuts `fd` to `length` bytes. The corresponding system call is `ftruncate(2)`.
  static func truncate(_ fd: CInt, path: String, to length: Int) throws(SystemCallError) {
    _ = try valueOrErrno("ftruncate", path: path) { ftruncate(fd, off_t(length)) }
  }

  /// Makes the data written to `fd` durable (and its size, not its times).
  /// The corresponding system call is `fdatasync(2)`.
  static func syncData(_ fd: CInt, path: String) throws(SystemCallError) {
    _ = try valueOrErrno("fdatasync", path: path) { fdatasync(fd) }
  }
}

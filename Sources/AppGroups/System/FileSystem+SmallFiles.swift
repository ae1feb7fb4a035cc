import Foundation
import Glibc

// Small files that are not preferences: a named notification's record, a folder's entries.
// Each call names the system call it makes; every failure is a ``SystemCallError``.
extension FileSystem {
  /// Up to `count` bytes from the start of the file at `path`, read with one `read(2)`;
  /// `nil` when the file cannot be opened, empty when it cannot be read.
  static func readPrefix(_ count: Int, of path: String) -> [UInt8]? {
    guard let fd = try? open(path, O_RDONLY) else { return nil }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: count)
    let read = bytes.withUnsafeMutableBytes { buffer in
      (try? valueOrErrno("read", path: path) { Glibc.read(fd, buffer.baseAddress, buffer.count) })
        ?? 0
    }
    return Array(bytes.prefix(read))
  }

  /// The most of a log that is read, its last 4 MiB: tens of thousands of lines, when a
  /// reader wants the newest few.
  static let logTailBytes = 4 << 20

  /// The last lines of the log at `path`, oldest first, from its last `atMost` bytes: a log
  /// that has grown past them is read for its newest lines, the cut line dropped, rather than
  /// whole or not at all. Empty when there is no log; a log that cannot be read (a folder, a
  /// fifo, refused) reads as empty too. Bytes that are not UTF-8 read as U+FFFD.
  ///
  /// The corresponding system calls are `open(2)`, `fstat(2)` and `pread(2)`.
  static func logLines(_ path: String, atMost: Int = logTailBytes) -> [Substring] {
    guard let file = try? OpenFile(existing: path, for: .reading, followingLinks: true),
      let status = try? file.status(), status.isRegularFile
    else { return [] }
    let start = max(status.size - atMost, 0)
    guard var bytes = try? file.read(at: start, count: status.size - start) else { return [] }
    if start > 0, let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) {
      bytes.removeSubrange(...newline)
    }
    return String(decoding: bytes, as: UTF8.self).split(separator: "\n")
  }

  /// Replaces the file at `path` with `bytes` atomically but not durably: a temporary file
  /// in the same folder (``temporaryPrefix(for:)``, mode `mode`), one `write(2)`, then
  /// `rename(2)` over `path`, which a folder's watchers hear as `IN_MOVED_TO`. Nothing is
  /// `fsync`ed: a crash of the machine may lose the new file. The temporary file is removed
  /// when a step fails.
  ///
  /// - Throws: the failed call; `write` with `EIO` when fewer bytes were written.
  static func replace(_ path: String, with bytes: [UInt8], mode: mode_t = 0o600)
    throws(SystemCallError)
  {
    let temporary =
      folder(of: path) + "/" + temporaryPrefix(for: lastComponent(of: path))
      + "\(getpid())-\(UInt32.random(in: 0 ... .max))"
    do throws(SystemCallError) {
      let fd = try open(temporary, O_WRONLY | O_CREAT | O_EXCL, mode: mode)
      let written = bytes.withUnsafeBytes { buffer in
        Result { () throws(SystemCallError) in
          try valueOrErrno("write", path: temporary) {
            Glibc.write(fd, buffer.baseAddress, buffer.count)
          }
        }
      }
      close(fd)
      guard try written.get() == bytes.count else {
        throw SystemCallError(call: "write", path: temporary, .ioError)
      }
      _ = try valueOrErrno("rename", path: path) { Glibc.rename(temporary, path) }
    } catch {
      unlink(temporary)
      throw error
    }
  }

  /// Makes the file at `path` holding `bytes` (mode 0600), when nothing is there yet (never
  /// through a symbolic link); a name written once and never changed. Returns whether it
  /// was made.
  ///
  /// The file appears whole or not at all: the bytes are written to a temporary file in the
  /// same folder, which is then linked at `path`, so that a write cut short (a full disk)
  /// leaves no empty or partial file there for a reader to take as the name.
  ///
  /// The corresponding system calls are `open(2)` with `O_EXCL`, `write(2)` and `link(2)`
  /// (which never replaces what is at `path`).
  static func createOnce(_ path: String, with bytes: [UInt8]) -> Bool {
    let temporary =
      folder(of: path) + "/" + temporaryPrefix(for: lastComponent(of: path))
      + "\(getpid())-\(UInt32.random(in: 0 ... .max))"
    guard let fd = try? open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW) else { return false }
    defer { unlink(temporary) }
    let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    close(fd)
    guard written == bytes.count else { return false }
    // See: man 2 link (EEXIST: something is at `path` already, which is kept)
    return (try? valueOrErrno("link", path: path) { Glibc.link(temporary, path) }) != nil
  }

  /// Removes the file at `path`.
  ///
  /// The corresponding system call is `unlink(2)`.
  package static func remove(_ path: String) throws(SystemCallError) {
    _ = try valueOrErrno("unlink", path: path) { unlink(path) }
  }

  /// Removes the file at `path` and `fsync(2)`s its folder, so that the removal survives a
  /// crash.
  static func removeDurably(_ path: String) throws(SystemCallError) {
    try remove(path)
    try syncDirectory(folder(of: path))
  }

  /// The names of the entries of `directory`, `.` and `..` included, in the order the
  /// folder gives them; empty when it cannot be opened.
  ///
  /// The corresponding C functions are `opendir(3)` and `readdir(3)`.
  static func entryNames(in directory: String) -> [String] {
    guard let stream = opendir(directory) else { return [] }
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
      names.append(
        withUnsafeBytes(of: entry.pointee.d_name) { bytes in
          String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        })
    }
    return names
  }
}

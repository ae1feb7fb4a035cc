import CAppGroupsLinux
import Glibc

/// FIFOs as mailboxes between processes (file coordination's inboxes), and the descriptor
/// calls of the one thread that reads them.
///
/// A write of at most `PIPE_BUF` bytes to a FIFO arrives whole, and the kernel tells a sender
/// at once when nobody reads a FIFO any more: `open(2)` with `O_NONBLOCK` fails with `ENXIO`.
enum Fifos {
  /// How a ``send(_:to:)`` went.
  enum Delivery {
    case sent
    /// Nobody reads the FIFO (`ENXIO`, or a reader that closed during the write: `EPIPE`), or
    /// nothing, or something else than a FIFO, is at the path.
    case gone
    /// The FIFO is full (`EAGAIN`): its reader has not read it for a long while.
    case full
    /// Fewer bytes than the message were written.
    case short
    case failed(SystemCallError)
  }

  /// Makes a FIFO (mode 0600) at `path`, removing first whatever else is there (a folder only
  /// when it is empty); a FIFO of this process's user already there is kept. Another user's
  /// FIFO is removed: whoever holds it open for reading would hear what is sent to this one.
  /// The corresponding calls are `lstat(2)`, `unlink(2)` or `rmdir(2)`, and `mkfifo(3)`.
  static func make(_ path: String) throws(SystemCallError) {
    if let found = FileStatus(atPath: path) {
      switch found.kind {
      case .fifo where found.owner == geteuid(): break
      case .folder: _ = try valueOrErrno("rmdir", path: path) { rmdir(path) }
      default: try FileSystem.remove(path)
      }
    }
    TestHooks.beforeMakingFifo?(path)
    do {
      _ = try valueOrErrno("mkfifo", path: path) { mkfifo(path, 0o600) }
    } catch where error.errno == EEXIST {}
  }

  /// Makes the FIFO at `path` (``make(_:)``) and opens it as its owner reads it: for reading
  /// and writing, so that it never reads an end of file, without waiting, never through a
  /// symbolic link. The descriptor returned is a FIFO of this process's user: a file, an empty
  /// folder or another user's FIFO that another process put at the path after the look and
  /// before `mkfifo(3)` (which then finds something there, as it finds a FIFO of an earlier
  /// open) is removed and the FIFO made again, three times at most.
  /// The corresponding system calls are those of ``make(_:)``, `open(2)` and `fstat(2)`.
  static func makeAndOpenForReading(_ path: String) throws(SystemCallError) -> CInt {
    for _ in 0..<3 {
      try make(path)
      let fd: CInt
      do throws(SystemCallError) {
        fd = try FileSystem.open(path, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
      } catch where error.errno == EISDIR {
        continue  // a folder put there: made again over it
      }
      var status = stat()
      if Status.open(fd, &status) == 0, status.fileType == FileMode.fifo, status.st_uid == geteuid() {
        return fd
      }
      FileSystem.close(fd)
    }
    throw SystemCallError(
      call: "mkfifo", path: path, errno: EEXIST,
      reason: "another process put a file that is not a FIFO of this user there each time it was made")
  }

  /// Writes `bytes` whole to the FIFO at `path`, without waiting.
  ///
  /// The corresponding system calls are `open(2)` with `O_NONBLOCK` (`ENXIO`: no reader) and
  /// `write(2)`, with `SIGPIPE` held off the calling thread (a reader that closes meanwhile
  /// makes the write fail with `EPIPE` instead of ending the process).
  static func send(_ bytes: [UInt8], to path: String) -> Delivery {
    let fd: CInt
    do throws(SystemCallError) {
      fd = try FileSystem.open(path, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
    } catch {
      switch error.errno {
      // A folder at the path (EISDIR) is something else than a FIFO, as a file found below is.
      case ENXIO, ENOENT, ELOOP, EISDIR: return .gone
      default: return .failed(error)
      }
    }
    defer { FileSystem.close(fd) }
    var s = stat()
    guard Status.open(fd, &s) == 0, s.fileType == FileMode.fifo else { return .gone }
    let result = Processes.withPipeSignalHeldOff {
      bytes.withUnsafeBytes { buffer in
        Result { () throws(SystemCallError) in
          try valueOrErrno("write", path: path) { Glibc.write(fd, buffer.baseAddress, buffer.count) }
        }
      }
    }
    do throws(SystemCallError) {
      return try result.get() == bytes.count ? .sent : .short
    } catch {
      switch error.errno {
      case EAGAIN: return .full
      case EPIPE: return .gone
      default: return .failed(error)
      }
    }
  }

  /// Whether the open descriptor `fd` is the file now at `path` (by inode): `false` when the
  /// file was removed, or made again, under the process. The corresponding system calls are
  /// `fstat(2)` and `lstat(2)`.
  static func isStillAtPath(_ fd: CInt, _ path: String) -> Bool {
    var held = stat()
    var now = stat()
    return Status.open(fd, &held) == 0 && Status.link(path, &now) == 0 && held.st_ino == now.st_ino
  }

  /// A descriptor of the process `pid` (a pidfd, readable when the process ends, across
  /// sandboxes), which the caller closes; `nil` when it is gone. The corresponding system call
  /// is `pidfd_open(2)`.
  static func processDescriptor(_ pid: Int32) -> CInt? {
    let fd = cappgroups_pidfd_open(pid)
    return fd >= 0 ? fd : nil
  }

  /// A counter that wakes a thread waiting in ``waitUntilReadable(_:)`` (an `eventfd(2)`),
  /// or `nil` when one cannot be made.
  static func makeWakeEvent() -> CInt? {
    let fd = eventfd(0, CInt(EFD_CLOEXEC) | CInt(EFD_NONBLOCK))
    return fd >= 0 ? fd : nil
  }

  /// Wakes the thread that waits on the event `fd`.
  static func signal(_ fd: CInt) {
    var one: UInt64 = 1
    _ = Glibc.write(fd, &one, 8)
  }

  /// Takes the wake-ups of the event `fd`.
  static func drain(_ fd: CInt) {
    var value: UInt64 = 0
    _ = Glibc.read(fd, &value, 8)
  }

  /// Waits, without a bound, until one or more of `descriptors` can be read or have ended;
  /// returns which, or `nil` when a signal interrupted the wait (look again).
  /// The corresponding system call is `poll(2)`.
  static func waitUntilReadable(_ descriptors: [CInt]) -> [Bool]? {
    var entries = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    guard poll(&entries, nfds_t(entries.count), -1) > 0 else { return nil }
    return entries.map { $0.revents != 0 }
  }

  /// Reads what `fd` holds now into `buffer`, up to its size; the count read, 0 or less when
  /// nothing was. The corresponding system call is `read(2)`.
  static func readAvailable(_ fd: CInt, into buffer: inout [UInt8]) -> Int {
    buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
  }
}

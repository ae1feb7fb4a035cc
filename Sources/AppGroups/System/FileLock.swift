import Glibc

/// An exclusive advisory lock on a lock file, shared between processes.
///
/// The lock is `flock(2)` on an open file description, so it is released by
/// the kernel when its holder exits or is killed. It is never held across
/// anything that can block indefinitely, and acquiring it waits only up to
/// a deadline: a holder that was stopped (SIGSTOP) or hangs costs others a
/// bounded wait, never a deadlock.
///
/// One `FileLock` per lock file per process: two descriptors of one file in
/// one process would exclude each other. Callers serialise in-process use.
final class FileLock: @unchecked Sendable {
  // Immutable after init; locking and unlocking are serialised by the owner.
  let path: String
  let descriptor: CInt

  /// Opens (creating, mode 0600) the lock file at `path`.
  ///
  /// A symbolic link at `path` is never followed (`ELOOP`): creating or growing a file
  /// through it could touch a file anywhere. Anything but a regular file is refused.
  init(path: String) throws(SystemCallError) {
    self.path = path
    let fd = try FileSystem.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, mode: 0o600)
    var s = stat()
    if fstat(fd, &s) == 0 && s.st_mode & S_IFMT != S_IFREG {
      FileSystem.close(fd)
      throw SystemCallError(
        call: "open", path: path, errno: EINVAL,
        reason: "it is \(FileSystem.kind(of: s)), not a regular file")
    }
    self.descriptor = fd
  }

  deinit { FileSystem.close(descriptor) }

  /// Takes the lock if it is free now. The corresponding system call is `flock(2)`.
  func tryLock() -> Bool {
    while true {
      if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
      if errno != EINTR { return false }
    }
  }

  /// Takes the lock, waiting at most `timeout`. Returns `false` when another
  /// process still holds it at the deadline.
  func lock(timeout: Duration) -> Bool {
    if tryLock() { return true }
    let (seconds, attoseconds) = timeout.components
    let budget = UInt64(max(seconds, 0)) &* 1_000_000_000 &+ UInt64(max(attoseconds, 0) / 1_000_000_000)
    let deadline = FileSystem.monotonicNanoseconds() &+ budget
    var pause: Int = 20_000  // 20 µs, doubling to 2 ms
    while true {
      let now = FileSystem.monotonicNanoseconds()
      if now >= deadline { return tryLock() }
      var request = timespec(tv_sec: 0, tv_nsec: min(pause, Int(deadline - now)))
      _ = nanosleep(&request, nil)
      if tryLock() { return true }
      pause = min(pause * 2, 2_000_000)
    }
  }

  /// Releases the lock.
  func unlock() {
    _ = flock(descriptor, LOCK_UN)
  }
}

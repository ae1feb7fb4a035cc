import CAppGroupsLinux
import Glibc

extension FileSystem {
  /// Waits until `path` exists (`appear`) or is gone (`!appear`), or `deadline`
  /// (``monotonicNanoseconds()``); woken by inotify on its folder, and looking again every
  /// `recheck` milliseconds in case an event was missed or `stop` says to give up.
  ///
  /// The corresponding system calls are `inotify_init1(2)`, `inotify_add_watch(2)`, `poll(2)`
  /// and `access(2)`; without a watch (the kernel refused one) the wait looks every `recheck`.
  ///
  /// - Returns: whether `path` appeared (or went) before the deadline and `stop`.
  static func wait(
    for path: String, toAppear appear: Bool, until deadline: UInt64,
    recheck: Int32 = 100, stop: () -> Bool = { false }
  ) -> Bool {
    let directory = folder(of: path)
    // See: man 7 inotify
    let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
    defer { if fd >= 0 { close(fd) } }
    if fd >= 0 {
      let mask = UInt32(IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM)
      _ = inotify_add_watch(fd, directory, mask)
    }
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let exists = access(path, F_OK) == 0
      if exists == appear { return true }
      if stop() { return false }
      let now = monotonicNanoseconds()
      if now >= deadline { return false }
      let left = Int32(min((deadline - now) / 1_000_000 + 1, UInt64(recheck)))
      if fd >= 0 {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&entry, 1, left)
        _ = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      } else {
        usleep(useconds_t(left) * 1000)
      }
    }
  }

  /// Appends `text` to the file at `path`, creating it (mode 0600) when missing and refusing
  /// to follow a symbolic link; best effort, for a log: `false` when it could not.
  ///
  /// The corresponding system calls are `open(2)` with `O_APPEND | O_NOFOLLOW` and one
  /// `write(2)`.
  @discardableResult
  static func append(_ text: String, to path: String) -> Bool {
    guard let fd = try? open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, mode: 0o600) else {
      return false
    }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    let written = bytes.withUnsafeBytes { buffer in
      try? valueOrErrno("write", path: path) { Glibc.write(fd, buffer.baseAddress, buffer.count) }
    }
    return written == bytes.count
  }
}

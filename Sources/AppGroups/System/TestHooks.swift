import Foundation
import Glibc

/// Fault injection for the package's own tests, driven by the environment
/// so that spawned processes can be steered. Costs one cached check when off.
enum TestHooks {
  /// `APPGROUPS_TEST_PAUSE_IN_COMMIT=<path>`: a commit, once it holds the
  /// lock, creates `<path>` and raises SIGSTOP on itself, so that a test can
  /// observe other processes while this one holds the lock, then SIGCONT it.
  private static let pauseMarker: String? = ProcessInfo.processInfo.environment["APPGROUPS_TEST_PAUSE_IN_COMMIT"]

  static func pauseWhileHoldingLock(path: String) {
    guard let marker = pauseMarker else { return }
    let fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
    if fd >= 0 {
      _ = path.withCString { write(fd, $0, strlen($0)) }
      close(fd)
    }
    raise(SIGSTOP)
  }
}

import Foundation
import Glibc

/// Fault injection for the package's own tests, driven by the environment
/// so that spawned processes can be steered. Costs one cached check when off.
///
/// Compiled into debug builds only: a release build's hooks do nothing.
enum TestHooks {
  static func pauseWhileHoldingLock(path: String) {
    #if DEBUG
      pause(marker: pauseMarker, path: path)
    #endif
  }

  static func pauseBeforeRename(path: String) {
    #if DEBUG
      pause(marker: renameMarker, path: path)
    #endif
  }

  static func pauseBeforePublish(path: String) {
    #if DEBUG
      pause(marker: publishMarker, path: path)
    #endif
  }

  #if DEBUG
    /// `APPGROUPS_TEST_PAUSE_BEFORE_PUBLISH=<path>`: a commit appended to a journal, once its
    /// record is written and synced but its length not yet published in the token record,
    /// creates `<path>` and raises SIGSTOP on itself, so that a test can look at what other
    /// processes read then, and kill it there.
    private static let publishMarker: String? =
      ProcessInfo.processInfo.environment["APPGROUPS_TEST_PAUSE_BEFORE_PUBLISH"]

    /// `APPGROUPS_TEST_PAUSE_IN_COMMIT=<path>`: a commit, once it holds the
    /// lock, creates `<path>` and raises SIGSTOP on itself, so that a test can
    /// observe other processes while this one holds the lock, then SIGCONT it.
    private static let pauseMarker: String? =
      ProcessInfo.processInfo.environment["APPGROUPS_TEST_PAUSE_IN_COMMIT"]

    /// `APPGROUPS_TEST_PAUSE_BEFORE_RENAME=<path>`: a commit, once its temporary file is
    /// written and synced but not yet renamed over the plist, creates `<path>` and raises
    /// SIGSTOP on itself, so that a test can kill it there and find the temporary file left
    /// behind.
    private static let renameMarker: String? =
      ProcessInfo.processInfo.environment["APPGROUPS_TEST_PAUSE_BEFORE_RENAME"]

    private static func pause(marker: String?, path: String) {
      guard let marker else { return }
      let fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
      if fd >= 0 {
        _ = path.withCString { write(fd, $0, strlen($0)) }
        close(fd)
      }
      raise(SIGSTOP)
    }
  #endif
}

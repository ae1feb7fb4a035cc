import Glibc
internal import Synchronization

/// Where AppGroups tells a person what it did on their behalf: a refusal,
/// a file moved aside, a lock that was busy. One line each, on stderr,
/// prefixed `appgroups:`; a handler can take them instead (tests, tools).
public enum Diagnostics {
  private static let handler = Mutex<(@Sendable (String) -> Void)?>(nil)

  /// Sends every diagnostic line to `body` instead of stderr (`nil` restores stderr).
  public static func setHandler(_ body: (@Sendable (String) -> Void)?) {
    handler.withLock { $0 = body }
  }

  static func report(_ message: String) {
    if let body = handler.withLock({ $0 }) {
      body(message)
      return
    }
    let line = "appgroups: \(message)\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
  }
}

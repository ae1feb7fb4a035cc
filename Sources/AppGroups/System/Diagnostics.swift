import Glibc
internal import Synchronization

/// Where AppGroups tells a person what it did on their behalf: a refusal,
/// a file moved aside, a lock that was busy. One line each, on stderr,
/// prefixed `appgroups:`; a handler can take them instead (tests, tools).
public enum Diagnostics {
  private struct Handlers {
    var primary: (@Sendable (String) -> Void)?
    var scoped: [UInt64: @Sendable (String) -> Void] = [:]
    var nextID: UInt64 = 1
  }
  private static let handlers = Mutex(Handlers())

  /// Sends every diagnostic line to `body` instead of stderr (`nil` restores stderr).
  public static func setHandler(_ body: (@Sendable (String) -> Void)?) {
    handlers.withLock { $0.primary = body }
  }

  /// Runs `body` while `handler` also receives every diagnostic line (and stderr none).
  ///
  /// Handlers added this way do not replace each other, so tests running side by side in one
  /// process each see every line, and pick out theirs (by path).
  public static func withHandler<Result, Failure: Error>(
    _ handler: @escaping @Sendable (String) -> Void, _ body: () throws(Failure) -> Result
  ) throws(Failure) -> Result {
    let id = handlers.withLock { handlers in
      defer { handlers.nextID &+= 1 }
      handlers.scoped[handlers.nextID] = handler
      return handlers.nextID
    }
    defer { _ = handlers.withLock { $0.scoped.removeValue(forKey: id) } }
    return try body()
  }

  private static let reported = Mutex<Set<String>>([])

  /// Reports `message` unless this process reported the same text before: a refusal said
  /// once however often the call that is refused is made.
  static func reportOnce(_ message: String) {
    if reported.withLock({ $0.insert(message).inserted }) { report(message) }
  }

  package static func report(_ message: String) {
    let (primary, scoped) = handlers.withLock { ($0.primary, Array($0.scoped.values)) }
    if primary != nil || !scoped.isEmpty {
      primary?(message)
      for handler in scoped { handler(message) }
      return
    }
    let line = "appgroups: \(message)\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
  }
}

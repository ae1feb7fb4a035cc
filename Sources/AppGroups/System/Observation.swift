internal import Synchronization

/// A registered observer (of a suite, a named notification, the device, the app's
/// lifecycle); cancelling it (or letting it go) stops the calls.
public final class Observation: Sendable {
  private let cancelAction: Mutex<(@Sendable () -> Void)?>
  init(_ cancel: @escaping @Sendable () -> Void) { cancelAction = Mutex(cancel) }
  /// Stops the observer. Safe to call more than once.
  public func cancel() {
    let action = cancelAction.withLock { action in
      defer { action = nil }
      return action
    }
    action?()
  }
  deinit { cancel() }
}

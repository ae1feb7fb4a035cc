public import Foundation

/// Whether the device's protected data can be read now, and the notifications that say when
/// that changes: UIKit's `isProtectedDataAvailable`, `protectedDataWillBecomeUnavailable` and
/// `protectedDataDidBecomeAvailable`, for the processes of a root.
///
/// ```swift
/// if !ProtectedData.isAvailable { showLockedPlaceholder() }
/// let observation = ProtectedData.observe { event in
///   switch event.kind {
///   case .willBecomeUnavailable: closeProtectedFiles()     // before event.deadline
///   case .didBecomeAvailable: reload()
///   case .stateChanged: break
///   }
/// }
/// ```
///
/// **How an app hears.** Every process that opens a ``GroupDefaults`` as an app (or calls
/// ``AppLifecycle/start(identity:root:)``, or observes here) watches `<root>/Device` with its
/// one change monitor. A change of the device state (`groupctl device lock`, `unlock`,
/// `reboot`, `passcode`) touches the state file once the new state is published, so every
/// watching process hears it at once, reads the state from the page it has mapped, and tells
/// its observers in order, on a queue of its own: the closures of ``observe(root:_:)``, then
/// `NotificationCenter.default` with ``willBecomeUnavailableNotification`` and
/// ``didBecomeAvailableNotification`` (object `nil`; `userInfo` holds ``rootKey`` and
/// ``eventKey``). A lock is told at once: before the grace period runs out, as iOS tells it;
/// a later lock that cuts the grace short is told again, with the new deadline.
/// Sandboxed apps (`groupctl run --as`) may read `<root>/Device`, and hear it too.
///
/// Protected data here means class `complete` (``ProtectionClass``): available while the
/// device is unlocked and for the grace period after a lock. Without a passcode it is always
/// available and nothing is told.
public enum ProtectedData {
  /// Posted when the device locks with a passcode: class `complete` goes at the end of the
  /// grace (``DeviceEvent/deadline``). UIKit's
  /// `UIApplication.protectedDataWillBecomeUnavailableNotification`.
  public static let willBecomeUnavailableNotification = Notification.Name(
    "UIApplicationProtectedDataWillBecomeUnavailable")
  /// Posted when the device is unlocked with its passcode. UIKit's
  /// `UIApplication.protectedDataDidBecomeAvailableNotification`.
  public static let didBecomeAvailableNotification = Notification.Name(
    "UIApplicationProtectedDataDidBecomeAvailable")
  /// `userInfo` key: the root's path (`String`).
  public static let rootKey = "root"
  /// `userInfo` key: the ``DeviceEvent``.
  public static let eventKey = "event"

  /// Whether class `complete` is available now in the default root: UIKit's
  /// `UIApplication.isProtectedDataAvailable`. A read of memory once the process watches
  /// the device.
  public static var isAvailable: Bool { isAvailable(root: .default) }

  /// Whether class `complete` is available now in `root`.
  public static func isAvailable(root: ContainerRoot) -> Bool {
    DeviceState.current(root: root).isProtectedDataAvailable
  }

  /// Calls `handler` with every change of `root`'s device state from now on, in order, on a
  /// queue of the library's (one call at a time). The process watches the device from the
  /// first call on.
  ///
  /// - Returns: A handle; the handler stops when it is cancelled or released.
  public static func observe(
    root: ContainerRoot = .default, _ handler: @escaping @Sendable (DeviceEvent) -> Void
  ) -> Observation {
    DeviceMonitor.shared(root: root).add(handler)
  }

  /// The changes of `root`'s device state as an asynchronous sequence (see
  /// ``observe(root:_:)``).
  public static func events(root: ContainerRoot = .default) -> AsyncStream<DeviceEvent> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: DeviceEvent.self, bufferingPolicy: .unbounded)
    let observation = observe(root: root) { continuation.yield($0) }
    continuation.onTermination = { _ in observation.cancel() }
    return stream
  }
}

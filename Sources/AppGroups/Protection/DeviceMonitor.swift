import Dispatch
public import Foundation
internal import Synchronization

/// A change of the device state, as a running app hears it.
public struct DeviceEvent: Sendable, Hashable, CustomStringConvertible {
  /// What happened.
  public enum Kind: String, Sendable, Hashable {
    /// The device locked (or restarted) with a passcode: class `complete` goes at
    /// ``DeviceEvent/deadline``; told again, with the new deadline, when a later lock cuts
    /// the grace short. UIKit's `protectedDataWillBecomeUnavailable`.
    case willBecomeUnavailable
    /// The device was unlocked with its passcode: every class is available.
    /// UIKit's `protectedDataDidBecomeAvailable`.
    case didBecomeAvailable
    /// Anything else changed: the passcode was set or cleared, a device without a passcode
    /// locked or unlocked, the device restarted. Delivered after the two above, once per
    /// change heard.
    case stateChanged
  }

  /// What happened.
  public let kind: Kind
  /// The device state once the change was heard.
  public let state: DeviceState
  /// For ``Kind/willBecomeUnavailable``: when class `complete` goes (the end of the grace);
  /// `nil` otherwise.
  public let deadline: Date?

  public var description: String {
    var text = "\(kind.rawValue) (\(state))"
    if let deadline { text += String(format: ", in %.1f s", deadline.timeIntervalSinceNow) }
    return text
  }
}

/// The device state of one root as this process hears it: a watch on `<root>/Device` (the
/// process's change monitor, inotify), the page mapped read-only, and the events delivered
/// in order to observers and `NotificationCenter.default`, on a queue of its own.
///
/// A transition touches the state file once it has published the page (`IN_ATTRIB`), so every
/// process that watches hears each change at once. A process that missed changes (it was
/// stopped, or several came together) compares the page's lock and unlock counts with the last
/// it delivered, and delivers what it missed in order, a lock and an unlock at most.
final class DeviceMonitor: Sendable {
  let root: ContainerRoot
  let page: DeviceStatePage

  private struct Delivered: Sendable {
    /// Whether the fields below hold a state: the first look after the watch started (the
    /// baseline, told to nobody) sets them.
    var known = false
    var generation: UInt64 = 0
    var lockCount: UInt64 = 0
    var unlockCount: UInt64 = 0
    /// Whether the last event said protected data is available (or none came, and it was).
    var available = true
    /// The end of the grace the last state heard had (``DeviceState/graceEnd``): a later lock
    /// that cuts it short changes it, and no count.
    var graceEnd: UInt64 = 0
    var handlers: [(id: UInt64, handler: @Sendable (DeviceEvent) -> Void)] = []
    var nextID: UInt64 = 1
  }
  private let delivered: Mutex<Delivered>
  /// The change monitor's listener; `nil` until watching starts (or when it could not).
  private let listener = Mutex<UInt64?>(nil)
  private let started = Atomic<Bool>(false)
  /// Events are told here, one at a time, in order: never on the change monitor's thread.
  /// Made at the first event: most processes never hear one.
  private let eventQueue = LazyQueue(label: "appgroups.device-events")

  private static let registry = WeakRegistry<DeviceMonitor>()

  /// The library's own hook, installed from above (the Defaults layer, once): told of each
  /// change of a root's state, with the root's path and page, on the root's monitor's queue
  /// before any event is delivered (the suites that waited for the first unlock are loaded
  /// before an app hears of it). One hook for every root, not a list per monitor: nothing to
  /// add or remove when a suite opens.
  static let libraryHook =
    Mutex<(@Sendable (_ rootPath: String, _ page: DeviceStatePage) -> Void)?>(nil)

  /// The monitor of `root`, watching from its first use for as long as someone holds it (the
  /// app's lifecycle holds its root's; an observation, its own).
  ///
  /// The root's `Device` folder is made when it is missing and this process may make it (an
  /// app in a sandbox gets it from `groupctl run`). Without it nothing is heard; the state is
  /// still read at each ask.
  static func shared(root: ContainerRoot) -> DeviceMonitor {
    let made = try? registry.object(forKey: root.path) { () throws(AppGroupsError) in
      DeviceMonitor(root: root)
    }
    let monitor = made ?? DeviceMonitor(root: root)
    monitor.startWatching()
    return monitor
  }

  /// The monitor of `root` if this process watches it.
  static func existing(root: ContainerRoot) -> DeviceMonitor? {
    registry.existing(forKey: root.path)
  }

  /// The monitor of the root at `rootPath` (resolved, as ``ContainerRoot/path`` is) if this
  /// process watches it.
  static func existing(rootPath: String) -> DeviceMonitor? {
    registry.existing(forKey: rootPath)
  }

  deinit {
    if let id = listener.withLock({ $0 }) { ChangeMonitor.shared.removeListener(id) }
  }

  private init(root: ContainerRoot) {
    self.root = root
    page = DeviceStatePage.shared(root: root)
    // The baseline is the first look once the watch stands (`startWatching`): a look before
    // it would need another after it, for a change in between (a new process's open tried
    // `open(2)` on a missing state file twice for that).
    delivered = Mutex(Delivered())
  }

  /// Whether this monitor watches the root's `Device` folder: a state file that appears
  /// there from now on is mapped, and the change told, as soon as its event is read.
  var isWatching: Bool { listener.withLock { $0 != nil } }

  /// Whether, as events go, protected data is available in `state`: not locked or before
  /// first unlock with a passcode (a lock within its grace already had its event).
  private static func availableView(_ state: DeviceState) -> Bool {
    !state.hasPasscode || state.lockState == .unlocked
  }

  private func startWatching() {
    guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
    let folder = DeviceStateFile.folder(root: root)
    do {
      try root.prepareRoot()
      try FileSystem.makeDirectory(folder, within: root.path)
    } catch {
      // Read-only root, or a sandbox without it: watch if the folder is there anyway.
    }
    let id = try? ChangeMonitor.shared.addListener(directory: folder, prefix: "state") {
      [weak self] name in
      self?.check(refresh: name.isEmpty)
    }
    listener.withLock { $0 = id }
    // The baseline, read after the watch: what changes after this look is heard. (An event
    // read before it, on the change monitor's thread, may have set it already, from a look
    // as late.)
    check(refresh: true)
  }

  /// Adds `handler`, told of every event from now on, on the monitor's queue.
  func add(_ handler: @escaping @Sendable (DeviceEvent) -> Void) -> Observation {
    let id = delivered.withLock { delivered in
      defer { delivered.nextID &+= 1 }
      delivered.handlers.append((delivered.nextID, handler))
      return delivered.nextID
    }
    // The observation holds the monitor: it watches while someone observes.
    return Observation { [self] in
      delivered.withLock { $0.handlers.removeAll { $0.id == id } }
    }
  }

  /// Reads the page and delivers what changed since the last delivery. `refresh`: the folder
  /// may have been replaced (events were lost): the file at the path is mapped again.
  func check(refresh: Bool = false) {
    if refresh { page.remapIfReplaced() }
    let state = page.state
    let (events, handlers): ([DeviceEvent], [@Sendable (DeviceEvent) -> Void]) =
      delivered.withLock { delivered in
        guard delivered.known else {
          delivered = Delivered(
            known: true, generation: state.generation, lockCount: state.lockCount,
            unlockCount: state.unlockCount, available: Self.availableView(state),
            graceEnd: state.graceEnd, handlers: delivered.handlers, nextID: delivered.nextID)
          return ([], [])
        }
        guard state.generation != delivered.generation else { return ([], []) }
        var events: [DeviceEvent] = []
        let locks = state.lockCount &- delivered.lockCount
        let unlocks = state.unlockCount &- delivered.unlockCount
        var count = Int(clamping: min(locks, 1 << 20) + min(unlocks, 1 << 20))
        // Counts that went back: the state was made anew. Start from what it says.
        if state.lockCount < delivered.lockCount || state.unlockCount < delivered.unlockCount {
          count = Self.availableView(state) == delivered.available ? 0 : 1
        }
        // What was missed, in order, a lock and an unlock at most: events alternate.
        if count > 2 { count = 2 - count % 2 }
        var available = delivered.available
        for _ in 0..<count {
          available.toggle()
          events.append(event(available ? .didBecomeAvailable : .willBecomeUnavailable, state))
        }
        // What the state says wins: a lock missed on the way is told before the unlock.
        if available != Self.availableView(state) {
          available.toggle()
          events.append(event(available ? .didBecomeAvailable : .willBecomeUnavailable, state))
        }
        // A lock of a device locked already that cut the grace short: the apps hear the new
        // deadline as they heard the first, unless an event of this round told it already.
        if !available, state.lockState == .locked, state.graceEnd != delivered.graceEnd,
          !events.contains(where: { $0.kind == .willBecomeUnavailable })
        {
          events.append(event(.willBecomeUnavailable, state))
        }
        events.append(event(.stateChanged, state))
        delivered.generation = state.generation
        delivered.lockCount = state.lockCount
        delivered.unlockCount = state.unlockCount
        delivered.available = available
        delivered.graceEnd = state.graceEnd
        return (events, delivered.handlers.map(\.handler))
      }
    guard !events.isEmpty else { return }
    let root = self.root
    let page = self.page
    let library = Self.libraryHook.withLock { $0 }
    eventQueue.queue.async {
      library?(root.path, page)
      for event in events {
        for handler in handlers { handler(event) }
        let name: Notification.Name? =
          switch event.kind {
          case .willBecomeUnavailable: ProtectedData.willBecomeUnavailableNotification
          case .didBecomeAvailable: ProtectedData.didBecomeAvailableNotification
          case .stateChanged: nil
          }
        if let name {
          NotificationCenter.default.post(
            name: name, object: nil,
            userInfo: [ProtectedData.rootKey: root.path, ProtectedData.eventKey: event])
        }
      }
    }
  }

  private func event(_ kind: DeviceEvent.Kind, _ state: DeviceState) -> DeviceEvent {
    var deadline: Date?
    if kind == .willBecomeUnavailable {
      let now = DeviceState.now()
      let end = state.graceEnd
      deadline = Date(timeIntervalSinceNow: end > now ? Double(end - now) / 1e9 : 0)
    }
    return DeviceEvent(kind: kind, state: state, deadline: deadline)
  }

  /// Waits until every event heard so far has been delivered: for tests.
  func drain() { eventQueue.queue.sync {} }
}

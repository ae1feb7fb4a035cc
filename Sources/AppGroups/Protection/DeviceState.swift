/// The state of the simulated device at one moment: whether it is locked, whether a passcode
/// is set, and since when it is locked. Every process of a root sees the same state.
///
/// ```swift
/// let state = DeviceState.current(root: root)
/// print(state)                                    // "locked, passcode set"
/// if !state.isAvailable(.completeUntilFirstUserAuthentication) {
///   // before the first unlock: preferences and most files cannot be read yet
/// }
/// ```
///
/// The state lives in `<root>/Device/state`, a page that every process maps and reads
/// without a system call (``current(root:)``); `groupctl device` and ``Device`` change it.
/// A root that has no device state yet is a new device: unlocked, with no passcode.
///
/// The device restarts with `groupctl device reboot`, and also when the machine itself
/// restarts: its keys were in the kernel's memory (see the keybag), so a state recorded in
/// an earlier boot of the machine reads as a fresh start, `before-first-unlock` with a
/// passcode and `unlocked` without one.
public struct DeviceState: Sendable, Hashable, CustomStringConvertible {
  /// Whether the device is locked, and whether it was unlocked since it started.
  public enum LockState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Started and not unlocked since ("Before First Unlock"): only class `none` data, and
    /// what a device without a passcode holds, can be read.
    case beforeFirstUnlock = "before-first-unlock"
    /// Unlocked: every class is available.
    case unlocked
    /// Locked after a first unlock: class `complete` goes away when the grace period ends.
    case locked

    public var description: String { rawValue }
  }

  /// iOS's grace period after a lock, during which class `complete` stays available: 10 s.
  public static let defaultGrace: Duration = .seconds(10)

  /// Whether the device is locked, and whether it was unlocked since it started.
  public let lockState: LockState
  /// Whether a passcode is set. Without one, data protection protects nothing: every class
  /// stays available whatever the lock state, as on a device without a passcode.
  public let hasPasscode: Bool
  /// How long class `complete` stays available after the lock (``lockState`` is `locked`).
  public let grace: Duration
  /// Counts the device's starts: moved by every reboot, and when the machine restarted.
  public let bootSession: UInt64

  /// When the lock happened, on `CLOCK_MONOTONIC` (nanoseconds); 0 unless locked.
  package let lockedAt: UInt64
  /// Moved by every change of the state (a process hears a change when it moves).
  package let generation: UInt64
  /// How many times protected data went away (a lock, or a reboot of an unlocked device
  /// with a passcode), and came back (an unlock of a device with a passcode): what a process
  /// compares to tell its observers of each change in order.
  package let lockCount: UInt64
  package let unlockCount: UInt64
  /// The device's random identity, naming its keys in the kernel's keyring; 0 for a device
  /// with no state yet.
  package let deviceIdentifier: UInt64

  // `.seconds(0)`, not `.zero`: the standard library inlines the one, and calls the other on a
  // page of its code that a process's first open (``newDevice``) would touch for it alone.
  package init(
    lockState: LockState, hasPasscode: Bool, grace: Duration = .seconds(0), bootSession: UInt64 = 0,
    lockedAt: UInt64 = 0, generation: UInt64 = 0, lockCount: UInt64 = 0, unlockCount: UInt64 = 0,
    deviceIdentifier: UInt64 = 0
  ) {
    self.lockState = lockState
    self.hasPasscode = hasPasscode
    self.grace = grace
    self.bootSession = bootSession
    self.lockedAt = lockedAt
    self.generation = generation
    self.lockCount = lockCount
    self.unlockCount = unlockCount
    self.deviceIdentifier = deviceIdentifier
  }

  /// A new device: unlocked, no passcode.
  package static let newDevice = DeviceState(lockState: .unlocked, hasPasscode: false)

  /// The state of `root` now.
  ///
  /// A process that watches the device (it observes ``ProtectedData``, or opened a suite as
  /// an app) reads the page it has mapped: a few loads from memory. Otherwise this reads the
  /// page once with `pread(2)`. Nothing is created: a root without a device state is a new
  /// device.
  public static func current(root: ContainerRoot = .default) -> DeviceState {
    DeviceStatePage.read(root: root)
  }

  /// Whether data of `protectionClass` can be read now.
  ///
  /// - `none`: always.
  /// - `completeUntilFirstUserAuthentication`: from the first unlock until the next reboot.
  /// - `complete` and `completeUnlessOpen` (for opening an existing file): while unlocked,
  ///   and for ``grace`` after a lock.
  ///
  /// Without a passcode every class is available.
  public func isAvailable(_ protectionClass: ProtectionClass) -> Bool {
    isAvailable(protectionClass, at: DeviceState.now())
  }

  /// ``isAvailable(_:)`` at `now` (`CLOCK_MONOTONIC`, nanoseconds).
  package func isAvailable(_ protectionClass: ProtectionClass, at now: UInt64) -> Bool {
    guard hasPasscode else { return true }
    switch protectionClass {
    case .none:
      return true
    case .completeUntilFirstUserAuthentication:
      return lockState != .beforeFirstUnlock
    case .complete, .completeUnlessOpen:
      switch lockState {
      case .unlocked: return true
      case .beforeFirstUnlock: return false
      case .locked: return now < graceEnd
      }
    }
  }

  /// When class `complete` goes away after the lock (`CLOCK_MONOTONIC`, nanoseconds); 0
  /// unless locked.
  package var graceEnd: UInt64 {
    guard lockState == .locked else { return 0 }
    return lockedAt &+ DeviceState.nanoseconds(grace)
  }

  /// Whether class `complete` is available now: the device's answer to
  /// `UIApplication.isProtectedDataAvailable`.
  public var isProtectedDataAvailable: Bool { isAvailable(.complete) }

  /// Why data of `protectionClass` cannot be read now, in words ("the device is locked", "the
  /// device has not been unlocked since it started"); `nil` when it can.
  public func unavailabilityReason(for protectionClass: ProtectionClass) -> String? {
    guard !isAvailable(protectionClass) else { return nil }
    switch lockState {
    case .beforeFirstUnlock:
      return "before first unlock: the device has not been unlocked since it started"
    case .locked, .unlocked:
      return "the device is locked"
    }
  }

  /// `before-first-unlock`, `unlocked` or `locked`, and whether a passcode is set.
  public var description: String {
    "\(lockState), \(hasPasscode ? "passcode set" : "no passcode")"
  }

  // MARK: Clocks

  /// `CLOCK_MONOTONIC` in nanoseconds: shared by every process of the machine.
  package static func now() -> UInt64 { FileSystem.monotonicNanoseconds() }

  package static func nanoseconds(_ duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    return UInt64(max(seconds, 0)) &* 1_000_000_000 &+ UInt64(max(attoseconds, 0) / 1_000_000_000)
  }
}

import AppGroups
import AppGroupsKeybag
import AppGroupsTestSupport
import Foundation
import Synchronization
import Testing

/// A device monitor's start: its baseline is its first look once its watch stands, and a suite
/// opened while no state file is there hears one that appears later.
@Suite("Device monitor start", .processBound)
struct DeviceMonitorStartTests {
  /// The events of `root`'s device, collected, with a semaphore signalled at each.
  final class Heard: Sendable {
    let events = Mutex<[DeviceEvent.Kind]>([])
    let signal = DispatchSemaphore(value: 0)

    func observe(_ root: ContainerRoot) -> Observation {
      ProtectedData.observe(root: root) { [self] event in
        events.withLock { $0.append(event.kind) }
        signal.signal()
      }
    }

    /// Waits (20 s at most) until an event of `kind` has been heard.
    func wait(for kind: DeviceEvent.Kind) -> Bool {
      let deadline = DispatchTime.now() + 20
      while !events.withLock({ $0.contains(kind) }) {
        guard signal.wait(timeout: deadline) == .success else { return false }
      }
      return true
    }
  }

  @Test func aSuiteOpenedWithNoStateFileHearsTheRestartMadeAfterIt() throws {
    let r = try KeybagRoot()
    let statePath = r.t.path + "/Device/state"
    try #require(!FileManager.default.fileExists(atPath: statePath), "a new root has no device state")
    let defaults = try r.t.defaults(TestRoot.group)
    #expect(defaults.unavailableReason == nil, "a new device's data is available")
    let heard = Heard()
    let observation = heard.observe(r.root)
    defer { observation.cancel() }

    // The state file appears after the open, then the device restarts with a passcode.
    try r.keybag.setPasscode("1234")
    try r.device.reboot()
    #expect(r.state.lockState == .beforeFirstUnlock)
    #expect(heard.wait(for: .willBecomeUnavailable), "the restart was not heard")
    // The library's hook runs before the app hears the event: the suite knows by now.
    let reason = try #require(defaults.unavailableReason, "the suite still reads as available")
    #expect(reason.contains("before first unlock"))
  }

  @Test func aMonitorStartedOnALockedDeviceTellsNothingUntilTheFirstUnlock() throws {
    let r = try KeybagRoot()
    try r.keybag.setPasscode("1234")
    try r.device.reboot()
    #expect(r.state.lockState == .beforeFirstUnlock)

    // The monitor starts here, on a device before its first unlock: its baseline.
    let heard = Heard()
    let observation = heard.observe(r.root)
    defer { observation.cancel() }
    let defaults = try r.t.defaults(TestRoot.group)
    let reason = try #require(defaults.unavailableReason, "a protected suite opened before the first unlock")
    #expect(reason.contains("before first unlock"))

    try r.keybag.unlock(passcode: "1234")
    #expect(heard.wait(for: .stateChanged), "the first unlock was not heard")
    // Nothing was told for the state the monitor started from: the unlock, then its change.
    #expect(heard.events.withLock { $0 } == [.didBecomeAvailable, .stateChanged])
    #expect(defaults.unavailableReason == nil, "the suite reads its file after the first unlock")
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// The prewarm data loss, staged: the example app and widget launched in the background
/// before the device's first unlock (`groupctl run --background`), naive and fixed.
@Suite("Examples: launched before first unlock", .processBound)
struct PrewarmExamplesTests {
  /// A device whose user opened the app once and chose theme dark (with 3 unread), restarted
  /// with a passcode.
  func restartedDevice(_ name: String = #function) throws -> LifecycleRoot {
    let t = try LifecycleRoot(name)
    for args in [["launch"], ["theme", "dark"], ["unread", "3"]] {
      let result = try Product.run("app", args, environment: t.g.t.environment(as: TestRoot.app))
      #expect(result.status == 0, "app \(args): \(result.stderr)")
    }
    try t.g.ok(["device", "passcode", "set", "123456"])
    #expect(try t.g.ok(["device", "reboot"]).contains("rebooted: before-first-unlock"))
    return t
  }

  func shown(_ t: LifecycleRoot) throws -> String {
    try Product.run("app", ["show"], environment: t.g.t.environment(as: TestRoot.app)).stdout
  }

  /// Launches `app launch` in the background.
  func launchInBackground(_ t: LifecycleRoot, _ arguments: [String]) throws -> ChildProcess {
    try t.launch(
      TestRoot.app, [Product.url("app").path, "launch"] + arguments, waitsForReady: false,
      background: true)
  }

  @Test func theNaiveAppOverwritesTheUsersChoiceAtTheFirstUnlock() throws {
    let t = try restartedDevice()
    let app = try launchInBackground(t, ["--naive"])
    #expect(app.waitFor("app: launched in the background (prewarmed)"), "\(app.standardError)")
    // It read nothing, took it for a first launch, and wrote its first-launch values.
    #expect(app.waitFor("app: first launch: wrote the first-launch values theme=system unread=0"))
    #expect(try t.g.run(["read", TestRoot.group, "theme"]).stdout == "dark\n", "not on disk yet")
    try t.g.ok(["device", "unlock", "--passcode", "123456"])
    #expect(
      app.waitForLine { $0.hasPrefix("app: launched: ") }
        == "app: launched: theme=system unread=0; posted com.example.widget.reload")
    #expect(app.wait() == 0)
    #expect(try shown(t).hasPrefix("unread=0 theme=system "), "the user's choice is gone")
  }

  @Test func theFixedAppWaitsForProtectedDataAndKeepsTheUsersChoice() throws {
    let t = try restartedDevice()
    let app = try launchInBackground(t, [])
    #expect(
      app.waitForLine { $0.hasPrefix("app: protected data is unavailable") } != nil,
      "\(app.standardError)")
    try t.g.ok(["device", "unlock", "--passcode", "123456"])
    #expect(app.waitFor("app: welcome back: theme=dark unread=3"), "\(app.standardError)")
    #expect(app.wait() == 0)
    #expect(try shown(t).hasPrefix("unread=3 theme=dark "))
  }

  @Test func theWidgetWaitsForTheFirstUnlockAndNeverShowsDefaultsAsData() throws {
    let t = try restartedDevice()
    let widget = try t.launch(
      TestRoot.widget, [Product.url("widget").path, "--watch"], waitsForReady: false,
      background: true)
    let first = widget.waitForLine { $0.hasPrefix("entry #") }
    #expect(
      first?.hasPrefix("entry #1 waiting for first unlock (protected data unavailable) ") == true,
      "\(widget.standardError)")
    #expect(widget.waitFor("ready"))
    try t.g.ok(["device", "unlock", "--passcode", "123456"])
    let second = widget.waitForLine { $0.hasPrefix("entry #") }
    #expect(
      second?.hasPrefix("entry #2 unread=3 theme=dark ") == true, "\(String(describing: second))")
    widget.signal(SIGTERM)
    #expect(widget.wait() == 0)
  }
}

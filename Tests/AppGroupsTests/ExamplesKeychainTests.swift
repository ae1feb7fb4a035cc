import AppGroups
import AppGroupsKeybag
import AppGroupsTestSupport
import Foundation
import Testing

/// The example app signs in with the keychain and the widget shows it, as real processes.
@Suite("Examples: sign-in through the keychain", .processBound)
struct ExamplesKeychainTests {
  static let passcode = "1357"

  /// A root with the examples' keychain entitlements, as Containers/Entitlements.plist has them.
  func root(_ name: String = #function) throws -> TestRoot {
    let t = try TestRoot(name)
    for app in [TestRoot.app, TestRoot.widget] {
      try EntitlementManifest.grantKeychainAccess(
        app, keychainAccessGroups: ["EXAMPLE123.com.example.shared"], teamIdentifier: "EXAMPLE123",
        root: t.root)
    }
    return t
  }

  func widgetOnce(_ t: TestRoot) throws -> String {
    let run = try Product.run("widget", ["--once"], environment: t.environment(as: TestRoot.widget))
    #expect(run.status == 0, "\(run.stderr)")
    return run.stdout
  }

  @Test func theAppSignsInAndTheWidgetShowsItWithoutTheTokenInAnyFile() throws {
    let t = try root()
    #expect(try widgetOnce(t).contains(" account=signed-out (start)"))
    let token = "refresh-\(UUID().uuidString)"
    let signIn = try Product.run(
      "app", ["sign-in", token], environment: t.environment(as: TestRoot.app))
    #expect(signIn.status == 0, "\(signIn.stderr)")
    #expect(
      signIn.stdout.contains(
        "app: signed in; the refresh token is in the keychain (access group EXAMPLE123.com.example.shared, kSecAttrAccessible ak)"
      ))
    #expect(!signIn.stdout.contains(token) && !signIn.stderr.contains(token))
    #expect(try widgetOnce(t).contains(" account=signed-in (start)"))
    // Never in the defaults, never in plaintext in any file of the root.
    for file in KeychainRoot.files(under: t.path) {
      let data = try Data(contentsOf: URL(fileURLWithPath: file))
      #expect(data.range(of: Data(token.utf8)) == nil, "\(file) holds the token")
    }
    // The intruder: -34018.
    let intruder = try Product.run(
      "app", ["sign-in", "stolen"], environment: t.environment(as: "com.example.intruder"))
    #expect(intruder.status == 1)
    #expect(
      intruder.stderr.contains("A required entitlement isn't present. (OSStatus -34018)"),
      "\(intruder.stderr)")
    let signOut = try Product.run("app", ["sign-out"], environment: t.environment(as: TestRoot.app))
    #expect(signOut.status == 0)
    #expect(try widgetOnce(t).contains(" account=signed-out (start)"))
  }

  @Test func beforeTheFirstUnlockTheWidgetShowsLockedNotSignedOut() throws {
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    let t = try root()
    try Keybag(root: t.root).setPasscode(Self.passcode)
    #expect(
      try Product.run("app", ["sign-in", "tok"], environment: t.environment(as: TestRoot.app))
        .status == 0)
    _ = try Device(root: t.root).reboot(grace: .seconds(1))
    #expect(try widgetOnce(t).contains(" account=locked (start)"))
    // A widget watching from before the unlock shows the account as soon as it can be read.
    let widget = try ChildProcess("widget", [], environment: t.environment(as: TestRoot.widget))
    #expect(
      widget.waitForLine { $0.hasPrefix("entry #1 ") }?.contains("account=locked") == true,
      "\(widget.standardError)")
    #expect(widget.waitFor("ready"))
    _ = try Keybag(root: t.root).unlock(passcode: Self.passcode)
    let next = widget.waitForLine(timeout: 20) { $0.hasPrefix("entry #") }
    #expect(
      next?.contains("account=signed-in") == true, "\(next ?? "nothing") \(widget.standardError)")
    widget.signal(SIGTERM)
    widget.wait()
    // WhenUnlocked: locked again, the widget cannot read it.
    try Device(root: t.root).lock(grace: .zero)
    #expect(try widgetOnce(t).contains(" account=locked (start)"))
  }

  @Test func afterFirstUnlockTheWidgetReadsTheTokenWhileLocked() throws {
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    let t = try root()
    try Keybag(root: t.root).setPasscode(Self.passcode)
    let signIn = try Product.run(
      "app", ["sign-in", "tok", "--accessible", "afterFirstUnlock"],
      environment: t.environment(as: TestRoot.app))
    #expect(signIn.stdout.contains("kSecAttrAccessible ck"), "\(signIn.stdout) \(signIn.stderr)")
    _ = try Device(root: t.root).reboot(grace: .seconds(1))
    #expect(try widgetOnce(t).contains(" account=locked (start)"))
    _ = try Keybag(root: t.root).unlock(passcode: Self.passcode)
    try Device(root: t.root).lock(grace: .zero)
    #expect(try widgetOnce(t).contains(" account=signed-in (start)"))
  }
}

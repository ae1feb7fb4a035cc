import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("Sandbox: groupctl doctor --sharing", .processBound)
struct SandboxSharingTests {
  @Test(.enabled(if: landlockAvailable, "the kernel offers no Landlock"))
  func twoEntitledAppsShareThroughTheirSandboxes() throws {
    let s = try SandboxRoot()
    let abi = try AppSandbox.landlockABI()
    let result = try s.g.run(["doctor", "--sharing", TestRoot.group, TestRoot.app, TestRoot.widget])
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let lines = result.stdout.split(separator: "\n").map(String.init)
    #expect(
      lines.contains("ok: the round trip runs each app inside its Landlock sandbox (ABI \(abi))"))
    #expect(
      lines.contains(
        "ok: \(TestRoot.widget) read the value \(TestRoot.app) wrote, in another child process"))
    #expect(
      lines.contains(
        "ok: \(TestRoot.app) read the value \(TestRoot.widget) wrote, in another child process"))
    #expect(lines.contains("verdict: \(TestRoot.app) shares \(TestRoot.group)"))
    #expect(lines.contains("verdict: \(TestRoot.widget) shares \(TestRoot.group)"))
    #expect(lines.last == "Sharing of \(TestRoot.group) works for 2 apps in \(s.path).")
    // The check's value is gone afterwards; the suite's own values are intact.
    #expect(try s.g.ok(["read", TestRoot.group]) == "{\n    shared = yes;\n}\n")
  }

  @Test func anAppThatIsNotEntitledGetsANegativeVerdict() throws {
    let s = try SandboxRoot()
    let result = try s.g.run(
      ["doctor", "--sharing", TestRoot.group, TestRoot.app, SandboxRoot.other, TestRoot.widget])
    #expect(result.status == 1)
    let lines = result.stdout.split(separator: "\n").map(String.init)
    #expect(
      lines.contains(
        "problem: \(SandboxRoot.other) is not entitled to \(TestRoot.group) (it holds:"
          + " \(SandboxRoot.otherGroup))"), "\(result.stdout)")
    #expect(lines.contains("  fix: groupctl grant \(SandboxRoot.other) \(TestRoot.group)"))
    #expect(lines.contains("verdict: \(TestRoot.app) shares \(TestRoot.group)"))
    #expect(
      lines.contains(
        "verdict: \(SandboxRoot.other) does NOT share \(TestRoot.group): \(SandboxRoot.other) is"
          + " not entitled to \(TestRoot.group) (it holds: \(SandboxRoot.otherGroup))"))
    #expect(
      lines.last == "Sharing of \(TestRoot.group) does not work for 1 of 3 apps in \(s.path).")
  }

  @Test func aBindingToAMissingExecutableIsAProblem() throws {
    let s = try SandboxRoot()
    try s.g.ok([
      "grant", TestRoot.widget, TestRoot.group, "--executable", s.path + "/no-such-widget",
    ])
    let result = try s.g.run(["doctor", "--sharing", TestRoot.group, TestRoot.app, TestRoot.widget])
    #expect(result.status == 1)
    #expect(
      result.stdout.contains(
        "problem: \(TestRoot.widget) is bound to the executable \(s.path)/no-such-widget, which"
          + " does not exist or is not executable"), "\(result.stdout)")
    #expect(result.stdout.contains("verdict: \(TestRoot.widget) does NOT share"))
  }

  @Test func withoutLandlockTheRoundTripRunsUnconfinedAndSaysSo() throws {
    let s = try SandboxRoot()
    let result = try Product.run(
      "groupctl",
      ["--root", s.path, "doctor", "--sharing", TestRoot.group, TestRoot.app, TestRoot.widget],
      environment: [AppSandbox.unavailableVariable: "1"])
    #expect(result.status == 0, "\(result.stdout)")
    #expect(
      result.stdout.contains(
        "note: Landlock is unavailable: \(AppSandbox.unavailableVariable)=1 makes this process"
          + " behave as if the kernel had none; the round trip runs unconfined"))
    #expect(result.stdout.contains("verdict: \(TestRoot.widget) shares \(TestRoot.group)"))
  }

  @Test(arguments: [
    (["doctor", "--sharing", TestRoot.group, TestRoot.app], "needs at least two BUNDLE-IDs"),
    (
      ["doctor", "--sharing", "com.example.nogroup", TestRoot.app, TestRoot.widget],
      "is not a group id"
    ),
    (["doctor", "--sharing", TestRoot.group, TestRoot.app, TestRoot.app], "names an app twice"),
  ])
  func badArgumentsAreUsageErrors(arguments: [String], message: String) throws {
    let s = try SandboxRoot()
    let result = try s.g.run(arguments)
    #expect(result.status == 64)
    #expect(result.stderr.contains(message), "\(result.stderr)")
  }
}

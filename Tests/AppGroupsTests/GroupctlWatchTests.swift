import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("groupctl watch", .processBound)
struct GroupctlWatchTests {
  static let group = TestRoot.group

  /// Starts `groupctl watch` and waits for its "watching" line on stderr.
  private func watch(_ g: GroupctlRoot, _ args: [String], domain: String) throws -> ChildProcess {
    let child = try ChildProcess(
      "groupctl", ["--root", g.path, "watch"] + args, environment: ["APPGROUPS_ROOT": g.path])
    let ready = child.waitForError("watching \(domain) (Ctrl-C to stop)")
    #expect(ready, "stderr: \(child.standardError)")
    return child
  }

  @Test func watchPrintsEveryChangeMadeByOtherProcesses() throws {
    let g = try GroupctlRoot()
    let child = try watch(g, [Self.group], domain: Self.group)

    // An app, through the library.
    let app = try Product.run(
      "appgroups-worker", ["set", Self.group, "greeting", "hello"],
      environment: g.t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(app.status == 0, "\(app.stderr)")
    #expect(child.waitForLine(timeout: 10) == "greeting = hello")

    // groupctl itself, each kind of change.
    try g.ok(["write", Self.group, "tags", "-array", "a", "b c"])
    #expect(child.waitForLine(timeout: 10) == "tags = (a, \"b c\")")
    try g.ok(["write", Self.group, "map", "-dict", "k", "-int", "1"])
    #expect(child.waitForLine(timeout: 10) == "map = { k = 1; }")
    try g.ok(["delete", Self.group, "greeting"])
    #expect(child.waitForLine(timeout: 10) == "greeting deleted")
    try g.ok(["force", Self.group, "tags", "-bool", "yes"])
    #expect(child.waitForLine(timeout: 10) == "tags = 1")
    try g.ok(["unforce", Self.group, "tags"])
    #expect(child.waitForLine(timeout: 10) == "tags = (a, \"b c\")")

    child.signal(SIGINT)
    #expect(child.wait(timeout: 10) == 0)
  }

  @Test func watchWithKeysPrintsOnlyThoseKeys() throws {
    let g = try GroupctlRoot()
    let child = try watch(g, ["-g", "wanted"], domain: "NSGlobalDomain")
    try g.ok(["write", "-g", "unwanted", "1"])
    try g.ok(["write", "-g", "wanted", "-float", "2.5"])
    // The first line is the watched key: the other change printed nothing.
    #expect(child.waitForLine(timeout: 10) == "wanted = 2.5")
    child.signal(SIGTERM)
    #expect(child.wait(timeout: 10) == 0)
  }

  @Test func watchAsAnAppSeesTheGlobalDomainThroughItsSuite() throws {
    let g = try GroupctlRoot()
    let child = try watch(
      g, ["--as", TestRoot.app, TestRoot.app, "AppleLocale"], domain: TestRoot.app)
    try g.ok(["write", "-g", "AppleLocale", "fr_FR"])
    #expect(child.waitForLine(timeout: 10) == "AppleLocale = fr_FR")
    try g.ok(["write", TestRoot.app, "AppleLocale", "de_DE"])
    #expect(child.waitForLine(timeout: 10) == "AppleLocale = de_DE")
    child.signal(SIGINT)
    #expect(child.wait(timeout: 10) == 0)
  }

  @Test func aRefusedWatchFailsAtOnce() throws {
    let g = try GroupctlRoot()
    let refused = try g.run(["--as", "com.example.stranger", "watch", Self.group])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("com.example.stranger is not entitled to \(Self.group)"))
    #expect(!refused.stderr.contains("watching"))

    try g.ok(["write", Self.group, "k", "v"])
    try Data("garbage <".utf8).write(to: g.t.groupSuiteFile)
    let unreadable = try g.run(["watch", Self.group])
    #expect(unreadable.status == 1)
    #expect(unreadable.stderr.contains("cannot be read"))
  }
}

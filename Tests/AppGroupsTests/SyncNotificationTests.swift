import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// Collects named notifications and waits for them.
final class NotificationLog: Sendable {
  private let notes = Locked<[GroupNotification]>([])
  private let arrived = DispatchSemaphore(value: 0)

  func record(_ note: GroupNotification) {
    notes.withLock { $0.append(note) }
    arrived.signal()
  }

  var all: [GroupNotification] { notes.withLock { $0 } }

  /// Waits (bounded) for the next delivery.
  func next(timeout: TimeInterval = 10) -> Bool {
    arrived.wait(timeout: .now() + timeout) == .success
  }
}

@Suite("Named notifications", .processBound)
struct SyncNotificationTests {
  static let reload = "com.example.widget.reload"

  func center(_ t: TestRoot, as bundleID: String = TestRoot.widget) throws -> GroupNotificationCenter {
    try GroupNotificationCenter(
      groupIdentifier: TestRoot.group, identity: AppIdentity(bundleIdentifier: bundleID),
      root: t.root)
  }

  @Test func postStateAndObserveInOneProcess() throws {
    let t = try TestRoot()
    let app = try center(t, as: TestRoot.app)
    let widget = try center(t)
    #expect(try widget.state(for: "ping") == 0)
    #expect(try widget.postCount(for: "ping") == 0)
    let log = NotificationLog()
    let observation = try widget.observe("ping", handler: log.record)
    defer { observation.cancel() }

    try app.setState(42, for: "ping")
    #expect(try widget.state(for: "ping") == 42)
    try app.post("ping")
    #expect(log.next())
    let note = try #require(log.all.first)
    #expect(note.name == "ping")
    #expect(note.groupIdentifier == TestRoot.group)
    #expect(note.state == 42)
    #expect(note.postCount == 1)
    #expect(note.coalescedPosts == 1)
    #expect(note.origin == .thisProcess)

    try app.post("ping", state: 7)
    #expect(log.next())
    #expect(log.all.last?.state == 7)
    #expect(log.all.last?.postCount == 2)
    // Setting a state alone is not a post.
    try app.setState(8, for: "ping")
    try app.post("pong")
    #expect(!log.next(timeout: 0.3))
    #expect(log.all.count == 2)
    // The file is in the group container, one per name.
    let file = widget.directoryURL.appendingPathComponent("ping").path
    #expect(FileManager.default.fileExists(atPath: file))
    #expect(widget.directoryURL.path.hasSuffix("/Shared/AppGroup/\(TestRoot.group)/Library/Notifications"))
  }

  @Test func aPostInAnotherProcessReachesAnObserver() throws {
    let t = try TestRoot()
    let log = NotificationLog()
    let observation = try center(t).observe(Self.reload, handler: log.record)
    defer { observation.cancel() }
    let app = try Product.run("app", ["unread", "2"], environment: t.environment(as: TestRoot.app))
    #expect(app.status == 0, "\(app.stderr)")
    #expect(log.next())
    let note = try #require(log.all.first)
    #expect(note.origin == .otherProcess)
    // The app posts its write's token as the state.
    let defaults = try t.defaults(TestRoot.group, as: TestRoot.widget)
    #expect(note.state == defaults.changeToken.rawValue)
  }

  @Test func aPostFromThisProcessReachesTheWidget() throws {
    let t = try TestRoot()
    let widget = try ChildProcess("widget", [], environment: t.environment(as: TestRoot.widget))
    #expect(widget.waitFor("ready"), "\(widget.standardError)")
    try center(t, as: TestRoot.app).post(Self.reload)
    #expect(widget.waitForLine { $0.hasPrefix("reload: ") } == "reload: entry #1 is current")
  }

  @Test func postsCloseTogetherAreCoalescedNeverLost() throws {
    let t = try TestRoot()
    let poster = try center(t, as: TestRoot.app)
    let log = NotificationLog()
    let observation = try center(t).observe("burst", handler: log.record)
    defer { observation.cancel() }
    for _ in 0..<50 { try poster.post("burst") }
    let deadline = Date().addingTimeInterval(10)
    while log.all.reduce(0, { $0 + $1.coalescedPosts }) < 50, Date() < deadline { _ = log.next(timeout: 1) }
    #expect(log.all.reduce(0) { $0 + $1.coalescedPosts } == 50)
    #expect(log.all.last?.postCount == 50)
  }

  @Test func nonMembersAreRefusedWithTheReason() throws {
    let t = try TestRoot()
    #expect {
      try center(t, as: "com.example.intruder")
    } throws: { error in
      guard let error = error as? AppGroupsError, error.code == .notEntitled else { return false }
      return error.message.contains("com.example.intruder is not entitled to group.com.example.shared (manifest: ")
    }
    // A member whose entitlement is revoked is refused at its next call.
    let widget = try center(t)
    try widget.post("ping")
    _ = try EntitlementManifest.revoke(TestRoot.widget, groups: [TestRoot.group], root: t.root)
    #expect(throws: AppGroupsError.self) { try widget.post("ping") }
    #expect(throws: AppGroupsError.self) { try widget.observe("ping") { _ in } }
    #expect(throws: AppGroupsError.self) { try widget.state(for: "ping") }
    // And a process that is not a member cannot post.
    let app = try Product.run("app", ["reload"], environment: t.environment(as: "com.example.intruder"))
    #expect(app.status == 1)
    #expect(app.stderr.contains("not entitled"))
  }

  @Test(arguments: ["", ".hidden", "../escape", "a/b", "two..dots", "-dash", "sp ace", String(repeating: "n", count: 201)])
  func invalidNamesAreRefused(name: String) throws {
    let t = try TestRoot()
    let center = try center(t)
    #expect {
      try center.post(name)
    } throws: { error in
      (error as? AppGroupsError)?.code == .invalidName
    }
    #expect(throws: AppGroupsError.self) { try center.observe(name) { _ in } }
  }
}

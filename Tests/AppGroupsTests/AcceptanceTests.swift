@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// The acceptance matrix of the reference document, scenario by scenario:
/// each asserts the exact effective value and the domain that supplied it.
@Suite("Acceptance matrix")
struct AcceptanceTests {
  @Test func firstLaunchWithNoAppDomain() throws {
    let t = try TestRoot()
    let d = try t.defaults(nil)
    #expect(d.dictionaryRepresentation().keys.allSatisfy { !$0.hasPrefix("launch") })
    #expect(d.lookup(forKey: "launchCount") == nil)
    #expect(d.integer(forKey: "launchCount") == 0)
    #expect(!FileManager.default.fileExists(atPath: d.location.fileURL.path), "reading creates no plist")
  }

  @Test func entitledSuiteIsSharedBetweenMembers() throws {
    let t = try TestRoot()
    let app = try t.defaults(TestRoot.group, as: TestRoot.app)
    app.set("from app", forKey: "note")
    #expect(app.synchronize())
    let child = try Product.run(
      "appgroups-worker", ["get", TestRoot.group, "note"],
      environment: t.environment(as: TestRoot.widget).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(child.stdout == "from app\n")
    #expect(app.location.kind == .group)
    #expect(app.location.fileURL.path.hasPrefix(t.root.groupContainerURL(for: TestRoot.group).path))
  }

  @Test func unentitledSuiteIsRefusedWithAReason() throws {
    let t = try TestRoot()
    #expect {
      _ = try t.defaults(TestRoot.group, as: "com.example.intruder")
    } throws: { error in
      guard let error = error as? AppGroupsError, error.code == .notEntitled else { return false }
      return error.message.contains("com.example.intruder")
        && error.message.contains(TestRoot.group) && error.message.contains("Entitlements.plist")
    }
    let child = try Product.run(
      "appgroups-worker", ["get", TestRoot.group, "note"],
      environment: t.environment(as: "com.example.intruder").merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(child.status != 0)
    #expect(child.stderr.contains("not entitled"))
  }

  @Test func suiteNamesThatAppleRefusesGiveNil() throws {
    let t = try TestRoot()
    for name in [TestRoot.app, "NSGlobalDomain", "", "../../etc/x", "a/b", "bad\u{0}name", String(repeating: "x", count: 300)] {
      #expect(throws: AppGroupsError.self, "\(name.debugDescription)") { _ = try t.defaults(name) }
    }
    let privateSuite = try t.defaults("com.example.app.scratch")
    #expect(privateSuite.location.kind == .privateSuite)
    #expect(privateSuite.location.fileURL.path.hasPrefix(t.root.appContainerURL(for: TestRoot.app).path))
  }

  @Test func aDisposableTestSuiteLeaksNoState() throws {
    let t = try TestRoot()
    let name = "com.example.app.test-\(UUID().uuidString)"
    do {
      let d = try t.defaults(name)
      d.set(1, forKey: "a")
      d.set("b", forKey: "b")
      #expect(d.synchronize())
      d.removePersistentDomain(forName: name)
      #expect(d.synchronize())
    }
    let again = try t.defaults(name)
    #expect(again.persistentDomain(forName: name) == nil)
    #expect(again.object(forKey: "a") == nil)
    // Another suite never saw it.
    let other = try t.defaults(nil)
    #expect(other.object(forKey: "a") == nil)
  }
}

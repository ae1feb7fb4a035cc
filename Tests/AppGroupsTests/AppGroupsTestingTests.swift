import AppGroups
import AppGroupsTestSupport
import AppGroupsTesting
import Foundation
import Testing

/// `AppGroupsTesting`: each test gets a root, identity and manifest of its own, which the
/// library's process-wide lookups answer with, and which are gone after the test.
@Suite("AppGroupsTesting")
struct AppGroupsTestingTests {
  static let group = "group.com.example.shared"

  @Test(.appGroup("group.com.example.shared"))
  func traitScopesRootAndIdentity() throws {
    let device = try #require(TemporaryAppGroup.current)
    #expect(ContainerRoot.default == device.root)
    #expect(try AppIdentity.current().bundleIdentifier == "com.example.app")
    #expect(device.root.url.lastPathComponent.hasPrefix("appgroups-traitScopesRootAndIdentity"))
    #expect(FileManager.default.fileExists(atPath: device.root.manifestURL.path))

    // Code written for the device finds the test's root without being told.
    let shared = try #require(GroupDefaults(suiteName: Self.group))
    #expect(shared.location.root == device.root)
    let folder = try #require(
      FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: Self.group))
    #expect(folder == device.root.groupContainerURL(for: Self.group))
    #expect(FileManager.default.fileExists(atPath: folder.path))
    #expect(GroupDefaults.standard.location.root == device.root)
    // A group the manifest does not grant is refused, as on a device.
    #expect(
      FileManager.default.containerURL(
        forSecurityApplicationGroupIdentifier: "group.com.example.other") == nil)
    #expect(GroupDefaults(suiteName: "group.com.example.other") == nil)
  }

  @Test(.appGroup("group.com.example.shared", as: "com.example.widget"))
  func traitTakesTheIdentity() throws {
    #expect(try AppIdentity.current().bundleIdentifier == "com.example.widget")
    #expect(TemporaryAppGroup.current?.identity.bundleIdentifier == "com.example.widget")
  }

  /// Each case writes the same key: a case that saw another's value was not isolated.
  @Test(.appGroup("group.com.example.shared"), arguments: 1...4)
  func casesDoNotShareARoot(value: Int) throws {
    let shared = try #require(GroupDefaults(suiteName: Self.group))
    #expect(shared.object(forKey: "counter") == nil)
    shared.set(value, forKey: "counter")
    #expect(shared.synchronize())
    #expect(shared.integer(forKey: "counter") == value)
  }

  @Test func outsideAScopeNothingIsOverridden() {
    #expect(TemporaryAppGroup.current == nil)
    #expect(ContainerRoot.default.path != "")
  }

  @Test func theRootIsRemovedAfterTheTest() async throws {
    let trait = AppGroupTrait(groups: [Self.group], bundleIdentifier: "com.example.app")
    let test = try #require(Test.current)
    let seen = Locked<String?>(nil)
    try await trait.provideScope(for: test, testCase: Test.Case.current) {
      let device = try #require(TemporaryAppGroup.current)
      let shared = try #require(GroupDefaults(suiteName: Self.group))
      shared.set("kept", forKey: "note")
      #expect(shared.synchronize())
      #expect(FileManager.default.fileExists(atPath: device.root.path))
      seen.withLock { $0 = device.root.path }
    }
    let path = try #require(seen.withLock { $0 })
    #expect(!FileManager.default.fileExists(atPath: path))
  }

  /// Changes not yet on disk when the root is removed land first, and do not bring parts of
  /// the root back afterwards: a test that ends without `synchronize()` leaves nothing behind.
  @Test func theRootIsRemovedWithChangesPending() throws {
    let device = try TemporaryAppGroup(groups: [Self.group])
    let shared = try device.defaults(suiteName: Self.group)
    let own = try device.defaults(suiteName: nil)
    for i in 0..<20 {
      shared.set(i, forKey: "k\(i)")
      own.set(i, forKey: "k\(i)")
    }
    device.remove()
    #expect(!FileManager.default.fileExists(atPath: device.root.path))
    // Nothing is left pending that would write into the removed root.
    #expect(shared.synchronize() && own.synchronize())
    #expect(!FileManager.default.fileExists(atPath: device.root.path))
  }

  @Test func aTemporaryAppGroupWithoutGroupsHasNoManifest() throws {
    let device = try TemporaryAppGroup(groups: [])
    #expect(!FileManager.default.fileExists(atPath: device.root.manifestURL.path))
    #expect(throws: AppGroupsError.self) { try device.defaults(suiteName: Self.group) }
    try device.grant("com.example.app", groups: [Self.group])
    #expect(try device.defaults(suiteName: Self.group).suiteName == Self.group)
    #expect(device.environment()["APPGROUPS_ROOT"] == device.root.path)
    #expect(device.environment(as: "com.example.widget")["APPGROUPS_BUNDLE_ID"] == "com.example.widget")
    device.remove()
    #expect(!FileManager.default.fileExists(atPath: device.root.path))
  }

  @Test func aBadGroupIsRefusedWithItsName() {
    let error = caught { try TemporaryAppGroup(groups: ["shared"]) }
    #expect(error?.code == .invalidName)
    #expect(error?.message.contains("shared") == true)
  }

  @Test func withScopeAnswersWithTheRootAndIdentity() throws {
    let device = try TemporaryAppGroup(groups: [Self.group], as: "com.example.widget")
    let (root, name) = try device.withScope { () throws(AppGroupsError) in
      (ContainerRoot.default, try AppIdentity.current().bundleIdentifier)
    }
    #expect(root == device.root)
    #expect(name == "com.example.widget")
    #expect(ContainerRoot.default != device.root)
  }
}

/// On a suite, the trait gives every test its own root.
@Suite("AppGroupsTestingSuiteTrait", .appGroup("group.com.example.shared"))
struct AppGroupsTestingSuiteTraitTests {
  @Test func first() throws {
    let shared = try #require(GroupDefaults(suiteName: "group.com.example.shared"))
    #expect(shared.string(forKey: "who") == nil)
    shared.set("first", forKey: "who")
  }

  @Test func second() throws {
    let shared = try #require(GroupDefaults(suiteName: "group.com.example.shared"))
    #expect(shared.string(forKey: "who") == nil)
    shared.set("second", forKey: "who")
  }
}

/// The example in `AppGroupsError`'s documentation, as it is written there.
@Suite("AppGroupsErrorExample")
struct AppGroupsErrorExampleTests {
  func openAndSet(_ suiteName: String) -> String {
    do {
      let shared = try GroupDefaults(
        suiteName: suiteName, identity: try .current(), root: .default)
      shared.set(3, forKey: "unreadCount")
      return "opened"
    } catch AppGroupsError.Code.notEntitled {
      return "not entitled"
    } catch {
      return "\(error)"
    }
  }

  @Test(.appGroup("group.com.example.shared"))
  func theDocumentedCatchMatchesTheCode() {
    #expect(openAndSet("group.com.example.shared") == "opened")
    #expect(openAndSet("group.com.example.other") == "not entitled")
  }
}

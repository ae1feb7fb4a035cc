import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// A root with a sibling folder "outside" it, full of files a hostile name or link would
/// like to reach. Every test snapshots "outside" before and after: nothing there may change.
struct HostileWorld {
  let sandbox: Sandbox
  let root: ContainerRoot
  let outside: URL
  static let group = TestRoot.group
  static let app = TestRoot.app

  init(_ name: String = #function) throws {
    sandbox = try Sandbox(name)
    let rootURL = sandbox.url.appendingPathComponent("root", isDirectory: true)
    outside = sandbox.url.appendingPathComponent("outside", isDirectory: true)
    let fm = FileManager.default
    try fm.createDirectory(at: rootURL, withIntermediateDirectories: true)
    try fm.createDirectory(
      at: outside.appendingPathComponent("Library/Preferences"), withIntermediateDirectories: true)
    try Data("secret".utf8).write(to: outside.appendingPathComponent("secret.txt"))
    try Data("small".utf8).write(to: outside.appendingPathComponent("lock-victim"))
    try PropertyListSerialization.data(
      fromPropertyList: ["stolen": "outside value"], format: .binary, options: 0
    ).write(to: outside.appendingPathComponent("outside.plist"))
    root = ContainerRoot(url: rootURL)
    try EntitlementManifest.grant(Self.app, groups: [Self.group], root: root)
  }

  func defaults(_ suite: String?, as bundleID: String = HostileWorld.app) throws -> GroupDefaults {
    try GroupDefaults(
      suiteName: suite, identity: AppIdentity(bundleIdentifier: bundleID), root: root)
  }

  /// Makes `path` (relative to the root) a symbolic link to `destination`.
  func link(_ path: String, to destination: URL) throws {
    let url = root.url.appendingPathComponent(path)
    try FileManager.default.createDirectory(
      at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(at: url, withDestinationURL: destination)
  }

  var groupPreferences: URL {
    root.groupContainerURL(for: Self.group).appendingPathComponent("Library/Preferences")
  }
}

/// Whether a message shows every character: no NUL, control or invisible format character
/// (such as a right-to-left override) raw.
private func isPrintable(_ message: String) -> Bool {
  !message.unicodeScalars.contains {
    $0.value < 0x20 || (0x7F...0x9F).contains($0.value)
      || $0.properties.generalCategory == .format
  }
}

@Suite("Fault: hostile names, paths and manifests", .processBound)
struct FaultHostileInputTests {
  static let hostileNames: [String] = [
    "..", "../x", "../../outside/evil", "a/b", "/etc/passwd", "a\0b", "\0", "a\u{1}b",
    "line\nbreak", "tab\there", "del\u{7F}", "c1\u{85}", String(repeating: "a", count: 300),
    String(repeating: "é", count: 160), "", ".", ".hidden", "-rf", "a b", "café", "a..b",
    "name\u{202E}gpj.exe", "group.../x", "group./x", "group.\0", "group.com.example.shared/../x",
    "group." + String(repeating: "x", count: 300), "group.", "group.a\nb",
  ]

  @Test func hostileSuiteGroupAndBundleNamesAreRefusedClearlyAndTouchNothing() throws {
    let world = try HostileWorld()
    let outsideBefore = snapshot(of: world.outside)
    let rootBefore = snapshot(of: world.root.url)
    var refused = 0
    for name in Self.hostileNames {
      // As a suite name.
      do {
        _ = try world.defaults(name)
        Issue.record("suite name \(name.debugDescription) was accepted")
      } catch let error as AppGroupsError {
        #expect(error.code == .invalidName || error.code == .notEntitled, "\(name.debugDescription): \(error)")
        #expect(isPrintable(error.message), "\(error.message.debugDescription)")
        refused += 1
      }
      // As a group identifier.
      let resolver = SuiteResolver(identity: try AppIdentity(bundleIdentifier: HostileWorld.app), root: world.root)
      #expect(resolver.containerURL(forSecurityApplicationGroupIdentifier: name) == nil)
      do {
        _ = try resolver.container(forSecurityApplicationGroupIdentifier: name)
        Issue.record("group identifier \(name.debugDescription) was accepted")
      } catch {
        #expect(error.code == .invalidName || error.code == .notEntitled)
        #expect(isPrintable(error.message), "\(error.message.debugDescription)")
        refused += 1
      }
      // As a bundle identifier (every name here but "group." is invalid as one).
      if name != "group." {
        do {
          _ = try AppIdentity(bundleIdentifier: name)
          Issue.record("bundle identifier \(name.debugDescription) was accepted")
        } catch {
          #expect(error.code == .invalidName)
          #expect(isPrintable(error.message), "\(error.message.debugDescription)")
          refused += 1
        }
        // As a grant (nothing invalid is ever written to the manifest).
        #expect(throws: AppGroupsError.self) {
          try EntitlementManifest.grant(name, groups: [HostileWorld.group], root: world.root)
        }
      }
      #expect(throws: AppGroupsError.self) {
        try EntitlementManifest.grant(HostileWorld.app, groups: [name], root: world.root)
      }
    }
    #expect(snapshot(of: world.outside) == outsideBefore)
    #expect(snapshot(of: world.root.url) == rootBefore, "a refusal created something in the root")
    print("hostile names: \(Self.hostileNames.count) names, \(refused) refusals")
  }

  @Test func aHostileBundleIdentifierFromTheEnvironmentIsRefusedByARealProcess() throws {
    let world = try HostileWorld()
    let outsideBefore = snapshot(of: world.outside)
    let rootBefore = snapshot(of: world.root.url)
    for name in ["../../outside", "a/b", "x\u{1}y", String(repeating: "b", count: 300), ".."] {
      let result = try Product.run(
        "appgroups-worker", ["set", "-", "k", "v"],
        environment: [
          "APPGROUPS_ROOT": world.root.path, "APPGROUPS_BUNDLE_ID": name,
          "APPGROUPS_WORKER_NO_WAIT": "1",
        ])
      #expect(result.status == 1, "\(name.debugDescription): \(result.stdout) \(result.stderr)")
      #expect(result.stderr.contains("invalid bundle identifier"), "\(result.stderr)")
    }
    #expect(snapshot(of: world.outside) == outsideBefore)
    #expect(snapshot(of: world.root.url) == rootBefore)
  }

  /// Folders on the way to a suite that are symbolic links, out of the root or within it.
  static let linkedFolders: [(path: String, suite: String?)] = [
    ("Shared/AppGroup/\(TestRoot.group)", TestRoot.group),
    ("Shared/AppGroup/\(TestRoot.group)/Library/Preferences", TestRoot.group),
    ("Shared/AppGroup/\(TestRoot.group)/Library", TestRoot.group),
    ("Shared", TestRoot.group),
    ("Shared/AppGroup", TestRoot.group),
    ("Data/Application/\(TestRoot.app)", nil),
    ("Data/Application/\(TestRoot.app)/Library/Preferences", "private-suite"),
    ("Global", TestRoot.group),
    ("Global/Library/Preferences", nil),
  ]

  @Test(arguments: linkedFolders.indices)
  func aFolderThatIsASymbolicLinkOutOfTheRootIsRefused(_ index: Int) throws {
    let (path, suite) = Self.linkedFolders[index]
    let world = try HostileWorld()
    try world.link(path, to: world.outside)
    let outsideBefore = snapshot(of: world.outside)
    do {
      _ = try world.defaults(suite)
      Issue.record("\(path) linked out of the root was accepted")
    } catch let error as AppGroupsError {
      #expect(error.code == .outsideRoot, "\(path): \(error)")
      #expect(error.message.contains("symbolic link"), "\(error.message)")
    }
    if path.hasPrefix("Shared") {
      let resolver = SuiteResolver(
        identity: try AppIdentity(bundleIdentifier: HostileWorld.app), root: world.root)
      #expect(resolver.containerURL(forSecurityApplicationGroupIdentifier: TestRoot.group) == nil)
    }
    #expect(snapshot(of: world.outside) == outsideBefore, "\(path): something outside changed")
  }

  @Test func aContainerLinkedToAnotherContainerInsideTheRootIsRefusedToo() throws {
    let world = try HostileWorld()
    let other = world.root.url.appendingPathComponent("Data/Application/com.example.other")
    try FileManager.default.createDirectory(
      at: other.appendingPathComponent("Library/Preferences"), withIntermediateDirectories: true)
    try world.link("Shared/AppGroup/\(TestRoot.group)", to: other)
    #expect(throws: AppGroupsError.self) { _ = try world.defaults(TestRoot.group) }
    #expect(entries(of: other.appendingPathComponent("Library/Preferences")) == [])
  }

  @Test func theManagedFolderLinkedOutOfTheRootIsRefused() throws {
    let world = try HostileWorld()
    try world.link("Managed", to: world.outside)
    let outsideBefore = snapshot(of: world.outside)
    #expect(throws: AppGroupsError.self) { _ = try world.defaults(TestRoot.group) }
    #expect(snapshot(of: world.outside) == outsideBefore)
  }

  @Test func aSuiteFileThatIsASymbolicLinkIsMovedAsideNotFollowed() throws {
    let world = try HostileWorld()
    let target = world.outside.appendingPathComponent("outside.plist")
    try world.link(
      "Shared/AppGroup/\(TestRoot.group)/Library/Preferences/\(TestRoot.group).plist", to: target)
    let outsideBefore = snapshot(of: world.outside)
    let d = try world.defaults(TestRoot.group)
    // Nothing from outside the root is read into the suite.
    #expect(d.object(forKey: "stolen") == nil)
    let aside = entries(of: world.groupPreferences).filter { $0.contains(".unreadable-") }
    #expect(aside.count == 1)
    if let moved = aside.first {
      let link = try? FileManager.default.destinationOfSymbolicLink(
        atPath: world.groupPreferences.appendingPathComponent(moved).path)
      #expect(link == target.path, "the link itself is what was moved aside")
    }
    d.set("inside", forKey: "k")
    #expect(d.synchronize())
    #expect(snapshot(of: world.outside) == outsideBefore)
    let file = world.groupPreferences.appendingPathComponent("\(TestRoot.group).plist")
    #expect(try TestRoot.readOnDisk(file)["k"] as? String == "inside")
  }

  @Test(arguments: ["lock-victim", "does-not-exist"])
  func aLockFileThatIsASymbolicLinkIsRefusedAndNothingIsCreatedThroughIt(_ victim: String) throws {
    let world = try HostileWorld()
    let target = world.outside.appendingPathComponent(victim)
    try world.link(
      "Shared/AppGroup/\(TestRoot.group)/Library/Preferences/\(TestRoot.group).plist.lock",
      to: target)
    let outsideBefore = snapshot(of: world.outside)
    do {
      _ = try world.defaults(TestRoot.group)
      Issue.record("a linked lock file was accepted")
    } catch let error as AppGroupsError {
      #expect(error.code == .outsideRoot, "\(error)")
      #expect(error.message.contains("symbolic link"))
    }
    #expect(snapshot(of: world.outside) == outsideBefore, "the lock file's link was followed")
  }

  @Test func aManifestLockThatIsASymbolicLinkIsRefusedAndNothingIsCreatedThroughIt() throws {
    let world = try HostileWorld()
    try FileManager.default.removeItem(at: world.root.url.appendingPathComponent("Entitlements.plist.lock"))
    try world.link("Entitlements.plist.lock", to: world.outside.appendingPathComponent("created"))
    let outsideBefore = snapshot(of: world.outside)
    #expect(throws: (any Error).self) {
      try EntitlementManifest.grant(TestRoot.widget, groups: [TestRoot.group], root: world.root)
    }
    #expect(snapshot(of: world.outside) == outsideBefore)
  }

  /// Manifests that are garbage or have the wrong types, by name.
  static let badManifests: [(String, Data)] = {
    func plist(_ object: Any) -> Data {
      (try? PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)) ?? Data()
    }
    let groups = EntitlementManifest.applicationGroupsKey
    var random = SeededGenerator(seed: 0xBAD)
    return [
      ("random-bytes", Data((0..<2048).map { _ in UInt8.random(in: 0...255, using: &random) })),
      ("empty", Data()),
      ("text", Data("com.example.app = group.com.example.shared".utf8)),
      ("truncated-xml", plist([TestRoot.app: [groups: [TestRoot.group]]]).prefix(60)),
      ("root-array", plist([TestRoot.app, TestRoot.group])),
      ("root-string", plist("everyone")),
      ("entry-string", plist([TestRoot.app: TestRoot.group])),
      ("groups-string", plist([TestRoot.app: [groups: TestRoot.group]])),
      ("groups-integers", plist([TestRoot.app: [groups: [1, 2]]])),
      ("groups-dictionary", plist([TestRoot.app: [groups: ["a": TestRoot.group]]])),
      ("group-traversal", plist([TestRoot.app: [groups: ["group.../../x"]]])),
      ("group-slash", plist([TestRoot.app: [groups: ["group.com/x"]]])),
      ("group-no-prefix", plist([TestRoot.app: [groups: ["com.example.shared"]]])),
      ("bundle-traversal", plist(["../x": [groups: [TestRoot.group]]])),
      ("bundle-control", plist(["a\u{1}b": [groups: [TestRoot.group]]])),
      ("executable-integer", plist([TestRoot.app: [groups: [TestRoot.group], "executable": 5]])),
      ("executable-relative", plist([TestRoot.app: [groups: [TestRoot.group], "executable": "bin/app"]])),
      ("nested-deep", CraftedPropertyList.nested(depth: 100_000)),
      ("binary-set", CraftedPropertyList.file(objects: [[0xD1, 1, 2], CraftedPropertyList.ascii(TestRoot.app), [0xC1, 3], [0xD0]], referenceSize: 1)),
      ("entity-expansion", Data(("<?xml version=\"1.0\"?><!DOCTYPE plist [<!ENTITY a \"" + String(repeating: "a", count: 1000) + "\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\"><!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\">]><plist version=\"1.0\"><dict><key>&d;</key><dict/></dict></plist>").utf8)),
    ]
  }()

  @Test func aManifestThatIsGarbageOrHasWrongTypesIsRefusedNamingTheFile() throws {
    let world = try HostileWorld()
    let outsideBefore = snapshot(of: world.outside)
    let prober = try Prober(
      TestRoot(grant: false), environment: ["APPGROUPS_ROOT": world.root.path])
    defer { prober.close() }
    for (name, data) in Self.badManifests {
      try data.write(to: world.root.manifestURL)
      // In this process: every door stays shut, and the reason names the manifest.
      for suite in [TestRoot.group, nil, "private-suite"] as [String?] {
        do {
          _ = try world.defaults(suite)
          Issue.record("\(name): suite \(suite ?? "nil") opened under a bad manifest")
        } catch let error as AppGroupsError {
          #expect(error.code == .invalidManifest, "\(name): \(error)")
          #expect(error.message.contains(world.root.manifestURL.path), "\(name): \(error.message)")
        }
      }
      // In a real process too, never a crash.
      let (answer, diagnostics) = try prober.ask(
        "manifest \(world.root.manifestURL.path)", answer: ["manifest "], timeout: 20)
      #expect(answer?.hasPrefix("manifest refused invalidManifest") == true, "\(name): \(answer ?? "no answer") \(diagnostics)")
    }
    // A fifo or a folder in its place does not hang anything.
    try FileManager.default.removeItem(at: world.root.manifestURL)
    #expect(mkfifo(world.root.manifestURL.path, 0o600) == 0)
    #expect(throws: AppGroupsError.self) { _ = try world.defaults(TestRoot.group) }
    try FileManager.default.removeItem(at: world.root.manifestURL)
    try FileManager.default.createDirectory(at: world.root.manifestURL, withIntermediateDirectories: false)
    #expect(throws: AppGroupsError.self) { _ = try world.defaults(TestRoot.group) }
    // Nor does a sparse terabyte: refused by its size, unread, in this process and another.
    try FileManager.default.removeItem(at: world.root.manifestURL)
    #expect(FileManager.default.createFile(atPath: world.root.manifestURL.path, contents: nil))
    #expect(truncate(world.root.manifestURL.path, 1 << 40) == 0)
    do {
      _ = try world.defaults(TestRoot.group)
      Issue.record("a suite opened under a manifest of a terabyte")
    } catch let error as AppGroupsError {
      #expect(error.code == .invalidManifest)
      #expect(error.message.contains("more than the \(16 << 20) bytes it may hold"), "\(error.message)")
    }
    let (answer, diagnostics) = try prober.ask(
      "manifest \(world.root.manifestURL.path)", answer: ["manifest "], timeout: 20)
    #expect(answer?.hasPrefix("manifest refused invalidManifest") == true, "\(answer ?? "no answer") \(diagnostics)")
    #expect(snapshot(of: world.outside) == outsideBefore)
    print("bad manifests: \(Self.badManifests.count + 3) refused")
  }
}

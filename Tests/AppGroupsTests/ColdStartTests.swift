@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// What a new process's first open leaves out or does later must lose nothing: a change made
/// between the load and the watch, or right after the open, is seen; the manifest is still read
/// and checked whole at every resolution.
@Suite("Cold start", .processBound, .serialized)
struct ColdStartTests {
  /// Runs `change` when the open of `path` reaches its watch (the file loaded, its folder not
  /// yet watched): a change then makes no event this process could hear.
  private func betweenLoadAndWatch(of path: String, _ change: @escaping @Sendable () -> Void) -> Observation {
    let done = Locked(false)
    ChangeMonitor.beforeWatchingForTesting.withLock {
      $0 = { watched in
        guard watched == path, !done.withLock({ let was = $0; $0 = true; return was }) else { return }
        change()
      }
    }
    return Observation { ChangeMonitor.beforeWatchingForTesting.withLock { $0 = nil } }
  }

  /// Another app's write of "two" to "greeting" reaches an observer of `d`, which then reads it.
  private func expectAnotherAppsWriteIsHeard(
    _ t: TestRoot, _ d: GroupDefaults, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let log = ChangeLog()
    let observation = d.observe(["greeting"], handler: log.record)
    defer { observation.cancel() }
    set(t, "greeting", "two")
    #expect(
      log.wait { $0.newValue == .string("two") && $0.origin == .otherProcess } != nil,
      sourceLocation: sourceLocation)
    #expect(d.string(forKey: "greeting") == "two", sourceLocation: sourceLocation)
  }

  private func set(_ t: TestRoot, _ key: String, _ value: String) {
    let run = try? Product.run(
      "appgroups-worker", ["set", TestRoot.group, key, value],
      environment: t.environment(as: TestRoot.widget).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(run?.status == 0, "\(run?.stderr ?? "not run")")
  }

  @Test func aCommitBetweenTheLoadAndTheWatchIsSeenAtOpen() throws {
    let t = try TestRoot()
    set(t, "greeting", "one")
    let hook = betweenLoadAndWatch(of: t.groupSuiteFile.path) { set(t, "greeting", "two") }
    defer { hook.cancel() }
    let d = try t.defaults(TestRoot.group)
    // Seen when the open returns, not at some later event: the commit made none this process
    // could hear (its folder was not watched yet).
    #expect(d.string(forKey: "greeting") == "two")
  }

  @Test func anOutsideEditBetweenTheLoadAndTheWatchIsSeenAtOpen() throws {
    let t = try TestRoot()
    set(t, "greeting", "one")
    let file = t.groupSuiteFile
    let hook = betweenLoadAndWatch(of: file.path) {
      // Not through the library: no lock, no token moved; only the file changed.
      let data = try? PropertyListSerialization.data(
        fromPropertyList: ["greeting": "edited"], format: .xml, options: 0)
      #expect((try? data?.write(to: file)) != nil)
    }
    defer { hook.cancel() }
    let d = try t.defaults(TestRoot.group)
    #expect(d.string(forKey: "greeting") == "edited")
  }

  @Test func aCommitRightAfterTheOpenReachesAnObserver() throws {
    let t = try TestRoot()
    set(t, "greeting", "one")
    let d = try t.defaults(TestRoot.group)
    #expect(d.string(forKey: "greeting") == "one")
    expectAnotherAppsWriteIsHeard(t, d)
  }

  /// The suite's folder removed between the load and the watch (another process replacing
  /// the container's Library): the open does not watch it then, and must still hear a write
  /// made once the folder is back.
  @Test func aFolderRemovedBetweenTheLoadAndTheWatchIsHeardWhenItComesBack() throws {
    let t = try TestRoot()
    set(t, "greeting", "one")
    let folder = t.groupSuiteFile.deletingLastPathComponent()
    let hook = betweenLoadAndWatch(of: t.groupSuiteFile.path) {
      try? FileManager.default.removeItem(at: folder)
    }
    defer { hook.cancel() }
    let d = try t.defaults(TestRoot.group)
    #expect(!FileManager.default.fileExists(atPath: folder.path))
    // Another app's write makes the folder again.
    expectAnotherAppsWriteIsHeard(t, d)
  }

  @Test func aManifestChangedAfterAnOpenIsReadAtTheNextOne() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set(1, forKey: "k")
    #expect(d.synchronize())
    try EntitlementManifest.revoke(TestRoot.app, groups: [TestRoot.group], root: t.root)
    let refused = #expect(throws: AppGroupsError.self) {
      _ = try SuiteResolver(identity: try AppIdentity(bundleIdentifier: TestRoot.app), root: t.root)
        .resolve(suiteName: TestRoot.group)
    }
    #expect(refused?.code == .notEntitled)
    try EntitlementManifest.grant(TestRoot.app, groups: [TestRoot.group], root: t.root)
    let location = try SuiteResolver(identity: try AppIdentity(bundleIdentifier: TestRoot.app), root: t.root)
      .resolve(suiteName: TestRoot.group)
    #expect(location.domain == TestRoot.group)
  }

  /// Resolving reads one app's entry but checks them all, as loading the manifest does.
  @Test func anotherAppsMalformedEntryStillRefusesAResolution() throws {
    let t = try TestRoot()
    let manifest = try Data(contentsOf: t.root.manifestURL)
    guard var text = String(data: manifest, encoding: .utf8), let end = text.range(of: "</dict>\n</plist>", options: .backwards) else {
      Issue.record("the manifest is not the XML expected")
      return
    }
    text.replaceSubrange(
      end,
      with: "\t<key>com.example.other</key>\n\t<dict>\n\t\t<key>com.apple.security.application-groups</key>\n\t\t<string>group.x</string>\n\t</dict>\n</dict>\n</plist>")
    try Data(text.utf8).write(to: t.root.manifestURL)
    let resolver = SuiteResolver(identity: try AppIdentity(bundleIdentifier: TestRoot.app), root: t.root)
    let error = #expect(throws: AppGroupsError.self) { _ = try resolver.resolve(suiteName: TestRoot.group) }
    #expect(error?.code == .invalidManifest)
    #expect(error?.message.contains("com.example.other") == true)
    #expect(resolver.containerURL(forSecurityApplicationGroupIdentifier: TestRoot.group) == nil)
    // The whole manifest's load says the same.
    #expect(throws: AppGroupsError.self) { _ = try EntitlementManifest.load(root: t.root) }
  }
}

public import AppGroups
import Foundation

/// A root of its own for one test: a temporary folder holding a manifest that entitles an
/// identity to some application groups, removed when the test ends.
///
/// ```swift
/// let device = try TemporaryAppGroup(groups: ["group.com.example.shared"])
/// let shared = try device.defaults(suiteName: "group.com.example.shared")
/// shared.set(3, forKey: "unreadCount")
/// ```
///
/// Inside ``withScope(_:)`` (and in a test that has the ``Trait/appGroup(_:as:)`` trait, or
/// that calls `XCTestCase.withTemporaryAppGroup`), the code under test finds this root and
/// identity where it would find the process's: `GroupDefaults(suiteName:)`,
/// `ContainerRoot.default`, `AppIdentity.current()` and
/// `FileManager.default.containerURL(forSecurityApplicationGroupIdentifier:)` answer with
/// them, while tests running side by side in the same process each see their own. (The
/// values are task-local: work the code hands to a Dispatch queue or a thread of its own
/// sees the process's environment instead; ``environment`` is what a child process needs.)
public final class TemporaryAppGroup: Sendable {
  /// The identity this root's tests act as: `com.example.app` unless chosen.
  public let identity: AppIdentity
  /// The groups the manifest entitles ``identity`` to.
  public let groups: [String]
  /// The temporary root: `<temporary folder>/appgroups-<label>-<UUID>`.
  public let root: ContainerRoot

  /// Makes a temporary root whose manifest entitles `bundleIdentifier` to `groups`.
  ///
  /// With no groups, no manifest is written: every group is refused, as on a device with
  /// no entitlements.
  ///
  /// - Parameters:
  ///   - groups: the groups to grant, each `group.` followed by a name.
  ///   - bundleIdentifier: the identity the tests act as.
  ///   - label: a word of the folder's name, to tell the roots of tests apart (by default
  ///     the calling function's name).
  /// - Throws: `.invalidName` for a bundle or group identifier that is not valid, `.io`
  ///   when the folder or the manifest cannot be written.
  public init(
    groups: [String], as bundleIdentifier: String = "com.example.app", label: String = #function
  ) throws(AppGroupsError) {
    identity = try AppIdentity(bundleIdentifier: bundleIdentifier)
    self.groups = groups
    let base = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
    let word = String(label.filter { $0.isLetter || $0.isNumber }.prefix(40))
    let folder = base.appendingPathComponent(
      "appgroups-\(word)-\(UUID().uuidString)", isDirectory: true)
    do {
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    } catch {
      throw AppGroupsError(
        .io, "cannot create the temporary root \(folder.path): \(error.localizedDescription)")
    }
    root = ContainerRoot(url: folder)
    do throws(AppGroupsError) {
      if !groups.isEmpty {
        try EntitlementManifest.grant(bundleIdentifier, groups: groups, root: root)
      }
    } catch {
      try? FileManager.default.removeItem(at: root.url)
      throw error
    }
  }

  deinit { remove() }

  /// Entitles another app to groups of this root, as `groupctl grant` does.
  ///
  /// - Throws: `.invalidName` for a bad identifier, `.invalidManifest` or `.io` when the
  ///   manifest cannot be read or written.
  public func grant(_ bundleIdentifier: String, groups: [String]) throws(AppGroupsError) {
    try EntitlementManifest.grant(bundleIdentifier, groups: groups, root: root)
  }

  /// Opens a suite in this root, as `bundleIdentifier` (by default ``identity``).
  ///
  /// - Throws: what ``GroupDefaults/init(suiteName:identity:root:options:)`` throws, such as
  ///   `.notEntitled` for a group the manifest does not grant.
  public func defaults(
    suiteName: String?, as bundleIdentifier: String? = nil
  ) throws(AppGroupsError) -> GroupDefaults {
    let identity = try bundleIdentifier.map { name throws(AppGroupsError) in
      try AppIdentity(bundleIdentifier: name)
    } ?? self.identity
    return try GroupDefaults(suiteName: suiteName, identity: identity, root: root)
  }

  /// The environment a child process needs to act as ``identity`` (or `bundleIdentifier`)
  /// in this root: `APPGROUPS_ROOT` and `APPGROUPS_BUNDLE_ID`.
  public func environment(as bundleIdentifier: String? = nil) -> [String: String] {
    [
      ContainerRoot.environmentVariable: root.path,
      AppIdentity.environmentVariable: bundleIdentifier ?? identity.bundleIdentifier,
    ]
  }

  /// Runs `body` with this root and identity as the current process's (see the type's
  /// discussion).
  public func withScope<Result, Failure: Error>(
    _ body: () throws(Failure) -> Result
  ) throws(Failure) -> Result {
    let outcome = ScopedEnvironment.$root.withValue(root) {
      ScopedEnvironment.$identity.withValue(identity) {
        Swift.Result { () throws(Failure) -> Result in try body() }
      }
    }
    return try outcome.get()
  }

  /// Runs `body` with this root and identity as the current process's (see the type's
  /// discussion).
  public func withScope<Result>(
    _ body: () async throws -> Result
  ) async throws -> Result {
    try await ScopedEnvironment.$root.withValue(root) {
      try await ScopedEnvironment.$identity.withValue(identity) { try await body() }
    }
  }

  /// Removes the root and everything in it, and the device's keys in the kernel's keyring.
  /// Called when the object goes away; call it sooner to check that the code under test
  /// holds nothing open in it.
  ///
  /// Changes this process's suites in the root have not yet written land first (a test may
  /// end without `synchronize()`): a commit running as the folder goes made the removal fail
  /// on a folder no longer empty, and left the root behind. A file another thread or process
  /// creates in it meanwhile has the removal tried again, a few times.
  public func remove() {
    Self.removeFolder(atPath: root.path) { [root] in
      // The device's keys in the kernel's keyring go with it: they count against the user's
      // key quota until the machine restarts. After the changes landed, which may need the
      // device as it was; before the folder goes, whose device state names them.
      DeviceKeyring.removeKeys(ofRoot: root)
    }
  }

  /// Removes a test's folder of roots: the changes this process's suites in it have not yet
  /// written land first, then `afterLanding` runs, and a file created in the folder
  /// meanwhile has the removal tried again, a few times (see ``remove()``).
  package static func removeFolder(atPath folder: String, afterLanding: () -> Void = {}) {
    GroupDefaults.synchronizeAll(in: ContainerRoot(url: URL(fileURLWithPath: folder, isDirectory: true)))
    afterLanding()
    for _ in 0..<5 {
      do {
        try FileManager.default.removeItem(atPath: folder)
        return
      } catch {
        if !FileManager.default.fileExists(atPath: folder) { return }
      }
    }
  }
}

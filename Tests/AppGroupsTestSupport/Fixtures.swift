public import AppGroups
public import AppGroupsTesting
public import Foundation

/// A temporary root with the example identities granted: `com.example.app`
/// and `com.example.widget` in `group.com.example.shared`. Made by
/// `AppGroupsTesting`'s ``TemporaryAppGroup``, as an app's own tests would make theirs.
public struct TestRoot: Sendable {
  /// The temporary root, its manifest and identity; removed when the last copy goes away.
  public let device: TemporaryAppGroup
  public var root: ContainerRoot { device.root }
  /// The root's folder, for files a test keeps beside the containers.
  public var sandbox: (url: URL, path: String) { (root.url, root.path) }
  public static let group = "group.com.example.shared"
  public static let app = "com.example.app"
  public static let widget = "com.example.widget"

  public init(_ name: String = #function, grant: Bool = true) throws {
    device = try TemporaryAppGroup(groups: grant ? [Self.group] : [], as: Self.app, label: name)
    if grant { try device.grant(Self.widget, groups: [Self.group]) }
  }

  public var path: String { root.path }

  /// A suite opened as `bundleID` (default: the example app).
  public func defaults(_ suiteName: String?, as bundleID: String = TestRoot.app) throws -> GroupDefaults {
    try GroupDefaults(
      suiteName: suiteName, identity: AppIdentity(bundleIdentifier: bundleID), root: root)
  }

  /// The environment a child process needs to act as `bundleID` in this root.
  public func environment(as bundleID: String = TestRoot.app) -> [String: String] {
    ["APPGROUPS_ROOT": root.path, "APPGROUPS_BUNDLE_ID": bundleID]
  }

  /// The group suite's file.
  public var groupSuiteFile: URL {
    root.groupContainerURL(for: Self.group)
      .appendingPathComponent("Library/Preferences/\(Self.group).plist")
  }

  /// The group suite's values whose keys start with `prefix`, each as text, as a new process
  /// (`appgroups-worker dump`, acting as `bundleID`) reads them through AppGroups: the plist
  /// and the journal of a large suite's last small commits. `nil` when the process failed.
  public func readGroupSuite(prefix: String, as bundleID: String = TestRoot.widget) throws -> [String: String]? {
    let run = try Product.run(
      "appgroups-worker", ["dump", Self.group, prefix],
      environment: environment(as: bundleID).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    var values: [String: String] = [:]
    for line in run.stdout.split(separator: "\n") where line.hasPrefix("entry ") {
      let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
      if parts.count == 3 { values[parts[1]] = parts[2] }
    }
    guard run.status == 0, run.stdout.contains("dumped \(values.count)\n") else { return nil }
    return values
  }

  /// Reads a property-list file with Foundation, not with AppGroups.
  public static func readPlist(_ url: URL) throws -> [String: Any] {
    let data = try Data(contentsOf: url)
    return try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] ?? [:]
  }
}

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

  /// Reads a property-list file with Foundation, not with AppGroups.
  public static func readPlist(_ url: URL) throws -> [String: Any] {
    let data = try Data(contentsOf: url)
    return try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] ?? [:]
  }
}

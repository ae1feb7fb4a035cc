public import AppGroups
public import Foundation

/// A temporary root with the example identities granted: `com.example.app`
/// and `com.example.widget` in `group.com.example.shared`.
public struct TestRoot: Sendable {
  public let sandbox: Sandbox
  public let root: ContainerRoot
  public static let group = "group.com.example.shared"
  public static let app = "com.example.app"
  public static let widget = "com.example.widget"

  public init(_ name: String = #function, grant: Bool = true) throws {
    sandbox = try Sandbox(name)
    root = ContainerRoot(url: sandbox.url)
    if grant {
      try EntitlementManifest.grant(Self.app, groups: [Self.group], root: root)
      try EntitlementManifest.grant(Self.widget, groups: [Self.group], root: root)
    }
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

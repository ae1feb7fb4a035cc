public import AppGroups
public import Foundation
import Glibc

/// A temporary root for the keychain's tests: the example app and widget of team ABCDE12345
/// share the keychain access group `ABCDE12345.com.example.shared` (and the application group
/// `group.com.example.shared`); `com.example.intruder`, of team ZZZZZ99999, holds only its own
/// App ID's group.
public struct KeychainRoot: Sendable {
  public let t: TestRoot
  public var root: ContainerRoot { t.root }
  public var path: String { t.path }

  public static let team = "ABCDE12345"
  public static let shared = "ABCDE12345.com.example.shared"
  public static let app = TestRoot.app
  public static let widget = TestRoot.widget
  public static let intruder = "com.example.intruder"
  public static let intruderTeam = "ZZZZZ99999"
  public static let appGroup = TestRoot.group

  public init(_ name: String = #function) throws {
    t = try TestRoot(name)
    for app in [Self.app, Self.widget] {
      try EntitlementManifest.grantKeychainAccess(
        app, keychainAccessGroups: [Self.shared], teamIdentifier: Self.team, root: t.root)
    }
    try EntitlementManifest.grantKeychainAccess(
      Self.intruder, teamIdentifier: Self.intruderTeam, root: t.root)
  }

  /// The environment of a child acting as `bundleID` in this root.
  public func environment(as bundleID: String = KeychainRoot.app) -> [String: String] {
    t.environment(as: bundleID)
  }

  /// Runs `appgroups-keychain-worker` as `bundleID` with `arguments` to its end.
  @discardableResult
  public func worker(_ arguments: [String], as bundleID: String = KeychainRoot.app) throws -> (
    status: Int32, stdout: String, stderr: String
  ) {
    try Product.run("appgroups-keychain-worker", arguments, environment: environment(as: bundleID))
  }

  /// The status a one-call worker printed ("status N"), or `nil`.
  public func status(_ arguments: [String], as bundleID: String = KeychainRoot.app) throws -> Int32?
  {
    let run = try worker(arguments, as: bundleID)
    return run.stdout.split(separator: "\n").first { $0.hasPrefix("status ") }
      .flatMap { Int32($0.dropFirst(7)) }
  }

  /// Rewrites the shared access group's file with its `Format` set to `format`, as another
  /// version of the keychain would write it: the file, its folder and the bytes written.
  public func rewriteSharedGroupFile(format: String) throws -> (file: URL, folder: URL, bytes: Data) {
    let folder = root.keychainFolderURL(forAccessGroup: Self.shared)
    let file = folder.appendingPathComponent("keychain.plist")
    guard
      var plist = try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
        as? [String: Any]
    else { throw CocoaError(.propertyListReadCorrupt) }
    plist["Format"] = format
    let bytes = try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
    try bytes.write(to: file)
    return (file, folder, bytes)
  }

  /// Every regular file under the root, by path.
  public func allFiles() -> [String] { Self.files(under: path) }

  /// Every regular file under `path`, by path.
  public static func files(under path: String) -> [String] {
    var files: [String] = []
    let enumerator = FileManager.default.enumerator(atPath: path)
    while let relative = enumerator?.nextObject() as? String {
      let full = path + "/" + relative
      var s = stat()
      if lstat(full, &s) == 0, s.st_mode & S_IFMT == S_IFREG { files.append(full) }
    }
    return files.sorted()
  }
}

import AppGroups
import Foundation

/// `groupctl list [BUNDLE-ID] [--json]`
struct ListCommand: ParsableCommand {
  static let bundleID = Argument.optionalPositional("BUNDLE-ID")
  static let json = Argument.flag("--json", help: "Print JSON instead of text.")

  static let configuration = CommandConfiguration(
    commandName: "list",
    abstract: "List the apps in the manifest, the groups and keychain access groups each holds.",
    arguments: [bundleID, json]
  )

  let arguments: Arguments

  func validate() throws {
    try globals.requireAdministrator("list")
  }

  func run() throws {
    let root = globals.containerRoot
    let manifest = try EntitlementManifest.load(root: root)
    var bundleIDs = manifest.entries.keys.sorted()
    if let bundleID = arguments[Self.bundleID] {
      guard manifest.entries[bundleID] != nil else {
        throw CommandFailure("\(bundleID) has no entry in \(root.manifestURL.path)")
      }
      bundleIDs = [bundleID]
    }
    if arguments[Self.json] {
      guard !bundleIDs.isEmpty else {
        printOut("[]")
        return
      }
      let objects = bundleIDs.map { id -> [String: Any] in
        let entry = manifest.entries[id] ?? EntitlementManifest.Entry()
        var object: [String: Any] = [
          "bundleIdentifier": id, "applicationGroups": entry.applicationGroups,
        ]
        if let executable = entry.executable { object["executable"] = executable }
        object.merge(Self.keychainFields(manifest, id)) { $1 }
        return object
      }
      let data = try JSONSerialization.data(
        withJSONObject: objects, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
      printOut(String(decoding: data, as: UTF8.self))
      return
    }
    if bundleIDs.isEmpty {
      let manifestPath = root.manifestURL.path
      if !FileManager.default.fileExists(atPath: root.path) {
        warnIfMissing(root)
      } else if FileManager.default.fileExists(atPath: manifestPath) {
        printError("groupctl: \(manifestPath) entitles no app to any group")
      } else {
        printError(
          "groupctl: no manifest at \(manifestPath): no app is entitled to any group;"
            + " 'groupctl grant BUNDLE-ID GROUP-ID...' makes one")
      }
      return
    }
    let width = (bundleIDs.map(\.count).max() ?? 0) + 2
    for id in bundleIDs {
      let entry = manifest.entries[id] ?? EntitlementManifest.Entry()
      var line = id + String(repeating: " ", count: width - id.count)
      line +=
        entry.applicationGroups.isEmpty
        ? "(no groups)" : entry.applicationGroups.joined(separator: ", ")
      if let executable = entry.executable { line += "  (executable: \(executable))" }
      printOut(line)
      if let keychain = Self.keychainLine(manifest, id) {
        printOut(String(repeating: " ", count: width) + keychain)
      }
    }
  }

  /// The app's keychain access groups, default first, when it holds keychain entitlements of
  /// its own (an App ID, a team, keychain-access-groups): `keychain: A (default), B`.
  static func keychainLine(_ manifest: EntitlementManifest, _ id: String) -> String? {
    guard let entry = manifest.entries[id],
      !entry.keychainAccessGroups.isEmpty || entry.applicationIdentifier != nil
        || entry.teamIdentifier != nil
    else { return nil }
    let groups = manifest.keychainAccessGroups(for: id)
    guard let first = groups.first else { return nil }
    var line = "keychain: \(first) (default)" + groups.dropFirst().map { ", \($0)" }.joined()
    if let team = entry.teamIdentifier { line += "  (team: \(team))" }
    return line
  }

  /// The JSON fields of the app's keychain entitlements: `accessGroups` (the keychain access
  /// groups in order, default first), and the entitlements that are present.
  static func keychainFields(_ manifest: EntitlementManifest, _ id: String) -> [String: Any] {
    guard let entry = manifest.entries[id] else { return [:] }
    var fields: [String: Any] = ["accessGroups": manifest.keychainAccessGroups(for: id)]
    if !entry.keychainAccessGroups.isEmpty {
      fields["keychainAccessGroups"] = entry.keychainAccessGroups
    }
    if let identifier = manifest.applicationIdentifier(for: id) {
      fields["applicationIdentifier"] = identifier
    }
    if let team = entry.teamIdentifier { fields["teamIdentifier"] = team }
    return fields
  }
}

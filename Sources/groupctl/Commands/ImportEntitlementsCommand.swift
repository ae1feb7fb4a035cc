import AppGroups
import Foundation

/// `groupctl import-entitlements BUNDLE-ID FILE.entitlements [--team TEAMID]`
struct ImportEntitlementsCommand: ParsableCommand {
  static let bundleID = Argument.positional("BUNDLE-ID")
  static let path = Argument.positional("FILE.entitlements")
  static let team = Argument.option(
    "--team", value: "TEAMID", help: "The team whose prefix the build variables expand to.")

  static let configuration = CommandConfiguration(
    commandName: "import-entitlements",
    abstract:
      "Entitle an app to the groups and keychain access groups of an Xcode .entitlements file.",
    arguments: [bundleID, path, team],
    discussion: """
      Reads com.apple.security.application-groups, keychain-access-groups, \
      application-identifier and com.apple.developer.team-identifier from the property list \
      and grants them to BUNDLE-ID in one update of the manifest, as grant does. Other \
      entitlements are ignored.

      Xcode's build variables are expanded: $(AppIdentifierPrefix) to the App ID prefix and \
      a dot, $(TeamIdentifierPrefix) to the team and a dot, $(CFBundleIdentifier) and \
      $(PRODUCT_BUNDLE_IDENTIFIER) to BUNDLE-ID. The team comes from --team, else the \
      file's com.apple.developer.team-identifier, else what the manifest records for the \
      app (groupctl grant BUNDLE-ID --team TEAMID).
      """
  )

  let arguments: Arguments

  func validate() throws {
    try globals.requireAdministrator("import-entitlements")
    if let team = arguments[Self.team], let reason = EntitlementManifest.teamIdentifierProblem(team) {
      throw ValidationError("--team: \(reason)")
    }
  }

  func run() throws {
    let (bundleID, path, team) = (arguments[Self.bundleID], arguments[Self.path], arguments[Self.team])
    let data = try readInput(path)
    let object: Any
    do {
      object = try PropertyListSerialization.propertyList(from: data, format: nil)
    } catch {
      throw CommandFailure("cannot import \(path): not a property list")
    }
    // Foundation's parser reads the first value and drops XML after it (after `</plist>`, or a
    // second value after a bare one): the file would grant less than it lists.
    if let trailing = PropertyListValue.contentAfterRootValue(in: data) {
      throw CommandFailure("cannot import \(path): \(trailing); nothing was granted")
    }
    guard let entitlements = object as? [String: Any] else {
      throw CommandFailure("cannot import \(path): its root is not a dictionary of entitlements")
    }
    let groupsKey = EntitlementManifest.applicationGroupsKey
    let keychainKey = EntitlementManifest.keychainAccessGroupsKey
    let appIDKey = EntitlementManifest.applicationIdentifierKey
    let teamKey = EntitlementManifest.teamIdentifierKey
    guard [groupsKey, keychainKey, appIDKey].contains(where: { entitlements[$0] != nil }) else {
      throw CommandFailure(
        "\(path) has no \(groupsKey), \(keychainKey) or \(appIDKey) entitlement;"
          + " nothing was granted")
    }
    func strings(_ key: String) throws -> [String] {
      guard let list = entitlements[key] else { return [] }
      guard let strings = list as? [String] else {
        throw CommandFailure("\(path): \(key) is not an array of strings; nothing was granted")
      }
      return strings
    }
    func string(_ key: String) throws -> String? {
      guard let value = entitlements[key] else { return nil }
      guard let string = value as? String else {
        throw CommandFailure("\(path): \(key) is not a string; nothing was granted")
      }
      return string
    }
    let rawGroups = try strings(groupsKey)
    let rawKeychainGroups = try strings(keychainKey)
    let rawAppID = try string(appIDKey)
    let fileTeam = try string(teamKey)

    let root = globals.containerRoot
    let manifest = try EntitlementManifest.load(root: root)
    let recorded = manifest.entries[bundleID]
    let literalTeam = fileTeam.flatMap { $0.contains("$(") ? nil : $0 }
    let knownTeam = team ?? literalTeam ?? recorded?.teamIdentifier
    let literalPrefix = rawAppID.flatMap {
      $0.contains("$(") ? nil : $0.split(separator: ".").first.map(String.init)
    }
    let recordedPrefix = manifest.applicationIdentifier(for: bundleID)?.split(separator: ".").first
      .map(String.init)
    var expander = Expander(
      path: path, bundleID: bundleID,
      appIDPrefix: literalPrefix ?? recordedPrefix ?? knownTeam, team: knownTeam ?? recordedPrefix)
    let groups = try rawGroups.map { try expander.expand($0, in: groupsKey) }
    let keychainGroups = try rawKeychainGroups.map { try expander.expand($0, in: keychainKey) }
    let appID = try rawAppID.map { try expander.expand($0, in: appIDKey) }
    let recordTeam = team ?? literalTeam

    if groups.isEmpty && keychainGroups.isEmpty && appID == nil && recordTeam == nil {
      ChangeMade.record("nothing was to be granted")
      printOut("\(bundleID): \(path) lists no groups; nothing was granted")
      return
    }
    var changed = false
    try EntitlementManifest.update(root: root) { manifest in
      let before = manifest.entries[bundleID]
      defer { changed = manifest.entries[bundleID] != before }
      var entry = before ?? EntitlementManifest.Entry()
      for group in groups where !entry.applicationGroups.contains(group) {
        entry.applicationGroups.append(group)
      }
      try EntitlementManifest.addKeychainEntitlements(
        to: &entry, bundleID, keychainAccessGroups: keychainGroups, teamIdentifier: recordTeam,
        applicationIdentifier: appID)
      manifest.entries[bundleID] = entry
    }
    // The manifest is written only when the entry changed: an import of what is already
    // granted changes nothing, and says so if its lines cannot be printed.
    ChangeMade.record(changed ? ChangeMade.onDisk : "the manifest already granted it; nothing was changed")
    if !groups.isEmpty { printOut("\(bundleID): granted \(groups.joined(separator: ", "))") }
    if !keychainGroups.isEmpty {
      printOut("\(bundleID): keychain access groups \(keychainGroups.joined(separator: ", "))")
    }
    if let appID { printOut("\(bundleID): App ID \(appID)") }
  }

  /// Expands Xcode's build variables in entitlement values.
  struct Expander {
    let path: String
    let bundleID: String
    let appIDPrefix: String?
    let team: String?

    /// `value` with every `$(NAME)` replaced.
    ///
    /// - Throws: ``CommandFailure`` naming the variable when it is not one of the four, or
    ///   when it needs a team and none is known.
    mutating func expand(_ value: String, in key: String) throws -> String {
      var result = ""
      var rest = Substring(value)
      while let start = rest.range(of: "$(") {
        result += rest[..<start.lowerBound]
        guard let end = rest[start.upperBound...].firstIndex(of: ")") else {
          throw CommandFailure(
            "\(path): \(key) value \(value) holds an unterminated Xcode build variable;"
              + " nothing was granted")
        }
        let name = String(rest[start.upperBound..<end])
        switch name {
        case "AppIdentifierPrefix", "TeamIdentifierPrefix":
          guard let prefix = name == "AppIdentifierPrefix" ? appIDPrefix : team else {
            throw CommandFailure(
              "\(path): \(key) value \(value) holds an Xcode build variable, $(\(name)), which"
                + " needs the app's team: pass --team TEAMID, or record it with 'groupctl grant"
                + " \(bundleID) --team TEAMID'; nothing was granted")
          }
          result += prefix + "."
        case "CFBundleIdentifier", "PRODUCT_BUNDLE_IDENTIFIER":
          result += bundleID
        default:
          throw CommandFailure(
            "\(path): \(key) value \(value) holds an Xcode build variable, $(\(name)), that"
              + " import-entitlements cannot expand; expand it (or use the built product's"
              + " entitlements) before importing; nothing was granted")
        }
        rest = rest[rest.index(after: end)...]
      }
      return result + rest
    }
  }
}

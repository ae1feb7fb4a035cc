import AppGroups
import Foundation

/// `groupctl revoke BUNDLE-ID [GROUP-ID...] [--keychain-group GROUP]...`
struct RevokeCommand: ParsableCommand {
  static let bundleID = Argument.positional("BUNDLE-ID")
  /// Empty: every group the app holds.
  static let groupIDs = Argument.positionals("GROUP-ID")
  static let keychainGroups = Argument.repeatableOption(
    "--keychain-group", value: "GROUP",
    help: "Revoke a keychain access group (keychain-access-groups); may be repeated.")

  static let configuration = CommandConfiguration(
    commandName: "revoke",
    abstract: "Remove an app's group entitlements: the ones named, or all of them.",
    arguments: [bundleID, groupIDs, keychainGroups],
    usage: """
      revoke BUNDLE-ID [GROUP-ID...]
      revoke BUNDLE-ID --keychain-group GROUP...
      """,
    discussion: """
      Containers and their preferences stay on disk; the app just can no longer open them. \
      Without GROUP-ID or --keychain-group, the app's whole entry goes (its groups, keychain \
      entitlements and executable binding). Keychain items stay on disk too.
      """
  )

  let arguments: Arguments

  func validate() throws {
    try globals.requireAdministrator("revoke")
    if !arguments[Self.keychainGroups].isEmpty, !arguments[Self.groupIDs].isEmpty {
      throw ValidationError("give either GROUP-IDs or --keychain-group, not both")
    }
  }

  func run() throws {
    let (bundleID, keychainGroups) = (arguments[Self.bundleID], arguments[Self.keychainGroups])
    if !keychainGroups.isEmpty {
      try EntitlementManifest.revokeKeychainAccess(
        bundleID, keychainAccessGroups: keychainGroups, root: globals.containerRoot)
      ChangeMade.record()
      return
    }
    try EntitlementManifest.revoke(bundleID, groups: arguments[Self.groupIDs], root: globals.containerRoot)
    ChangeMade.record()
  }
}

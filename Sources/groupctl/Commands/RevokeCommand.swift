import AppGroups
import Foundation

/// `groupctl revoke BUNDLE-ID [GROUP-ID...] [--keychain-group GROUP]...`
struct RevokeCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "revoke",
    abstract: "Remove an app's group entitlements: the ones named, or all of them.",
    usage: """
      revoke BUNDLE-ID [GROUP-ID...]
      revoke BUNDLE-ID --keychain-group GROUP...
      """,
    discussion: """
      Containers and their preferences stay on disk; the app just can no longer open them. \
      Without GROUP-ID or --keychain-group, the app's whole entry goes (its groups, keychain \
      entitlements and executable binding). Keychain items stay on disk too.
      """,
    options: [
      OptionHelp(
        "--keychain-group GROUP", "Revoke a keychain access group (keychain-access-groups).")
    ]
  )

  let globals: GlobalOptions
  let bundleID: String
  /// Empty: every group the app holds.
  let groupIDs: [String]
  let keychainGroups: [String]

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    keychainGroups = try arguments.options("--keychain-group", value: "GROUP")
    bundleID = try arguments.positional("BUNDLE-ID")
    groupIDs = try arguments.remainingPositionals("GROUP-ID")
  }

  func validate() throws {
    try globals.requireAdministrator("revoke")
    if !keychainGroups.isEmpty, !groupIDs.isEmpty {
      throw ValidationError("give either GROUP-IDs or --keychain-group, not both")
    }
  }

  func run() throws {
    if !keychainGroups.isEmpty {
      try EntitlementManifest.revokeKeychainAccess(
        bundleID, keychainAccessGroups: keychainGroups, root: globals.containerRoot)
      return
    }
    try EntitlementManifest.revoke(bundleID, groups: groupIDs, root: globals.containerRoot)
  }
}

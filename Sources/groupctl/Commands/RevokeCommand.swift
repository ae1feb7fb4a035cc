import AppGroups
import Foundation

/// `groupctl revoke BUNDLE-ID [GROUP-ID...]`
struct RevokeCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "revoke",
    abstract: "Remove an app's group entitlements: the ones named, or all of them.",
    usage: "revoke BUNDLE-ID [GROUP-ID...]",
    discussion: """
      Containers and their preferences stay on disk; the app just can no longer open them.
      """
  )

  let globals: GlobalOptions
  let bundleID: String
  /// Empty: every group the app holds.
  let groupIDs: [String]

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    bundleID = try arguments.positional("BUNDLE-ID")
    groupIDs = try arguments.remainingPositionals("GROUP-ID")
  }

  func validate() throws {
    try globals.requireAdministrator("revoke")
  }

  func run() throws {
    try EntitlementManifest.revoke(bundleID, groups: groupIDs, root: globals.containerRoot)
  }
}

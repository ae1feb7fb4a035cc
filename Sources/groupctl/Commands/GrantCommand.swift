import AppGroups
import Foundation

/// `groupctl grant BUNDLE-ID GROUP-ID... [--executable PATH]`
struct GrantCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "grant",
    abstract: "Entitle an app to one or more application groups in the manifest.",
    usage: "grant BUNDLE-ID GROUP-ID... [--executable PATH]",
    discussion: """
      Adds each GROUP-ID (group.…) to the app's com.apple.security.application-groups \
      in the root's manifest, creating the app's entry when it has none. Groups it \
      already holds are kept.
      """,
    options: [
      OptionHelp(
        "--executable PATH",
        "Bind the bundle id to this executable: only it may claim the identity.")
    ]
  )

  let globals: GlobalOptions
  let bundleID: String
  let groupIDs: [String]
  let executable: String?

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    executable = try arguments.option("--executable", value: "PATH")
    bundleID = try arguments.positional("BUNDLE-ID")
    groupIDs = try arguments.remainingPositionals("GROUP-ID")
    guard !groupIDs.isEmpty else { throw ValidationError("missing argument GROUP-ID") }
  }

  func validate() throws {
    try globals.requireAdministrator("grant")
  }

  func run() throws {
    try EntitlementManifest.grant(
      bundleID, groups: groupIDs, executable: executable, root: globals.containerRoot)
  }
}

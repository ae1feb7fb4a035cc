import AppGroups
import Foundation

/// `groupctl grant BUNDLE-ID [GROUP-ID...] [--executable PATH] [--team TEAMID]
/// [--keychain-group GROUP]...`
struct GrantCommand: ParsableCommand {
  static let bundleID = Argument.positional("BUNDLE-ID")
  static let groupIDs = Argument.positionals("GROUP-ID")
  static let executable = Argument.option(
    "--executable", value: "PATH",
    help: "Bind the bundle id to this one file (a relative path or a bare name is resolved to"
      + " its absolute path): only a process running it may claim the identity.")
  static let team = Argument.option(
    "--team", value: "TEAMID", help: "Record the app's team (ten characters of A-Z and 0-9).")
  static let keychainGroups = Argument.repeatableOption(
    "--keychain-group", value: "GROUP",
    help: "Add a keychain access group (TEAMID.name); may be repeated.")

  static let configuration = CommandConfiguration(
    commandName: "grant",
    abstract: "Entitle an app to application groups and keychain access groups in the manifest.",
    arguments: [bundleID, groupIDs, executable, team, keychainGroups],
    usage: """
      grant BUNDLE-ID GROUP-ID... [--executable PATH]
      grant BUNDLE-ID --executable PATH
      grant BUNDLE-ID [GROUP-ID...] [--team TEAMID] [--keychain-group GROUP]...
      """,
    discussion: """
      Adds each GROUP-ID (group.…) to the app's com.apple.security.application-groups \
      in the root's manifest, creating the app's entry when it has none. Groups it \
      already holds are kept.

      --executable binds the bundle id to one file: only a process running that file \
      (symbolic links resolved) may claim the identity, and 'run --as' runs nothing \
      else. A bare name is looked up in PATH and a relative path taken from the \
      current folder; the absolute path is what the manifest keeps. A binary rebuilt \
      at the same path keeps its binding.

      --team records the app's team (com.apple.developer.team-identifier), whose App ID \
      is then TEAMID.BUNDLE-ID (application-identifier). --keychain-group adds a keychain \
      access group (keychain-access-groups); it must start with the App ID prefix, as a \
      provisioning profile requires: TEAMID.com.example.shared. The app's keychain access \
      groups are its keychain-access-groups, its App ID and its application groups, in \
      that order; the first is where an item added without a group goes.
      """
  )

  let arguments: Arguments

  init(arguments: Arguments) throws {
    self.arguments = arguments
    guard
      !arguments[Self.groupIDs].isEmpty || arguments[Self.executable] != nil
        || arguments[Self.team] != nil || !arguments[Self.keychainGroups].isEmpty
    else {
      throw ValidationError(
        "missing argument GROUP-ID (or --executable, --team, --keychain-group)")
    }
  }

  func validate() throws {
    try globals.requireAdministrator("grant")
    if let team = arguments[Self.team], let reason = EntitlementManifest.teamIdentifierProblem(team) {
      throw ValidationError("--team: \(reason)")
    }
  }

  func run() throws {
    let root = globals.containerRoot
    let (bundleID, groupIDs) = (arguments[Self.bundleID], arguments[Self.groupIDs])
    let (team, keychainGroups) = (arguments[Self.team], arguments[Self.keychainGroups])
    let executable = try arguments[Self.executable].map(Self.binding(for:))
    guard team != nil || !keychainGroups.isEmpty else {
      try EntitlementManifest.grant(bundleID, groups: groupIDs, executable: executable, root: root)
      ChangeMade.record()
      return
    }
    // Application groups and keychain entitlements in one locked update: all or nothing.
    _ = try AppIdentity(bundleIdentifier: bundleID)
    try EntitlementManifest.update(root: root) { manifest in
      var entry = manifest.entries[bundleID] ?? EntitlementManifest.Entry()
      for group in groupIDs where !entry.applicationGroups.contains(group) {
        entry.applicationGroups.append(group)
      }
      if let executable { entry.executable = executable }
      try EntitlementManifest.addKeychainEntitlements(
        to: &entry, bundleID, keychainAccessGroups: keychainGroups, teamIdentifier: team)
      manifest.entries[bundleID] = entry
    }
    ChangeMade.record()
  }

  /// The one file `--executable` names, by its absolute path: an absolute path as given; a
  /// relative one taken from the current folder; a bare name, the program `PATH` finds, as
  /// `which` does (said on stderr). A relative path or a bare name must name a file.
  static func binding(for given: String) throws -> String {
    if given.hasPrefix("/") { return given }
    let found: String
    if given.contains("/") {
      found = URL(fileURLWithPath: given).standardized.path
      guard FileManager.default.fileExists(atPath: found) else {
        throw CommandFailure(
          "--executable \(given): no such file (\(found)); a binding names one file, by its path")
      }
    } else {
      let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
      do {
        let located = try Paths.executable(named: given, searchPath: searchPath)
        found = URL(fileURLWithPath: located).standardized.path
      } catch {
        throw CommandFailure(
          "--executable \(given): no program of that name in PATH; a binding names one file:"
            + " give its path")
      }
    }
    printError("groupctl: --executable \(given) binds \(found)")
    return found
  }
}

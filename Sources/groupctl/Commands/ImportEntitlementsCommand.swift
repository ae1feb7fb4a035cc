import AppGroups
import Foundation

/// `groupctl import-entitlements BUNDLE-ID FILE.entitlements`
struct ImportEntitlementsCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "import-entitlements",
    abstract: "Entitle an app to the groups listed in an Xcode .entitlements file.",
    usage: "import-entitlements BUNDLE-ID FILE.entitlements",
    discussion: """
      Reads com.apple.security.application-groups from the property list and grants \
      each group to BUNDLE-ID, as grant does. Other entitlements are ignored.
      """
  )

  let globals: GlobalOptions
  let bundleID: String
  let path: String

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    bundleID = try arguments.positional("BUNDLE-ID")
    path = try arguments.positional("FILE.entitlements")
  }

  func validate() throws {
    try globals.requireAdministrator("import-entitlements")
  }

  func run() throws {
    let data = try readInput(path)
    let key = EntitlementManifest.applicationGroupsKey
    let object: Any
    do {
      object = try PropertyListSerialization.propertyList(from: data, format: nil)
    } catch {
      throw CommandFailure("cannot import \(path): not a property list")
    }
    guard let entitlements = object as? [String: Any] else {
      throw CommandFailure("cannot import \(path): its root is not a dictionary of entitlements")
    }
    guard let list = entitlements[key] else {
      throw CommandFailure("\(path) has no \(key) entitlement; nothing was granted")
    }
    guard let groups = list as? [String] else {
      throw CommandFailure("\(path): \(key) is not an array of strings; nothing was granted")
    }
    if let unexpanded = groups.first(where: { $0.contains("$(") }) {
      throw CommandFailure(
        "\(path): \(unexpanded) holds an Xcode build variable; expand it (or use the"
          + " built product's entitlements) before importing; nothing was granted")
    }
    guard !groups.isEmpty else {
      printOut("\(bundleID): \(path) lists no groups; nothing was granted")
      return
    }
    try EntitlementManifest.grant(bundleID, groups: groups, root: globals.containerRoot)
    printOut("\(bundleID): granted \(groups.joined(separator: ", "))")
  }
}

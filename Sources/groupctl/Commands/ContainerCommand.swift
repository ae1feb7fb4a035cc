import AppGroups
import Foundation

/// `groupctl container BUNDLE-ID [app | groups | GROUP-ID]`
struct ContainerCommand: ParsableCommand {
  static let bundleID = Argument.positional("BUNDLE-ID")
  static let selection = Argument.optionalPositional("app | groups | GROUP-ID")

  static let configuration = CommandConfiguration(
    commandName: "container",
    abstract: "Print the path of an app's data container or of its group containers.",
    arguments: [bundleID, selection],
    discussion: """
      app (the default) prints the app's own data container; groups prints one line \
      per group the app holds: GROUP-ID, a tab, and the path; GROUP-ID prints that \
      group's container, if the app is entitled to it.
      """
  )

  /// Which container to print.
  enum Selection: Hashable, Sendable {
    case app
    case groups
    case group(String)
  }

  let arguments: Arguments
  let selection: Selection

  init(arguments: Arguments) throws {
    self.arguments = arguments
    switch arguments[Self.selection] {
    case nil, "app": selection = .app
    case "groups": selection = .groups
    case let word? where word.hasPrefix("group."): selection = .group(word)
    case let word?:
      throw ValidationError("'\(word)' is not app, groups or a group id (group.…)")
    }
  }

  func validate() throws {
    try globals.requireAdministrator("container")
  }

  func run() throws {
    let root = globals.containerRoot
    let bundleID = arguments[Self.bundleID]
    try Self.refuseGroupForApp(bundleID, root: root)
    let identity = try AppIdentity(bundleIdentifier: bundleID)
    let resolver = SuiteResolver(identity: identity, root: root)
    switch selection {
    case .app:
      // The standard suite's location is the app's container.
      let container = try resolver.resolve(suiteName: nil).containerURL
      try root.prepareContainer(at: container)
      printOut(container.path)
    case .groups:
      let manifest = try EntitlementManifest.load(root: root)
      guard let entry = manifest.entries[bundleID] else {
        throw CommandFailure("\(bundleID) has no entry in \(root.manifestURL.path)")
      }
      for group in entry.applicationGroups {
        let container = try resolver.container(forSecurityApplicationGroupIdentifier: group)
        printOut("\(group)\t\(container.path)")
      }
    case .group(let groupID):
      printOut(try resolver.container(forSecurityApplicationGroupIdentifier: groupID).path)
    }
  }

  /// A group of the manifest given where the app goes (`container GROUP-ID`) would print, and
  /// make, the data container of an app that does not exist: refused, naming the spelling that
  /// prints the group's container.
  private static func refuseGroupForApp(_ name: String, root: ContainerRoot) throws {
    guard let manifest = try? EntitlementManifest.load(root: root), manifest.entries[name] == nil
    else { return }
    let holders = manifest.entries.filter { $0.value.applicationGroups.contains(name) }.keys.sorted()
    guard let holder = holders.first else { return }
    throw CommandFailure(
      "\(name) is an application group, not an app; its container is printed for an app that"
        + " holds it (\(holders.joined(separator: ", "))): groupctl container \(holder) \(name)")
  }
}

import AppGroups
import Foundation

/// `groupctl unforce DOMAIN KEY`
struct UnforceCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "unforce",
    abstract: "Remove a managed value set by force.",
    usage: "unforce DOMAIN KEY",
    discussion: """
      Removes KEY from <root>/Managed/<domain>.plist (the file goes when it is empty); \
      the suite's own value, if any, shows through again at once.
      """
  )

  let globals: GlobalOptions
  let domain: DomainArgument
  let key: String

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    domain = try arguments.domain()
    key = try arguments.positional("KEY")
  }

  func validate() throws {
    try globals.requireAdministrator("unforce")
  }

  func run() throws {
    let resolved = try ResolvedDomain(domain, globals: globals)
    try SuiteResolver.updateManagedValues(for: resolved.location) { values in
      guard values.removeValue(forKey: key) != nil else {
        throw CommandFailure(
          "\(quotedIfNeeded(key)) is not forced in \(domain) (\(resolved.managedPath))")
      }
    }
  }
}

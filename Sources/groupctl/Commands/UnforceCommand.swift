import AppGroups
import Foundation

/// `groupctl unforce DOMAIN KEY`
struct UnforceCommand: ParsableCommand {
  static let key = Argument.positional("KEY")

  static let configuration = CommandConfiguration(
    commandName: "unforce",
    abstract: "Remove a managed value set by force.",
    arguments: [Argument.domain, key],
    discussion: """
      Removes KEY from <root>/Managed/<domain>.plist (the file goes when it is empty); \
      the suite's own value, if any, shows through again at once.
      """
  )

  let arguments: Arguments

  func validate() throws {
    try globals.requireAdministrator("unforce")
  }

  func run() throws {
    let resolved = try ResolvedDomain(domain, globals: globals)
    let key = arguments[Self.key]
    try SuiteResolver.updateManagedValues(for: resolved.location) { values in
      guard values.removeValue(forKey: key) != nil else {
        throw CommandFailure(
          "\(quotedIfNeeded(key)) is not forced in \(domain) (\(resolved.managedPath))")
      }
    }
    ChangeMade.record()
  }
}

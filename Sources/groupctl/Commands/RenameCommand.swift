import AppGroups
import Foundation

/// `groupctl rename DOMAIN OLD-KEY NEW-KEY`
struct RenameCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "rename",
    abstract: "Rename a key, keeping its value.",
    usage: "rename DOMAIN OLD-KEY NEW-KEY",
    discussion: """
      NEW-KEY's value, if it has one, is replaced. Neither key may be forced by an \
      administrator. Running apps see the change at once.
      """
  )

  let globals: GlobalOptions
  let domain: DomainArgument
  let oldKey: String
  let newKey: String

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    domain = try arguments.domain()
    oldKey = try arguments.positional("OLD-KEY")
    newKey = try arguments.positional("NEW-KEY")
  }

  func run() throws {
    let resolved = try ResolvedDomain(domain, globals: globals)
    guard oldKey != newKey else { return }
    try resolved.requireNotForced(oldKey)
    try resolved.requireNotForced(newKey)
    let value = try resolved.storedValue(forKey: oldKey)
    let defaults = try resolved.open()
    try defaults.stage(value, forKey: newKey)
    try defaults.stage(nil, forKey: oldKey)
    try resolved.synchronize(defaults)
  }
}

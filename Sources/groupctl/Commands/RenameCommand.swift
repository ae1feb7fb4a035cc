import AppGroups
import Foundation

/// `groupctl rename DOMAIN OLD-KEY NEW-KEY`
struct RenameCommand: ParsableCommand {
  static let oldKey = Argument.positional("OLD-KEY")
  static let newKey = Argument.positional("NEW-KEY")

  static let configuration = CommandConfiguration(
    commandName: "rename",
    abstract: "Rename a key, keeping its value.",
    arguments: [Argument.domain, oldKey, newKey],
    discussion: """
      NEW-KEY's value, if it has one, is replaced. Neither key may be forced by an \
      administrator. Running apps see the change at once.
      """
  )

  let arguments: Arguments

  func run() throws {
    let (oldKey, newKey) = (arguments[Self.oldKey], arguments[Self.newKey])
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

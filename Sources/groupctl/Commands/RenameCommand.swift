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
    WriteInterruption.take()
    let (oldKey, newKey) = (arguments[Self.oldKey], arguments[Self.newKey])
    let resolved = try ResolvedDomain(domain, globals: globals)
    guard oldKey != newKey else { return }
    try resolved.requireNotForced(oldKey)
    try resolved.requireNotForced(newKey)
    // Fails at once, naming the pair, when there is nothing to rename.
    _ = try resolved.storedValue(forKey: oldKey)
    let defaults = try resolved.open()
    // Read and move under the suite's lock, as one commit: a value another process writes
    // to OLD-KEY meanwhile is the one moved, never lost under a copy read before it.
    try defaults.transaction { current throws(CommandFailure) in
      guard let value = current[oldKey] else {
        throw CommandFailure("The domain/default pair of (\(domain), \(oldKey)) does not exist")
      }
      let change: [String: PropertyListValue?] = [newKey: value, oldKey: nil]
      return change
    }
    try resolved.synchronize(defaults)
    ChangeMade.record()
  }
}

import AppGroups
import Foundation

/// `groupctl read-type DOMAIN KEY`
struct ReadTypeCommand: ParsableCommand {
  static let key = Argument.positional("KEY")

  static let configuration = CommandConfiguration(
    commandName: "read-type",
    abstract: "Print the type of a key's value, as defaults read-type does.",
    arguments: [Argument.domain, key],
    discussion: """
      Prints "Type is string", integer, float, boolean, date, data, array or dictionary.
      """
  )

  let arguments: Arguments

  func run() throws {
    let resolved = try ResolvedDomain(domain, globals: globals)
    printOut(formatReadType(try resolved.storedValue(forKey: arguments[Self.key])))
  }
}

import AppGroups
import Foundation

/// `groupctl read-type DOMAIN KEY`
struct ReadTypeCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "read-type",
    abstract: "Print the type of a key's value, as defaults read-type does.",
    usage: "read-type DOMAIN KEY",
    discussion: """
      Prints "Type is string", integer, float, boolean, date, data, array or dictionary.
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

  func run() throws {
    let resolved = try ResolvedDomain(domain, globals: globals)
    printOut(formatReadType(try resolved.storedValue(forKey: key)))
  }
}

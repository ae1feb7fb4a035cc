import AppGroups
import Foundation

/// `groupctl read [DOMAIN [KEY]]`
struct ReadCommand: ParsableCommand {
  static let key = Argument.optionalPositional("KEY")

  static let configuration = CommandConfiguration(
    commandName: "read",
    abstract: "Print every domain, one domain, or one key, as defaults read does.",
    arguments: [Argument.optionalDomain, key],
    usage: "read [DOMAIN [KEY]]",
    discussion: """
      Prints what is stored in the domain's own file, as defaults does: not what \
      an administrator forces, the app's arguments, NSGlobalDomain or registered \
      defaults (explain shows every layer). Without DOMAIN, prints every domain of \
      the root (with --as, every domain that app may open).

      Values print as old-style property lists, the way macOS defaults prints them: \
      strings are quoted only when they need it, booleans print as 1 and 0; use \
      read-type to tell them apart. A domain or key that does not exist, or a file \
      that cannot be read, exits with 1.
      """
  )

  let arguments: Arguments

  func run() throws {
    guard let domain = arguments[.optionalDomain] else {
      let scan = try DomainScan(globals: globals)
      var all: [String: PropertyListValue] = [:]
      for (resolved, values) in scan.readable {
        all[resolved.domain.description] = .dictionary(values)
      }
      printOut(formatDefaults(.dictionary(all)))
      try scan.finish()
      return
    }
    let resolved = try ResolvedDomain(domain, globals: globals)
    if let key = arguments[Self.key] {
      printOut(formatDefaults(try resolved.storedValue(forKey: key)))
    } else {
      printOut(formatDefaults(.dictionary(try resolved.existingValues())))
    }
  }
}

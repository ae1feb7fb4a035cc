import AppGroups
import Foundation

/// `groupctl force DOMAIN KEY <type> VALUE`
struct ForceCommand: ParsableCommand {
  static let key = Argument.positional("KEY")
  static let valueWords = Argument.rawWords("VALUE")

  static let configuration = CommandConfiguration(
    commandName: "force",
    abstract: "Set a managed value that apps read but cannot change.",
    arguments: [Argument.domain, key, valueWords],
    usage: """
      force DOMAIN KEY -string|-int|-float|-bool|-date|-data VALUE
      force DOMAIN KEY -array VALUE... | -dict KEY VALUE... | VALUE
      """,
    discussion: """
      The value is typed as for write (see 'groupctl help write'); -array-add and \
      -dict-add are not accepted. The value goes to <root>/Managed/<domain>.plist \
      (written atomically, mode 0600), where apps read it first and at once: \
      objectIsForced(forKey:) is true for the key, and neither the apps nor write, \
      delete and rename can change it until unforce. A private suite BUNDLE-ID:SUITE is \
      managed by its suite name alone, as managed preferences are named by domain.
      """
  )

  let arguments: Arguments
  let value: PropertyListValue

  init(arguments: Arguments) throws {
    self.arguments = arguments
    switch try parseWriteValue(words: arguments[Self.valueWords]) {
    case .value(let value): self.value = value
    case .arrayAdd: throw ValidationError("force sets a whole value: use -array, not -array-add")
    case .dictAdd: throw ValidationError("force sets a whole value: use -dict, not -dict-add")
    }
  }

  private var key: String { arguments[Self.key] }

  func validate() throws {
    try globals.requireAdministrator("force")
    guard !key.isEmpty else { throw ValidationError("KEY is empty") }
  }

  func run() throws {
    let resolved = try ResolvedDomain(domain, globals: globals)
    try SuiteResolver.updateManagedValues(for: resolved.location) { values in
      values[key] = value
    }
    ChangeMade.record()
  }
}

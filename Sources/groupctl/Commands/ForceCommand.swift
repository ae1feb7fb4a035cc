import AppGroups

/// `groupctl force DOMAIN KEY <type> VALUE`
struct ForceCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "force",
    abstract: "Set a managed value that apps read but cannot change.",
    usage: """
      force DOMAIN KEY -string|-int|-float|-bool|-date|-data VALUE
      force DOMAIN KEY -array VALUE... | -dict KEY VALUE... | VALUE
      """,
    discussion: """
      The value is typed as for write (see 'groupctl help write'); -array-add and \
      -dict-add are not accepted. objectIsForced(forKey:) is then true for the key.
      """
  )

  let globals: GlobalOptions
  let domain: DomainArgument
  let key: String
  let value: PropertyListValue

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    domain = try arguments.domain()
    key = try arguments.positional("KEY")
    switch try parseWriteValue(words: arguments.rawWords()) {
    case .value(let value): self.value = value
    case .arrayAdd: throw ValidationError("force sets a whole value: use -array, not -array-add")
    case .dictAdd: throw ValidationError("force sets a whole value: use -dict, not -dict-add")
    }
  }

  func run() throws {
    try notImplemented()
  }
}

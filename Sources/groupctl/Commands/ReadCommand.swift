/// `groupctl read [DOMAIN [KEY]]`
struct ReadCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "read",
    abstract: "Print every domain, one domain, or one key, as defaults read does.",
    usage: "read [DOMAIN [KEY]]",
    discussion: """
      Values print as old-style property lists, the way macOS defaults prints them: \
      strings are quoted only when they need it, booleans print as 1 and 0; use \
      read-type to tell them apart. A key that does not exist exits with 1.
      """
  )

  let globals: GlobalOptions
  let domain: DomainArgument?
  let key: String?

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    domain = try arguments.optionalDomain()
    key = domain == nil ? nil : try arguments.optionalPositional("KEY")
  }

  func run() throws {
    try notImplemented()
  }
}

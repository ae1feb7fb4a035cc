/// `groupctl delete DOMAIN [KEY]`
struct DeleteCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "delete",
    abstract: "Delete a key, or every key of a domain.",
    usage: "delete DOMAIN [KEY]"
  )

  let globals: GlobalOptions
  let domain: DomainArgument
  /// `nil`: the whole domain.
  let key: String?

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    domain = try arguments.domain()
    key = try arguments.optionalPositional("KEY")
  }

  func run() throws {
    try notImplemented()
  }
}

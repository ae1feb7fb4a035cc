/// `groupctl unforce DOMAIN KEY`
struct UnforceCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "unforce",
    abstract: "Remove a managed value set by force.",
    usage: "unforce DOMAIN KEY"
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
    try notImplemented()
  }
}

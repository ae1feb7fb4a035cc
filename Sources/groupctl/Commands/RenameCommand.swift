/// `groupctl rename DOMAIN OLD-KEY NEW-KEY`
struct RenameCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "rename",
    abstract: "Rename a key, keeping its value.",
    usage: "rename DOMAIN OLD-KEY NEW-KEY"
  )

  let globals: GlobalOptions
  let domain: DomainArgument
  let oldKey: String
  let newKey: String

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    domain = try arguments.domain()
    oldKey = try arguments.positional("OLD-KEY")
    newKey = try arguments.positional("NEW-KEY")
  }

  func run() throws {
    try notImplemented()
  }
}

/// `groupctl export DOMAIN PATH|- [--xml]`
struct ExportCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "export",
    abstract: "Write a domain's contents to a property-list file.",
    usage: "export DOMAIN PATH|- [--xml]",
    discussion:
      "The file is a binary property list, as Apple writes them; - writes to standard output.",
    options: [OptionHelp("--xml", "Write an XML property list instead.")]
  )

  let globals: GlobalOptions
  let domain: DomainArgument
  /// A path, or `-` for standard output.
  let path: String
  let xml: Bool

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    xml = try arguments.flag("--xml")
    domain = try arguments.domain()
    path = try arguments.positional("PATH")
  }

  func run() throws {
    try notImplemented()
  }
}

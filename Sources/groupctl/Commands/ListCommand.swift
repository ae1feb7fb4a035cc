/// `groupctl list [BUNDLE-ID] [--json]`
struct ListCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "list",
    abstract: "List the apps in the manifest and the groups each holds.",
    usage: "list [BUNDLE-ID] [--json]",
    options: [OptionHelp("--json", "Print JSON instead of text.")]
  )

  let globals: GlobalOptions
  let bundleID: String?
  let json: Bool

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    json = try arguments.flag("--json")
    bundleID = try arguments.optionalPositional("BUNDLE-ID")
  }

  func run() throws {
    try notImplemented()
  }
}

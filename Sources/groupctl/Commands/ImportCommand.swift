/// `groupctl import DOMAIN PATH|-`
struct ImportCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "import",
    abstract: "Replace a domain's contents with a property-list file.",
    usage: "import DOMAIN PATH|-",
    discussion: """
      The file may be binary or XML; - reads it from standard input. The domain \
      takes the file's keys as one change.
      """
  )

  let globals: GlobalOptions
  let domain: DomainArgument
  /// A path, or `-` for standard input.
  let path: String

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    domain = try arguments.domain()
    path = try arguments.positional("PATH")
  }

  func run() throws {
    try notImplemented()
  }
}

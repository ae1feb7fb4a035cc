/// `groupctl domains`
struct DomainsCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "domains",
    abstract: "List every domain that has preferences in the root.",
    usage: "domains"
  )

  let globals: GlobalOptions

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
  }

  func run() throws {
    try notImplemented()
  }
}

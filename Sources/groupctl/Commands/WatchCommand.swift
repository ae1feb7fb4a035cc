/// `groupctl watch DOMAIN [KEY...]`
struct WatchCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "watch",
    abstract: "Print a domain's changes as they happen, one key = value line each.",
    usage: "watch DOMAIN [KEY...]",
    discussion: """
      Prints the current values first, then one line per change, from this process \
      or any other, until interrupted. With KEYs, only those keys.
      """
  )

  let globals: GlobalOptions
  let domain: DomainArgument
  /// Empty: every key.
  let keys: [String]

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    domain = try arguments.domain()
    keys = try arguments.remainingPositionals("KEY")
  }

  func run() throws {
    try notImplemented()
  }
}

/// `groupctl explain DOMAIN KEY [--as BUNDLE-ID] [-- ARGS...]`
struct ExplainCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "explain",
    abstract: "Show which domain of the search list supplies a key's value, and why.",
    usage: "explain DOMAIN KEY [--as BUNDLE-ID] [-- ARGS...]",
    discussion: """
      Walks the search list (managed, argument, app or suite, global, registration, \
      volatile) for the identity given by --as, and says which layer holds the key \
      and which it shadows. ARGS after -- are taken as the process's command-line \
      arguments, for the argument domain (-KEY VALUE).
      """
  )

  let globals: GlobalOptions
  let domain: DomainArgument
  let key: String
  /// The simulated command line, for the argument domain.
  let processArguments: [String]

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    domain = try arguments.domain()
    key = try arguments.positional("KEY")
    processArguments = arguments.passthrough()
  }

  func run() throws {
    try notImplemented()
  }
}

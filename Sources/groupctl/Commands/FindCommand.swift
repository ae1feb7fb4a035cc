/// `groupctl find WORD`
struct FindCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "find",
    abstract: "Search every domain's keys and values for a word.",
    usage: "find WORD",
    discussion: "The search ignores case, as defaults find does."
  )

  let globals: GlobalOptions
  let word: String

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    word = try arguments.positional("WORD")
  }

  func run() throws {
    try notImplemented()
  }
}

/// `groupctl help [COMMAND]`
struct HelpCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "help",
    abstract: "Show the list of commands, or a command's help.",
    usage: "help [COMMAND]",
    discussion: "groupctl help COMMAND prints the same text as groupctl COMMAND --help."
  )

  let command: (any ParsableCommand.Type)?

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    command = try arguments.optionalPositional("COMMAND").map { name throws(ValidationError) in
      try Groupctl.lookUp(name)
    }
  }

  func run() throws {
    if let command {
      printOut(Groupctl.help(for: command))
    } else {
      printOut(Groupctl.overview())
    }
  }
}

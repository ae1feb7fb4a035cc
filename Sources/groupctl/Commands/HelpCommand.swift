/// `groupctl help [COMMAND]`
struct HelpCommand: ParsableCommand {
  static let command = Argument.optionalPositional("COMMAND", completion: .commandNames)

  static let configuration = CommandConfiguration(
    commandName: "help",
    abstract: "Show the list of commands, or a command's help.",
    arguments: [command],
    discussion: "groupctl help COMMAND prints the same text as groupctl COMMAND --help."
  )

  let arguments: Arguments
  let command: (any ParsableCommand.Type)?

  init(arguments: Arguments) throws {
    self.arguments = arguments
    command = try arguments[Self.command].map { name throws(ValidationError) in
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

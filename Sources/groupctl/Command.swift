/// A `groupctl` subcommand: argument-parser's shape, without the package.
///
/// A command is a type in its own file under `Commands/` and one line in
/// ``Groupctl/sections``. It declares each of its arguments once, as a static ``Argument``
/// listed in its ``CommandConfiguration``; the parser, its help's synopsis and OPTIONS, the
/// completion script and the usage errors all come from that list. The dispatcher drives it
/// in this order:
///
/// 1. The declared arguments are taken from the words (``Arguments``): options and flags
///    first, then the positionals in order; any word left is an unknown option or an
///    unexpected argument.
/// 2. `init(arguments:)` keeps them, and converts or checks what needs it (default: the
///    memberwise one, which keeps them).
/// 3. `validate()` checks values against each other (default: nothing).
/// 4. `run()` does the work: data to stdout, diagnostics to stderr.
///
/// ```swift
/// struct RenameCommand: ParsableCommand {
///   static let oldKey = Argument.positional("OLD-KEY")
///   static let newKey = Argument.positional("NEW-KEY")
///
///   static let configuration = CommandConfiguration(
///     commandName: "rename",
///     abstract: "Rename a key, keeping its value.",
///     arguments: [Argument.domain, oldKey, newKey]   // usage: rename DOMAIN OLD-KEY NEW-KEY
///   )
///
///   let arguments: Arguments
///
///   func run() throws { … arguments[Self.oldKey] … }
/// }
/// ```
///
/// Throw ``ValidationError`` for bad input (exit 64, with the usage),
/// ``ExitCode`` to choose the exit status, anything else to fail with 1.
protocol ParsableCommand {
  /// The name, abstract, arguments, usage and discussion shown in help.
  static var configuration: CommandConfiguration { get }

  /// The parsed values of the declared arguments.
  var arguments: Arguments { get }

  /// Makes the command from its parsed arguments; throws ``ValidationError`` for values that
  /// do not go together.
  init(arguments: Arguments) throws

  /// Checks the parsed values against each other; throw ``ValidationError``.
  func validate() throws

  /// Does the work.
  func run() throws
}

extension ParsableCommand {
  func validate() throws {}

  /// `--root` and `--as`.
  var globals: GlobalOptions { arguments.globals }
  /// The DOMAIN, for a command that declared ``Argument/domain``.
  var domain: DomainArgument { arguments.domain }
}

/// What a command is called, what it takes and what its help says.
struct CommandConfiguration: Sendable {
  /// The kebab-case name typed after `groupctl`.
  var commandName: String
  /// One sentence, shown in the command list and at the top of the command's help.
  var abstract: String
  /// The synopsis without the leading `groupctl`; one form per line.
  var usage: String
  /// Paragraphs shown after the usage in the command's help.
  var discussion: String
  /// The command's own options, shown in its help (global options are added).
  var options: [OptionHelp]
  /// The declared arguments, in the order the synopsis shows them.
  var arguments: [ArgumentDeclaration]
  /// Hidden commands work but are left out of the command list.
  var isHidden: Bool
  /// The options whose next word is their value, even `--help` or `-h` (a password, a
  /// passcode): the declared options, those of `subcommandOptions` shown with a value
  /// (`-a ACCOUNT`, `-w [PASSWORD]`), and the global `--root` and `--as`.
  var valueOptions: Set<String>

  /// A command's configuration: its parser, its OPTIONS section, its completion and its
  /// synopsis come from `arguments`. The synopsis is the name and the arguments in
  /// the order given (`read-type DOMAIN KEY`, `list [BUNDLE-ID] [--json]`); `usage` replaces
  /// it where the command has several forms or names a global option. `subcommandOptions`
  /// are the OPTIONS lines of flags a command takes from its raw words in a grammar of its
  /// own (keychain's, which is security's).
  init(
    commandName: String,
    abstract: String,
    arguments: [any DeclaredArgument],
    usage: String? = nil,
    discussion: String = "",
    subcommandOptions: [OptionHelp] = [],
    isHidden: Bool = false
  ) {
    let declarations = arguments.map(\.declaration)
    self.commandName = commandName
    self.abstract = abstract
    self.usage =
      usage
      ?? ([commandName] + declarations.map(\.synopsis)).joined(separator: " ")
    self.discussion = discussion
    self.options = declarations.compactMap(\.optionHelp) + subcommandOptions
    self.arguments = declarations
    self.isHidden = isHidden
    var valueOptions: Set<String> = ["--root", "--as"]
    for declaration in declarations {
      if case .option = declaration.kind { valueOptions.formUnion(declaration.spellings) }
    }
    for option in subcommandOptions {
      let parts = option.name.split(separator: " ")
      if parts.count > 1, let first = parts.first { valueOptions.insert(String(first)) }
    }
    self.valueOptions = valueOptions
  }
}

/// One line of the OPTIONS section of a command's help.
struct OptionHelp: Sendable {
  /// The option as typed, with its value name: `--executable PATH`.
  var name: String
  /// What it does.
  var help: String

  init(_ name: String, _ help: String) {
    self.name = name
    self.help = help
  }
}

/// The options every command accepts, before or after the command name.
struct GlobalOptions: Sendable {
  /// `--root DIR`, else the `APPGROUPS_ROOT` environment variable; `nil`
  /// means the library's default root.
  var root: String?
  /// `--as BUNDLE-ID`: the identity to act as; `nil` when not given.
  var identity: String?

  init(root: String? = nil, identity: String? = nil) {
    self.root = root
    self.identity = identity
  }
}

/// Bad command-line input: `groupctl` prints "groupctl: <message>" and the
/// command's usage on stderr and exits with 64 (`EX_USAGE`).
struct ValidationError: Error, Sendable, Equatable, CustomStringConvertible {
  var message: String

  init(_ message: String) {
    self.message = message
  }

  var description: String { message }
}

/// Ends the command with this exit status and no further message.
struct ExitCode: Error, Sendable, Equatable {
  var code: Int32

  init(_ code: Int32) {
    self.code = code
  }

  static let success = ExitCode(0)
  static let failure = ExitCode(1)
  /// `EX_USAGE` from sysexits(3).
  static let validationFailure = ExitCode(64)
}

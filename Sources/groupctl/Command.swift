/// A `groupctl` subcommand: argument-parser's shape, without the package.
///
/// A command is a type in its own file under `Commands/` and one line in
/// ``Groupctl/commands``. The dispatcher drives it in this order:
///
/// 1. `init(arguments:globals:)` takes its options and flags, then its
///    positionals in order, from the ``ArgumentReader``.
/// 2. The dispatcher calls ``ArgumentReader/finish()``: any word the command
///    did not take is an unknown option or an unexpected argument.
/// 3. `validate()` checks values against each other (default: nothing).
/// 4. `run()` does the work: data to stdout, diagnostics to stderr.
///
/// ```swift
/// struct RenameCommand: ParsableCommand {
///   static let configuration = CommandConfiguration(
///     commandName: "rename",
///     abstract: "Rename a key in a domain.",
///     usage: "rename DOMAIN OLD-KEY NEW-KEY"
///   )
///   let globals: GlobalOptions
///   let domain: DomainArgument
///   let oldKey: String
///   let newKey: String
///
///   init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
///     self.globals = globals
///     domain = try arguments.domain()
///     oldKey = try arguments.positional("OLD-KEY")
///     newKey = try arguments.positional("NEW-KEY")
///   }
///
///   func run() throws { … }
/// }
/// ```
///
/// Throw ``ValidationError`` for bad input (exit 64, with the usage),
/// ``ExitCode`` to choose the exit status, anything else to fail with 1.
protocol ParsableCommand {
  /// The name, abstract, usage, discussion and options shown in help.
  static var configuration: CommandConfiguration { get }

  /// Parses the command's arguments. Take options and flags first, then
  /// positionals in order; leave nothing the command does not accept.
  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws

  /// Checks the parsed values against each other; throw ``ValidationError``.
  func validate() throws

  /// Does the work.
  func run() throws
}

extension ParsableCommand {
  func validate() throws {}
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
  /// The arguments of a ``DeclaredCommand``, in the order help shows them.
  var arguments: [ArgumentDeclaration]
  /// Hidden commands work but are left out of the command list.
  var isHidden: Bool

  init(
    commandName: String,
    abstract: String,
    usage: String,
    discussion: String = "",
    options: [OptionHelp] = [],
    isHidden: Bool = false
  ) {
    self.commandName = commandName
    self.abstract = abstract
    self.usage = usage
    self.discussion = discussion
    self.options = options
    self.arguments = []
    self.isHidden = isHidden
  }

  /// A command that declares its arguments: its parser, its OPTIONS section, its completion
  /// and its synopsis come from `arguments`. The synopsis is the name and the arguments in
  /// the order given (`read-type DOMAIN KEY`, `list [BUNDLE-ID] [--json]`); `usage` replaces
  /// it where the command has several forms or names a global option.
  init(
    commandName: String,
    abstract: String,
    arguments: [any DeclaredArgument],
    usage: String? = nil,
    discussion: String = "",
    isHidden: Bool = false
  ) {
    let declarations = arguments.map(\.declaration)
    self.commandName = commandName
    self.abstract = abstract
    self.usage =
      usage
      ?? ([commandName] + declarations.map(\.synopsis)).joined(separator: " ")
    self.discussion = discussion
    self.options = declarations.compactMap(\.optionHelp)
    self.arguments = declarations
    self.isHidden = isHidden
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

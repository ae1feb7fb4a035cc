import AppGroups
import CommandLineText
import Foundation

/// The root command: global options, dispatch to a subcommand, help, and
/// the mapping of errors to exit statuses.
enum Groupctl {
  /// Every command, in the order the overview lists them. Adding a command
  /// is one file under `Commands/` and one line here.
  static var sections: [(title: String, commands: [any ParsableCommand.Type])] {
    [
      (
        "ENTITLEMENTS AND CONTAINERS",
        [
          GrantCommand.self,
          RevokeCommand.self,
          ListCommand.self,
          ContainerCommand.self,
          RunCommand.self,
          ImportEntitlementsCommand.self,
        ]
      ),
      ("KEYCHAIN", [KeychainCommand.self]),
      (
        "APPS",
        [
          PsCommand.self,
          SuspendCommand.self,
          ResumeCommand.self,
          DeviceCommand.self,
        ]
      ),
      (
        "FILES",
        [
          PresentCommand.self,
          CoordinateCommand.self,
        ]
      ),
      (
        "PREFERENCES",
        [
          ReadCommand.self,
          ReadTypeCommand.self,
          WriteCommand.self,
          DeleteCommand.self,
          RenameCommand.self,
          DomainsCommand.self,
          FindCommand.self,
          ImportCommand.self,
          ExportCommand.self,
          WatchCommand.self,
          ExplainCommand.self,
          ForceCommand.self,
          UnforceCommand.self,
          ReportCommand.self,
          SchemaCommand.self,
        ]
      ),
      (
        "OTHER",
        [
          DoctorCommand.self,
          HelpCommand.self,
          CompletionCommand.self,
          ParseValueCommand.self,
          SandboxedCommand.self,
        ]
      ),
    ]
  }

  static var commands: [any ParsableCommand.Type] { sections.flatMap { $0.commands } }

  static let usage = "[--root DIR] [--as BUNDLE-ID] <command> [<arguments>]"

  static let abstract = "Manage App Group entitlements, containers and preferences on Linux."

  static let globalOptions: [OptionHelp] = [
    OptionHelp(
      "--root DIR",
      "The root holding the manifest and containers"
        + " (default: $APPGROUPS_ROOT, else the default root)."
    ),
    OptionHelp(
      "--as BUNDLE-ID",
      "Open domains as this app, as the manifest entitles it; without --as, groupctl"
        + " acts as the administrator and opens any domain."),
    OptionHelp("-h, --help", "Show help."),
  ]

  static let domainHelp = """
    DOMAIN is a bundle id (the app's standard suite), a group id (group.…), a private \
    suite BUNDLE-ID:SUITE, or -g / NSGlobalDomain for the global domain.
    """

  /// Runs `groupctl` with the process's arguments and exits.
  static func main() -> Never {
    // A mask inherited from the parent (a thread that blocks every signal) would keep SIGTERM
    // and SIGINT from ending groupctl.
    Processes.unblockAllSignals()
    // groupctl's own command line is not an app's: its `-string VALUE` is no argument domain
    // (a refused value there would be said as if an app had been given it).
    GroupDefaults.ignoreLaunchArguments()
    // A file size limit makes a write fail with EFBIG, said and exited 1, not kill groupctl.
    Processes.reportFileSizeLimitAsAnError()
    // Swift replaces bytes that are not UTF-8 with U+FFFD when it makes CommandLine.arguments,
    // so two different byte strings could name one key: refuse them before that.
    if let problem = CommandLineText.nonUTF8Input(
      environment: [ContainerRoot.environmentVariable], mayBeSecret: mayBeSecret)
    {
      printError("groupctl: \(problem)")
      exit(ExitCode.validationFailure.code)
    }
    let status = run(
      Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
    if WriteInterruption.happened {
      printError(
        status == 0
          ? "groupctl: interrupted while writing; the write had begun, and it is on disk"
          : "groupctl: interrupted")
    }
    exit(flushingOutput(status))
  }

  /// `status`, once standard output is flushed; 1 when what the command printed did not all
  /// reach it (a full disk, an I/O error), said on stderr: `groupctl read … > file` must not
  /// exit 0 over a truncated file. A command that recorded its change (``ChangeMade``) printed
  /// only a confirmation of it: its status stays, and the message says the change is made. A
  /// reader that closed the pipe early is no failure of the command, as for `LineWriter`.
  static func flushingOutput(_ status: Int32) -> Int32 {
    let failure = StandardOutput.flushPrinted()
    fflush(nil)
    guard let failure, failure != .brokenPipe else { return status }
    printError("groupctl: " + incompleteOutput("writing to standard output: \(failure)"))
    return status == 0 && ChangeMade.recorded == nil ? ExitCode.failure.code : status
  }

  /// What is said when what a command printed did not all reach standard output: `failure`
  /// (what failed and why), that the output is incomplete, and, when the command recorded
  /// its change (``ChangeMade``), the words it recorded: "…; what was printed is incomplete
  /// (the change is made and on disk)".
  static func incompleteOutput(_ failure: String) -> String {
    let said = "\(failure); what was printed is incomplete"
    guard let made = ChangeMade.recorded else { return said }
    return said + " (\(made))"
  }

  /// Whether `words[index]` may be a secret, whose bytes no message shows: any argument after
  /// the command word of `keychain` (a password, `-w`), `device` (a passcode), `run` or
  /// `coordinate` (another program's arguments).
  static func mayBeSecret(_ words: [String], at index: Int) -> Bool {
    words[1..<index].contains { ["keychain", "device", "run", "coordinate"].contains($0) }
  }

  /// Runs `groupctl` with these arguments (without the program name) and
  /// returns the exit status.
  static func run(_ arguments: [String], environment: [String: String]) -> Int32 {
    var globals = GlobalOptions()
    if let root = environment["APPGROUPS_ROOT"], !root.isEmpty { globals.root = root }

    // Global options before the command name; each given once, here and after the name
    // together (APPGROUPS_ROOT is no repetition: --root replaces it).
    var rest = arguments[...]
    var given: [String] = []
    do throws(ValidationError) {
      while let word = rest.first, ArgumentReader.isOptionLike(word) {
        rest.removeFirst()
        switch word {
        case "-h", "--help":
          printOut(overview())
          return 0
        case "--root", "--as":
          guard let value = rest.popFirst(), !value.isEmpty else {
            throw ValidationError(
              "option '\(word)' needs a value (\(word == "--root" ? "DIR" : "BUNDLE-ID"))")
          }
          if word == "--root" { globals.root = value } else { globals.identity = value }
          given.append(word)
        case _ where word.hasPrefix("--root="):
          globals.root = try nonEmpty(String(word.dropFirst(7)), option: "--root", value: "DIR")
          given.append("--root")
        case _ where word.hasPrefix("--as="):
          globals.identity = try nonEmpty(
            String(word.dropFirst(5)), option: "--as", value: "BUNDLE-ID")
          given.append("--as")
        case "--":
          throw ValidationError("missing command before '--'")
        default:
          throw ArgumentReader.unknownOption(word)
        }
      }
      for option in ["--root", "--as"] {
        try ArgumentReader.refuseRepeats(of: option, given: given.filter { $0 == option })
      }
    } catch {
      printError("groupctl: \(error.message)")
      printError("Usage: groupctl \(usage)")
      return ExitCode.validationFailure.code
    }

    guard let name = rest.popFirst() else {
      // A script that lost its command word must not pass for one that ran: usage, 64.
      printError("groupctl: missing command")
      printError(overview())
      return ExitCode.validationFailure.code
    }
    let command: any ParsableCommand.Type
    do throws(ValidationError) {
      command = try lookUp(name)
    } catch {
      printError("groupctl: \(error.message)")
      printError("Usage: groupctl \(usage)")
      return ExitCode.validationFailure.code
    }
    return run(command, arguments: Array(rest), globals: globals, givenBeforeName: given)
  }

  /// Parses, validates and runs one command; maps its errors to a status.
  ///
  /// - Parameter givenBeforeName: The global options given before the command name, once
  ///   for each time (`--root`, `--as`): given again after it, one is refused.
  static func run(
    _ command: any ParsableCommand.Type, arguments: [String], globals: GlobalOptions,
    givenBeforeName: [String] = []
  ) -> Int32 {
    var reader = ArgumentReader(arguments)
    do {
      if reader.wantsHelp(valueOptions: command.configuration.valueOptions) {
        printOut(help(for: command))
        return 0
      }
      var globals = globals
      // Global options may also follow the command name, once in all.
      for (option, valueName) in [("--root", "DIR"), ("--as", "BUNDLE-ID")] {
        let values = try reader.options(option, value: valueName)
        try ArgumentReader.refuseRepeats(
          of: option, given: givenBeforeName.filter { $0 == option } + values.map { _ in option })
        guard let value = values.first else { continue }
        if option == "--root" { globals.root = value } else { globals.identity = value }
      }
      let arguments = try Arguments(
        parsing: &reader, command.configuration.arguments, globals: globals)
      let parsed = try command.init(arguments: arguments)
      try reader.finish()
      try parsed.validate()
      let rootPath = globals.containerRoot.path
      let rootExisted = FileManager.default.fileExists(atPath: rootPath)
      defer {
        // Say so when a command made the root: a forgotten --root or
        // APPGROUPS_ROOT otherwise leaves a Containers folder in the current directory.
        if !rootExisted, FileManager.default.fileExists(atPath: rootPath) {
          printError(
            "groupctl: created the root \(rootPath) (choose another with --root or"
              + " \(ContainerRoot.environmentVariable))")
        }
      }
      try parsed.run()
      return 0
    } catch let error as ValidationError {
      printError("groupctl: \(error.message)")
      printError(usageLines(for: command.configuration, prefix: "Usage: "))
      printError("See 'groupctl help \(command.configuration.commandName)'.")
      return ExitCode.validationFailure.code
    } catch let exit as ExitCode {
      return exit.code
    } catch {
      printError("groupctl: \(describe(error))")
      return ExitCode.failure.code
    }
  }

  /// The command called `name`.
  ///
  /// - Throws: ``ValidationError`` naming it and the closest command.
  static func lookUp(_ name: String) throws(ValidationError) -> any ParsableCommand.Type {
    if let command = commands.first(where: { $0.configuration.commandName == name }) {
      return command
    }
    var message = "unknown command '\(name)'"
    if let suggestion = closestCommand(to: name) {
      message += "; did you mean '\(suggestion)'?"
    } else {
      message += "; see 'groupctl help' for the list of commands"
    }
    throw ValidationError(message)
  }

  /// The listed command whose name is closest to `name`, if any is close.
  static func closestCommand(to name: String) -> String? {
    let candidates = commands.map { $0.configuration }.filter { !$0.isHidden }.map(\.commandName)
    let scored = candidates.map { (name: $0, distance: editDistance(name, $0)) }
    guard let best = scored.min(by: { $0.distance < $1.distance }) else { return nil }
    if best.name.hasPrefix(name) || best.distance <= max(2, best.name.count / 3) {
      return best.name
    }
    return candidates.first { $0.hasPrefix(name) }
  }

  // MARK: Help

  /// The text of `groupctl`, `groupctl help` and `groupctl --help`.
  static func overview() -> String {
    var lines = ["OVERVIEW: \(abstract)", "", "USAGE: groupctl \(usage)"]
    let visible = commands.map { $0.configuration }.filter { !$0.isHidden }
    let width = max(18, (visible.map(\.commandName.count).max() ?? 0) + 2)
    for section in sections {
      let configurations = section.commands.map { $0.configuration }.filter { !$0.isHidden }
      guard !configurations.isEmpty else { continue }
      lines += ["", "\(section.title):"]
      for configuration in configurations {
        lines += wrap(
          "  " + padded(configuration.commandName, width) + configuration.abstract,
          hangingIndent: width + 2)
      }
    }
    lines += ["", "GLOBAL OPTIONS:"] + optionLines(globalOptions, width: width)
    lines += [""] + wrap(domainHelp)
    lines += ["", "See 'groupctl help <command>' for help on a command."]
    return lines.joined(separator: "\n")
  }

  /// The text of `groupctl help CMD` and `groupctl CMD --help`.
  static func help(for command: any ParsableCommand.Type) -> String {
    let configuration = command.configuration
    var lines = wrap("OVERVIEW: \(configuration.abstract)") + [""]
    lines.append(usageLines(for: configuration, prefix: "USAGE: "))
    if !configuration.discussion.isEmpty {
      lines.append("")
      for line in configuration.discussion.split(separator: "\n", omittingEmptySubsequences: false)
      {
        lines += wrap(String(line), hangingIndent: Self.continuationIndent(of: line))
      }
    }
    let width = optionColumnWidth(configuration.options + globalOptions)
    if !configuration.options.isEmpty {
      lines += ["", "OPTIONS:"] + optionLines(configuration.options, width: width)
    }
    lines += ["", "GLOBAL OPTIONS:"] + optionLines(globalOptions, width: width)
    return lines.joined(separator: "\n")
  }

  /// Where the continuation of a discussion line starts: under its text, or, for the row of an
  /// indented table (a name, two spaces or more, its description), under the description,
  /// so that a wrapped row keeps its column.
  static func continuationIndent(of line: Substring) -> Int {
    let indent = line.prefix { $0 == " " }.count
    guard indent > 0, let gap = line.dropFirst(indent).range(of: "  ") else { return indent }
    let column = line[gap.lowerBound...].prefix { $0 == " " }.count
    return line.distance(from: line.startIndex, to: gap.lowerBound) + column
  }

  /// Each usage form on its own line, the first after `prefix`, the others aligned under it.
  static func usageLines(for configuration: CommandConfiguration, prefix: String) -> String {
    let indent = String(repeating: " ", count: prefix.count)
    return configuration.usage.split(separator: "\n", omittingEmptySubsequences: true)
      .enumerated()
      .map { ($0.offset == 0 ? prefix : indent) + "groupctl " + $0.element }
      .joined(separator: "\n")
  }

  static func optionColumnWidth(_ options: [OptionHelp]) -> Int {
    max(18, (options.map(\.name.count).max() ?? 0) + 2)
  }

  static func optionLines(_ options: [OptionHelp], width: Int) -> [String] {
    options.flatMap { wrap("  " + padded($0.name, width) + $0.help, hangingIndent: width + 2) }
  }

  /// The width help text is wrapped to.
  static let helpWidth = 80

  /// Breaks a line longer than ``helpWidth`` at single spaces (runs of
  /// spaces, such as column padding, are kept); continuation lines start
  /// with `hangingIndent` spaces.
  static func wrap(_ line: String, hangingIndent: Int = 0) -> [String] {
    guard line.count > helpWidth else { return [line] }
    var words: [String] = []
    var word = String(line.prefix { $0 == " " })
    var rest = line.dropFirst(word.count)
    while let character = rest.popFirst() {
      if character == " ", word.last != " ", rest.first != " " {
        words.append(word)
        word = ""
      } else {
        word.append(character)
      }
    }
    words.append(word)
    let indent = String(repeating: " ", count: hangingIndent)
    var lines: [String] = []
    var current = words.removeFirst()
    for word in words {
      if current.count + 1 + word.count > helpWidth, current.count > hangingIndent {
        lines.append(current)
        current = indent + word
      } else {
        current += " " + word
      }
    }
    return lines + [current]
  }

  // MARK: Helpers

  private static func nonEmpty(_ value: String, option: String, value valueName: String)
    throws(ValidationError) -> String
  {
    guard !value.isEmpty else {
      throw ValidationError("option '\(option)' needs a value (\(valueName))")
    }
    return value
  }

  private static func padded(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + "  " : text + String(repeating: " ", count: width - text.count)
  }

  /// The message for an error that is neither a usage error nor an exit code.
  static func describe(_ error: any Error) -> String {
    if let error = error as? AppGroupsError { return error.description }
    if let error = error as? any LocalizedError, let description = error.errorDescription {
      return description
    }
    return String(describing: error)
  }

  /// Levenshtein distance between two strings, by characters.
  static func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    guard !a.isEmpty else { return b.count }
    guard !b.isEmpty else { return a.count }
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
      current[0] = i
      for j in 1...b.count {
        let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
        current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
      }
      swap(&previous, &current)
    }
    return previous[b.count]
  }
}

/// Writes a line of data to stdout.
func printOut(_ text: String) {
  print(text)
}

/// Writes a line of diagnostics to stderr.
func printError(_ text: String) {
  FileHandle.standardError.write(Data((text + "\n").utf8))
}

import Foundation

/// `groupctl completion bash|zsh`
struct CompletionCommand: ParsableCommand {
  static let shell = Argument.positional(
    "SHELL", completion: .choices(Shell.allCases.map(\.rawValue)))

  static let configuration = CommandConfiguration(
    commandName: "completion",
    abstract: "Print a shell completion script for groupctl.",
    arguments: [shell],
    discussion: """
      The script completes command names, each command's options and the global \
      options, and paths where a command takes one; it is made from the same table \
      as this help, so it lists exactly the commands this groupctl has. To use it:
        bash:  source <(groupctl completion bash)    (or save it in
               /etc/bash_completion.d/groupctl)
        zsh:   groupctl completion zsh > "${fpath[1]}/_groupctl"
               (or source <(groupctl completion zsh) after compinit)
      """
  )

  /// The shells a script can be printed for.
  enum Shell: String, CaseIterable {
    case bash, zsh
  }

  let arguments: Arguments
  let shell: Shell

  init(arguments: Arguments) throws {
    self.arguments = arguments
    let word = arguments[Self.shell]
    guard let shell = Shell(rawValue: word) else {
      throw ValidationError(
        "unknown shell '\(word)' (use \(Shell.allCases.map(\.rawValue).joined(separator: " or ")))")
    }
    self.shell = shell
  }

  func run() throws {
    let script = CompletionScript(
      commands: Groupctl.commands.map { $0.configuration }.filter { !$0.isHidden },
      globalOptions: Groupctl.globalOptions)
    switch shell {
    case .bash: printOut(script.bash())
    case .zsh: printOut(script.zsh())
    }
  }
}

/// A completion script made from the command table.
struct CompletionScript {
  /// One option as the scripts need it: its spellings and what its value is.
  struct Option {
    /// `-v` and `--verbose` for `-v, --verbose`.
    var spellings: [String]
    /// The value's name (`PATH`), or `nil` for a flag.
    var valueName: String?
    var help: String

    init(_ help: OptionHelp) {
      let words = help.name.split(separator: " ").map(String.init)
      spellings = words.filter { $0.hasPrefix("-") }.map { $0.hasSuffix(",") ? String($0.dropLast()) : $0 }
      valueName = words.last.flatMap { $0.hasPrefix("-") ? nil : $0 }
      self.help = help.help
    }

    /// Whether the value is a file or a folder.
    var takesPath: Bool {
      guard let valueName else { return false }
      return ["PATH", "DIR", "FILE"].contains { valueName.contains($0) }
    }
  }

  let commands: [CommandConfiguration]
  let globalOptions: [Option]

  init(commands: [CommandConfiguration], globalOptions: [OptionHelp]) {
    self.commands = commands
    self.globalOptions = globalOptions.map(Option.init)
  }

  private func options(of command: CommandConfiguration) -> [Option] {
    command.options.map(Option.init)
  }

  /// The positional a command completes with words other than paths, and those words.
  private func fixedWords(for command: CommandConfiguration) -> (name: String, words: [String])? {
    for argument in command.arguments {
      switch argument.completion {
      case .choices(let words)?: return (argument.key, words)
      case .commandNames?: return (argument.key, commands.map(\.commandName))
      case nil: continue
      }
    }
    return nil
  }

  // MARK: bash

  /// The bash script: a `_groupctl` function and its `complete` line.
  func bash() -> String {
    let names = commands.map(\.commandName).joined(separator: " ")
    let global = globalOptions.flatMap(\.spellings).joined(separator: " ")
    let globalValues = globalOptions.filter { $0.valueName != nil }.flatMap(\.spellings)
    var valueCases: [String] = []
    let pathOptions = (globalOptions + commands.flatMap(options(of:))).filter(\.takesPath)
    let otherValueOptions = (globalOptions + commands.flatMap(options(of:)))
      .filter { $0.valueName != nil && !$0.takesPath }
    if !pathOptions.isEmpty {
      let spellings = Set(pathOptions.flatMap(\.spellings)).sorted().joined(separator: "|")
      valueCases.append(
        "    \(spellings)) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;")
    }
    if !otherValueOptions.isEmpty {
      let spellings = Set(otherValueOptions.flatMap(\.spellings)).sorted().joined(separator: "|")
      valueCases.append("    \(spellings)) return ;;")
    }
    var commandCases: [String] = []
    for command in commands {
      if let (_, words) = fixedWords(for: command) {
        commandCases.append(
          "    \(command.commandName)) COMPREPLY=($(compgen -W \"\(words.joined(separator: " "))\""
            + " -- \"$cur\")); return ;;")
      } else if !command.options.isEmpty {
        let spellings = options(of: command).flatMap(\.spellings).joined(separator: " ")
        commandCases.append("    \(command.commandName)) options=\"\(spellings)\" ;;")
      }
    }
    return """
      # bash completion for groupctl, made by 'groupctl completion bash'.
      # Use: source <(groupctl completion bash)
      _groupctl() {
        local cur="${COMP_WORDS[COMP_CWORD]}"
        local prev=""
        if ((COMP_CWORD > 0)); then prev="${COMP_WORDS[COMP_CWORD-1]}"; fi
        local commands="\(names)"
        local global_options="\(global)"
        local command="" i
        for ((i = 1; i < COMP_CWORD; i++)); do
          case "${COMP_WORDS[i]}" in
            \(globalValues.joined(separator: "|"))) i=$((i + 1)) ;;
            -*) ;;
            *) command="${COMP_WORDS[i]}"; break ;;
          esac
        done
        COMPREPLY=()
        case "$prev" in
      \(valueCases.joined(separator: "\n"))
        esac
        if [[ -z "$command" ]]; then
          if [[ "$cur" == -* ]]; then
            COMPREPLY=($(compgen -W "$global_options" -- "$cur"))
          else
            COMPREPLY=($(compgen -W "$commands" -- "$cur"))
          fi
          return
        fi
        local options=""
        case "$command" in
      \(commandCases.joined(separator: "\n"))
        esac
        if [[ "$cur" == -* ]]; then
          COMPREPLY=($(compgen -W "$options $global_options" -- "$cur"))
        else
          COMPREPLY=($(compgen -f -- "$cur"))
        fi
      }
      complete -o filenames -F _groupctl groupctl
      """
  }

  // MARK: zsh

  /// Text inside single quotes, and without the characters `_arguments` gives a meaning to
  /// inside an option's `[help]`.
  private func quoted(_ text: String) -> String {
    text.replacingOccurrences(of: "'", with: "'\\''")
      .replacingOccurrences(of: "[", with: "(").replacingOccurrences(of: "]", with: ")")
      .replacingOccurrences(of: ":", with: "\\:")
  }

  /// The `_arguments` specs of some options.
  private func zshSpecs(_ options: [Option]) -> [String] {
    options.map { option in
      let value = option.valueName.map { name in
        ":\(name):" + (option.takesPath ? "_files" : " ")
      } ?? ""
      let help = "[\(quoted(option.help))]\(value)"
      if option.spellings.count == 1 {
        return "'\(option.spellings[0])\(help)'"
      }
      let group = option.spellings.joined(separator: " ")
      let braces = option.spellings.joined(separator: ",")
      return "'(\(group))'{\(braces)}'\(help)'"
    }
  }

  /// The zsh script: a `#compdef` function, which also registers itself when sourced.
  func zsh() -> String {
    let described = commands.map { command in
      "    '\(command.commandName):\(quoted(command.abstract))'"
    }
    var commandCases: [String] = []
    for command in commands {
      if let (name, words) = fixedWords(for: command) {
        commandCases.append(
          "        \(command.commandName)) _values '\(name.lowercased())'"
            + " \(words.joined(separator: " ")) ;;")
      } else if !command.options.isEmpty {
        let specs = zshSpecs(options(of: command)).joined(separator: " ")
        commandCases.append("        \(command.commandName)) _arguments \(specs) '*:argument:_files' ;;")
      }
    }
    let global = zshSpecs(globalOptions).map { "    \($0) \\" }
    return """
      #compdef groupctl
      # zsh completion for groupctl, made by 'groupctl completion zsh'.
      _groupctl() {
        local -a commands
        commands=(
      \(described.joined(separator: "\n"))
        )
        local curcontext="$curcontext" state line
        _arguments -C \\
      \(global.joined(separator: "\n"))
          '1:command:->command' \\
          '*::argument:->argument'
        case $state in
          command) _describe -t commands 'groupctl command' commands ;;
          argument)
            case $words[1] in
      \(commandCases.joined(separator: "\n"))
              *) _files ;;
            esac
            ;;
        esac
      }
      if [[ "${funcstack[1]}" == "_groupctl" ]]; then
        _groupctl "$@"
      else
        compdef _groupctl groupctl
      fi
      """
  }
}

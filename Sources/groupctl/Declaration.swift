/// What one argument of a command is, said once: the parser takes it, the command's help and
/// the completion script show it, and a usage error names it.
struct ArgumentDeclaration: Sendable {
  enum Kind: Sendable, Equatable {
    /// `--json`: there or not (twice, by any of its spellings, is a usage error).
    case flag
    /// `--executable PATH`: the value, given once (twice is a usage error), or with
    /// `repeatable`, each of them.
    case option(value: String, repeatable: Bool)
    /// A word in its place; with `repeating`, every word left.
    case positional(optional: Bool, repeating: Bool)
    /// A DOMAIN in its place (a bundle id, a group id, `BUNDLE-ID:SUITE`, `NSGlobalDomain`,
    /// `-g`).
    case domain(optional: Bool)
    /// The words after `--` that no positional took.
    case passthrough
    /// Every word left as it is, even those that look like options (a value's words).
    case rawWords
  }

  /// How the argument is typed: `--json` or `-v, --verbose` for options and flags, `KEY` for
  /// a positional.
  var spellings: [String]
  var kind: Kind
  /// What an option does, for the OPTIONS section of help; empty for a positional.
  var help: String
  /// How the synopsis writes a positional when not by its name alone (`PATH|-`).
  var shownAs: String? = nil
  /// What the completion script offers for a positional, when not paths.
  var completion: Completion? = nil

  /// The words a shell completes a positional with.
  enum Completion: Sendable, Equatable {
    /// These words (the synopsis shows them as `a|b`).
    case choices([String])
    /// The names of groupctl's commands.
    case commandNames
  }

  /// The name a parsed value is kept under: the last spelling.
  var key: String { spellings.last ?? "" }

  /// The line of the OPTIONS section, for an option or a flag.
  var optionHelp: OptionHelp? {
    switch kind {
    case .flag: OptionHelp(spellings.joined(separator: ", "), help)
    case .option(let value, _): OptionHelp(spellings.joined(separator: ", ") + " " + value, help)
    default: nil
    }
  }

  /// How the synopsis shows it: `KEY`, `[KEY]`, `GROUP-ID...`, `[--json]`, `[--team TEAMID]`.
  var synopsis: String {
    switch kind {
    case .flag: "[\(spellings.last ?? "")]"
    case .option(let value, _): "[\(spellings.last ?? "") \(value)]"
    case .positional(false, false), .domain(false): shown
    case .positional(true, false), .domain(true): "[\(shown)]"
    case .positional(false, true): "\(shown)..."
    case .positional(true, true): "[\(shown)...]"
    case .passthrough: "[-- \(shown)...]"
    case .rawWords: "\(shown)..."
    }
  }

  private var shown: String {
    if let shownAs { return shownAs }
    if case .choices(let words) = completion { return words.joined(separator: "|") }
    return key
  }

  var isOption: Bool {
    switch kind {
    case .flag, .option: true
    default: false
    }
  }
}

/// Anything that declares an argument: ``Argument`` of any value type.
protocol DeclaredArgument: Sendable {
  var declaration: ArgumentDeclaration { get }
}

/// An argument of a command, of the type its parsed value has: a command declares each as a
/// static constant, lists it in its ``CommandConfiguration``, and reads its value from
/// ``Arguments``.
///
/// ```swift
/// static let key = Argument.positional("KEY")
/// static let json = Argument.flag("--json", help: "Print JSON instead of text.")
/// …
/// arguments[Self.key]     // String
/// arguments[Self.json]    // Bool
/// ```
struct Argument<Value>: DeclaredArgument {
  let declaration: ArgumentDeclaration

  fileprivate init(
    _ spellings: [String], _ kind: ArgumentDeclaration.Kind, help: String = "",
    shownAs: String? = nil, completion: ArgumentDeclaration.Completion? = nil
  ) {
    declaration = ArgumentDeclaration(
      spellings: spellings, kind: kind, help: help, shownAs: shownAs, completion: completion)
  }
}

extension Argument where Value == Bool {
  /// A flag, such as `--json`, or `-v, --verbose` (either spelling).
  static func flag(_ spellings: String..., help: String) -> Self {
    Self(spellings, .flag, help: help)
  }
}

extension Argument where Value == String? {
  /// An option with a value, such as `--team TEAMID`: the one given, `nil` without; given
  /// twice, a usage error names it (``repeatableOption(_:value:help:)`` takes every value).
  static func option(_ name: String, value: String, help: String) -> Self {
    Self([name], .option(value: value, repeatable: false), help: help)
  }

  /// A positional that may be left out; the synopsis writes it `shownAs` when given, and the
  /// completion script offers `completion`'s words.
  static func optionalPositional(
    _ name: String, shownAs: String? = nil, completion: ArgumentDeclaration.Completion? = nil
  ) -> Self {
    Self(
      [name], .positional(optional: true, repeating: false), shownAs: shownAs,
      completion: completion)
  }
}

extension Argument where Value == String {
  /// A positional that must be there: "missing argument NAME" otherwise. The synopsis
  /// writes it `shownAs` when given (`PATH|-`), else as `completion`'s choices (`bash|zsh`).
  static func positional(
    _ name: String, shownAs: String? = nil, completion: ArgumentDeclaration.Completion? = nil
  ) -> Self {
    Self(
      [name], .positional(optional: false, repeating: false), shownAs: shownAs,
      completion: completion)
  }
}

extension Argument where Value == [String] {
  /// An option that may be given again, such as `--rw PATH`: every value, in order. Only an
  /// option declared so accumulates; any other given twice is a usage error.
  static func repeatableOption(_ name: String, value: String, help: String) -> Self {
    Self([name], .option(value: value, repeatable: true), help: help)
  }

  /// Every positional left (none or more).
  static func positionals(_ name: String) -> Self {
    Self([name], .positional(optional: true, repeating: true))
  }

  /// The words after `--` that no positional took.
  static func passthrough(_ name: String) -> Self {
    Self([name], .passthrough)
  }

  /// Every word left as it is, even one that looks like an option.
  static func rawWords(_ name: String) -> Self {
    Self([name], .rawWords)
  }
}

extension Argument where Value == DomainArgument {
  /// A DOMAIN that must be there.
  static let domain = Self(["DOMAIN"], .domain(optional: false))
}

extension Argument where Value == DomainArgument? {
  /// A DOMAIN that may be left out.
  static let optionalDomain = Self(["DOMAIN"], .domain(optional: true))
}

/// The parsed values of a command's declared arguments, and the global options.
struct Arguments: Sendable {
  /// `--root` and `--as`, from before or after the command name.
  let globals: GlobalOptions
  /// Whether the words had a `--`.
  let hasTerminator: Bool
  private let values: [String: any Sendable]

  /// Takes `declarations` from `reader`: options and flags first, then the positionals in
  /// their order, then what is left as raw words or after `--`.
  ///
  /// - Throws: ``ValidationError`` naming the argument: a missing positional, an option
  ///   without its value, a flag given a value, an option (not `repeatable`) or a flag given
  ///   twice, a word that looks like an unknown option.
  init(
    parsing reader: inout ArgumentReader, _ declarations: [ArgumentDeclaration],
    globals: GlobalOptions
  ) throws(ValidationError) {
    self.globals = globals
    hasTerminator = reader.hasTerminator
    var values: [String: any Sendable] = [:]
    for declaration in declarations where declaration.isOption {
      switch declaration.kind {
      case .flag:
        var given: [String] = []
        for spelling in declaration.spellings {
          given += repeatElement(spelling, count: try reader.flag(spelling))
        }
        try ArgumentReader.refuseRepeats(of: declaration.key, given: given)
        values[declaration.key] = !given.isEmpty
      case .option(let value, let repeatable):
        let given = try reader.options(declaration.key, value: value)
        if !repeatable {
          try ArgumentReader.refuseRepeats(
            of: declaration.key, given: given.map { _ in declaration.key })
        }
        values[declaration.key] = repeatable ? given as any Sendable : given.first as any Sendable
      default:
        break
      }
    }
    for declaration in declarations where !declaration.isOption {
      let name = declaration.key
      switch declaration.kind {
      case .positional(false, false): values[name] = try reader.positional(name)
      case .positional(true, false): values[name] = try reader.optionalPositional(name)
      case .positional(_, true): values[name] = try reader.remainingPositionals(name)
      case .domain(false): values[name] = try reader.domain()
      case .domain(true): values[name] = try reader.optionalDomain()
      case .passthrough: values[name] = reader.passthrough()
      case .rawWords: values[name] = reader.rawWords()
      case .flag, .option: break
      }
    }
    self.values = values
  }

  /// The parsed value of `argument`, which the command declared.
  subscript<Value>(_ argument: Argument<Value>) -> Value {
    guard let value = values[argument.declaration.key] as? Value else {
      preconditionFailure("\(argument.declaration.key) is not a declared argument of this command")
    }
    return value
  }

  /// The DOMAIN, for a command that declared ``Argument/domain``.
  var domain: DomainArgument { self[.domain] }
}

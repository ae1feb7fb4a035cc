import AppGroups

/// The words after the command name, handed out to a command as it asks.
///
/// - Options and flags (`--json`, `--executable PATH`, `--executable=PATH`)
///   are taken by name from anywhere before `--`. Take them first. One that takes a single
///   value, or a flag, given twice is refused (``refuseRepeats(of:given:)``): which of the
///   two was meant is not guessed.
/// - Positionals are taken in order. One that looks like an option
///   (`-x`, `--x`, but not `-` alone) is refused as an unknown option, so a
///   command that wants such words (`-g`, `-int`, …) takes them with
///   ``domain()`` or ``rawWords()``.
/// - `--` ends the options: every later word is a positional, even one that
///   starts with `-`; ``passthrough()`` takes those that are left.
/// - ``finish()`` reports what nobody took.
struct ArgumentReader {
  /// Words before `--` not yet taken.
  private var words: [String]
  /// Words after `--` not yet taken.
  private var afterTerminator: [String]
  /// Whether the words had a `--`.
  private(set) var hasTerminator: Bool

  init(_ arguments: [String]) {
    if let index = arguments.firstIndex(of: "--") {
      words = Array(arguments[..<index])
      afterTerminator = Array(arguments[(index + 1)...])
      hasTerminator = true
    } else {
      words = arguments
      afterTerminator = []
      hasTerminator = false
    }
  }

  /// Whether a word reads as an option: it starts with `-` and is not `-` alone.
  static func isOptionLike(_ word: String) -> Bool {
    word.count > 1 && word.hasPrefix("-")
  }

  /// Whether every word has been taken.
  var isEmpty: Bool { words.isEmpty && afterTerminator.isEmpty }

  /// Whether `-h` or `--help` appears before `--`, other than as the value of one of
  /// `valueOptions` (`-w --help` gives a password, not a request for help).
  func wantsHelp(valueOptions: Set<String>) -> Bool {
    var index = words.startIndex
    while index < words.endIndex {
      let word = words[index]
      if word == "--help" || word == "-h" { return true }
      index += valueOptions.contains(word) ? 2 : 1
    }
    return false
  }

  /// Takes every `name` before `--`; how many there were.
  ///
  /// - Throws: ``ValidationError`` for `name=VALUE`: a flag takes no value.
  mutating func flag(_ name: String) throws(ValidationError) -> Int {
    var found = 0
    var index = 0
    while index < words.count {
      let word = words[index]
      if word == name {
        words.remove(at: index)
        found += 1
      } else if word.hasPrefix(name + "=") {
        throw ValidationError("option '\(name)' takes no value")
      } else {
        index += 1
      }
    }
    return found
  }

  /// Takes every `name VALUE` and `name=VALUE` before `--`, in order: an option that takes
  /// one value refuses more than one with ``refuseRepeats(of:given:)``.
  ///
  /// - Parameters:
  ///   - name: The option, such as `--executable`.
  ///   - valueName: The value's name in messages, such as `PATH`.
  /// - Throws: ``ValidationError`` when a value is missing or empty.
  mutating func options(_ name: String, value valueName: String) throws(ValidationError) -> [String]
  {
    var values: [String] = []
    var index = 0
    while index < words.count {
      let word = words[index]
      let value: String
      if word == name {
        guard index + 1 < words.count else {
          throw ValidationError("option '\(name)' needs a value (\(valueName))")
        }
        value = words[index + 1]
        words.removeSubrange(index...(index + 1))
      } else if word.hasPrefix(name + "=") {
        value = String(word.dropFirst(name.count + 1))
        words.remove(at: index)
      } else {
        index += 1
        continue
      }
      guard !value.isEmpty else {
        throw ValidationError("option '\(name)' needs a value (\(valueName))")
      }
      values.append(value)
    }
    return values
  }

  /// Takes the next positional.
  ///
  /// - Parameter name: The argument's name in messages, such as `BUNDLE-ID`.
  /// - Throws: ``ValidationError`` when it is missing or looks like an option.
  mutating func positional(_ name: String) throws(ValidationError) -> String {
    guard let value = try optionalPositional(name) else {
      throw ValidationError("missing argument \(name)")
    }
    return value
  }

  /// Takes the next positional, or returns `nil` when there is none.
  mutating func optionalPositional(_ name: String) throws(ValidationError) -> String? {
    if let word = words.first {
      if Self.isOptionLike(word) { throw Self.unknownOption(word) }
      words.removeFirst()
      return word
    }
    if !afterTerminator.isEmpty { return afterTerminator.removeFirst() }
    return nil
  }

  /// Takes every positional left, before and after `--`.
  mutating func remainingPositionals(_ name: String) throws(ValidationError) -> [String] {
    var values: [String] = []
    while let value = try optionalPositional(name) { values.append(value) }
    return values
  }

  /// Takes the next word as it is, even one that looks like an option
  /// (`-g`, `-int`), or `nil` when there is none.
  mutating func nextRawWord() -> String? {
    if !words.isEmpty { return words.removeFirst() }
    if !afterTerminator.isEmpty { return afterTerminator.removeFirst() }
    return nil
  }

  /// Takes every word left as it is, before and after `--` (the `--` itself
  /// is dropped), for commands such as `write` whose values look like
  /// options (`-int 5`, `-array -string a`).
  mutating func rawWords() -> [String] {
    defer {
      words = []
      afterTerminator = []
    }
    return words + afterTerminator
  }

  /// Takes the words after `--` that no positional took, such as the
  /// arguments in `explain DOMAIN KEY -- ARGS...`.
  mutating func passthrough() -> [String] {
    defer { afterTerminator = [] }
    return afterTerminator
  }

  /// Reports the first word nobody took.
  ///
  /// - Throws: ``ValidationError``: "unknown option '--x'" or
  ///   "unexpected argument 'x'".
  func finish() throws(ValidationError) {
    if let option = words.first(where: Self.isOptionLike) { throw Self.unknownOption(option) }
    if let extra = words.first ?? afterTerminator.first {
      throw ValidationError("unexpected argument '\(extra)'")
    }
  }

  /// Refuses an option that takes one value, or a flag, given more than once: `-w X -w Y`,
  /// `--passcode A --passcode B`, `--root A cmd --root B`, `--json --json`, `-v --verbose`.
  /// Keeping the last (or the first) would drop a value the user typed without a word, and a
  /// wrong passcode kept would count toward the device's lockout. The message names the
  /// option, never a value: a value may be a password or a passcode.
  ///
  /// - Parameters:
  ///   - name: The option's name in the message (a flag's last spelling, `--verbose`).
  ///   - given: The spelling of each time it was given, in order (`-v`, `--verbose`); its count
  ///     is how many times.
  /// - Throws: ``ValidationError`` "option '-w' is given twice; give it once" when `given`
  ///   holds more than one.
  static func refuseRepeats(of name: String, given: [String]) throws(ValidationError) {
    guard given.count > 1 else { return }
    let times = given.count == 2 ? "twice" : "\(given.count) times"
    var spellings: [String] = []
    for spelling in given where !spellings.contains(spelling) { spellings.append(spelling) }
    let shown =
      spellings.count > 1
      ? " (as \(spellings.dropLast().joined(separator: ", ")) and \(spellings.last ?? ""))" : ""
    throw ValidationError("option '\(name)' is given \(times)\(shown); give it once")
  }

  static func unknownOption(_ word: String) -> ValidationError {
    let name = word.split(separator: "=", maxSplits: 1).first.map(String.init) ?? word
    guard looksLikeOptionName(name) else {
      return ValidationError("unknown option (not shown: it may be a password or a passcode)")
    }
    return ValidationError("unknown option '\(name)'")
  }

  /// Whether `word` is shaped as an option's name, which a message may show: `-` and one
  /// letter, or `--` and lowercase letters and hyphens (`--json`, `--read-only`). Another
  /// word that starts with `-` (`-9876secret`, `-Hunter2-Secret`) may be a password or a
  /// passcode, and is not shown.
  static func looksLikeOptionName(_ word: String) -> Bool {
    func isLetter(_ scalar: Unicode.Scalar) -> Bool {
      ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }
    let scalars = Array(word.unicodeScalars)
    if scalars.count == 2 { return scalars[0] == "-" && isLetter(scalars[1]) }
    guard scalars.count > 2, scalars[0] == "-", scalars[1] == "-", scalars[2] != "-" else {
      return false
    }
    return scalars.dropFirst(2).allSatisfy { ("a"..."z").contains($0) || $0 == "-" }
  }
}

extension ArgumentReader {
  /// Takes a DOMAIN positional: a bundle id, a group id, `BUNDLE-ID:SUITE`,
  /// `NSGlobalDomain`, or `-g`.
  mutating func domain() throws(ValidationError) -> DomainArgument {
    guard let domain = try optionalDomain() else {
      throw ValidationError("missing argument DOMAIN")
    }
    return domain
  }

  /// Takes a DOMAIN positional, or returns `nil` when there is none.
  mutating func optionalDomain() throws(ValidationError) -> DomainArgument? {
    if words.first == "-g" {
      _ = nextRawWord()
      return .global
    }
    guard let word = try optionalPositional("DOMAIN") else { return nil }
    return try DomainArgument(parsing: word)
  }
}

/// The options a command takes from its raw words in a grammar of its own (keychain's, which is
/// security's: `-a ACCOUNT`, `-w [PASSWORD]`, `-U`), noted as it takes them, so that one given
/// twice is refused as the parser refuses its own (``ArgumentReader/refuseRepeats(of:given:)``).
struct GivenOptions {
  /// Each option taken, by its name, in order.
  private var names: [String] = []

  /// Notes that `name` was given once more.
  mutating func note(_ name: String) {
    names.append(name)
  }

  /// Refuses the first option noted more than once, by its name alone (its values may be a
  /// password).
  func refuseRepeats() throws(ValidationError) {
    var seen: [String] = []
    for name in names where !seen.contains(name) {
      seen.append(name)
      try ArgumentReader.refuseRepeats(of: name, given: names.filter { $0 == name })
    }
  }
}

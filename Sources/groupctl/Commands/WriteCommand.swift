import AppGroups
import Foundation

/// `groupctl write DOMAIN KEY VALUE`, with `defaults write`'s type flags.
struct WriteCommand: ParsableCommand {
  static let key = Argument.positional("KEY")
  static let valueWords = Argument.rawWords("VALUE")

  static let configuration = CommandConfiguration(
    commandName: "write",
    abstract: "Write a value to a key, as defaults write does.",
    arguments: [Argument.domain, key, valueWords],
    usage: """
      write DOMAIN KEY VALUE
      write DOMAIN KEY -string|-int|-float|-bool|-date|-data VALUE
      write DOMAIN KEY -array|-array-add VALUE...
      write DOMAIN KEY -dict|-dict-add KEY VALUE...
      """,
    discussion: typeFlagsHelp
  )

  static let typeFlagsHelp = """
    VALUE:
      word                  A string.
      '(a, b)'  '{ k = v; }'  '<0aff>'  '<integer>5</integer>'
                            A property-list literal, old-style or XML (it starts
                            with '(', '{' or '<'); old-style ones hold strings only.
      -string S             A string, even one that looks like a flag or a literal.
      -int N, -integer N    An integer.
      -float X              A floating-point number.
      -bool B, -boolean B   true, false, yes, no, 1 or 0 (any case).
      -date D               ISO 8601, such as 2026-11-29T12:00:00Z or
                            2026-11-29T14:00:00+02:00, or as read prints it:
                            2026-11-29 12:00:00 +0000.
      -data HEX             Bytes as hex digits, two per byte: 0aff.
      -array V...           An array of strings, or of typed values:
                            -array -int 1 -int 2.
      -array-add V...       Append to the key's array.
      -dict K V...          A dictionary: string keys, each given once, values as
                            in -array.
      -dict-add K V...      Add or replace keys in the key's dictionary (each key
                            given once).

    A word after the command that is --root, --as, --help or -h is taken as that \
    option; write such a value after --, as in: write DOMAIN KEY -- -string --help.

    Exit status 0 means the value is on disk. While another process commits the \
    suite, write waits its turn, up to 10 seconds; past that, or when the disk \
    refuses the write, it exits 1, says why, and nothing is written.
    """

  let arguments: Arguments
  let value: WriteValue

  init(arguments: Arguments) throws {
    self.arguments = arguments
    value = try parseWriteValue(words: arguments[Self.valueWords])
  }

  private var key: String { arguments[Self.key] }

  func run() throws {
    WriteInterruption.take()
    let resolved = try ResolvedDomain(domain, globals: globals)
    try resolved.requireNotForced(key)
    let defaults = try resolved.open()
    switch value {
    case .value(let value):
      try defaults.stage(value, forKey: key)
    case .arrayAdd(let elements):
      // Read, append and write under the suite's lock: nothing another
      // process adds at the same time is lost.
      try defaults.update(forKey: key) { current throws(CommandFailure) in
        switch current {
        case nil: return .array(elements)
        case .array(let existing)?: return .array(existing + elements)
        case let other?: throw mismatch(other, flag: "-array-add", expected: "an array")
        }
      }
    case .dictAdd(let pairs):
      try defaults.update(forKey: key) { current throws(CommandFailure) in
        switch current {
        case nil: return .dictionary(pairs)
        case .dictionary(let existing)?: return .dictionary(existing.merging(pairs) { $1 })
        case let other?: throw mismatch(other, flag: "-dict-add", expected: "a dictionary")
        }
      }
    }
    try resolved.synchronize(defaults)
    ChangeMade.record()
  }

  private func mismatch(_ current: PropertyListValue, flag: String, expected: String)
    -> CommandFailure
  {
    let article = current.typeName == "array" ? "an" : "a"
    return CommandFailure(
      "\(domain): \(flag) cannot add to \(quotedIfNeeded(key)): it holds \(article)"
        + " \(current.typeName), not \(expected); nothing was changed"
        + " (\(flag == "-array-add" ? "-array" : "-dict") replaces the value)")
  }
}

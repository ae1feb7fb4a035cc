import AppGroups

/// `groupctl _parse-value [--compact] WORDS...`: a hidden command that shows
/// how `write` parses its VALUE words and how `read` prints the result.
/// The tests drive value parsing and printing through it.
struct ParseValueCommand: ParsableCommand {
  static let compact = Argument.flag(
    "--compact", help: "Print the value on one line, as watch does.")
  static let words = Argument.rawWords("VALUE-WORDS")

  static let configuration = CommandConfiguration(
    commandName: "_parse-value",
    abstract: "Parse VALUE words as write does; print the value as read, then its type.",
    arguments: [compact, words],
    discussion: """
      Prints the value as read prints it (or as watch does, with --compact), then \
      a line "Type is …" as read-type prints it; -array-add and -dict-add add \
      " (-array-add)" or " (-dict-add)" to that line.
      """,
    isHidden: true
  )

  let arguments: Arguments
  let value: WriteValue

  init(arguments: Arguments) throws {
    self.arguments = arguments
    value = try parseWriteValue(words: arguments[Self.words])
  }

  func run() throws {
    switch value {
    case .value(let value):
      show(value, suffix: "")
    case .arrayAdd(let elements):
      show(.array(elements), suffix: " (-array-add)")
    case .dictAdd(let pairs):
      show(.dictionary(pairs), suffix: " (-dict-add)")
    }
  }

  private func show(_ value: PropertyListValue, suffix: String) {
    printOut(arguments[Self.compact] ? formatCompact(value) : formatDefaults(value))
    printOut(formatReadType(value) + suffix)
  }
}

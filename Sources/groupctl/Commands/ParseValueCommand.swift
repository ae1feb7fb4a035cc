import AppGroups

/// `groupctl _parse-value [--compact] WORDS...`: a hidden command that shows
/// how `write` parses its VALUE words and how `read` prints the result.
/// The tests drive value parsing and printing through it.
struct ParseValueCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "_parse-value",
    abstract: "Parse VALUE words as write does; print the value as read, then its type.",
    usage: "_parse-value [--compact] VALUE-WORDS...",
    discussion: """
      Prints the value as read prints it (or as watch does, with --compact), then \
      a line "Type is …" as read-type prints it; -array-add and -dict-add add \
      " (-array-add)" or " (-dict-add)" to that line.
      """,
    options: [OptionHelp("--compact", "Print the value on one line, as watch does.")],
    isHidden: true
  )

  let compact: Bool
  let value: WriteValue

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    compact = try arguments.flag("--compact")
    value = try parseWriteValue(words: arguments.rawWords())
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
    printOut(compact ? formatCompact(value) : formatDefaults(value))
    printOut(formatReadType(value) + suffix)
  }
}

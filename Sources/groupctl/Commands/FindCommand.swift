import AppGroups
import Foundation

/// `groupctl find WORD`
struct FindCommand: ParsableCommand {
  static let word = Argument.positional("WORD")

  static let configuration = CommandConfiguration(
    commandName: "find",
    abstract: "Search every domain's keys and values for a word.",
    arguments: [word],
    discussion: """
      Prints, for each domain whose name, keys or values contain WORD (ignoring \
      case, as defaults find does), the matching keys: Found N keys in domain 'D': \
      { … }. A domain whose name matches is printed whole.
      """
  )

  let arguments: Arguments

  func run() throws {
    let word = arguments[Self.word]
    let needle = word.lowercased()
    var found = false
    let scan = try DomainScan(globals: globals)
    for (resolved, values) in scan.readable {
      let name = resolved.domain.description
      let matches =
        name.lowercased().contains(needle)
        ? values : values.filter { contains($0.key, needle) || contains($0.value, needle) }
      guard !matches.isEmpty else { continue }
      found = true
      printOut(
        "Found \(matches.count) \(matches.count == 1 ? "key" : "keys") in domain '\(name)': "
          + formatDefaults(.dictionary(matches)))
    }
    if !found { printOut("No domain, key, nor value containing '\(word)'") }
    try scan.finish()
  }

  private func contains(_ text: String, _ needle: String) -> Bool {
    text.lowercased().contains(needle)
  }

  /// Whether a value, or a string, key or scalar inside it, contains the word.
  private func contains(_ value: PropertyListValue, _ needle: String) -> Bool {
    switch value {
    case .string(let string): contains(string, needle)
    case .array(let array): array.contains { contains($0, needle) }
    case .dictionary(let dictionary):
      dictionary.contains { contains($0.key, needle) || contains($0.value, needle) }
    default: contains(formatCompact(value), needle)
    }
  }
}

import AppGroups
import Foundation

/// `groupctl import DOMAIN PATH|-`
struct ImportCommand: ParsableCommand {
  /// A path, or `-` for standard input.
  static let path = Argument.positional("PATH", shownAs: "PATH|-")

  static let configuration = CommandConfiguration(
    commandName: "import",
    abstract: "Replace a domain's contents with a property-list file.",
    arguments: [Argument.domain, path],
    discussion: """
      The file may be binary or XML and its root must be a dictionary; - reads it \
      from standard input. The domain takes the file's keys as one change, which \
      running apps see at once. A file that cannot be read changes nothing.
      """
  )

  let arguments: Arguments

  func run() throws {
    let path = arguments[Self.path]
    let resolved = try ResolvedDomain(domain, globals: globals)
    let source = path == "-" ? "standard input" : path
    let data = PropertyListValue.withByteOrderMark(try readInput(path))
    guard !data.isEmpty else {
      throw CommandFailure(
        "cannot import \(source): it is empty (0 bytes), not a property list; \(domain) was not"
          + " changed")
    }
    // Foundation reads white space as an empty dictionary, which would empty the domain: an
    // input that ended up blank by accident (`echo | groupctl import D -`) is refused, as an
    // empty one is. An empty domain is imported from `{}` or `<dict/>`.
    let text = data.starts(with: [0xEF, 0xBB, 0xBF]) ? data.dropFirst(3) : data[...]
    guard text.contains(where: { !" \t\r\n".utf8.contains($0) }) else {
      throw CommandFailure(
        "cannot import \(source): it holds nothing but white space\(text.count < data.count ? " after a byte-order mark" : ""),"
          + " not a property list (an empty domain is imported from {} or <dict/>); \(domain) was not changed")
    }
    let value: PropertyListValue
    do {
      value = try PropertyListValue(propertyListData: data)
    } catch {
      throw CommandFailure(
        "cannot import \(source): \(error.message); \(domain) was not changed")
    }
    // A bad <data> or <date>, or a key given twice, is read as values the file does not hold;
    // XML after the root value would be dropped.
    if let problem = PropertyListValue.contentAfterRootValue(in: data)
      ?? PropertyListValue.misreadValues(in: data)
    {
      throw CommandFailure("cannot import \(source): \(problem); \(domain) was not changed")
    }
    guard case .dictionary(let values) = value else {
      let article = value.typeName == "array" ? "an" : "a"
      throw CommandFailure(
        "cannot import \(source): its root is \(article) \(value.typeName), not a dictionary;"
          + " \(domain) was not changed")
    }
    // From here the write runs to its end (reading the input, Ctrl-C still ends it).
    WriteInterruption.take()
    let defaults = try resolved.open()
    try defaults.replacePersistentDomain(with: values)
    try resolved.synchronize(defaults)
    ChangeMade.record()
  }
}

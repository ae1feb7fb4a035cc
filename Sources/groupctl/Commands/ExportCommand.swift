import AppGroups
import Foundation

/// `groupctl export DOMAIN PATH|- [--xml]`
struct ExportCommand: ParsableCommand {
  /// A path, or `-` for standard output.
  static let path = Argument.positional("PATH", shownAs: "PATH|-")
  static let xml = Argument.flag("--xml", help: "Write an XML property list instead.")

  static let configuration = CommandConfiguration(
    commandName: "export",
    abstract: "Write a domain's contents to a property-list file.",
    arguments: [Argument.domain, path, xml],
    discussion:
      """
      Writes the values stored in the domain's own file (as read DOMAIN prints \
      them) as a binary property list, as Apple writes them, or as XML with --xml; \
      - writes to standard output.
      """
  )

  let arguments: Arguments

  func run() throws {
    let path = arguments[Self.path]
    let resolved = try ResolvedDomain(domain, globals: globals)
    let values = try resolved.existingValues()
    let data = try PropertyListValue.dictionary(values).propertyListData(
      format: arguments[Self.xml] ? .xml : .binary)
    if path == "-" {
      writeOut(data)
      return
    }
    do {
      try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    } catch {
      throw CommandFailure("cannot write \(path): \(describeFileError(error))")
    }
  }
}

import AppGroups
import Foundation

/// `groupctl export DOMAIN PATH|- [--xml]`
struct ExportCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "export",
    abstract: "Write a domain's contents to a property-list file.",
    usage: "export DOMAIN PATH|- [--xml]",
    discussion:
      """
      Writes the values stored in the domain's own file (as read DOMAIN prints \
      them) as a binary property list, as Apple writes them, or as XML with --xml; \
      - writes to standard output.
      """,
    options: [OptionHelp("--xml", "Write an XML property list instead.")]
  )

  let globals: GlobalOptions
  let domain: DomainArgument
  /// A path, or `-` for standard output.
  let path: String
  let xml: Bool

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    xml = try arguments.flag("--xml")
    domain = try arguments.domain()
    path = try arguments.positional("PATH")
  }

  func run() throws {
    let resolved = try ResolvedDomain(domain, globals: globals)
    let values = try resolved.existingValues()
    let data = try PropertyListValue.dictionary(values).propertyListData(
      format: xml ? .xml : .binary)
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

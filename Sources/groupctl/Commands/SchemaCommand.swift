import AppGroups
import Foundation

/// `groupctl schema DOMAIN [--as BUNDLE-ID]`
struct SchemaCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "schema",
    abstract: "Print the schema version recorded in a suite.",
    usage: "schema DOMAIN [--as BUNDLE-ID]",
    discussion: """
      Prints the version an app's PreferenceSchema recorded in the suite, under the \
      reserved key \(PreferenceSchema.markerKey): a whole number, 0 when the suite has \
      values but no marker (written before any schema). Fails (exit 1) when the suite does \
      not exist or the marker is not a whole number. Nothing is created or changed.
      """
  )

  let globals: GlobalOptions
  let domain: DomainArgument

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    domain = try arguments.domain()
  }

  func run() throws {
    let resolved = try ResolvedDomain(domain, globals: globals)
    let values = try resolved.existingValues()
    switch values[PreferenceSchema.markerKey] {
    case nil:
      printOut("0")
    case .integer(let version)?:
      printOut(String(version))
    case let other?:
      throw CommandFailure(
        "\(domain): \(PreferenceSchema.markerKey) holds a \(other.typeName), not a schema version (\(resolved.path))")
    }
  }
}

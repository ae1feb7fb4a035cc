import AppGroups
import Foundation

/// `groupctl schema DOMAIN [--as BUNDLE-ID]`
struct SchemaCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "schema",
    abstract: "Print the schema version recorded in a suite.",
    arguments: [Argument.domain],
    usage: "schema DOMAIN [--as BUNDLE-ID]",
    discussion: """
      Prints the version an app's PreferenceSchema recorded in the suite, under the \
      reserved key \(PreferenceSchema.markerKey): an integer of 0 or more, 0 when the suite \
      has values but no marker (written before any schema). Fails (exit 1) when the suite \
      does not exist or the marker is anything else (the string "2" is no version: apps \
      migrate nothing until it is fixed). Nothing is created or changed.
      """
  )

  let arguments: Arguments

  func run() throws {
    let resolved = try ResolvedDomain(domain, globals: globals)
    let values = try resolved.existingValues()
    // The library's verdict: what it would migrate from, or why it would not.
    switch PreferenceSchema.Marker(values[PreferenceSchema.markerKey]) {
    case .absent:
      printOut("0")
    case .version(let version):
      printOut(String(version))
    case .malformed(_, let holds):
      throw CommandFailure(
        "\(domain): \(PreferenceSchema.markerKey) holds \(holds), not a schema version (an integer of 0 or more); apps that register a schema migrate nothing until it is fixed (\(resolved.path))")
    }
  }
}

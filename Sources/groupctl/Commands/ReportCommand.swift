import AppGroups
import Foundation

/// `groupctl report DOMAIN [--as BUNDLE-ID] [--values] [-- ARGS...]`
struct ReportCommand: ParsableCommand {
  static let showValues = Argument.flag(
    "--values", help: "Show each key's winning value (left out by default).")
  /// The simulated command line, for the argument domain.
  static let processArguments = Argument.passthrough("ARGS")

  static let configuration = CommandConfiguration(
    commandName: "report",
    abstract: "Describe a domain for a bug report: keys, value types, the domains that hold them.",
    arguments: [Argument.domain, showValues, processArguments],
    usage: "report DOMAIN [--as BUNDLE-ID] [--values] [-- ARGS...]",
    discussion: """
      Prints the schema version recorded in the suite (\(PreferenceSchema.markerKey)), the \
      domains an app reads DOMAIN through, in search order (managed, argument, the suite \
      itself, NSGlobalDomain) with their files, then every key: the type of the value \
      that wins and the domains that hold the key, first match first. Values are left out, \
      so the report can be attached to a bug report as it is; --values adds the winning \
      value of each key.

      ARGS after -- stand for the app's command line, for the argument domain. The \
      registration domain lives in each running app's memory and is not shown. Nothing is \
      created or changed.
      """
  )

  let arguments: Arguments

  private struct Layer {
    var domain: GroupDefaults.Domain
    var values: [String: PropertyListValue]
    var detail: String
  }

  func run() throws {
    let (showValues, processArguments) = (arguments[Self.showValues], arguments[Self.processArguments])
    let argumentValues = try argumentDomain(parsing: processArguments)
    let resolved = try ResolvedDomain(domain, globals: globals, readsData: false)
    let location = resolved.location
    let who = resolved.identity.map { "as \($0.bundleIdentifier)" } ?? "as the administrator"
    var layers: [Layer] = []
    var problems: [String] = []
    func read(_ path: String, _ body: () throws -> [String: PropertyListValue]) -> [String: PropertyListValue] {
      do { return try body() } catch {
        problems.append("\(path): \(Groupctl.describe(error))")
        return [:]
      }
    }
    let managed = read(resolved.managedPath) { try SuiteResolver.managedValues(for: location) }
    layers.append(Layer(domain: .managed, values: managed, detail: resolved.managedPath))
    layers.append(
      Layer(
        domain: .argument, values: argumentValues,
        detail: processArguments.isEmpty ? "no arguments given (put the app's command line after --)" : "the arguments after --"))
    let suite = read(resolved.path) { try resolved.storedValues() ?? [:] }
    // Before the first unlock an app reads neither file: their keys are not what it sees.
    let unavailable = resolved.protectedDataUnavailability
    var hidden = 0
    func visible(_ values: [String: PropertyListValue]) -> [String: PropertyListValue] {
      guard unavailable != nil else { return values }
      hidden += values.count
      return [:]
    }
    let unavailableNote = unavailable == nil ? "" : "unavailable (protected data); "
    layers.append(
      Layer(domain: .application, values: visible(suite), detail: unavailableNote + resolved.path))
    if location.kind != .global {
      let global = try ResolvedDomain(.global, globals: GlobalOptions(root: location.root.path))
      let values = visible(read(global.path) { try global.storedValues() ?? [:] })
      layers.append(Layer(domain: .global, values: values, detail: unavailableNote + global.path))
    }

    printOut("report for \(domain), \(who)\(showValues ? "" : "; values left out (--values shows them)")")
    printOut("schema: \(Self.describeMarker(suite[PreferenceSchema.markerKey]))")
    printOut("domains, first match wins:")
    for layer in layers {
      let name = layer.domain.rawValue
      let count = layer.values.count
      let keys = "\(count) key\(count == 1 ? "" : "s")"
      printOut(
        "  \(name)" + String(repeating: " ", count: max(1, 14 - name.count))
          + keys + String(repeating: " ", count: max(2, 11 - keys.count)) + layer.detail)
    }
    printOut("  registration  not visible: kept in each running app's memory by register(defaults:)")
    for problem in problems { printOut("  unreadable: \(problem)") }
    if let unavailable {
      printOut(
        "  unavailable (protected data): \(unavailable); an app reads neither file until the"
          + " first unlock (\(hidden) key\(hidden == 1 ? "" : "s") on disk)")
    }

    let keys = Set(layers.flatMap { $0.values.keys }).sorted()
    printOut("keys (\(keys.count)):")
    let width = min(40, (keys.map { quotedIfNeeded($0).count }.max() ?? 0) + 2)
    for key in keys {
      let holders = layers.filter { $0.values[key] != nil }
      guard let winner = holders.first, let value = winner.values[key] else { continue }
      var domains = holders.map(\.domain.rawValue).joined(separator: " > ")
      let otherTypes = holders.dropFirst().filter { $0.values[key]?.typeName != value.typeName }
      if !otherTypes.isEmpty {
        domains += " (" + otherTypes.map { "\($0.domain.rawValue): \($0.values[key]?.typeName ?? "")" }
          .joined(separator: ", ") + ")"
      }
      let name = quotedIfNeeded(key)
      var line = "  " + name + String(repeating: " ", count: max(2, width - name.count))
        + value.typeName + String(repeating: " ", count: max(2, 12 - value.typeName.count)) + domains
      if showValues { line += "  = " + formatCompact(value) }
      printOut(line)
    }
  }

  /// The schema marker, described without guessing.
  static func describeMarker(_ marker: PropertyListValue?) -> String {
    switch PreferenceSchema.Marker(marker) {
    case .absent:
      return "no marker (\(PreferenceSchema.markerKey)): version 0, written before any schema"
    case .version(let version):
      return "version \(version) (\(PreferenceSchema.markerKey))"
    case .malformed(_, let holds):
      return "\(PreferenceSchema.markerKey) holds \(holds), not a version number: apps migrate nothing until it is fixed"
    }
  }
}

import AppGroups
import Foundation

/// `groupctl explain DOMAIN KEY [--as BUNDLE-ID] [-- ARGS...]`
struct ExplainCommand: ParsableCommand {
  static let key = Argument.positional("KEY")
  /// The simulated command line, for the argument domain.
  static let processArguments = Argument.passthrough("ARGS")

  static let configuration = CommandConfiguration(
    commandName: "explain",
    abstract: "Show which domain of the search list supplies a key's value, and why.",
    arguments: [Argument.domain, key, processArguments],
    usage: "explain DOMAIN KEY [--as BUNDLE-ID] [-- ARGS...]",
    discussion: """
      Walks the search list an app reads DOMAIN through, first match wins: managed \
      (forced by an administrator), argument (-KEY VALUE on the app's command line), \
      the suite itself, NSGlobalDomain, registration (register(defaults:)). For each \
      layer it prints what it holds for KEY and where that comes from, then which \
      layer wins. With --as, the domain is opened as that app, so a refusal shows \
      here too.

      ARGS after -- stand for the app's command line, for the argument layer. The \
      registration layer lives in each running app's memory: another process, \
      groupctl included, cannot see it.
      """
  )

  let arguments: Arguments

  private var key: String { arguments[Self.key] }

  func run() throws {
    let processArguments = arguments[Self.processArguments]
    let argumentValues = try argumentDomain(parsing: processArguments)
    let resolved = try ResolvedDomain(domain, globals: globals, readsData: false)
    let location = resolved.location
    let who = resolved.identity.map { "as \($0.bundleIdentifier)" } ?? "as the administrator"
    printOut("\(quotedIfNeeded(key)) in \(domain), \(who); the first layer that holds it wins:")

    var layers: [Layer] = []
    let managedPath = resolved.managedPath
    layers.append(
      Layer(.managed, lookUp(in: managedPath) { try SuiteResolver.managedValues(for: location) }))
    layers.append(
      Layer(
        .argument, .readable(argumentValues[key]),
        detail: processArguments.isEmpty
          ? "no arguments given: put the app's command line after --"
          : "the arguments after --: " + processArguments.joined(separator: " ")))
    // Before the first unlock an app reads neither file: say so, and what is on disk.
    let unavailable = resolved.protectedDataUnavailability
    func stored(_ lookup: (State, String)) -> Layer.Lookup {
      guard let unavailable else { return lookup }
      var detail = lookup.1
      if case .readable(let value?) = lookup.0 { detail += "; on disk: \(formatCompact(value))" }
      return (.unavailable(unavailable), detail)
    }
    layers.append(
      Layer(.application, stored(lookUp(in: resolved.path) { try resolved.storedValues() ?? [:] })))
    if location.kind == .global {
      layers.append(Layer(.global, .notApplicable, detail: "the domain itself, above"))
    } else {
      let global = try ResolvedDomain(.global, globals: GlobalOptions(root: location.root.path))
      layers.append(
        Layer(.global, stored(lookUp(in: global.path) { try global.storedValues() ?? [:] })))
    }
    layers.append(
      Layer(
        .registration, .unknown,
        detail: "kept in each running app's memory by register(defaults:);"
          + " another process cannot see it"))

    let winner = layers.firstIndex { $0.value != nil }
    for (index, layer) in layers.enumerated() {
      var state: String
      switch layer.state {
      case .readable(let value?): state = formatCompact(value)
      case .readable(nil): state = "not set"
      case .unreadable(let reason): state = "unreadable: \(reason)"
      case .unavailable(let reason): state = "unavailable (protected data): \(reason)"
      case .unknown: state = "unknown to groupctl"
      case .notApplicable: state = "-"
      }
      if let winner {
        if index == winner {
          state += "   <- wins"
        } else if index > winner, layer.value != nil {
          state += "   (shadowed)"
        }
      }
      let name = layer.domain.rawValue
      printOut("  \(index + 1). \(name)" + String(repeating: " ", count: 14 - name.count) + state)
      printOut(String(repeating: " ", count: 19) + layer.detail)
    }
    if let winner, let value = layers[winner].value {
      printOut(
        "Result: \(formatCompact(key: key, value)), from the \(layers[winner].domain.rawValue)"
          + " layer.")
    } else if unavailable != nil {
      printOut(
        "Result: before the first unlock the app reads \(quotedIfNeeded(key)) from what it"
          + " registers with register(defaults:), if any, else nil; the suite's own value"
          + " cannot be read yet.")
    } else {
      printOut(
        "Result: no layer groupctl can see holds \(quotedIfNeeded(key)): the app reads the value it"
          + " registers with register(defaults:), if any, else nil.")
    }
  }

  private enum State {
    case readable(PropertyListValue?)
    case unreadable(String)
    /// Before the device's first unlock: an app reads nothing from the layer.
    case unavailable(String)
    case unknown
    case notApplicable
  }

  private struct Layer {
    var domain: GroupDefaults.Domain
    var state: State
    var detail: String

    init(_ domain: GroupDefaults.Domain, _ state: State, detail: String) {
      self.domain = domain
      self.state = state
      self.detail = detail
    }

    typealias Lookup = (State, String)

    init(_ domain: GroupDefaults.Domain, _ lookup: Lookup) {
      self.init(domain, lookup.0, detail: lookup.1)
    }

    var value: PropertyListValue? {
      if case .readable(let value) = state { return value }
      return nil
    }
  }

  /// The key's value in one file, and the file's path as the detail.
  private func lookUp(in path: String, _ read: () throws -> [String: PropertyListValue])
    -> (State, String)
  {
    do {
      return (.readable(try read()[key]), path)
    } catch {
      return (.unreadable(Groupctl.describe(error)), path)
    }
  }
}

import Foundation
internal import Synchronization

/// The volatile domains every `GroupDefaults` of this process shares: the
/// registration domain (fallbacks registered at launch, never written to
/// disk), the argument domain (`-key value` pairs from the command line),
/// and any named volatile domain.
enum ProcessDomains {
  private struct State: Sendable {
    var registration: [String: PropertyListValue] = [:]
    var arguments: [String: PropertyListValue] = ProcessDomains.launchArguments
    var volatile: [String: [String: PropertyListValue]] = [:]
  }

  private static let state = Mutex(State())
  /// Whether each domain holds anything, kept under `state`'s lock and read without it: every
  /// `set` asks both (through the search list) and both are empty in most processes.
  private static let holdsRegistration = Atomic(false)
  private static let holdsArguments = Atomic(!ProcessDomains.launchArguments.isEmpty)

  /// The argument domain of this process's own command line, read once, at the first use of
  /// a volatile domain: a value refused (``readArgumentValue(_:)``) is left out and said on
  /// stderr, naming the argument. Empty once ``ignoreLaunchArguments()`` was called first.
  private static let launchArguments: [String: PropertyListValue] = {
    if launchArgumentsIgnored.load(ordering: .acquiring) { return [:] }
    return parseArguments(Array(CommandLine.arguments.dropFirst())) { key, raw, reason in
      let key = PrintedText.escapingControls(key)
      Diagnostics.reportOnce(
        "argument -\(key) '\(PrintedText.escapingControls(raw))' is not a property-list literal"
          + " (\(reason)); -\(key) is left out of \(GroupDefaults.argumentDomain)")
    }
  }()
  private static let launchArgumentsIgnored = Atomic(false)

  /// Keeps this process's command line out of the argument domain: for a tool whose words
  /// are not an app's (`groupctl`), called before any suite is opened.
  static func ignoreLaunchArguments() {
    launchArgumentsIgnored.store(true, ordering: .releasing)
  }

  // An empty domain (the usual case) answers without hashing the key.
  static func registered(_ key: String) -> PropertyListValue? {
    guard holdsRegistration.load(ordering: .acquiring) else { return nil }
    return state.withLock { $0.registration.isEmpty ? nil : $0.registration[key] }
  }

  static func argument(_ key: String) -> PropertyListValue? {
    guard holdsArguments.load(ordering: .acquiring) else { return nil }
    return state.withLock { $0.arguments.isEmpty ? nil : $0.arguments[key] }
  }

  static var registration: [String: PropertyListValue] { state.withLock { $0.registration } }
  static var arguments: [String: PropertyListValue] { state.withLock { $0.arguments } }

  /// Merges `values` into the registration domain; returns the keys whose value changed.
  static func register(_ values: [String: PropertyListValue]) -> [StoredChange] {
    state.withLock { st in
      var changes: [StoredChange] = []
      for (key, value) in values where st.registration[key] != value {
        changes.append(StoredChange(key: key, old: st.registration[key], new: value))
        st.registration[key] = value
      }
      holdsRegistration.store(!st.registration.isEmpty, ordering: .releasing)
      return changes
    }
  }

  /// Replaces the argument domain (tools and tests; the process's own
  /// command line is parsed at first use).
  static func setArguments(_ values: [String: PropertyListValue]) -> [StoredChange] {
    state.withLock { st in
      let changes = SuiteValues.changes(from: st.arguments, to: values)
      st.arguments = values
      holdsArguments.store(!values.isEmpty, ordering: .releasing)
      return changes
    }
  }

  static func replaceRegistration(_ values: [String: PropertyListValue]) -> [StoredChange] {
    state.withLock { st in
      let changes = SuiteValues.changes(from: st.registration, to: values)
      st.registration = values
      holdsRegistration.store(!values.isEmpty, ordering: .releasing)
      return changes
    }
  }

  static func volatileDomain(_ name: String) -> [String: PropertyListValue]? {
    switch name {
    case GroupDefaults.registrationDomain: return registration
    case GroupDefaults.argumentDomain: return arguments
    default: return state.withLock { $0.volatile[name] }
    }
  }

  static func setVolatileDomain(_ values: [String: PropertyListValue], name: String) {
    state.withLock { $0.volatile[name] = values }
  }

  static func removeVolatileDomain(_ name: String) {
    state.withLock { _ = $0.volatile.removeValue(forKey: name) }
  }

  static var volatileDomainNames: [String] {
    state.withLock { [GroupDefaults.registrationDomain, GroupDefaults.argumentDomain] + $0.volatile.keys.sorted() }
  }

  /// Parses `-key value` pairs as Apple's argument domain does: the value is
  /// read as a property list when it is one written in text (`(a, b)`,
  /// `{k = v;}`, `<integer>1</integer>`, a quoted string), and as a plain
  /// string otherwise. Words that are not a `-key value` pair are skipped.
  ///
  /// A value that reads as a property list but holds XML after its root value
  /// (`'<string>a</string><string>b</string>'`), which Foundation's parser reads as the first
  /// value alone, is refused: its key is left out (a value given for it earlier too, as the
  /// later one wins) and `refused` is told the key, the value and the reason.
  static func parseArguments(
    _ words: [String],
    refused: (_ key: String, _ value: String, _ reason: String) -> Void = { _, _, _ in }
  ) -> [String: PropertyListValue] {
    var result: [String: PropertyListValue] = [:]
    var index = 0
    while index < words.count {
      let word = words[index]
      guard word.count > 1, word.hasPrefix("-"), !word.hasPrefix("--"), index + 1 < words.count else {
        index += 1
        continue
      }
      let key = String(word.dropFirst())
      let raw = words[index + 1]
      switch readArgumentValue(raw) {
      case .success(let value): result[key] = value
      case .failure(let refusal):
        result[key] = nil
        refused(key, raw, refusal.reason)
      }
      index += 2
    }
    return result
  }

  /// A refused argument value: why, naming its place.
  struct RefusedValue: Error, Sendable, Equatable {
    let reason: String
  }

  /// The argument value `raw`: the property list it reads as when it is one written in text,
  /// else the plain string; refused when it reads as a property list with XML after its root
  /// value, which Foundation's parser drops (``PropertyListValue/contentAfterRootValue(in:)``
  /// names it and its line). A word that does not read as a property list is taken whole.
  static func readArgumentValue(_ raw: String) -> Result<PropertyListValue, RefusedValue> {
    let data = Data(raw.utf8)
    guard let first = raw.first, "({<\"".contains(first),
      let parsed = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil),
      let value = PropertyListValue(parsed)
    else { return .success(.string(raw)) }
    if let trailing = PropertyListValue.contentAfterRootValue(in: data) {
      return .failure(RefusedValue(reason: trailing))
    }
    return .success(value)
  }
}

internal import Synchronization

/// A schema event, as it goes to the diagnostics handler: a validation outcome or a
/// migration step, described by versions, key, stored type and outcome, never by a value.
///
/// Its ``description`` is one line of `name=value` fields, so a handler (or a person reading
/// a bug report) can pick it apart:
///
/// ```
/// schema: event=validation suite=group.com.example.shared key=theme stored=string outcome=unknownEnumValue
/// schema: event=step suite=group.com.example.shared from=1 to=2 step="rename unread -> unreadCount" key=unread stored=integer outcome=renamed
/// ```
public struct SchemaEvent: Sendable, Hashable, CustomStringConvertible {
  /// What happened.
  public enum Kind: String, Sendable, Hashable {
    /// A typed read or write found a stored value that is not simply valid.
    case validation
    /// One step of a migration, for one key.
    case step
    /// A migration committed: the values and the schema marker landed together.
    case migrated
    /// A migration step threw: nothing was committed.
    case failed
    /// The suite's schema is newer than this process's: nothing is migrated or removed.
    case newerSchema = "newer-schema"
  }

  /// What happened.
  public var kind: Kind
  /// The suite's domain name.
  public var suite: String
  /// The version the suite was at, for a migration's events.
  public var fromVersion: Int?
  /// The version a migration brings it to (its step's migration, for a step).
  public var toVersion: Int?
  /// The migration step's name.
  public var step: String?
  /// The key, when the event is about one.
  public var key: String?
  /// The property-list type of the stored value (`integer`, `string`, …), never the value.
  public var storedType: String?
  /// The outcome: a ``ValidationOutcome`` raw value, or a step's (`renamed`, `removed`, …).
  public var outcome: String

  /// Creates an event.
  public init(
    _ kind: Kind, suite: String, fromVersion: Int? = nil, toVersion: Int? = nil,
    step: String? = nil, key: String? = nil, storedType: String? = nil, outcome: String
  ) {
    self.kind = kind
    self.suite = suite
    self.fromVersion = fromVersion
    self.toVersion = toVersion
    self.step = step
    self.key = key
    self.storedType = storedType
    self.outcome = outcome
  }

  /// The event as one line of `name=value` fields, prefixed `schema:`.
  public var description: String {
    // Appended field by field: `joined(separator:)` costs a process its first call's lookups
    // of generic metadata, more than the whole line.
    var text = "schema: event=" + kind.rawValue + " suite=" + Self.quoted(suite)
    if let fromVersion { text += " from=" + String(fromVersion) }
    if let toVersion { text += " to=" + String(toVersion) }
    if let step { text += " step=" + Self.quoted(step) }
    if let key { text += " key=" + Self.quoted(key) }
    if let storedType { text += " stored=" + storedType }
    text += " outcome=" + outcome
    return text
  }

  private static func quoted(_ text: String) -> String {
    let plain = !text.isEmpty && text.unicodeScalars.allSatisfy {
      $0.isASCII && $0.value > 0x20 && $0 != "\"" && $0 != "=" && $0 != "\\"
    }
    return plain ? text : text.debugDescription
  }

  // MARK: Reporting

  private static let reported = Mutex<Set<String>>([])

  /// Observers of the events themselves, for the package's tests: the diagnostics handler
  /// is one per process, and tests running side by side would take each other's.
  static let observers = Mutex<[UInt64: @Sendable (SchemaEvent) -> Void]>([:])

  /// Sends the event to the diagnostics handler.
  func report() {
    Diagnostics.report(description)
    let targets = Self.observers.withLock { $0.isEmpty ? [] : Array($0.values) }
    for target in targets { target(self) }
  }

  /// Sends the event unless one with the same kind, suite, key and outcome was sent before
  /// by this process.
  func reportOnce() {
    let identity = [kind.rawValue, suite, key ?? "", outcome, step ?? ""].joined(separator: "\u{0}")
    if Self.reported.withLock({ $0.insert(identity).inserted }) { report() }
  }
}

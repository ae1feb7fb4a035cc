/// The declared keys of a suite and its version, with the migrations that bring values an
/// earlier version stored up to this one.
///
/// ```swift
/// let schema = PreferenceSchema(
///   version: 2,
///   keys: [PreferenceKeys.theme, PreferenceKeys.unreadCount],
///   migrations: [
///     Migration(to: 2, [.rename("unread", to: PreferenceKeys.unreadCount)])
///   ])
/// let report = try shared.register(schema)   // at every launch, before the first read
/// ```
///
/// The suite's version is recorded in the suite itself, under the reserved key
/// ``markerKey`` (an integer of 0 or more). A suite without it was written before any schema:
/// version 0, and every migration applies. A marker that is not such an integer is
/// malformed: nothing is migrated until it is fixed. See ``GroupDefaults/register(_:)`` for how a migration runs.
public struct PreferenceSchema: Sendable {
  /// The reserved key holding the version the suite's values are at: `AppGroupsSchemaVersion`,
  /// an integer. No ``PreferenceKey`` may use it.
  public static let markerKey = "AppGroupsSchemaVersion"

  /// The current version (1 or more).
  public let version: Int
  /// The declared keys; their defaults are registered by ``GroupDefaults/register(_:)``.
  public let keys: [any SchemaKey]
  /// Sorted by version.
  public let migrations: [Migration]

  /// Declares a schema.
  ///
  /// A version below 1, two keys with one name, two migrations to one version, or a
  /// migration to a version above `version` is a programming error and stops the process.
  public init(version: Int, keys: [any SchemaKey], migrations: [Migration] = []) {
    precondition(version >= 1, "a schema's version is 1 or more")
    var names = Set<String>()
    for key in keys {
      precondition(names.insert(key.name).inserted, "the schema declares \(key.name) twice")
    }
    let sorted = migrations.sorted { $0.version < $1.version }
    for (index, migration) in sorted.enumerated() {
      precondition(
        migration.version >= 1 && migration.version <= version,
        "a migration to version \(migration.version) in a schema at version \(version)")
      precondition(
        index == 0 || sorted[index - 1].version != migration.version,
        "two migrations to version \(migration.version)")
    }
    self.version = version
    self.keys = keys
    self.migrations = sorted
  }

  /// What a suite's schema marker says: one verdict for the library and `groupctl` (`schema`,
  /// `report`, `doctor`). Only an integer of 0 or more is a version; anything else (the
  /// string `"2"`, the real 3.5, `true`, -1) is malformed: reported, never read as a version,
  /// never taken for 0 and migrated over.
  package enum Marker: Equatable, Sendable {
    /// No marker: the values were written before any schema, version 0.
    case absent
    /// The version the suite's values are at.
    case version(Int)
    /// A marker that is not a version: its stored type (`string`), and what it is in words
    /// ("a string", "a negative integer"), never its value.
    case malformed(storedType: String, holds: String)

    /// The verdict on `stored`, the value under ``PreferenceSchema/markerKey``.
    package init(_ stored: PropertyListValue?) {
      switch stored {
      case nil:
        self = .absent
      case .integer(let version)? where version >= 0:
        self = .version(version)
      case .integer?:
        self = .malformed(storedType: "integer", holds: "a negative integer")
      case .unsignedInteger?:
        self = .malformed(storedType: "integer", holds: "an integer too large for a version")
      case let other?:
        let article = ["array", "integer"].contains(other.typeName) ? "an" : "a"
        self = .malformed(storedType: other.typeName, holds: "\(article) \(other.typeName)")
      }
    }

    /// The version: 0 when there is no marker; `nil` when it is malformed.
    package var version: Int? {
      switch self {
      case .absent: 0
      case .version(let version): version
      case .malformed: nil
      }
    }
  }
}

/// The steps that bring a suite to `version` from the version before it.
public struct Migration: Sendable {
  /// The version a suite is at once the steps have run.
  public let version: Int
  /// The steps, run in order.
  public let steps: [MigrationStep]

  /// The steps run, in order, on a suite below `version`.
  public init(to version: Int, _ steps: [MigrationStep]) {
    self.version = version
    self.steps = steps
  }
}

/// What a conversion does with an old value its mapping cannot convert.
public enum MalformedValuePolicy: String, Sendable, Hashable {
  /// Removes the stored value: reads give the key's default.
  case useDefault
  /// Leaves the stored value as it is: reads validate it (and give the default).
  case keep
  /// Fails the migration: nothing is committed, and the error names the step and the key.
  case fail
}

/// One step of a ``Migration``: rename a key, convert its type, remove it, or a custom change.
///
/// Steps run inside one transaction under the suite's lock, on the values on disk: what
/// every step of every pending migration changes, and the new schema marker, land in one
/// commit, or nothing does.
public struct MigrationStep: Sendable {
  /// A name for diagnostics and errors: `rename unread -> unreadCount`.
  public let name: String
  let apply: @Sendable (inout MigrationTransaction) throws -> Void

  /// A custom step: `body` reads and writes the suite's values through the transaction.
  /// What it throws fails the migration; nothing is committed.
  public static func custom(
    _ name: String, _ body: @escaping @Sendable (inout MigrationTransaction) throws -> Void
  ) -> MigrationStep {
    MigrationStep(name: name, apply: body)
  }

  /// Removes `key` (a key the schema no longer has).
  public static func remove(_ key: String) -> MigrationStep {
    MigrationStep(name: "remove \(key)") { tx in
      guard let stored = tx.values[key] else { return }
      tx.put(nil, forKey: key)
      tx.note(key: key, stored: stored, outcome: "removed")
    }
  }

  /// Renames `old` to `new`, validated by `new`'s declaration.
  ///
  /// - The new key already holds a valid value: it wins; the old value is not copied.
  /// - Else the old value is validated: valid, coerced or clamped, it is written to the new
  ///   key (an enum raw value this build does not know is copied as it is); of the wrong
  ///   type or out of a rejecting range, it is not copied and the old key is kept, so
  ///   nothing is lost (reads of the new key give its default).
  /// - The old key is then removed, unless `keepOld` (for a downgrade to read it).
  public static func rename<Value>(
    _ old: String, to new: PreferenceKey<Value>, keepOld: Bool = false
  ) -> MigrationStep {
    MigrationStep(name: "rename \(old) -> \(new.name)") { tx in
      guard let stored = tx.values[old] else { return }
      if let current = tx.values[new.name], new.validate(current) == .valid {
        if !keepOld { tx.put(nil, forKey: old) }
        tx.note(key: old, stored: stored, outcome: keepOld ? "new-key-already-set" : "new-key-already-set-old-removed")
        return
      }
      let (value, outcome) = new.read(stored)
      switch outcome {
      case .valid, .coerced, .clamped:
        tx.put(try new.storable(value).0, forKey: new.name)
      case .unknownEnumValue:
        tx.put(stored, forKey: new.name)
      case .wrongType, .outOfRange, .absent:
        tx.note(key: old, stored: stored, outcome: "malformed-\(outcome.rawValue)-old-key-kept")
        return
      }
      if !keepOld { tx.put(nil, forKey: old) }
      tx.note(
        key: old, stored: stored,
        outcome: (outcome == .valid ? "renamed" : "renamed-\(outcome.rawValue)") + (keepOld ? "-old-kept" : ""))
    }
  }

  /// Converts `key`'s stored value to the key's declared type with `mapping`.
  ///
  /// A value that already reads as the declared type (exactly) is left alone, so running
  /// the step again changes nothing. A value `mapping` returns `nil` for is malformed:
  /// `onMalformed` says what happens to it. What `mapping` throws fails the migration.
  public static func convert<Value>(
    _ key: PreferenceKey<Value>, onMalformed: MalformedValuePolicy = .useDefault,
    _ mapping: @escaping @Sendable (PropertyListValue) throws -> Value?
  ) -> MigrationStep {
    MigrationStep(name: "convert \(key.name)") { tx in
      guard let stored = tx.values[key.name] else { return }
      if case .exact = key.decodeValue(stored), key.read(stored).outcome == .valid { return }
      tx.currentKey = key.name
      guard let converted = try mapping(stored) else {
        switch onMalformed {
        case .useDefault:
          tx.put(nil, forKey: key.name)
          tx.note(key: key.name, stored: stored, outcome: "malformed-removed")
        case .keep:
          tx.note(key: key.name, stored: stored, outcome: "malformed-kept")
        case .fail:
          throw AppGroupsError(
            .unsupportedValue, "the stored \(stored.typeName) cannot be converted to \(key.typeDescription)")
        }
        return
      }
      tx.put(try key.storable(converted).0, forKey: key.name)
      tx.note(key: key.name, stored: stored, outcome: "converted")
    }
  }
}

/// The suite's values inside a migration: read and changed in memory, committed with the
/// schema marker when every step has run.
public struct MigrationTransaction: Sendable {
  /// The suite's own values (the application domain), as the steps so far left them.
  ///
  /// Changed through the subscript or ``write(_:for:)``, only the keys changed are compared
  /// with the suite's at the commit; changed here directly, the values are compared whole.
  public var values: [String: PropertyListValue] {
    // A change of `values` itself (not through `put`): which keys changed is not known. An
    // observer that does not read the old value lets `values[key] = …` change it in place.
    didSet { changesAreListed = false }
  }
  /// The key a step works on, for the error when it throws: the key last read or written
  /// through the subscript or ``write(_:for:)`` (a step that converts keys one by one and
  /// throws on a value it read is named by that key), unless the step sets it.
  public var currentKey: String?
  var events: [(key: String, storedType: String, outcome: String)] = []
  /// Every key set or removed through ``put(_:forKey:)``, in order (a key may come again).
  private(set) var changedKeys: [String] = []
  /// Whether ``changedKeys`` holds every key whose value may differ from the suite's.
  private(set) var changesAreListed = true
  /// The keys ``put(_:forKey:)`` was given a value for that cannot be stored.
  private(set) var unstorableKeys: [String] = []

  init(values: [String: PropertyListValue]) { self.values = values }

  /// A stored value; setting `nil` removes it. Reading or writing it makes `key` the
  /// ``currentKey``.
  public subscript(key: String) -> PropertyListValue? {
    mutating get {
      currentKey = key
      return values[key]
    }
    set {
      currentKey = key
      put(newValue, forKey: key)
    }
  }

  /// Sets `key` to `value` (`nil` removes it), and lists the key for the commit.
  mutating func put(_ value: PropertyListValue?, forKey key: String) {
    let listed = changesAreListed
    values[key] = value
    changesAreListed = listed
    changedKeys.append(key)
    if value?.unstorableReason != nil { unstorableKeys.append(key) }
  }

  /// A stored value read through `key`'s validation (the default when absent or invalid).
  public func read<Value>(_ key: PreferenceKey<Value>) -> Value { key.read(values[key.name]).value }

  /// Stores `value` for `key`, after its range check.
  /// - Throws: `.outOfRange` (reject policy) or `.unsupportedValue`.
  public mutating func write<Value>(_ value: Value, for key: PreferenceKey<Value>) throws(AppGroupsError) {
    currentKey = key.name
    put(try key.storable(value).0, forKey: key.name)
  }

  /// Records what a step did to a key, for the diagnostics (the stored type, not the value).
  public mutating func note(key: String, stored: PropertyListValue, outcome: String) {
    events.append((key, stored.typeName, outcome))
  }
}

/// What ``GroupDefaults/register(_:)`` found and did.
public struct MigrationReport: Sendable, Hashable, CustomStringConvertible {
  /// What was done.
  public enum Outcome: String, Sendable, Hashable {
    /// This process migrated the suite: the values and the marker landed in one commit.
    case migrated
    /// The suite was already at the schema's version.
    case upToDate
    /// The suite's version is newer than the schema's: nothing was migrated or removed.
    case newerSchema
  }

  /// The suite's domain name.
  public let suiteName: String
  /// The version found (0: no marker).
  public let fromVersion: Int
  /// The schema's version (the suite's version now, unless it was newer).
  public let toVersion: Int
  /// What was done.
  public let outcome: Outcome
  /// The step events (key, stored type, outcome; never values) of a migration.
  public let events: [SchemaEvent]

  /// One sentence: what was found and done.
  public var description: String {
    switch outcome {
    case .migrated:
      return "\(suiteName): migrated from schema version \(fromVersion) to \(toVersion) (\(events.count) key(s) changed)"
    case .upToDate:
      return "\(suiteName): schema version \(toVersion), up to date"
    case .newerSchema:
      return "\(suiteName): schema version \(fromVersion) is newer than this build's \(toVersion); nothing migrated"
    }
  }
}

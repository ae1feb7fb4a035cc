internal import Foundation

/// A typed read: the value, how the stored value validated, and the layer that held it.
public struct PreferenceRead<Value: Sendable>: Sendable {
  /// The value the key reads as: the stored value, converted, clamped, or the default or
  /// fallback (see ``outcome``).
  public let value: Value
  /// How the stored value validated.
  public let outcome: ValidationOutcome
  /// The layer of the search list whose stored value was read (and validated), or `nil`
  /// when no layer holds the key. ``GroupDefaults/Domain/registration`` when only the
  /// registered default is there.
  public let domain: GroupDefaults.Domain?
}

/// A typed key's effective value changed.
public struct PreferenceChange<Value: Sendable>: Sendable {
  /// The value the key read as before the change.
  public let oldValue: Value
  /// The value the key reads as now.
  public let newValue: Value
  /// Whether this process or another one (or an outside edit) made the change.
  public let origin: ChangeOrigin
}

extension GroupDefaults {
  // MARK: Typed keys

  /// The value of a typed key: validated, never `nil` (see ``read(_:)`` for the outcome).
  /// Setting stores the value (clamped into a clamping range); a refusal (a value outside a
  /// rejecting range, a forced key, the size limit) is reported on stderr and the value
  /// already there stays. ``write(_:for:)`` throws the reason instead.
  public subscript<Value>(key: PreferenceKey<Value>) -> Value {
    @inlinable get { currentValue(key) }
    set {
      do { try write(newValue, for: key) } catch { Diagnostics.report("\(error)") }
    }
  }

  /// The subscript's read: a stored value of the key's exact type and no range is returned
  /// at once; anything else takes ``read(_:)``'s way, with its outcome and diagnostic.
  /// Inlinable, so that it is specialised for the key's type where it is called: a typed
  /// read then costs about what an untyped one does.
  @inlinable
  func currentValue<Value>(_ key: PreferenceKey<Value>) -> Value {
    guard case .found(let stored, _) = view.lookup(key.name) else { return key.defaultValue }
    if key.checkRange == nil {
      if key.decodesPlainly, let value = Self.plainValue(stored, as: Value.self) { return value }
      if case .exact(let value) = key.decodeValue(stored) { return value }
    }
    return read(key).value
  }

  /// A stored `Int`, `Bool`, `Double` or `String` as the key's type when it is that type,
  /// what `Value.decode` gives as exact, without the call: where the read is specialised, the
  /// type checks are decided at compile time.
  @inlinable
  static func plainValue<Value>(_ stored: PropertyListValue, as type: Value.Type) -> Value? {
    switch stored {
    case .integer(let v) where Value.self == Int.self: return v as? Value
    case .bool(let v) where Value.self == Bool.self: return v as? Value
    case .real(let v) where Value.self == Double.self: return v as? Value
    case .string(let v) where Value.self == String.self: return v as? Value
    default: return nil
    }
  }

  /// Reads a typed key through the search list and validates the stored value.
  ///
  /// A stored value that is not simply valid is reported once per key and outcome per
  /// process to the diagnostics handler (the key and the stored type, never the value);
  /// the stored value is never changed by a read.
  public func read<Value>(_ key: PreferenceKey<Value>) -> PreferenceRead<Value> {
    guard case .found(let stored, let domain) = view.lookup(key.name) else {
      return PreferenceRead(value: key.defaultValue, outcome: .absent, domain: nil)
    }
    let (value, outcome) = key.read(stored)
    if outcome != .valid {
      SchemaEvent(
        .validation, suite: suiteName, key: key.name, storedType: stored.typeName,
        outcome: outcome.rawValue
      ).reportOnce()
    }
    return PreferenceRead(value: value, outcome: outcome, domain: domain)
  }

  /// Stores `value` for a typed key in this suite.
  ///
  /// A value outside a clamping range is stored as the nearest bound (and reported once).
  /// - Throws: `.outOfRange` outside a rejecting range; `.unsupportedValue` when a
  ///   `Codable` value cannot be encoded; and what ``stage(_:forKey:)`` throws (a forced key,
  ///   the size limit). Nothing is written then.
  public func write<Value>(_ value: Value, for key: PreferenceKey<Value>) throws(AppGroupsError) {
    let stored: PropertyListValue
    let clamped: Bool
    do {
      (stored, clamped) = try key.storable(value)
    } catch {
      throw AppGroupsError(error.code, "\(suiteName): \(error.message)", cause: error.cause)
    }
    if clamped {
      SchemaEvent(
        .validation, suite: suiteName, key: key.name, storedType: stored.typeName,
        outcome: "clamped-on-write"
      ).reportOnce()
    }
    try stage(stored, forKey: key.name)
  }

  /// Removes the suite's value of a typed key: reads give its default again.
  public func reset<Value>(_ key: PreferenceKey<Value>) { removeObject(forKey: key.name) }

  /// Calls `handler` when a typed key's effective value changes, from this process or
  /// another one, with the old and new values as the key reads them.
  /// - Returns: a handle; the observer stops when it is cancelled or released.
  public func observe<Value>(
    _ key: PreferenceKey<Value>, handler: @escaping @Sendable (PreferenceChange<Value>) -> Void
  ) -> Observation {
    observe([key.name]) { changes in
      for change in changes {
        handler(
          PreferenceChange(
            oldValue: key.read(change.oldValue).value, newValue: key.read(change.newValue).value,
            origin: change.origin))
      }
    }
  }

  /// A typed key's new values, as they change, as an asynchronous sequence.
  public func changes<Value>(for key: PreferenceKey<Value>) -> AsyncStream<Value> {
    let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .unbounded)
    let observation = observe(key) { change in continuation.yield(change.newValue) }
    continuation.onTermination = { _ in observation.cancel() }
    return stream
  }

  // MARK: Schema

  /// The schema version recorded in this suite (its marker, ``PreferenceSchema/markerKey``):
  /// 0 when there is none, `nil` when the marker is malformed (not an integer of 0 or more:
  /// the string `"2"` is no version).
  public var storedSchemaVersion: Int? {
    PreferenceSchema.Marker(view.suite.value(forKey: PreferenceSchema.markerKey)).version
  }

  /// Registers a schema at launch: every key's default goes to the registration domain,
  /// then the suite is migrated from its stored version to the schema's.
  ///
  /// Call it once per launch, before the first read.
  ///
  /// - The migration is one transaction under the suite's lock: the steps of every
  ///   migration above the stored version run on the values on disk, and their changes and
  ///   the new marker land in one commit, or nothing does. A process killed at any point
  ///   leaves the old state or the new one; the next launch completes it.
  /// - Two processes registering at once migrate once: the second finds the marker under
  ///   the lock and commits nothing.
  /// - At the schema's version already (in memory, then under the lock), nothing is written.
  /// - A suite at a newer version than the schema's is never migrated down and none of its
  ///   keys is removed; this is reported once.
  /// - A malformed marker (not an integer of 0 or more) is never read as a version: nothing
  ///   is migrated or changed, and `register` throws `.corruptPreferences` saying so.
  ///
  /// Each step's effect on each key (versions, step, key, stored type and outcome, never the
  /// value) goes to the diagnostics handler as a ``SchemaEvent``.
  /// - Returns: what was found and done.
  /// - Throws: `.migrationFailed` naming the step and the key when a step throws (nothing
  ///   is committed: the suite stays at its version); `.corruptPreferences` when the
  ///   suite's marker is malformed (nothing is changed); `.lockTimeout` when another process
  ///   held the lock past the bound; `.io`, `.unsupportedValue` or `.sizeLimitExceeded`
  ///   when the commit fails. Nothing is committed then either. `.protectedDataUnavailable`
  ///   before the device's first unlock (``unavailableReason``): the defaults are
  ///   registered, and the migration waits for the next registration.
  @discardableResult
  public func register(_ schema: PreferenceSchema) throws(AppGroupsError) -> MigrationReport {
    var registration: [String: Any] = [:]
    for key in schema.keys {
      if let value = key.registrationValue { registration[key.name] = value }
    }
    register(defaults: registration)
    return try migrate(to: schema)
  }

  private func migrate(to schema: PreferenceSchema) throws(AppGroupsError) -> MigrationReport {
    let store = view.suite
    if let reason = store.unavailabilityReason {
      throw AppGroupsError(
        .protectedDataUnavailable,
        "\(suiteName): its schema version cannot be read: protected data is unavailable"
          + " (\(reason)); the defaults are registered, and nothing was migrated: register the"
          + " schema again once ProtectedData.didBecomeAvailableNotification is posted")
    }
    // In memory first: a suite at the version costs no lock.
    let marker = PreferenceSchema.Marker(store.value(forKey: PreferenceSchema.markerKey))
    if case .malformed(let storedType, let holds) = marker {
      throw malformedMarker(storedType: storedType, holds: holds)
    }
    if case .version(let seen) = marker {
      if seen == schema.version {
        return MigrationReport(
          suiteName: suiteName, fromVersion: seen, toVersion: seen, outcome: .upToDate, events: [])
      }
      if seen > schema.version { return newer(seen, schema) }
    }
    var report: MigrationReport?
    var failure: AppGroupsError?
    // Reported after the lock is released: a diagnostics handler may be slow.
    var notices: [SchemaEvent] = []
    defer { for notice in notices { notice.report() } }
    let suiteName = self.suiteName
    do {
      try store.atomicUpdate(timeout: store.options.lockTimeout) { current in
        let from: Int
        switch PreferenceSchema.Marker(current[PreferenceSchema.markerKey]) {
        case .absent: from = 0
        case .version(let stored): from = stored
        case .malformed(let storedType, let holds):
          // Made malformed by another process since this one read it: never a version.
          failure = self.malformedMarker(storedType: storedType, holds: holds)
          return .keys([:])
        }
        if from >= schema.version {
          report = MigrationReport(
            suiteName: suiteName, fromVersion: from, toVersion: schema.version,
            outcome: from == schema.version ? .upToDate : .newerSchema, events: [])
          return .keys([:])
        }
        var tx = MigrationTransaction(values: current)
        var events: [SchemaEvent] = []
        for migration in schema.migrations where migration.version > from {
          for step in migration.steps {
            tx.currentKey = nil
            do {
              try step.apply(&tx)
            } catch {
              let reason = (error as? AppGroupsError)?.message ?? "\(error)"
              let key = tx.currentKey.map { ", key \($0.debugDescription)" } ?? ""
              failure = AppGroupsError(
                .migrationFailed,
                "\(suiteName): migrating to schema version \(migration.version), step \(step.name.debugDescription)\(key) failed: \(reason); nothing was committed, the suite stays at version \(from)",
                cause: error as? AppGroupsError)
              notices.append(
                SchemaEvent(
                  .failed, suite: suiteName, fromVersion: from, toVersion: migration.version,
                  step: step.name, key: tx.currentKey, outcome: "nothing-committed"))
              return .keys([:])
            }
            for event in tx.events {
              events.append(
                SchemaEvent(
                  .step, suite: suiteName, fromVersion: from, toVersion: migration.version,
                  step: step.name, key: event.key, storedType: event.storedType,
                  outcome: event.outcome))
            }
            tx.events.removeAll()
          }
        }
        tx.put(.integer(schema.version), forKey: PreferenceSchema.markerKey)
        for key in tx.unstorableKeys {
          if let reason = tx.values[key]?.unstorableReason {
            failure = store.unstorable(key, reason)
            return .keys([:])
          }
        }
        report = MigrationReport(
          suiteName: suiteName, fromVersion: from, toVersion: schema.version, outcome: .migrated,
          events: events)
        return Self.committed(tx, over: current)
      }
    } catch let error as AppGroupsError {
      throw error
    } catch {
      throw AppGroupsError(.io, "\(suiteName): migrating: \(error)")
    }
    if let failure { throw failure }
    guard let report else {
      throw AppGroupsError(.io, "\(suiteName): the migration's transaction did not run")
    }
    switch report.outcome {
    case .migrated:
      for event in report.events { event.report() }
      SchemaEvent(
        .migrated, suite: suiteName, fromVersion: report.fromVersion, toVersion: report.toVersion,
        outcome: "committed"
      ).report()
    case .newerSchema:
      return newer(report.fromVersion, schema)
    case .upToDate:
      break
    }
    return report
  }

  /// What a migration's transaction commits. Its steps changed much of the domain (as many
  /// keys as half of those it holds, and at least a burst's worth,
  /// ``SuiteJournal/burstChanges``): the whole domain, which the store writes as it is. Else
  /// the keys whose values differ from the suite's: those the steps listed, or, when a step
  /// changed ``MigrationTransaction/values`` itself, every key compared. A few changes are a
  /// small commit whatever the suite's key count: the file appends them to a large plist's
  /// journal (a suite of a few keys, one of them large) rather than rewrite it, and listing
  /// them costs next to nothing.
  private static func committed(
    _ tx: MigrationTransaction, over current: [String: PropertyListValue]
  ) -> SuiteStore.AtomicChange {
    let many = tx.changedKeys.count >= SuiteJournal.burstChanges && tx.changedKeys.count * 2 >= current.count
    if tx.changesAreListed && many { return .domain(tx.values) }
    var changes: [String: PropertyListValue?] = [:]
    if tx.changesAreListed {
      changes.reserveCapacity(tx.changedKeys.count)
      for key in tx.changedKeys {
        let value = tx.values[key]
        if current[key] != value { changes.updateValue(value, forKey: key) }
      }
    } else {
      for (key, value) in tx.values where current[key] != value {
        changes.updateValue(value, forKey: key)
      }
      for key in current.keys where tx.values[key] == nil {
        changes.updateValue(nil, forKey: key)
      }
    }
    return .keys(changes)
  }

  /// The error for a malformed marker (see ``PreferenceSchema/Marker``), its event reported
  /// once: the marker's key and stored type, never its value.
  private func malformedMarker(storedType: String, holds: String) -> AppGroupsError {
    SchemaEvent(
      .validation, suite: suiteName, key: PreferenceSchema.markerKey, storedType: storedType,
      outcome: "malformedMarker-not-migrated"
    ).reportOnce()
    return AppGroupsError(
      .corruptPreferences,
      "\(suiteName): its schema marker \(PreferenceSchema.markerKey) holds \(holds), not a version (an integer of 0 or more): the version its values are at is unknown, so nothing was migrated or changed; write the version they are at (groupctl write \(suiteName) \(PreferenceSchema.markerKey) -int N), or delete the marker if they were written before any schema")
  }

  private func newer(_ stored: Int, _ schema: PreferenceSchema) -> MigrationReport {
    SchemaEvent(
      .newerSchema, suite: suiteName, fromVersion: stored, toVersion: schema.version,
      outcome: "not-migrated-unknown-keys-kept"
    ).reportOnce()
    return MigrationReport(
      suiteName: suiteName, fromVersion: stored, toVersion: schema.version, outcome: .newerSchema,
      events: [])
  }
}

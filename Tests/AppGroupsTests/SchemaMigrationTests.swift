@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("Schema: migrations")
struct SchemaMigrationTests {
  @Test func version1IsMigratedToTheCurrentVersion() throws {
    let s = try SchemaSuite(fixture: "v1.plist")
    let d = try s.open()
    var report: MigrationReport?
    let events = try s.events { report = try d.register(Reader.schema) }
    #expect(report?.outcome == .migrated)
    #expect(report?.fromVersion == 0)
    #expect(report?.toVersion == 3)

    // Every effective value, and the domain that supplied it.
    #expect(d.read(Reader.unreadCount).value == 7)
    #expect(d.read(Reader.unreadCount).domain == .application)
    #expect(d.read(Reader.theme).value == .dark)
    #expect(d.read(Reader.theme).domain == .application)
    #expect(d.read(Reader.fontSize).value == 16)
    #expect(d.read(Reader.fontSize).outcome == .valid)
    #expect(d.read(Reader.fontSize).domain == .application)
    #expect(d.read(Reader.tags).value == ["news", "sport"])
    #expect(d.read(Reader.tags).domain == .application)
    #expect(d.read(Reader.layout).value == ReaderLayout(columns: 1, compact: false))
    #expect(d.read(Reader.layout).domain == .registration)
    #expect(d.read(Reader.lastSync).domain == .registration)
    #expect(d.lookup(forKey: "legacyFlag") == nil)
    #expect(d.lookup(forKey: "unread") == nil)
    #expect(d.storedSchemaVersion == 3)

    let disk = try s.onDisk()
    #expect(Set(disk.keys) == ["AppGroupsSchemaVersion", "unreadCount", "theme", "fontSize", "tags"])
    #expect(disk["fontSize"] as? Int == 16)
    #expect(disk["AppGroupsSchemaVersion"] as? Int == 3)

    let steps = events.filter { $0.kind == .step }.map { "\($0.step ?? "") \($0.key ?? "") \($0.storedType ?? "") \($0.outcome)" }
    #expect(steps == [
      "rename unread -> unreadCount unread integer renamed",
      "convert fontSize fontSize string converted",
      "remove legacyFlag legacyFlag boolean removed",
    ])
    #expect(events.filter { $0.kind == .migrated }.count == 1)
  }

  @Test func version2IsMigratedAndItsUnknownAndOutOfRangeValuesAreReadSafely() throws {
    let s = try SchemaSuite(fixture: "v2.plist")
    let d = try s.open()
    let report = try d.register(Reader.schema)
    #expect(report.fromVersion == 2)
    #expect(report.outcome == .migrated)
    #expect(d.read(Reader.layout).value == ReaderLayout(columns: 2, compact: true))
    #expect(d.read(Reader.layout).domain == .application)
    #expect(d.read(Reader.theme).value == .system)
    #expect(d.read(Reader.theme).outcome == .unknownEnumValue)
    #expect(d.read(Reader.theme).domain == .application)
    #expect(d.read(Reader.unreadCount).value == 9_999)
    #expect(d.read(Reader.unreadCount).outcome == .clamped)
    #expect(d.read(Reader.fontSize).value == 20)
    #expect(d.read(Reader.lastSync).value == Date(timeIntervalSince1970: 1_714_564_800))
    #expect(d.read(Reader.lastSync).domain == .application)
    let disk = try s.onDisk()
    #expect(disk["columns"] == nil && disk["compact"] == nil)
    #expect(disk["theme"] as? String == "sepia", "an unknown enum value stays on disk")
    #expect(disk["unreadCount"] as? Int == 12_000, "a read never rewrites a value")
    #expect(disk["AppGroupsSchemaVersion"] as? Int == 3)
  }

  @Test func malformedHistoricalValuesGetTheirStatedOutcomes() throws {
    let s = try SchemaSuite(fixture: "malformed.plist")
    let d = try s.open()
    let events = try s.events { try d.register(Reader.schema) }
    // "unread" = "many": not copied; the old key is kept, nothing is lost.
    #expect(d.read(Reader.unreadCount).value == 0)
    #expect(d.read(Reader.unreadCount).domain == .registration)
    #expect(d.value(forKey: "unread") == .string("many"))
    // "theme" = 42: the default, and the stored value is left alone.
    #expect(d.read(Reader.theme).value == .system)
    #expect(d.read(Reader.theme).outcome == .wrongType)
    #expect(d.read(Reader.theme).domain == .application)
    // "fontSize" = "huge": the conversion cannot map it: removed, the default shows.
    #expect(d.read(Reader.fontSize).value == 14)
    #expect(d.read(Reader.fontSize).domain == .registration)
    // "tags" = "news": not an array of strings: the default.
    #expect(d.read(Reader.tags).value == [])
    #expect(d.read(Reader.tags).outcome == .wrongType)
    #expect(d.read(Reader.tags).domain == .application)
    #expect(d.lookup(forKey: "legacyFlag") == nil)
    let disk = try s.onDisk()
    #expect(Set(disk.keys) == ["AppGroupsSchemaVersion", "unread", "theme", "tags"])
    let outcomes = Dictionary(
      events.filter { $0.kind == .step }.map { ($0.key ?? "", $0.outcome) }, uniquingKeysWith: { a, _ in a })
    #expect(outcomes["unread"] == "malformed-wrongType-old-key-kept")
    #expect(outcomes["fontSize"] == "malformed-removed")
    #expect(outcomes["legacyFlag"] == "removed")
    for event in events {
      let text = event.description.replacingOccurrences(of: s.name, with: "SUITE")
      #expect(!text.contains("many") && !text.contains("huge") && !text.contains("42"), "\(text)")
    }
  }

  @Test func runningItAgainChangesNothing() throws {
    for fixture in ["v1.plist", "v2.plist", "malformed.plist"] {
      let s = try SchemaSuite(fixture: fixture)
      let first = try s.open()
      try first.register(Reader.schema)
      let bytes = try Data(contentsOf: s.file)
      let token = first.changeToken
      // The marker is found; nothing is written (another process: SchemaProcessTests).
      let again = try first.register(Reader.schema)
      #expect(again.outcome == .upToDate)
      #expect(try Data(contentsOf: s.file) == bytes, "\(fixture)")
      #expect(first.changeToken == token, "\(fixture)")
    }
  }

  @Test func aStepThatThrowsCommitsNothingAndNamesTheStepAndTheKey() throws {
    let s = try SchemaSuite(fixture: "v1.plist")
    let before = try Data(contentsOf: s.file)
    let d = try s.open()
    let failing = PreferenceSchema(
      version: 3, keys: Reader.schema.keys,
      migrations: Reader.schema.migrations.filter { $0.version == 2 } + [
        Migration(
          to: 3,
          [
            .custom("check tags") { tx in
              tx["tags"] = .array([])
              throw AppGroupsError(.unsupportedValue, "tags are not what they should be")
            }
          ])
      ])
    let error = caught { try d.register(failing) }
    #expect(error?.code == .migrationFailed)
    #expect(error?.message.contains(#"step "check tags""#) == true, "\(String(describing: error))")
    #expect(error?.message.contains(#"key "tags""#) == true)
    #expect(error?.message.contains("stays at version 0") == true)
    #expect(try Data(contentsOf: s.file) == before, "nothing of the migration landed")
    #expect(d.storedSchemaVersion == 0)
    #expect(d.value(forKey: "unread") == .integer(7))
    #expect(d.lookup(forKey: "unreadCount")?.domain == .registration)
    // The working schema completes it afterwards.
    #expect(try d.register(Reader.schema).outcome == .migrated)
    #expect(d.storedSchemaVersion == 3)
  }

  /// A conversion that moves keys one by one and throws on a value it cannot convert names
  /// the key it read last, not the last key it wrote.
  @Test func aConversionThatThrowsNamesTheKeyItWasReading() throws {
    let s = try SchemaSuite(values: ["item-1": "12", "item-2": "twelve"])
    let before = try Data(contentsOf: s.file)
    let d = try s.open()
    let schema = PreferenceSchema(
      version: 2, keys: [],
      migrations: [
        Migration(
          to: 2,
          [
            .custom("items to entries") { tx in
              for key in ["item-1", "item-2"] {
                guard case .string(let text)? = tx[key], let number = Int(text) else {
                  throw AppGroupsError(.unsupportedValue, "not a number as text")
                }
                tx[key] = nil
                tx["entry-" + key.dropFirst(5)] = .integer(number)
              }
            }
          ])
      ])
    let error = caught { try d.register(schema) }
    #expect(error?.code == .migrationFailed)
    #expect(error?.message.contains(#"key "item-2" failed"#) == true, "\(String(describing: error))")
    #expect(try Data(contentsOf: s.file) == before, "nothing of the migration landed")
  }

  @Test func anOlderProcessNeverMigratesDownAndKeepsWhatItDoesNotKnow() throws {
    let s = try SchemaSuite(fixture: "v1.plist")
    let newer = try s.open(as: TestRoot.app)
    // The newer version (4) adds a key and a theme "sepia".
    let sepiaKey = PreferenceKey<String>("readingMode", default: "scroll")
    let version4 = PreferenceSchema(
      version: 4, keys: Reader.schema.keys + [sepiaKey], migrations: Reader.schema.migrations)
    try newer.register(version4)
    newer.set("sepia", forKey: "theme")
    newer[sepiaKey] = "pages"
    #expect(newer.synchronize())

    // The older version (3) registers its schema on the same suite (in another process in
    // SchemaProcessTests; here the schema is what differs).
    let older = newer
    var report: MigrationReport?
    let events = try s.events { report = try older.register(Reader.schema) }
    #expect(report?.outcome == .newerSchema)
    #expect(report?.fromVersion == 4)
    #expect(events.filter { $0.kind == .newerSchema }.count == 1)
    #expect(older.storedSchemaVersion == 4)
    #expect(older[Reader.theme] == .system, "the older process reads its fallback")
    #expect(older.synchronize())
    var disk = try s.onDisk()
    #expect(disk["theme"] as? String == "sepia")
    #expect(disk["readingMode"] as? String == "pages")
    #expect(disk["AppGroupsSchemaVersion"] as? Int == 4)
    // Until the older process writes a theme it knows, on purpose.
    older[Reader.theme] = .dark
    #expect(older.synchronize())
    disk = try s.onDisk()
    #expect(disk["theme"] as? String == "dark")
    #expect(disk["readingMode"] as? String == "pages")
  }

  @Test func theMigrationAndTheMarkerAreOneCommit() throws {
    let s = try SchemaSuite(fixture: "v2.plist")
    let d = try s.open()
    // The defaults first: their registration is a change of its own.
    var registration: [String: Any] = [:]
    for key in Reader.schema.keys {
      if let value = key.registrationValue { registration[key.name] = value }
    }
    d.register(defaults: registration)
    let seen = Locked<[[GroupDefaults.Change]]>([])
    let observation = d.observe { changes in seen.withLock { $0.append(changes) } }
    defer { observation.cancel() }
    try d.register(Reader.schema)
    // One delivery carrying the marker, and with it every changed key: they were applied
    // together. (Registration changes are process-wide: another test's registration of the
    // same keys may be delivered here too, at any moment, so batches are told apart by the
    // marker, which only a migration writes.)
    let migrated: Set<String> = ["columns", "compact", "layout", "AppGroupsSchemaVersion"]
    let batches = seen.withLock { $0 }.map { Set($0.filter { $0.origin == .thisProcess }.map(\.key)) }
      .filter { $0.contains("AppGroupsSchemaVersion") }
    #expect(batches.count == 1, "\(batches)")
    #expect(batches.first?.isSuperset(of: migrated) == true, "\(batches)")
  }
}

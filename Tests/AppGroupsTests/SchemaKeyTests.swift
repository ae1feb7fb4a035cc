@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("Schema: typed keys and validation")
struct SchemaKeyTests {
  @Test func everyDeclaredTypeRoundTripsThroughTheSuite() throws {
    let s = try SchemaSuite()
    let d = try s.open()
    let flag = PreferenceKey<Bool>("flag", default: false)
    let count = PreferenceKey<Int>("count", default: 0)
    let ratio = PreferenceKey<Double>("ratio", default: 0)
    let name = PreferenceKey<String>("name", default: "")
    let when = PreferenceKey<Date>("when", default: Date(timeIntervalSince1970: 0))
    let blob = PreferenceKey<Data>("blob", default: Data())
    let link = PreferenceKey<URL>("link", default: URL(fileURLWithPath: "/"))
    let list = PreferenceKey<[Int]>("list", default: [])
    let table = PreferenceKey<[String: String]>("table", default: [:])
    let sort = PreferenceKey<ReaderSort>("sort", default: .newest)
    let date = Date(timeIntervalSince1970: 1_714_564_800.25)
    d[flag] = true
    d[count] = 42
    d[ratio] = 0.5
    d[name] = "ada"
    d[when] = date
    d[blob] = Data([1, 2, 3])
    d[link] = URL(string: "https://example.com/a")!
    d[list] = [3, 1, 2]
    d[table] = ["a": "b"]
    d[sort] = .oldest
    d[Reader.theme] = .dark
    d[Reader.layout] = ReaderLayout(columns: 3, compact: true)
    #expect(d.synchronize())

    let fresh = try GroupDefaults(
      suiteName: s.name, identity: AppIdentity(bundleIdentifier: TestRoot.app), root: s.t.root)
    #expect(fresh[flag] == true)
    #expect(fresh[count] == 42)
    #expect(fresh[ratio] == 0.5)
    #expect(fresh[name] == "ada")
    #expect(fresh[when] == date)
    #expect(fresh[blob] == Data([1, 2, 3]))
    #expect(fresh[link] == URL(string: "https://example.com/a"))
    #expect(fresh[list] == [3, 1, 2])
    #expect(fresh[table] == ["a": "b"])
    #expect(fresh[sort] == .oldest)
    #expect(fresh[Reader.theme] == .dark)
    #expect(fresh[Reader.layout] == ReaderLayout(columns: 3, compact: true))

    // Stored as plain property-list values: `plutil -p` and other apps read them.
    let disk = try s.onDisk()
    #expect(disk["flag"] as? Bool == true)
    #expect(disk["sort"] as? Int == 1)
    #expect(disk["theme"] as? String == "dark")
    #expect(disk["link"] as? String == "https://example.com/a")
    let layout = try #require(disk["layout"] as? [String: Any])
    #expect(layout["columns"] as? Int == 3)
    #expect(layout["compact"] as? Bool == true)
  }

  /// The subscript's fast path for a plain `Int`, `Bool`, `Double` or `String` key gives what
  /// the full read gives, whatever is stored; a `Codable` key of the same type keeps its own
  /// decoding.
  @Test func theSubscriptReadsWhatTheFullReadReads() throws {
    let s = try SchemaSuite()
    let d = try s.open()
    let stored: [PropertyListValue] = [
      .integer(7), .bool(true), .real(2.5), .string("12"), .string("x"), .data(Data([1])),
    ]
    for value in stored {
      try d.stage(value, forKey: "k")
      #expect(d[PreferenceKey<Int>("k", default: -1)] == d.read(PreferenceKey<Int>("k", default: -1)).value)
      #expect(d[PreferenceKey<Bool>("k", default: false)] == d.read(PreferenceKey<Bool>("k", default: false)).value)
      #expect(d[PreferenceKey<Double>("k", default: -1)] == d.read(PreferenceKey<Double>("k", default: -1)).value)
      #expect(d[PreferenceKey<String>("k", default: "?")] == d.read(PreferenceKey<String>("k", default: "?")).value)
      let codable = PreferenceKey<Int>(codable: "k", default: -1)
      #expect(d[codable] == d.read(codable).value)
    }
  }

  @Test func theDefaultIsARegistrationValueNeverWrittenToDisk() throws {
    let s = try SchemaSuite()
    let d = try s.open()
    let key = PreferenceKey<Int>("neverWritten.\(s.name)", default: 17)
    #expect(d.read(key).value == 17)
    #expect(d.read(key).outcome == .absent)
    #expect(d.read(key).domain == nil)
    try d.register(PreferenceSchema(version: 1, keys: [key]))
    let registered = d.read(key)
    #expect(registered.value == 17)
    #expect(registered.outcome == .valid)
    #expect(registered.domain == .registration)
    #expect(d.synchronize())
    #expect(try s.onDisk()[key.name] == nil)
    #expect(try s.onDisk()[PreferenceSchema.markerKey] as? Int == 1)
  }

  @Test func anUnknownEnumValueReadsAsTheFallbackAndStaysOnDisk() throws {
    let s = try SchemaSuite(values: ["theme": "sepia", "sort": 9])
    let d = try s.open()
    let withFallback = PreferenceKey<ReaderTheme>("theme", default: .system, fallback: .light)
    let sort = PreferenceKey<ReaderSort>("sort", default: .newest)
    let events = s.events {
      #expect(d[Reader.theme] == .system)
      #expect(d[withFallback] == .light)
      #expect(d.read(Reader.theme).outcome == .unknownEnumValue)
      #expect(d.read(Reader.theme).domain == .application)
      #expect(d[sort] == .newest)
      #expect(d.read(sort).outcome == .unknownEnumValue)
      #expect(d.synchronize())
    }
    #expect(try s.onDisk()["theme"] as? String == "sepia")
    #expect(try s.onDisk()["sort"] as? Int == 9)
    // Once per key and outcome, naming the key and the stored type, never the value.
    let theme = events.filter { $0.key == "theme" }
    #expect(theme.count == 1)
    #expect(theme.first?.description == "schema: event=validation suite=\(s.name) key=theme stored=string outcome=unknownEnumValue")
    let texts = events.map { $0.description.replacingOccurrences(of: s.name, with: "SUITE") }
    #expect(!texts.contains { $0.contains("sepia") || $0.contains("9") }, "\(texts)")
  }

  @Test func aValueOfTheWrongTypeIsCoercedAsAppleDoesOrGivesTheDefault() throws {
    let s = try SchemaSuite(values: [
      "count": "42", "ratio": "2.5", "flag": "YES", "name": 7, "bad": "many", "off": "no",
      "list": ["1", 2], "broken": ["a", Data([1])], "layout": ["columns": "x"],
    ])
    let d = try s.open()
    let count = PreferenceKey<Int>("count", default: 0)
    let bad = PreferenceKey<Int>("bad", default: 5)
    let flag = PreferenceKey<Bool>("flag", default: false)
    let off = PreferenceKey<Bool>("off", default: true)
    let ratio = PreferenceKey<Double>("ratio", default: 0)
    let name = PreferenceKey<String>("name", default: "")
    let list = PreferenceKey<[Int]>("list", default: [])
    let broken = PreferenceKey<[String]>("broken", default: ["default"])
    #expect(d.read(count).value == 42)
    #expect(d.read(count).outcome == .coerced)
    #expect(d.read(ratio).value == 2.5)
    #expect(d.read(flag).value == true)
    #expect(d.read(off).value == false)
    #expect(d.read(name).value == "7")
    #expect(d.read(list).value == [1, 2])
    #expect(d.read(list).outcome == .coerced)
    // No silent 0, false or empty value: the declared default.
    #expect(d.read(bad).value == 5)
    #expect(d.read(bad).outcome == .wrongType)
    #expect(d.read(bad).domain == .application)
    #expect(d.read(broken).value == ["default"])
    #expect(d.read(Reader.layout).value == ReaderLayout(columns: 1, compact: false))
    #expect(d.read(Reader.layout).outcome == .wrongType)
    #expect(d.integer(forKey: "bad") == 0, "the untyped getter keeps Apple's 0")
  }

  @Test func rangesClampOrRejectOnReadAndOnWrite() throws {
    let s = try SchemaSuite(values: ["unreadCount": 12_000, "fontSize": 200])
    let d = try s.open()
    #expect(d.read(Reader.unreadCount).value == 9_999)
    #expect(d.read(Reader.unreadCount).outcome == .clamped)
    #expect(d.read(Reader.fontSize).value == 14)
    #expect(d.read(Reader.fontSize).outcome == .outOfRange)
    #expect(try s.onDisk()["fontSize"] as? Int == 200, "a read never changes what is stored")

    try d.write(-5, for: Reader.unreadCount)
    #expect(d.value(forKey: "unreadCount") == .integer(0))
    let error = caught { try d.write(100, for: Reader.fontSize) }
    #expect(error?.code == .outOfRange)
    #expect(error?.message.contains("fontSize") == true)
    #expect(d.value(forKey: "fontSize") == .integer(200), "a refused write changes nothing")
    d[Reader.fontSize] = 99  // refused, reported on stderr
    #expect(d.value(forKey: "fontSize") == .integer(200))
    try d.write(30, for: Reader.fontSize)
    #expect(d[Reader.fontSize] == 30)
  }

  @Test func aForcedValueWinsAndTheReadSaysWhichDomainSuppliedIt() throws {
    // The argument domain is the process's: a key of this test's own, so that tests running
    // meanwhile do not read the forced value.
    let s = try SchemaSuite()
    let theme = PreferenceKey<ReaderTheme>("theme.\(s.name)", default: .system)
    let d = try s.open()
    d[theme] = .light
    #expect(d.read(theme).domain == .application)
    d.setVolatileDomain([theme.name: "dark"], forName: GroupDefaults.argumentDomain)
    defer { d.removeVolatileDomain(forName: GroupDefaults.argumentDomain) }
    #expect(d.read(theme).value == .dark)
    #expect(d.read(theme).domain == .argument)
  }

  @Test func typedObservationDeliversValidatedValues() async throws {
    let s = try SchemaSuite()
    let d = try s.open()
    let seen = Locked<[PreferenceChange<ReaderTheme>]>([])
    let observation = d.observe(Reader.theme) { change in seen.withLock { $0.append(change) } }
    defer { observation.cancel() }
    var stream = d.changes(for: Reader.unreadCount).makeAsyncIterator()
    d[Reader.theme] = .dark
    d.set("sepia", forKey: "theme")  // a newer version's value: the fallback
    d[Reader.unreadCount] = 3
    #expect(await stream.next() == 3)
    let changes = seen.withLock { $0 }
    #expect(changes.map(\.newValue) == [.dark, .system])
    #expect(changes.map(\.oldValue) == [.system, .dark])
    #expect(changes.allSatisfy { $0.origin == .thisProcess })
  }

  @Test func theMarkerKeyIsReservedAndSchemaEventsCarryNoValues() throws {
    let event = SchemaEvent(
      .step, suite: "group.x", fromVersion: 1, toVersion: 2, step: "rename a -> b", key: "a",
      storedType: "integer", outcome: "renamed")
    #expect(
      event.description
        == #"schema: event=step suite=group.x from=1 to=2 step="rename a -> b" key=a stored=integer outcome=renamed"#)
    #expect(PreferenceSchema.markerKey == "AppGroupsSchemaVersion")
  }
}

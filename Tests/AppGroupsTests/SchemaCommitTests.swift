@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// What a migration hands the store: the whole domain when its steps changed much of the suite
/// (written as one plist, like a replacement), else the keys it changed (a small migration of
/// a large suite may go to the journal); a step that changes `values` itself is compared whole.
@Suite("Schema: the migration's commit")
struct SchemaCommitTests {
  static let count = PreferenceKey<Int>("count", default: 0)

  /// What version 1 left: "unread" and `items` "item-N" strings.
  static func version1(items: Int) -> [String: Any] {
    var values: [String: Any] = ["unread": 3]
    for i in 0..<items { values["item-\(i)"] = String(i) }
    return values
  }

  static func schema(_ steps: [MigrationStep]) -> PreferenceSchema {
    PreferenceSchema(version: 2, keys: [count], migrations: [Migration(to: 2, steps)])
  }

  /// Every "item-N" string becomes the integer "entry-N".
  static let itemsToEntries = MigrationStep.custom("items to entries") { tx in
    for key in tx.values.keys where key.hasPrefix("item-") {
      guard case .string(let text)? = tx[key], let number = Int(text) else { continue }
      tx[key] = nil
      tx["entry-" + key.dropFirst(5)] = .integer(number)
    }
  }

  /// Whether `key` is one of this suite's: the registration domain is process-wide, and other
  /// tests running beside these register their own keys' defaults, which every view hears.
  static func isOurs(_ key: String) -> Bool {
    key.hasPrefix("item-") || key.hasPrefix("entry-")
      || ["unread", "count", "fresh", "stamp", "outside", PreferenceSchema.markerKey].contains(key)
  }

  /// Registers `schema` with an observer on: the report, and the changes this process made to
  /// this suite's keys, by key. The registration of "count"'s default is left out too: another
  /// test running beside this one may be the first to register it.
  static func register(
    _ schema: PreferenceSchema, on d: GroupDefaults
  ) throws -> (MigrationReport, [[String: GroupDefaults.Change]]) {
    d.register(defaults: ["count": 0])
    let seen = Locked<[[String: GroupDefaults.Change]]>([])
    let observation = d.observe { changes in
      var batch: [String: GroupDefaults.Change] = [:]
      for change in changes where change.origin == .thisProcess && isOurs(change.key) {
        if change.key == "count" && change.oldValue == nil && change.newValue == .integer(0) { continue }
        batch[change.key] = change
      }
      if !batch.isEmpty { seen.withLock { $0.append(batch) } }
    }
    defer { observation.cancel() }
    let report = try d.register(schema)
    return (report, seen.withLock { $0 })
  }

  @Test func aMigrationOfMostKeysLandsWholeAndObserversHearEveryKey() throws {
    let s = try SchemaSuite(values: Self.version1(items: 300))
    let d = try s.open()
    let (report, batches) = try Self.register(Self.schema([.rename("unread", to: Self.count), Self.itemsToEntries]), on: d)
    #expect(report.outcome == .migrated)
    #expect(report.events.map(\.outcome) == ["renamed"])

    let disk = try s.onDisk()
    var expected: Set<String> = ["AppGroupsSchemaVersion", "count"]
    for i in 0..<300 { expected.insert("entry-\(i)") }
    #expect(Set(disk.keys) == expected)
    #expect(disk["entry-299"] as? Int == 299)
    #expect(disk["count"] as? Int == 3)
    #expect(d.integer(forKey: "entry-17") == 17)
    #expect(d.object(forKey: "item-17") == nil)
    #expect(d.storedSchemaVersion == 2)

    // One delivery: every key removed, added or changed, with its old and new values.
    #expect(batches.count == 1)
    let changes = batches.first ?? [:]
    #expect(changes.count == 2 * 300 + 3)
    #expect(changes["item-5"]?.oldValue == .string("5") && changes["item-5"]?.newValue == nil)
    #expect(changes["entry-5"]?.oldValue == nil && changes["entry-5"]?.newValue == .integer(5))
    #expect(changes["unread"]?.oldValue == .integer(3) && changes["unread"]?.newValue == nil)
    #expect(changes["count"]?.oldValue == .integer(0) && changes["count"]?.newValue == .integer(3))
    #expect(changes["AppGroupsSchemaVersion"]?.newValue == .integer(2))
  }

  @Test func aMigrationRightAfterThisProcesssOwnCommitIsAllItsOwn() throws {
    let s = try SchemaSuite(values: [:])
    let d = try s.open()
    d.setPersistentDomain(Self.version1(items: 300), forName: s.name)
    #expect(d.synchronize())
    let others = Locked<[String]>([])
    let observation = d.observe { changes in
      for change in changes where change.origin == .otherProcess { others.withLock { $0.append(change.key) } }
    }
    defer { observation.cancel() }
    let (report, batches) = try Self.register(Self.schema([Self.itemsToEntries]), on: d)
    #expect(report.outcome == .migrated)
    #expect(batches.map(\.count) == [2 * 300 + 1])
    #expect(others.withLock { $0 }.isEmpty)
  }

  @Test func aSmallMigrationOfALargeSuiteCommitsOnlyItsKeys() throws {
    let s = try SchemaSuite(values: Self.version1(items: 1_000))
    let d = try s.open()
    let (report, batches) = try Self.register(Self.schema([.rename("unread", to: Self.count)]), on: d)
    #expect(report.outcome == .migrated)
    let disk = try s.onDisk()
    #expect(disk.count == 1_000 + 2)
    #expect(disk["item-999"] as? String == "999")
    #expect(disk["count"] as? Int == 3)
    #expect(disk["unread"] == nil)
    #expect(disk["AppGroupsSchemaVersion"] as? Int == 2)
    #expect(batches.map { Set($0.keys) } == [["unread", "count", "AppGroupsSchemaVersion"]])
    // Three changes to a plist of about 20 KiB: a record appended to its journal.
    #expect(FileManager.default.fileExists(atPath: SuiteJournal.path(of: s.file.path)))
  }

  /// Half of a suite's keys, when the suite has few: still a small commit, which the file
  /// appends to the journal of a large plist (one large value) instead of rewriting it.
  @Test func aFewChangesToASuiteOfFewKeysAreAppendedToItsJournal() throws {
    let blob = Data(repeating: 0x5A, count: 40 * 1024)
    let s = try SchemaSuite(values: ["unread": 3, "attachment": blob])
    let d = try s.open()
    let plist = try Data(contentsOf: s.file)
    let inode = try #require(try FileManager.default.attributesOfItem(atPath: s.file.path)[.systemFileNumber] as? Int)
    // Three changes (unread, count, the marker) over a suite of two keys.
    let (report, batches) = try Self.register(Self.schema([.rename("unread", to: Self.count)]), on: d)
    #expect(report.outcome == .migrated)
    #expect(batches.map { Set($0.keys) } == [["unread", "count", "AppGroupsSchemaVersion"]])
    #expect(FileManager.default.fileExists(atPath: SuiteJournal.path(of: s.file.path)), "the plist was rewritten")
    #expect(try FileManager.default.attributesOfItem(atPath: s.file.path)[.systemFileNumber] as? Int == inode)
    #expect(try Data(contentsOf: s.file) == plist)
    let disk = try s.onDisk()
    #expect(disk.count == 3)
    #expect(disk["count"] as? Int == 3)
    #expect(disk["unread"] == nil)
    #expect(disk["attachment"] as? Data == blob)
    #expect(disk["AppGroupsSchemaVersion"] as? Int == 2)
  }

  @Test func aStepThatChangesTheValuesThemselvesIsComparedWhole() throws {
    let s = try SchemaSuite(values: Self.version1(items: 40))
    let d = try s.open()
    let edit = MigrationStep.custom("edit values") { tx in
      tx.values.removeValue(forKey: "item-3")
      tx.values["fresh"] = .bool(true)
    }
    let (report, batches) = try Self.register(Self.schema([edit]), on: d)
    #expect(report.outcome == .migrated)
    let disk = try s.onDisk()
    #expect(disk["item-3"] == nil && disk["fresh"] as? Bool == true && disk["item-4"] as? String == "4")
    #expect(batches.map { Set($0.keys) } == [["item-3", "fresh", "AppGroupsSchemaVersion"]])

    // The whole domain replaced by a step: every removed key is found.
    let t = try SchemaSuite(values: Self.version1(items: 40))
    let e = try t.open()
    let keepUnread = MigrationStep.custom("keep unread") { tx in tx.values = tx.values.filter { $0.key == "unread" } }
    let (_, replaced) = try Self.register(Self.schema([keepUnread]), on: e)
    #expect(Set(try t.onDisk().keys) == ["unread", "AppGroupsSchemaVersion"])
    #expect(replaced.first?.count == 40 + 1)
  }

  @Test func aValueThatCannotBeStoredFailsTheMigrationAndCommitsNothing() throws {
    let s = try SchemaSuite(values: Self.version1(items: 40))
    let before = try Data(contentsOf: s.file)
    let d = try s.open()
    let nan = PropertyListValue.date(Date(timeIntervalSinceReferenceDate: .nan))
    let bad = MigrationStep.custom("stamp") { tx in tx["stamp"] = nan }
    let error = caught { try d.register(Self.schema([Self.itemsToEntries, bad])) }
    #expect(error?.code == .unsupportedValue)
    #expect(error?.message.contains(#""stamp""#) == true, "\(String(describing: error))")
    #expect(try Data(contentsOf: s.file) == before)
    #expect(d.storedSchemaVersion == 0)
    #expect(d.string(forKey: "item-7") == "7")

    // Set, then replaced by a value that can be: the last value is what counts.
    let fixed = MigrationStep.custom("stamp") { tx in
      tx["stamp"] = nan
      tx["stamp"] = .date(Date(timeIntervalSinceReferenceDate: 0))
    }
    #expect(try d.register(Self.schema([Self.itemsToEntries, fixed])).outcome == .migrated)
    #expect(try s.onDisk()["stamp"] is Date)
  }

  @Test func anotherProcesssChangeFoundUnderTheLockIsTheirs() throws {
    let s = try SchemaSuite(values: Self.version1(items: 100))
    let d = try s.open()
    #expect(d.string(forKey: "item-1") == "1")
    let heard = DispatchSemaphore(value: 0)
    let theirs = Locked<[GroupDefaults.Change]>([])
    let observation = d.observe(["outside"]) { changes in
      theirs.withLock { $0.append(contentsOf: changes) }
      heard.signal()
    }
    defer { observation.cancel() }
    // Another process adds a key; this one has not read it yet when it migrates.
    var values = Self.version1(items: 100)
    values["outside"] = "hello"
    try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
      .write(to: s.file)
    let (report, batches) = try Self.register(Self.schema([Self.itemsToEntries]), on: d)
    #expect(report.outcome == .migrated)
    #expect(heard.wait(timeout: .now() + 10) == .success)
    #expect(theirs.withLock { $0.map(\.origin) } == [.otherProcess])
    #expect(batches.allSatisfy { $0["outside"] == nil })
    #expect(batches.reduce(0) { $0 + $1.count } == 2 * 100 + 1)
    let disk = try s.onDisk()
    #expect(disk["outside"] as? String == "hello" && disk["entry-99"] as? Int == 99 && disk["item-99"] == nil)
  }
}

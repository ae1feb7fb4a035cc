@testable import AppGroups
import AppGroupsTestSupport
import Foundation

// The "reader" app of the schema tests, at version 3, and the suite files its earlier
// versions left (Tests/Fixtures, written by Tests/Fixtures/make-fixtures.py).

enum ReaderTheme: String, Sendable, CaseIterable { case light, dark, system }
enum ReaderSort: Int, Sendable { case newest = 0, oldest = 1 }

struct ReaderLayout: Codable, Sendable, Equatable {
  var columns: Int
  var compact: Bool
}

enum Reader {
  static let theme = PreferenceKey<ReaderTheme>("theme", default: .system)
  static let unreadCount = PreferenceKey<Int>("unreadCount", default: 0, range: 0...9_999)
  static let fontSize = PreferenceKey<Int>("fontSize", default: 14, range: 8...72, policy: .reject)
  static let layout = PreferenceKey<ReaderLayout>(
    codable: "layout", default: ReaderLayout(columns: 1, compact: false))
  static let tags = PreferenceKey<[String]>("tags", default: [])
  static let lastSync = PreferenceKey<Date>(
    "lastSync", default: Date(timeIntervalSinceReferenceDate: 0))

  /// Version 3: version 2 renamed "unread", stored "fontSize" as a number and dropped
  /// "legacyFlag"; version 3 folds "columns" and "compact" into the codable "layout".
  static let schema = PreferenceSchema(
    version: 3,
    keys: [theme, unreadCount, fontSize, layout, tags, lastSync],
    migrations: [
      Migration(
        to: 2,
        [
          .rename("unread", to: unreadCount),
          .convert(fontSize) { old in
            guard case .string(let text) = old else { return nil }
            return Int(text.trimmingCharacters(in: .whitespaces))
          },
          .remove("legacyFlag"),
        ]),
      Migration(
        to: 3,
        [
          .custom("fold columns and compact into layout") { tx in
            guard tx["columns"] != nil || tx["compact"] != nil else { return }
            let columns = PreferenceKey<Int>("columns", default: 1)
            let compact = PreferenceKey<Bool>("compact", default: false)
            try tx.write(ReaderLayout(columns: tx.read(columns), compact: tx.read(compact)), for: layout)
            tx["columns"] = nil
            tx["compact"] = nil
          }
        ]),
    ])

  /// The fixture file `name` (in Tests/Fixtures).
  static func fixture(_ name: String) -> URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Fixtures").appendingPathComponent(name)
  }
}

/// A private suite of its own for one test (so that diagnostics and the process-wide
/// once-per-key reports of tests running side by side never mix), optionally seeded with a
/// fixture file before it is opened.
struct SchemaSuite {
  let t: TestRoot
  let name: String
  let file: URL

  init(_ test: String = #function, fixture: String? = nil, values: [String: Any]? = nil) throws {
    t = try TestRoot(test)
    name = "reader.\(UUID().uuidString)"
    file = try SuiteResolver(identity: AppIdentity(bundleIdentifier: TestRoot.app), root: t.root)
      .resolve(suiteName: name).fileURL
    try FileManager.default.createDirectory(
      at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
    if let fixture {
      try Data(contentsOf: Reader.fixture(fixture)).write(to: file)
    } else if let values {
      try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
        .write(to: file)
    }
  }

  func open(as bundleID: String = TestRoot.app) throws -> GroupDefaults {
    try t.defaults(name, as: bundleID)
  }

  /// The file's values, read with Foundation.
  func onDisk() throws -> [String: Any] { try TestRoot.readOnDisk(file) }

  /// Collects the schema events of this suite while `body` runs.
  func events(during body: () throws -> Void) rethrows -> [SchemaEvent] {
    let seen = Locked<[SchemaEvent]>([])
    let id = UInt64.random(in: 1...UInt64.max)
    let name = self.name
    SchemaEvent.observers.withLock { observers in
      observers[id] = { event in if event.suite == name { seen.withLock { $0.append(event) } } }
    }
    defer { _ = SchemaEvent.observers.withLock { $0.removeValue(forKey: id) } }
    try body()
    return seen.withLock { $0 }
  }
}

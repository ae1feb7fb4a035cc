@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("GroupDefaults")
struct GroupDefaultsTests {
  @Test func readAfterWriteIsImmediate() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set("hello", forKey: "greeting")
    #expect(d.string(forKey: "greeting") == "hello")
    #expect(d.source(forKey: "greeting") == .application)
  }

  @Test func instancesOfOneSuiteShareOneStore() throws {
    let t = try TestRoot()
    let a = try t.defaults(TestRoot.group)
    let b = try t.defaults(TestRoot.group)
    a.set(7, forKey: "shared")
    #expect(b.integer(forKey: "shared") == 7)
    #expect(a.view === b.view)
  }

  @Test func synchronizeWritesABinaryPlistFoundationReads() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set(true, forKey: "flag")
    d.set(1, forKey: "one")
    d.set(2.5, forKey: "real")
    d.set(["a", "b"], forKey: "list")
    #expect(d.synchronize())
    let bytes = try Data(contentsOf: t.groupSuiteFile)
    #expect(bytes.starts(with: Array("bplist00".utf8)))
    var format = PropertyListSerialization.PropertyListFormat.xml
    let plist = try #require(
      try PropertyListSerialization.propertyList(from: bytes, format: &format) as? [String: Any])
    #expect(format == .binary)
    #expect(plist["one"] as? Int == 1)
    #expect(plist["real"] as? Double == 2.5)
    #expect(plist["list"] as? [String] == ["a", "b"])
    // Bool stays Bool on disk: re-read through our reader.
    let value = try PropertyListValue(propertyListData: bytes)
    guard case .dictionary(let dict) = value else { Issue.record("not a dictionary"); return }
    #expect(dict["flag"] == .bool(true))
    #expect(dict["one"] == .integer(1))
  }

  /// Pending changes are a log, compacted as it grows: many sets of a few keys before a
  /// commit land the last value of each.
  @Test func manySetsOfAFewKeysLandTheLastValueOfEach() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set("changed", forKey: "steady")
    d.set("kept", forKey: "steady")
    for i in 0..<5_000 {
      d.set(i, forKey: "counter")
      d.set("v\(i)", forKey: "key-\(i % 7)")
      if i % 1_000 == 999 { d.removeObject(forKey: "key-3") }
    }
    #expect(d.synchronize())
    let plist = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(plist["counter"] as? Int == 4_999)
    for k in 0..<7 where k != 3 {
      let last = (0..<5_000).last { $0 % 7 == k }!
      #expect(plist["key-\(k)"] as? String == "v\(last)")
    }
    #expect(plist["key-3"] == nil)
    #expect(plist["steady"] as? String == "kept")
  }

  @Test func writingTheSameValueDoesNothing() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set("x", forKey: "k")
    #expect(d.synchronize())
    let before = d.changeToken
    d.set("x", forKey: "k")
    #expect(!d.view.suite.hasPendingChanges)
    #expect(d.synchronize())
    #expect(d.changeToken == before)
  }

  @Test func nonPropertyListValuesAreRefusedAndTheOldValueStays() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set("kept", forKey: "k")
    d.set(NSObject(), forKey: "k")
    #expect(d.string(forKey: "k") == "kept")
    #expect(throws: AppGroupsError.self) { try d.stage(nil, forKey: "") }
  }

  @Test func coercions() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    let cases: [(Any, Bool, Int, Double, String?)] = [
      ("YES", true, 0, 0, "YES"),
      ("true", true, 0, 0, "true"),
      ("no", false, 0, 0, "no"),
      ("1", true, 1, 1, "1"),
      ("42", true, 42, 42, "42"),
      ("4.7", true, 4, 4.7, "4.7"),
      ("garbage", false, 0, 0, "garbage"),
      (true, true, 1, 1, "1"),
      (false, false, 0, 0, "0"),
      (7, true, 7, 7, "7"),
      (0, false, 0, 0, "0"),
      (2.9, true, 2, 2.9, "2.9"),
    ]
    for (value, b, i, dbl, s) in cases {
      d.set(value, forKey: "v")
      #expect(d.bool(forKey: "v") == b, "bool of \(value)")
      #expect(d.integer(forKey: "v") == i, "integer of \(value)")
      #expect(d.double(forKey: "v") == dbl, "double of \(value)")
      #expect(d.string(forKey: "v") == s, "string of \(value)")
    }
    d.set(["a", 1] as [Any], forKey: "mixed")
    #expect(d.stringArray(forKey: "mixed") == nil)
    #expect(d.array(forKey: "mixed")?.count == 2)
    d.set(["a", "b"], forKey: "strings")
    #expect(d.stringArray(forKey: "strings") == ["a", "b"])
    d.set(URL(string: "https://example.com/x")!, forKey: "url")
    #expect(d.url(forKey: "url")?.absoluteString == "https://example.com/x")
    d.set("/tmp/file", forKey: "path")
    #expect(d.url(forKey: "path")?.path == "/tmp/file")
    #expect(d.integer(forKey: "missing") == 0)
    #expect(d.object(forKey: "missing") == nil)
    #expect(d.data(forKey: "strings") == nil)
  }

  @Test func searchListPrecedenceAndSources() throws {
    let t = try TestRoot()
    let key = "precedence-\(UUID().uuidString)"
    let d = try t.defaults(TestRoot.group)
    // First launch: nothing anywhere.
    #expect(d.object(forKey: key) == nil)
    #expect(d.source(forKey: key) == nil)
    // Registered fallback.
    d.register(defaults: [key: "registered"])
    #expect(d.string(forKey: key) == "registered")
    #expect(d.source(forKey: key) == .registration)
    // Global domain beats registration.
    let global = try GroupDefaults(administering: SuiteResolver.globalLocation(root: t.root))
    global.set("global", forKey: key)
    #expect(d.string(forKey: key) == "global")
    #expect(d.source(forKey: key) == .global)
    // The user's value beats both.
    d.set("user", forKey: key)
    #expect(d.string(forKey: key) == "user")
    #expect(d.source(forKey: key) == .application)
    // A managed value beats everything and cannot be overwritten.
    let managedURL = t.root.managedPreferencesURL(forDomain: TestRoot.group)
    try FileManager.default.createDirectory(
      at: managedURL.deletingLastPathComponent(), withIntermediateDirectories: true)
    try PropertyListSerialization.data(fromPropertyList: [key: "managed"], format: .binary, options: 0)
      .write(to: managedURL)
    d.synchronize()
    #expect(d.string(forKey: key) == "managed")
    #expect(d.source(forKey: key) == .managed)
    #expect(d.objectIsForced(forKey: key))
    #expect(throws: AppGroupsError.self) { try d.stage(.string("again"), forKey: key) }
    // The user's persisted choice is still there underneath.
    #expect(d.persistentDomain(forName: TestRoot.group)?[key] as? String == "user")
    // Removing the user's value lets the next layer show through.
    try FileManager.default.removeItem(at: managedURL)
    d.synchronize()
    d.removeObject(forKey: key)
    #expect(d.source(forKey: key) == .global)
    d.removeVolatileDomain(forName: GroupDefaults.registrationDomain)
  }

  @Test func argumentDomainOverridesTheUserValueInARealProcess() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set("user", forKey: "mode")
    #expect(d.synchronize())
    let plain = try Product.run(
      "appgroups-worker", ["get", TestRoot.group, "mode"],
      environment: t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(plain.stdout == "user\n")
    let overridden = try Product.run(
      "appgroups-worker", ["get", TestRoot.group, "mode", "-mode", "argument"],
      environment: t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(overridden.stdout == "argument\n")
    #expect(ProcessDomains.parseArguments(["-n", "(1, 2)", "-s", "plain", "stray"])
      == ["n": .array([.string("1"), .string("2")]), "s": .string("plain")])
  }

  @Test func registrationIsVolatileAndNeverReachesDisk() throws {
    let t = try TestRoot()
    let key = "registered-\(UUID().uuidString)"
    let d = try t.defaults(TestRoot.group)
    d.register(defaults: [key: 13])
    d.set("v", forKey: "other")
    #expect(d.synchronize())
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk[key] == nil)
    #expect(onDisk["other"] as? String == "v")
    let child = try Product.run(
      "appgroups-worker", ["get", TestRoot.group, key],
      environment: t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(child.stdout == "(nil)\n")
  }

  @Test func aValueSetWithoutSynchronizeIsThereForTheNextProcess() throws {
    let t = try TestRoot()
    let env = t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 }
    let writer = try Product.run("appgroups-worker", ["set", TestRoot.group, "k", "landed", "--no-sync"], environment: env)
    #expect(writer.status == 0, "\(writer.stderr)")
    let reader = try Product.run("appgroups-worker", ["get", TestRoot.group, "k"], environment: env)
    #expect(reader.stdout == "landed\n")
  }

  @Test func unreadableFileIsMovedAsideNotDeleted() throws {
    let t = try TestRoot()
    let file = t.groupSuiteFile
    try FileManager.default.createDirectory(
      at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
    let garbage = Data("this is not a property list".utf8)
    try garbage.write(to: file)
    let messages = MessageLog()
    // A handler of its own: tests running beside this one add and remove theirs.
    let d = try Diagnostics.withHandler({ messages.append($0) }) { try t.defaults(TestRoot.group) }
    #expect(d.dictionaryRepresentation()["anything"] == nil)
    let siblings = try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path)
    let aside = try #require(siblings.first { $0.hasPrefix("\(TestRoot.group).plist.unreadable-") })
    let moved = try Data(contentsOf: file.deletingLastPathComponent().appendingPathComponent(aside))
    #expect(moved == garbage)
    #expect(messages.lines.contains { $0.contains(file.path) && $0.contains(aside) })
    // The suite goes on.
    d.set("after", forKey: "k")
    #expect(d.synchronize())
    #expect(try TestRoot.readOnDisk(file)["k"] as? String == "after")
  }

  @Test func wrongRootTypeIsQuarantinedToo() throws {
    let t = try TestRoot()
    let file = t.groupSuiteFile
    try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
    try PropertyListSerialization.data(fromPropertyList: ["an", "array"], format: .binary, options: 0).write(to: file)
    _ = try Diagnostics.withHandler({ _ in }) { try t.defaults(TestRoot.group) }
    let siblings = try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path)
    #expect(siblings.contains { $0.contains(".unreadable-") })
  }

  @Test func sizeLimitRefusesAndKeepsExistingValues() throws {
    let t = try TestRoot()
    let d = try GroupDefaults(
      suiteName: TestRoot.group, identity: AppIdentity(bundleIdentifier: TestRoot.app), root: t.root,
      options: .init(sizeLimit: 10_000))
    d.set("small", forKey: "kept")
    let posted = MessageLog()
    let observer = NotificationCenter.default.addObserver(
      forName: GroupDefaults.sizeLimitExceededNotification, object: d, queue: nil
    ) { _ in posted.append("posted") }
    defer { NotificationCenter.default.removeObserver(observer) }
    #expect(throws: AppGroupsError.self) {
      try d.stage(.data(Data(count: 20_000)), forKey: "huge")
    }
    Diagnostics.withHandler({ _ in }) { d.set(Data(count: 20_000), forKey: "huge2") }
    #expect(d.object(forKey: "huge") == nil)
    #expect(d.object(forKey: "huge2") == nil)
    #expect(d.string(forKey: "kept") == "small")
    #expect(posted.lines.count == 2)
  }

  /// A limit above the largest is taken as the largest: no domain is written that its readers
  /// would find too large to read (a file over 256 MiB is moved aside unread).
  @Test func aSizeLimitAboveTheLargestIsTakenAsTheLargest() throws {
    let t = try TestRoot()
    let d = try GroupDefaults(
      suiteName: TestRoot.group, identity: AppIdentity(bundleIdentifier: TestRoot.app), root: t.root,
      options: .init(sizeLimit: .max))
    #expect {
      try d.stage(.data(Data(count: GroupDefaults.Options.maximumSizeLimit + 1)), forKey: "huge")
    } throws: { error in
      (error as? AppGroupsError)?.code == .sizeLimitExceeded
        && (error as? AppGroupsError)?.message.contains(
          "over its limit of \(GroupDefaults.Options.maximumSizeLimit) bytes") == true
    }
    #expect(d.object(forKey: "huge") == nil)
  }

  @Test func persistentAndVolatileDomains() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.setPersistentDomain(["a": 1, "b": "two"], forName: TestRoot.group)
    #expect(d.integer(forKey: "a") == 1)
    #expect(d.synchronize())
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile).count == 2)
    d.removePersistentDomain(forName: TestRoot.group)
    #expect(d.object(forKey: "a") == nil)
    #expect(d.synchronize())
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile).isEmpty)
    d.setVolatileDomain(["v": 1], forName: "Scratch")
    #expect(d.volatileDomain(forName: "Scratch")["v"] as? Int == 1)
    #expect(d.volatileDomainNames.contains("Scratch"))
    d.removeVolatileDomain(forName: "Scratch")
    #expect(!d.volatileDomainNames.contains("Scratch"))
    #expect(d.object(forKey: "v") == nil, "a custom volatile domain is not in the search list")
  }

  @Test func tokenMovesOnCommitAndOnOutsideEdit() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set(1, forKey: "k")
    #expect(d.synchronize())
    let t1 = d.changeToken
    #expect(!d.hasChanged(since: t1))
    d.set(2, forKey: "k")
    #expect(d.synchronize())
    let t2 = d.changeToken
    #expect(t2 > t1)
    // An outside edit: rewrite the file with Foundation. It takes no lock and moves no token:
    // hasChanged(since:) shows it once the change monitor has read its event (the observer
    // hears of it then); changeToken, which looks at the file, moves at once.
    let log = ChangeLog()
    let observation = d.observe(["k"], handler: log.record)
    defer { observation.cancel() }
    try PropertyListSerialization.data(fromPropertyList: ["k": 99], format: .xml, options: 0)
      .write(to: t.groupSuiteFile)
    #expect(log.wait { $0.newValue == .integer(99) } != nil)
    #expect(d.hasChanged(since: t2))
    #expect(d.changeToken > t2)
    // Either this call or the change monitor (which heard of the edit too) re-reads it.
    _ = d.refreshIfChanged()
    #expect(d.integer(forKey: "k") == 99)
    #expect(!d.refreshIfChanged())
  }

  @Test func atomicIncrementInOneProcess() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    DispatchQueue.concurrentPerform(iterations: 4) { _ in
      for _ in 0..<50 { _ = try? d.increment(forKey: "counter") }
    }
    #expect(d.integer(forKey: "counter") == 200)
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["counter"] as? Int == 200)
  }
}

/// A thread-safe list of lines for tests.
final class MessageLog: @unchecked Sendable {
  private let lock = NSLock()
  private var storage: [String] = []
  func append(_ line: String) { lock.withLock { storage.append(line) } }
  var lines: [String] { lock.withLock { storage } }
}

@Suite("GroupDefaults refusals")
struct GroupDefaultsRefusalTests {
  @Test func valuesTheReaderWouldRefuseAreNeverWritten() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    var deep = PropertyListValue.array([])
    for _ in 0..<600 { deep = .array([deep]) }
    #expect(caught { try d.stage(deep, forKey: "deep") }?.code == .unsupportedValue)
    let nanDate = PropertyListValue.date(Date(timeIntervalSinceReferenceDate: .nan))
    #expect(caught { try d.stage(nanDate, forKey: "when") }?.code == .unsupportedValue)
    #expect(caught { try d.update(forKey: "when") { _ in nanDate } }?.code == .unsupportedValue)
    #expect(d.object(forKey: "deep") == nil && d.object(forKey: "when") == nil)
  }
}

@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// `GroupDefaults` held to the behaviours Foundation's own `UserDefaults` tests check
/// (swift-corelibs-foundation, `Tests/Foundation/TestUserDefaults.swift`), each restated
/// here against a suite in a temporary root, and to behaviours Apple documents for
/// `UserDefaults` that those tests leave out. Each test's name says which Foundation
/// behaviour it holds us to (`test_…` names the Foundation test). Where `GroupDefaults`
/// differs on purpose (README, "Where Apple differs"), the test asserts our behaviour.
///
/// The registration and volatile domains belong to the whole process, which other tests
/// share: keys and domain names registered here are unique to each test.
@Suite("Foundation conformance")
struct FoundationConformanceTests {
  /// The app's standard suite in a fresh root: what `UserDefaults.standard` is to an app.
  /// The root is deleted when the `TestRoot` goes: keep it alive to the end of the test.
  private func standardSuite(_ name: String = #function) throws -> (TestRoot, GroupDefaults) {
    let t = try TestRoot(name)
    return (t, try t.defaults(nil))
  }

  /// A key no other test registers.
  private func uniqueKey(_ name: String = #function) -> String {
    "key1-\(name.prefix { $0 != "(" })-\(UUID().uuidString)"
  }

  // MARK: Writing (test_createUserDefaults)

  @Test("set(_:forKey:) of an integer on the standard suite stores it (test_createUserDefaults)")
  func createUserDefaults() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(4, forKey: "ourKey")
    #expect(d.integer(forKey: "ourKey") == 4)
    #expect(d.synchronize())
  }

  // MARK: Registered values (test_getRegisteredDefaultItem…)

  @Test("A registered NSNumber shows through when the suite holds no value (test_getRegisteredDefaultItem)")
  func registeredNumber() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    d.register(defaults: [key: NSNumber(value: Int(5))])
    d.removeObject(forKey: key)
    #expect(d.integer(forKey: key) == 5)
  }

  @Test("string(forKey:) of a registered NSString is the String (test_getRegisteredDefaultItem_NSString)")
  func registeredNSString() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    d.register(defaults: [key: "hello" as NSString])
    d.removeObject(forKey: key)
    #expect(d.string(forKey: key) == "hello")
  }

  @Test("string(forKey:) of a registered String (test_getRegisteredDefaultItem_String)")
  func registeredString() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    d.register(defaults: [key: "hello"])
    d.removeObject(forKey: key)
    #expect(d.string(forKey: key) == "hello")
  }

  @Test("url(forKey:) of a registered NSURL is the URL (test_getRegisteredDefaultItem_NSURL)")
  func registeredNSURL() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    d.register(defaults: [key: NSURL(fileURLWithPath: "/hello/world")])
    d.removeObject(forKey: key)
    #expect(d.url(forKey: key) == URL(fileURLWithPath: "/hello/world"))
  }

  @Test("url(forKey:) of a registered URL (test_getRegisteredDefaultItem_URL)")
  func registeredURL() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    d.register(defaults: [key: URL(fileURLWithPath: "/hello/world")])
    d.removeObject(forKey: key)
    #expect(d.url(forKey: key) == URL(fileURLWithPath: "/hello/world"))
  }

  @Test("data(forKey:) of a registered NSData is the Data (test_getRegisteredDefaultItem_NSData)")
  func registeredNSData() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    let bytes: [UInt8] = [0, 1, 2, 3, 4]
    d.register(defaults: [key: NSData(bytes: bytes, length: bytes.count)])
    d.removeObject(forKey: key)
    #expect(d.data(forKey: key) == Data(bytes))
  }

  @Test("data(forKey:) of a registered Data (test_getRegisteredDefaultItem_Data)")
  func registeredData() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    let bytes: [UInt8] = [0, 1, 2, 3, 4]
    d.register(defaults: [key: Data(bytes)])
    d.removeObject(forKey: key)
    #expect(d.data(forKey: key) == Data(bytes))
  }

  @Test("bool(forKey:) parses a registered \"YES\" (test_getRegisteredDefaultItem_BoolFromString)")
  func registeredBoolFromString() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    d.register(defaults: [key: "YES"])
    d.removeObject(forKey: key)
    #expect(d.bool(forKey: key))
  }

  @Test("integer(forKey:) parses a registered \"1234\" (test_getRegisteredDefaultItem_IntFromString)")
  func registeredIntFromString() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    d.register(defaults: [key: "1234"])
    d.removeObject(forKey: key)
    #expect(d.integer(forKey: key) == 1234)
  }

  @Test("double(forKey:) parses a registered \"12.34\" (test_getRegisteredDefaultItem_DoubleFromString)")
  func registeredDoubleFromString() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    d.register(defaults: [key: "12.34"])
    d.removeObject(forKey: key)
    #expect(d.double(forKey: key) == 12.34)
  }

  // MARK: Stored values (test_setValue_…)

  @Test("string(forKey:) of a stored NSString is the String (test_setValue_NSString)")
  func storedNSString() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set("hello" as NSString, forKey: "key1")
    #expect(d.string(forKey: "key1") == "hello")
  }

  @Test("string(forKey:) of a stored String (test_setValue_String)")
  func storedString() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set("hello", forKey: "key1")
    #expect(d.string(forKey: "key1") == "hello")
  }

  @Test("url(forKey:) of a stored NSURL is the URL (test_setValue_NSURL)")
  func storedNSURL() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(NSURL(fileURLWithPath: "/hello/world"), forKey: "key1")
    #expect(d.url(forKey: "key1") == URL(fileURLWithPath: "/hello/world"))
  }

  @Test("url(forKey:) of a stored URL (test_setValue_URL)")
  func storedURL() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(URL(fileURLWithPath: "/hello/world"), forKey: "key1")
    #expect(d.url(forKey: "key1") == URL(fileURLWithPath: "/hello/world"))
  }

  @Test("data(forKey:) of a stored NSData is the Data (test_setValue_NSData)")
  func storedNSData() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let bytes: [UInt8] = [0, 1, 2, 3, 4]
    d.set(NSData(bytes: bytes, length: bytes.count), forKey: "key1")
    #expect(d.data(forKey: "key1") == Data(bytes))
  }

  @Test("data(forKey:) of a stored Data (test_setValue_Data)")
  func storedData() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let bytes: [UInt8] = [0, 1, 2, 3, 4]
    d.set(Data(bytes), forKey: "key1")
    #expect(d.data(forKey: "key1") == Data(bytes))
  }

  @Test("bool(forKey:) parses a stored \"YES\" (test_setValue_BoolFromString)")
  func storedBoolFromString() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set("YES", forKey: "key1")
    #expect(d.bool(forKey: "key1"))
  }

  // MARK: Coercions between number types (test_setValue_XFromY)

  @Test("integer(forKey:) of true is 1 (test_setValue_IntFromBool)")
  func intFromBool() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(true, forKey: "key1")
    #expect(d.integer(forKey: "key1") == 1)
  }

  @Test("integer(forKey:) of the Float 12.34 is 12 (test_setValue_IntFromFloat)")
  func intFromFloat() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(12.34 as Float, forKey: "key1")
    #expect(d.integer(forKey: "key1") == 12)
  }

  @Test("integer(forKey:) of the Double 12.34 is 12 (test_setValue_IntFromDouble)")
  func intFromDouble() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(12.34, forKey: "key1")
    #expect(d.integer(forKey: "key1") == 12)
  }

  @Test("integer(forKey:) parses a stored \"1234\" (test_setValue_IntFromString)")
  func intFromString() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set("1234", forKey: "key1")
    #expect(d.integer(forKey: "key1") == 1234)
  }

  @Test("float(forKey:) of true is 1 (test_setValue_FloatFromBool)")
  func floatFromBool() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(true, forKey: "key1")
    #expect(d.float(forKey: "key1") == 1)
  }

  @Test("float(forKey:) of the integer 42 is 42 (test_setValue_FloatFromInt)")
  func floatFromInt() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(42, forKey: "key1")
    #expect(d.float(forKey: "key1") == 42)
  }

  @Test("float(forKey:) of the Double 12.34 is the Float 12.34 (test_setValue_FloatFromDouble)")
  func floatFromDouble() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(12.34, forKey: "key1")
    #expect(d.float(forKey: "key1") == 12.34)
  }

  @Test("float(forKey:) parses a stored \"1234\" (test_setValue_FloatFromString)")
  func floatFromString() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set("1234", forKey: "key1")
    #expect(d.float(forKey: "key1") == 1234)
  }

  @Test("double(forKey:) of true is 1 (test_setValue_DoubleFromBool)")
  func doubleFromBool() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(true, forKey: "key1")
    #expect(d.double(forKey: "key1") == 1)
  }

  @Test("double(forKey:) of the integer 42 is 42 (test_setValue_DoubleFromInt)")
  func doubleFromInt() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(42, forKey: "key1")
    #expect(d.double(forKey: "key1") == 42)
  }

  @Test("double(forKey:) of the Float 12.34 is that Float widened (test_setValue_DoubleFromFloat)")
  func doubleFromFloat() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(12.34 as Float, forKey: "key1")
    #expect(d.double(forKey: "key1") == Double(12.34 as Float))
  }

  @Test("double(forKey:) parses a stored \"12.34\" (test_setValue_DoubleFromString)")
  func doubleFromString() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set("12.34", forKey: "key1")
    #expect(d.double(forKey: "key1") == 12.34)
  }

  @Test("string(forKey:) of true is \"1\" (test_setValue_StringFromBool)")
  func stringFromBool() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(true, forKey: "key1")
    #expect(d.string(forKey: "key1") == "1")
  }

  @Test("string(forKey:) of the integer 42 is \"42\" (test_setValue_StringFromInt)")
  func stringFromInt() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(42, forKey: "key1")
    #expect(d.string(forKey: "key1") == "42")
  }

  @Test("string(forKey:) of the Float 12.34 is \"12.34\" (test_setValue_StringFromFloat)")
  func stringFromFloat() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(12.34 as Float, forKey: "key1")
    #expect(d.string(forKey: "key1") == "12.34")
  }

  @Test("string(forKey:) of the Double 12.34 is \"12.34\" (test_setValue_StringFromDouble)")
  func stringFromDouble() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(12.34, forKey: "key1")
    #expect(d.string(forKey: "key1") == "12.34")
  }

  @Test("A Float keeps its coercions after a round trip through the file, as a 4-byte real")
  func floatSurvivesTheFile() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(12.34 as Float, forKey: "key1")
    #expect(d.synchronize())
    let file = t.root.appContainerURL(for: TestRoot.app)
      .appendingPathComponent("Library/Preferences/\(TestRoot.app).plist")
    // Foundation reads it back as a Float-typed number, as Apple writes one.
    let number = try #require(TestRoot.readOnDisk(file)["key1"] as? NSNumber)
    #expect(String(cString: number.objCType) == "f")
    // The reader that loads the suite gets the Float back, not a widened Double.
    let stored = try PropertyListValue(propertyListData: Data(contentsOf: file))
    #expect(stored == .dictionary(["key1": .float(12.34)]))
  }

  // MARK: Volatile domains (test_volatileDomains)

  @Test("A volatile domain gives back every value set in it, of every type (test_volatileDomains)")
  func volatileDomains() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let name = "TestDomain-\(UUID().uuidString)"
    let now = Date()
    let values: [String: Any] = [
      "A Date": now,
      "A String": "The String",
      "An Array": [1, 2, 3],
      "A Dictionary": ["Swift": "Imperative", "Haskell": "Functional", "LISP": "LISP", "Today": now],
      "Some Data": Data("The Data".utf8),
      "A Bool": true,
    ]
    #expect(!d.volatileDomainNames.contains(name))
    d.setVolatileDomain(values, forName: name)
    defer { d.removeVolatileDomain(forName: name) }
    #expect(d.volatileDomainNames.contains(name))
    let back = d.volatileDomain(forName: name)
    #expect(back.count == values.count)
    #expect(back["A Date"] as? Date == now)
    #expect(back["A String"] as? String == "The String")
    #expect(back["An Array"] as? [Int] == [1, 2, 3])
    #expect(
      back["A Dictionary"] as? [String: AnyHashable]
        == ["Swift": "Imperative", "Haskell": "Functional", "LISP": "LISP", "Today": now])
    #expect(back["Some Data"] as? Data == Data("The Data".utf8))
    #expect(back["A Bool"] as? Bool == true)
  }

  // MARK: Persistent domains (test_persistentDomain)

  @Test(
    "Persistent domains: set, read from another instance, remove; one didChangeNotification per call (test_persistentDomain)"
  )
  func persistentDomain() throws {
    let (t, d1) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let name = "org.swift.Foundation.TestPersistentDomainName-\(UUID().uuidString)"
    // Every notification for the domain, from either instance, in the order posted. The
    // registration domain is the process's: another test registering a key at the same time
    // changes this suite's effective values too, and its keys are not this test's to count.
    let own = Set(["An Integer", "A Double", "A String", "An Array", "A Dictionary", "sentinel"])
    let posted = Locked<[[String]]>([])
    let arrived = DispatchSemaphore(value: 0)
    let observer = NotificationCenter.default.addObserver(
      forName: GroupDefaults.didChangeNotification, object: nil, queue: nil
    ) { note in
      guard note.userInfo?[GroupDefaults.suiteNameKey] as? String == name else { return }
      let keys = note.userInfo?[GroupDefaults.changedKeysKey] as? [String] ?? ["?"]
      let mine = keys.filter { own.contains($0) || $0 == "?" }
      guard mine.count == keys.count || !mine.isEmpty else { return }
      posted.withLock { $0.append(mine) }
      arrived.signal()
    }
    defer { NotificationCenter.default.removeObserver(observer) }

    d1.removePersistentDomain(forName: name)
    #expect(d1.persistentDomain(forName: name) == nil || d1.persistentDomain(forName: name)?.isEmpty == true)

    let today = Date()
    let domain: [String: Any] = [
      "An Integer": 1234,
      "A Double": 5678.1234,
      "A String": "Some string",
      "An Array": [1, 2, 3, 4, "Surprise"] as [AnyHashable],
      "A Dictionary": ["Swift": "Imperative", "Haskell": "Functional", "LISP": "LISP", "Today": today]
        as [String: AnyHashable],
    ]
    d1.setPersistentDomain(domain, forName: name)
    // Both posted before another instance of the domain exists below: a notification is
    // posted once per instance that shows the domain, and one posted late would reach two.
    for _ in 0..<2 { #expect(arrived.wait(timeout: .now() + 10) == .success) }

    let d2 = try t.defaults(nil)
    let returned = try #require(d2.persistentDomain(forName: name))
    #expect(returned.count == domain.count)
    #expect(returned["An Integer"] as? Int == 1234)
    #expect(returned["A Double"] as? Double == 5678.1234)
    #expect(returned["A String"] as? String == "Some string")
    #expect(returned["An Array"] as? [AnyHashable] == [1, 2, 3, 4, "Surprise"])
    #expect(
      returned["A Dictionary"] as? [String: AnyHashable]
        == ["Swift": "Imperative", "Haskell": "Functional", "LISP": "LISP", "Today": today])
    // And on disk: the domain is the suite of that name, a store of its own, committed in the
    // background; the suite of that name is that store, and its synchronize() waits for it.
    #expect(try t.defaults(name).synchronize())
    let file = t.root.appContainerURL(for: TestRoot.app).appendingPathComponent("Library/Preferences/\(name).plist")
    #expect(try TestRoot.readOnDisk(file)["A String"] as? String == "Some string")

    d2.removePersistentDomain(forName: name)
    let d3 = try t.defaults(nil)
    #expect(d3.persistentDomain(forName: name) == nil || d3.persistentDomain(forName: name)?.isEmpty == true)

    #expect(arrived.wait(timeout: .now() + 10) == .success)
    // A fourth call: its notification comes next, so no other arrived in between.
    d1.setPersistentDomain(["sentinel": 1], forName: name)
    #expect(arrived.wait(timeout: .now() + 10) == .success)
    let keys = domain.keys.sorted()
    #expect(posted.withLock { $0 } == [[], keys, keys, ["sentinel"]])
  }

  @Test("A persistent-domain change names the domain, the changed keys and the old and new values")
  func persistentDomainNotificationUserInfo() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let name = "com.example.other-\(UUID().uuidString)"
    let received = Locked<[Notification]>([])
    let arrived = DispatchSemaphore(value: 0)
    let observer = NotificationCenter.default.addObserver(
      forName: GroupDefaults.didChangeNotification, object: d, queue: nil
    ) { note in
      guard note.userInfo?[GroupDefaults.suiteNameKey] as? String == name else { return }
      // Another test's registration (the process's domain) is heard here too: not ours.
      let keys = note.userInfo?[GroupDefaults.changedKeysKey] as? [String] ?? []
      guard keys.contains(where: { ["kept", "changed", "removed", "added"].contains($0) }) else { return }
      received.withLock { $0.append(note) }
      arrived.signal()
    }
    defer { NotificationCenter.default.removeObserver(observer) }
    d.setPersistentDomain(["kept": 1, "changed": 1, "removed": 1], forName: name)
    d.setPersistentDomain(["kept": 1, "changed": 2, "added": 3], forName: name)
    for _ in 0..<2 { #expect(arrived.wait(timeout: .now() + 10) == .success) }
    let notes = received.withLock { $0 }
    #expect(notes.count == 2)
    #expect(notes.first?.userInfo?[GroupDefaults.changedKeysKey] as? [String] == ["changed", "kept", "removed"])
    let note = try #require(notes.last)
    #expect(note.object as AnyObject? === d)
    let info = note.userInfo ?? [:]
    #expect(info[GroupDefaults.changedKeysKey] as? [String] == ["added", "changed", "removed"])
    #expect(info[GroupDefaults.originKey] as? String == "thisProcess")
    let changes = (info[GroupDefaults.changesKey] as? [GroupDefaults.Change] ?? []).sorted { $0.key < $1.key }
    #expect(changes.map(\.key) == ["added", "changed", "removed"])
    #expect(changes.map(\.oldValue) == [nil, .integer(1), .integer(1)])
    #expect(changes.map(\.newValue) == [.integer(3), .integer(2), nil])
    #expect(changes.allSatisfy { $0.suiteName == name })
  }

  @Test("Removing the suite's own domain when it is empty still posts one notification, with no changed keys")
  func removingAnEmptyOwnDomainPostsOnce() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let received = Locked<[[String]]>([])
    let arrived = DispatchSemaphore(value: 0)
    let observer = NotificationCenter.default.addObserver(
      forName: GroupDefaults.didChangeNotification, object: d, queue: nil
    ) { note in
      received.withLock { $0.append(note.userInfo?[GroupDefaults.changedKeysKey] as? [String] ?? ["?"]) }
      arrived.signal()
    }
    defer { NotificationCenter.default.removeObserver(observer) }
    // Tests running beside this one register defaults (a process-wide domain), which change
    // this suite's effective values too: keep only this test's keys, and drop notifications
    // that were about theirs alone.
    func ours() -> [[String]] {
      received.withLock { lists in
        lists.compactMap { keys in
          let mine = keys.filter { $0 == "own" }
          return keys.isEmpty || !mine.isEmpty ? mine : nil
        }
      }
    }
    func waitForOurs(_ count: Int) {
      let deadline = DispatchTime.now() + 10
      while ours().count < count, arrived.wait(timeout: deadline) == .success {}
    }
    d.removePersistentDomain(forName: TestRoot.app)
    waitForOurs(1)
    // A change of the suite's own domain is reported as any write is: the effective change.
    d.setPersistentDomain(["own": 1], forName: TestRoot.app)
    waitForOurs(2)
    #expect(ours() == [[], ["own"]])
  }

  // MARK: Documented by Apple, not covered by Foundation's tests

  @Test("dictionaryRepresentation() includes registered and global values (Apple: UserDefaults.dictionaryRepresentation)")
  func dictionaryRepresentationIncludesEveryLayer() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let registered = uniqueKey()
    d.register(defaults: [registered: "fallback"])
    let global = try GroupDefaults(administering: SuiteResolver.globalLocation(root: t.root))
    global.set("everywhere", forKey: "globalKey")
    d.set("mine", forKey: "ownKey")
    let all = d.dictionaryRepresentation()
    #expect(all[registered] as? String == "fallback")
    #expect(all["globalKey"] as? String == "everywhere")
    #expect(all["ownKey"] as? String == "mine")
  }

  @Test("object(forKey:) returns a registered value (Apple: UserDefaults.register(defaults:))")
  func objectOfARegisteredValue() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    d.register(defaults: [key: [1, 2]])
    #expect(d.object(forKey: key) as? [Int] == [1, 2])
    #expect(d.source(forKey: key) == .registration)
  }

  @Test("removeObject(forKey:) lets the registered value show again (Apple: UserDefaults.removeObject(forKey:))")
  func removeFallsBackToRegistration() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    d.register(defaults: [key: "registered"])
    d.set("chosen", forKey: key)
    #expect(d.string(forKey: key) == "chosen")
    d.removeObject(forKey: key)
    #expect(d.string(forKey: key) == "registered")
  }

  @Test("A key set to its registered value is still stored (Apple: registration is only a fallback)")
  func settingTheRegisteredValueStoresIt() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    let key = uniqueKey()
    d.register(defaults: [key: 7])
    d.set(7, forKey: key)
    #expect(d.source(forKey: key) == .application)
    #expect(d.persistentDomain(forName: TestRoot.app)?[key] as? Int == 7)
    #expect(d.synchronize())
    let file = t.root.appContainerURL(for: TestRoot.app)
      .appendingPathComponent("Library/Preferences/\(TestRoot.app).plist")
    #expect(try TestRoot.readOnDisk(file)[key] as? Int == 7)
  }

  @Test("An unsigned 64-bit integer reads back exactly; integer(forKey:) truncates it as CFNumberGetValue does")
  func unsignedIntegerAboveIntMax() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set(UInt64.max, forKey: "big")
    #expect(d.object(forKey: "big") as? UInt64 == UInt64.max)
    #expect(d.string(forKey: "big") == "18446744073709551615")
    #expect(d.integer(forKey: "big") == -1)
    #expect(d.double(forKey: "big") == Double(UInt64.max))
    #expect(d.bool(forKey: "big"))
  }

  @Test("A suite file holding 2^64 − 1, as CoreFoundation writes it, stays readable and keeps the value through later writes")
  func unsignedIntegerWrittenByAnotherTool() throws {
    let t = try TestRoot()
    defer { withExtendedLifetime(t) {} }
    // The file another tool wrote: a 16-byte integer (marker 0x14) among other keys.
    let written = try PropertyListSerialization.data(
      fromPropertyList: ["big": UInt64.max, "name": "kept"] as [String: Any], format: .binary, options: 0)
    #expect(written.contains(0x14))
    let file = t.groupSuiteFile
    try FileManager.default.createDirectory(
      at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
    try written.write(to: file)
    let d = try t.defaults(TestRoot.group)
    #expect(d.value(forKey: "big") == .unsignedInteger(UInt64.max))
    #expect(d.string(forKey: "name") == "kept")
    d.set("later", forKey: "other")
    #expect(d.synchronize())
    let onDisk = try TestRoot.readOnDisk(file)
    #expect((onDisk["big"] as? NSNumber)?.uint64Value == UInt64.max)
    #expect(onDisk["big"] as? UInt64 == UInt64.max)
    #expect(onDisk["name"] as? String == "kept" && onDisk["other"] as? String == "later")
  }

  // MARK: Where GroupDefaults differs on purpose (README, "Where Apple differs")

  @Test("A group the app is not entitled to is refused (Apple gives a private, unshared suite)")
  func unentitledGroupIsRefused() throws {
    let t = try TestRoot()
    defer { withExtendedLifetime(t) {} }
    let error = caught { try t.defaults(TestRoot.group, as: "com.example.stranger") }
    #expect(error?.code == .notEntitled)
    #expect(error?.message.contains("com.example.stranger is not entitled to \(TestRoot.group)") == true)
  }

  @Test("synchronize() returns true only when the changes are on disk (Apple's only waits)")
  func synchronizeSaysTheChangesAreOnDisk() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    d.set("landed", forKey: "key1")
    #expect(d.synchronize())
    let file = t.root.appContainerURL(for: TestRoot.app)
      .appendingPathComponent("Library/Preferences/\(TestRoot.app).plist")
    #expect(try TestRoot.readOnDisk(file)["key1"] as? String == "landed")
  }

  @Test("A value that is not a property-list value is refused and the process goes on (Apple raises)")
  func nonPropertyListValueIsRefused() throws {
    let (t, d) = try standardSuite()
    defer { withExtendedLifetime(t) {} }
    struct Opaque {}
    d.set("before", forKey: "key1")
    d.set(Opaque(), forKey: "key1")
    #expect(d.string(forKey: "key1") == "before")
    d.setPersistentDomain(["key1": Opaque()], forName: TestRoot.app)
    #expect(d.string(forKey: "key1") == "before")
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// The cross-process atomic update against what another process may have left in the file,
/// and against a closure that calls back into the store.
@Suite("Fault: atomic update", .processBound)
struct FaultAtomicUpdateTests {
  /// A group suite whose file already holds `values`, written by "another process" (Foundation).
  private func suite(holding values: [String: Any]) throws -> (TestRoot, GroupDefaults) {
    let t = try TestRoot()
    let file = t.groupSuiteFile
    try FileManager.default.createDirectory(
      at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
    try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
      .write(to: file)
    return (t, try t.defaults(TestRoot.group))
  }

  @Test(arguments: [Double.infinity, -Double.infinity, Double.nan, 1e300, -9.3e18])
  func incrementingARealThatIsNoIntegerThrowsAndChangesNothing(_ real: Double) throws {
    let (t, d) = try suite(holding: ["counter": real])
    #expect(throws: AppGroupsError.self) { try d.increment(forKey: "counter") }
    do {
      try d.increment(forKey: "counter")
    } catch {
      #expect(error.code == .unsupportedValue)
    }
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)["counter"] as? Double
    #expect(onDisk.map { $0.bitPattern == real.bitPattern || ($0.isNaN && real.isNaN) } == true)
  }

  @Test func incrementingARealCountsItsIntegerPart() throws {
    let (t, d) = try suite(holding: ["counter": 2.75])
    #expect(try d.increment(forKey: "counter") == 3)
    #expect(try d.increment(forKey: "counter", by: -5) == -2)
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["counter"] as? Int == -2)
  }

  @Test func anIncrementThatWouldOverflowThrowsAndChangesNothing() throws {
    let (t, d) = try suite(holding: ["counter": Int.max, "low": Int.min])
    #expect(throws: AppGroupsError.self) { try d.increment(forKey: "counter") }
    #expect(throws: AppGroupsError.self) { try d.increment(forKey: "low", by: -1) }
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["counter"] as? Int == Int.max)
    #expect(onDisk["low"] as? Int == Int.min)
  }

  @Test func incrementingAStringThrows() throws {
    let (t, d) = try suite(holding: ["counter": "seven"])
    #expect(throws: AppGroupsError.self) { try d.increment(forKey: "counter") }
    #expect(d.string(forKey: "counter") == "seven")
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["counter"] as? String == "seven")
  }

  @Test func theClosureSeesTheValueOnDiskNotAStaleCopy() throws {
    let (t, d) = try suite(holding: ["counter": 1])
    #expect(d.integer(forKey: "counter") == 1)
    // Another process moves the counter; this one has not noticed yet.
    try PropertyListSerialization.data(fromPropertyList: ["counter": 41], format: .binary, options: 0)
      .write(to: t.groupSuiteFile)
    #expect(try d.increment(forKey: "counter") == 42)
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["counter"] as? Int == 42)
  }

  @Test func aClosureThatThrowsChangesNothing() throws {
    let (t, d) = try suite(holding: ["k": "before"])
    struct Refused: Error {}
    #expect(throws: Refused.self) {
      try d.update(forKey: "k") { _ in throw Refused() }
    }
    #expect(d.string(forKey: "k") == "before")
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["k"] as? String == "before")
  }

  @Test func anUpdatePastTheSizeLimitIsRefused() throws {
    let t = try TestRoot()
    let d = try GroupDefaults(
      suiteName: TestRoot.group, identity: AppIdentity(bundleIdentifier: TestRoot.app),
      root: t.root, options: .init(sizeLimit: 10_000))
    d.set("small", forKey: "k")
    #expect(throws: AppGroupsError.self) {
      try d.update(forKey: "k") { _ in .string(String(repeating: "x", count: 20_000)) }
    }
    #expect(d.string(forKey: "k") == "small")
    #expect(d.synchronize())
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["k"] as? String == "small")
  }

  @Test func anObserverOfAnAtomicUpdateMayUpdateTheStoreInTurn() throws {
    let (t, d) = try suite(holding: ["a": 0])
    let failures = Locked<[String]>([])
    let observation = d.observe(["a"]) { changes in
      // Called on the thread that committed the update, after it let go of the lock.
      for _ in changes {
        do {
          try d.increment(forKey: "b")
        } catch {
          failures.withLock { $0.append("\(error)") }
        }
      }
    }
    defer { observation.cancel() }
    try d.increment(forKey: "a")
    try d.increment(forKey: "a")
    #expect(failures.withLock { $0 } == [])
    #expect(d.integer(forKey: "b") == 2)
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["b"] as? Int == 2)
  }

  @Test func aClosureThatCallsBackIntoTheStoreFailsFastInsteadOfDeadlocking() throws {
    let (t, d) = try suite(holding: ["k": 1, "other": "x"])
    let start = Date()
    var nested: (any Error)?
    var nestedSync = true
    var readInside: String?
    try d.update(forKey: "k") { current in
      readInside = d.string(forKey: "other")  // reads work
      d.set("written inside", forKey: "inside")  // lands after the update
      nestedSync = d.synchronize()  // cannot take the lock this update holds
      do {
        try d.increment(forKey: "k")
      } catch {
        nested = error
      }
      return .integer(2)
    }
    #expect(Date().timeIntervalSince(start) < 0.9, "a nested call waited for the lock")
    #expect(readInside == "x")
    #expect(!nestedSync)
    #expect((nested as? AppGroupsError)?.code == .lockTimeout)
    #expect(d.integer(forKey: "k") == 2)
    #expect(d.synchronize())
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["k"] as? Int == 2)
    #expect(onDisk["inside"] as? String == "written inside")
  }
}

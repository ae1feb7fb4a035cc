import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// The suite's lock is the lock of the file at its path: a lock file (or the whole Preferences
/// folder) removed under running writers, and a new process creating it again, never lets two
/// writers commit at once. Every acknowledged write is on disk, checked with Foundation's reader.
@Suite("Coordination: the lock survives the file system", .processBound)
struct CoordinationTests {
  enum Removal: CaseIterable, Sendable { case lockFile, preferencesFolder }

  private func worker(_ t: TestRoot, _ arguments: [String], as identity: String = TestRoot.app) throws -> ChildProcess {
    let child = try ChildProcess("appgroups-worker", arguments, environment: t.environment(as: identity))
    #expect(child.waitFor("ready"), "\(child.standardError)")
    child.send("go")
    return child
  }

  private func remove(_ removal: Removal, in t: TestRoot) throws {
    let folder = t.groupSuiteFile.deletingLastPathComponent()
    switch removal {
    case .lockFile:
      try FileManager.default.removeItem(atPath: t.groupSuiteFile.path + ".lock")
    case .preferencesFolder:
      try FileManager.default.removeItem(at: folder)
    }
  }

  /// The lines `prefix N` a child printed until `done …` (or `until`), and that last line.
  private func collect(
    _ child: ChildProcess, _ prefix: String, until last: String = "done ", timeout: TimeInterval = 120
  ) -> (values: [Int], failures: [String], done: String?) {
    var values: [Int] = []
    var failures: [String] = []
    while let line = child.waitForLine(timeout: timeout) {
      if line.hasPrefix(last) { return (values, failures, line) }
      if line.hasPrefix(prefix + " "), let n = Int(line.dropFirst(prefix.count + 1)) {
        values.append(n)
      } else if line.hasPrefix("nack") || line.hasPrefix("error") {
        failures.append(line)
      }
    }
    return (values, failures, nil)
  }

  @Test(arguments: Removal.allCases)
  func acknowledgedSetsSurviveALockFileRemovedUnderTheWriters(_ removal: Removal) throws {
    let t = try TestRoot()
    let count = 300
    // A writes and synchronizes a third of its keys, then waits; the lock file (or the folder)
    // goes; B, started afterwards, creates it again; both go on at once.
    let a = try worker(t, ["acked-sets", TestRoot.group, "a", String(count), String(count / 3)])
    let beforeA = collect(a, "acked", until: "paused")
    #expect(beforeA.done == "paused", "\(a.standardError)")
    #expect(beforeA.failures == [])
    try remove(removal, in: t)
    let b = try worker(t, ["acked-sets", TestRoot.group, "b", String(count)], as: TestRoot.widget)
    let startB = collect(b, "acked", until: "acked 10")
    a.send("go on")
    // Halfway through, the lock file goes again under both, and a third process comes in.
    let middleB = collect(b, "acked", until: "acked \(count / 2)")
    #expect(middleB.done != nil, "\(b.standardError)")
    try? FileManager.default.removeItem(atPath: t.groupSuiteFile.path + ".lock")
    let c = try worker(t, ["acked-sets", TestRoot.group, "c", "100"])

    var acked: [String: [Int]] = [:]
    for (name, child) in [("a", a), ("c", c)] {
      let result = collect(child, "acked")
      #expect(result.failures == [], "\(name): \(child.standardError)")
      #expect(result.done == "done 0", "\(name): \(child.standardError)")
      acked[name] = result.values
      #expect(child.wait() == 0)
    }
    acked["a", default: []] += beforeA.values
    let resultB = collect(b, "acked")
    #expect(resultB.failures == [] && startB.failures == [] && middleB.failures == [], "\(b.standardError)")
    #expect(resultB.done == "done 0", "\(b.standardError)")
    acked["b"] = startB.values + [10] + middleB.values + [count / 2] + resultB.values
    #expect(b.wait() == 0)
    for child in [a, b, c] {
      #expect(!child.standardError.contains("No such file"), "\(child.standardError)")
    }

    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    var lost: [String] = []
    for (name, values) in acked {
      // Removing the folder deletes what A had written before it: a reset by the user.
      let from = removal == .preferencesFolder && name == "a" ? count / 3 : 0
      for i in values where i >= from && onDisk["\(name)-\(i)"] as? Int != i {
        lost.append("\(name)-\(i)")
      }
    }
    #expect(acked["a"]?.count == count)
    #expect(acked["c"]?.count == 100)
    #expect(lost == [], "acknowledged but not on disk")
  }

  @Test(arguments: Removal.allCases)
  func acknowledgedIncrementsSurviveALockFileRemovedUnderTheWriters(_ removal: Removal) throws {
    let t = try TestRoot()
    let times = 300
    let a = try worker(t, ["acked-increments", TestRoot.group, "counter", String(times), "100"])
    let beforeA = collect(a, "got", until: "paused")
    #expect(beforeA.values == Array(1...100), "\(a.standardError)")
    try remove(removal, in: t)
    let b = try worker(t, ["acked-increments", TestRoot.group, "counter", String(times)], as: TestRoot.widget)
    a.send("go on")
    let resultA = collect(a, "got")
    let resultB = collect(b, "got")
    #expect(resultA.failures == [], "\(a.standardError)")
    #expect(resultB.failures == [], "\(b.standardError)")
    #expect(a.wait() == 0)
    #expect(b.wait() == 0)
    // After the removal, every value handed out is unique and the counter holds them all.
    let before = removal == .preferencesFolder ? 100 : 0
    let after = resultA.values + resultB.values
    #expect(Set(after).count == after.count, "a value was handed out twice")
    #expect(beforeA.values.count + after.count == 2 * times)
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["counter"] as? Int == 2 * times - before)
  }

  @Test func aCommitInFlightWhenTheLockFileIsReplacedStartsOver() throws {
    // A holds the lock (stopped just before its rename); the lock file is removed and B, a new
    // process, creates it again and commits. A, let go, must notice that its lock is no longer
    // the lock of the file at the path, start over, and keep B's key.
    let t = try TestRoot()
    let seed = try t.defaults(TestRoot.group)
    seed.set("seed", forKey: "seed")
    #expect(seed.synchronize())
    let marker = t.sandbox.url.appendingPathComponent("paused-before-rename").path
    var environment = t.environment()
    environment["APPGROUPS_TEST_PAUSE_BEFORE_RENAME"] = marker
    environment["APPGROUPS_WORKER_NO_WAIT"] = "1"
    let a = try ChildProcess("appgroups-worker", ["set", TestRoot.group, "fromA", "a"], environment: environment)
    #expect(waitForFile(marker, timeout: 30), "\(a.standardError)")
    #expect(waitUntilStopped(a.process.processIdentifier, timeout: 30))
    try FileManager.default.removeItem(atPath: t.groupSuiteFile.path + ".lock")
    let b = try Product.run(
      "appgroups-worker", ["set", TestRoot.group, "fromB", "b"],
      environment: t.environment(as: TestRoot.widget).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(b.status == 0, "\(b.stderr)")
    // A stops once more at its second attempt's rename, then lands.
    try FileManager.default.removeItem(atPath: marker)
    a.signal(SIGCONT)
    #expect(waitForFile(marker, timeout: 30), "\(a.standardError)")
    #expect(waitUntilStopped(a.process.processIdentifier, timeout: 30))
    a.signal(SIGCONT)
    #expect(a.waitFor("set", timeout: 30), "\(a.standardError)")
    #expect(a.wait() == 0)
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["fromA"] as? String == "a")
    #expect(onDisk["fromB"] as? String == "b")
    #expect(onDisk["seed"] as? String == "seed")
  }
}

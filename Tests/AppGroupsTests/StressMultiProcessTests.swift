import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// Many real processes writing one group suite at once: nothing is lost.
@Suite("Stress: processes writing one suite", .processBound)
struct StressMultiProcessTests {
  /// Starts `count` workers with `arguments(i)`, waits until every one is ready, then lets
  /// them all go at once.
  private func startAll(
    _ count: Int, in t: TestRoot, environment: [String: String] = [:],
    _ arguments: (Int) -> [String]
  ) throws -> [ChildProcess] {
    var children: [ChildProcess] = []
    for i in 0..<count {
      let identity = i % 2 == 0 ? TestRoot.app : TestRoot.widget
      children.append(
        try ChildProcess(
          "appgroups-worker", arguments(i),
          environment: t.environment(as: identity).merging(environment) { $1 }))
    }
    for child in children { #expect(child.waitFor("ready"), "\(child.standardError)") }
    for child in children { child.send("go") }
    return children
  }

  @Test func eightProcessesWriting500DistinctKeysEachLoseNothing() throws {
    let t = try TestRoot()
    let writers = 8
    let keysEach = 500
    let children = try startAll(writers, in: t) { i in
      ["write-keys", TestRoot.group, "w\(i)", String(keysEach)]
    }
    var retries = 0
    for child in children {
      let line = child.waitForLine(timeout: 60) { $0.hasPrefix("sync-retries ") }
      #expect(line != nil, "\(child.standardError)")
      retries += line.flatMap { Int($0.dropFirst("sync-retries ".count)) } ?? 0
      #expect(child.waitFor("synced"), "\(child.standardError)")
    }
    // synchronize() waits at most its bound (1 s); under this contention it may return false,
    // and the changes stay pending until a later call lands them.
    print("distinct keys: \(writers) processes × \(keysEach), synchronize calls past the bound: \(retries)")
    // Every process then waits, on change events alone, until it sees every key.
    for child in children { child.send(String(writers * keysEach)) }
    for child in children {
      let line = child.waitForLine(timeout: 60) { $0.hasPrefix("visible ") }
      #expect(line == "visible \(writers * keysEach)", "\(child.standardError)")
      #expect(child.wait() == 0)
    }
    // On disk, read with Foundation: 4,000 keys make a suite large enough that its last
    // small commits may be in the journal beside the plist.
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    var missing = 0
    for i in 0..<writers {
      for k in 0..<keysEach where onDisk["w\(i)-\(k)"] as? Int != k { missing += 1 }
    }
    #expect(missing == 0)
    #expect(onDisk.count == writers * keysEach)
    // No temporary file is left behind.
    let folder = t.groupSuiteFile.deletingLastPathComponent()
    #expect(entries(of: folder).filter { $0.contains(".tmp-") } == [])
  }

  @Test func eightProcessesIncrementingOneCounter250TimesEachReachExactly2000() throws {
    let t = try TestRoot()
    let processes = 8
    let times = 250
    let children = try startAll(processes, in: t) { _ in
      ["increment", TestRoot.group, "counter", String(times)]
    }
    var timeouts = 0
    for child in children {
      let line = child.waitForLine(timeout: 90) { $0.hasPrefix("done ") }
      #expect(line != nil, "\(child.standardError)")
      timeouts += line.flatMap { Int($0.dropFirst("done ".count)) } ?? 0
      #expect(child.wait() == 0)
    }
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["counter"] as? Int == processes * times)
    // A lock timeout writes nothing; the worker retries it. Report how often it happened.
    print("increments: \(processes) processes × \(times), lock timeouts retried: \(timeouts)")
    let d = try t.defaults(TestRoot.group)
    #expect(d.integer(forKey: "counter") == processes * times)
  }
}

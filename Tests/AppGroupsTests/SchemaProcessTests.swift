import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// Migrations across real processes: `appgroups-worker migrate` registers a version 2 schema
/// ("unread" -> "unreadCount", every "item-N" string -> an "entry-N" integer) on the group
/// suite of a temporary root.
@Suite("Schema: migrations across processes", .processBound)
struct SchemaProcessTests {
  static let items = 200

  /// The suite as version 1 left it.
  static var version1: [String: Any] {
    var values: [String: Any] = ["unread": 5, "keep": "x"]
    for i in 0..<items { values[String(format: "item-%03d", i)] = String(i) }
    return values
  }

  /// The suite after an uninterrupted migration.
  static var migrated: [String: PropertyListValue] {
    var values: [String: PropertyListValue] = [
      "unreadCount": .integer(5), "keep": .string("x"), "AppGroupsSchemaVersion": .integer(2),
    ]
    for i in 0..<items { values[String(format: "entry-%03d", i)] = .integer(i) }
    return values
  }

  static var version1Values: [String: PropertyListValue] {
    guard case .dictionary(let values)? = PropertyListValue(version1) else { return [:] }
    return values
  }

  func writeVersion1(_ t: TestRoot) throws {
    try FileManager.default.createDirectory(
      at: t.groupSuiteFile.deletingLastPathComponent(), withIntermediateDirectories: true)
    try PropertyListSerialization.data(fromPropertyList: Self.version1, format: .binary, options: 0)
      .write(to: t.groupSuiteFile)
  }

  func onDisk(_ t: TestRoot) throws -> [String: PropertyListValue] {
    guard case .dictionary(let values) = try PropertyListValue(propertyListData: Data(contentsOf: t.groupSuiteFile))
    else { return [:] }
    return values
  }

  /// One run: a version 1 suite, the app and the widget started at once (both wait for
  /// "go"), each migrating and then writing a key of its own.
  /// - Returns: who migrated, and the problems seen.
  func launchTogether(run: Int, slowExits: Locked<Int>) -> (migrated: [String], problems: [String]) {
    var migrated: [String] = []
    var problems: [String] = []
    do {
      let t = try TestRoot("concurrent\(run)")
      try writeVersion1(t)
      var children: [(String, ChildProcess)] = []
      for who in [TestRoot.app, TestRoot.widget] {
        let child = try ChildProcess(
          "appgroups-worker", ["migrate", TestRoot.group, "launched-\(who)", "run-\(run)"],
          environment: t.environment(as: who))
        children.append((who, child))
      }
      for (who, child) in children where !child.waitFor("ready", timeout: 60) {
        problems.append("run \(run) \(who): no ready line: \(child.standardError)")
      }
      for (_, child) in children { child.send("go") }
      for (who, child) in children {
        let outcome = child.waitForLine(timeout: 60) {
          $0.hasPrefix("migrated") || $0.hasPrefix("up-to-date")
        }
        if outcome == "migrated 0 2" {
          migrated.append(who)
        } else if outcome != "up-to-date 2" {
          problems.append("run \(run) \(who): \(String(describing: outcome)): \(child.standardError)")
        }
        if !child.waitFor("set", timeout: 60) {
          let pid = child.process.processIdentifier
          let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
          let waits = threads.map { task in
            (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/wchan", encoding: .utf8)) ?? "?"
          }
          problems.append(
            "run \(run) \(who): no set line (state \(String(describing: processState(pid))), threads waiting in \(waits)): \(child.standardError)")
        }
        // Its write is on disk ("set" follows a true synchronize()); the exit itself is
        // watched apart: a worker that has not exited 60 s later is killed and counted.
        let status = child.wait(timeout: 60)
        if status == nil {
          slowExits.withLock { $0 += 1 }
        } else if status != 0 {
          problems.append("run \(run) \(who): exit status \(String(describing: status)): \(child.standardError)")
        }
      }
      var expected = Self.migrated
      expected["launched-\(TestRoot.app)"] = .string("run-\(run)")
      expected["launched-\(TestRoot.widget)"] = .string("run-\(run)")
      if try onDisk(t) != expected {
        problems.append("run \(run): a value was lost or migrated twice: \(try onDisk(t))")
      }
    } catch {
      problems.append("run \(run): \(error)")
    }
    return (migrated, problems)
  }

  @Test func appAndWidgetLaunchingAtOnceMigrateExactlyOnce() throws {
    let runs = FaultSettings.integer("APPGROUPS_SCHEMA_RUNS", default: 50)
    // A few runs side by side: each run waits mostly on fsync(2).
    let lanes = 5
    let results = Locked<[Int: (migrated: [String], problems: [String])]>([:])
    let slowExits = Locked(0)
    DispatchQueue.concurrentPerform(iterations: lanes) { lane in
      for run in stride(from: lane, to: runs, by: lanes) {
        let result = launchTogether(run: run, slowExits: slowExits)
        results.withLock { $0[run] = result }
      }
    }
    let all = results.withLock { $0 }
    #expect(all.count == runs)
    for run in 0..<runs {
      let result = all[run]
      #expect(result?.migrated.count == 1, "run \(run): migrated by \(result?.migrated ?? [])")
      #expect(result?.problems == [], "\(result?.problems ?? [])")
    }
    var migratedBy: [String: Int] = [:]
    for result in all.values { for who in result.migrated { migratedBy[who, default: 0] += 1 } }
    print(
      "SchemaProcessTests: \(runs) runs in \(lanes) lanes, migrated by \(migratedBy);"
        + " workers killed for not exiting within 60 s after their write landed: \(slowExits.withLock { $0 })")
  }

  /// Where a migrating process is killed.
  enum KillPoint: CaseIterable {
    /// Inside the transaction, before the Nth item is converted.
    case insideTheTransaction
    /// Holding the suite's lock, before reading the file (`APPGROUPS_TEST_PAUSE_IN_COMMIT`).
    case holdingTheLock
    /// The new file written and synced, not yet renamed (`APPGROUPS_TEST_PAUSE_BEFORE_RENAME`).
    case beforeTheRename
    /// Right after the migration returned.
    case afterTheCommit
    /// After a random delay from the start: anywhere, start-up included.
    case afterARandomDelay
  }

  @Test func aMigrationKilledAtSeededPointsIsCompletedByTheNextLaunch() throws {
    let seed = FaultSettings.seed()
    let points = FaultSettings.integer("APPGROUPS_SCHEMA_KILLS", default: 32)
    print("SchemaProcessTests: seed \(seed) (replay: APPGROUPS_SEED=\(seed)), \(points) kill points")
    var random = SeededGenerator(seed: seed)
    var found = (old: 0, new: 0)
    for index in 0..<points {
      let point = KillPoint.allCases[index % KillPoint.allCases.count]
      let t = try TestRoot()
      try writeVersion1(t)
      let marker = t.path + "/paused"
      var env = t.environment(as: index % 2 == 0 ? TestRoot.app : TestRoot.widget)
      env["APPGROUPS_WORKER_NO_WAIT"] = "1"
      var delay: UInt32 = 0
      switch point {
      case .insideTheTransaction:
        env["APPGROUPS_WORKER_KILL_AT_ITEM"] = String(Int.random(in: 0..<Self.items, using: &random))
      case .holdingTheLock: env["APPGROUPS_TEST_PAUSE_IN_COMMIT"] = marker
      case .beforeTheRename: env["APPGROUPS_TEST_PAUSE_BEFORE_RENAME"] = marker
      case .afterTheCommit: env["APPGROUPS_WORKER_KILL_AFTER_MIGRATE"] = "1"
      case .afterARandomDelay: delay = UInt32.random(in: 0...150_000, using: &random)
      }
      let what = "point \(index) (\(point), delay \(delay) µs)"
      let child = try ChildProcess("appgroups-worker", ["migrate", TestRoot.group], environment: env)
      switch point {
      case .holdingTheLock, .beforeTheRename:
        #expect(waitForFile(marker, timeout: 60), "\(what): \(child.standardError)")
        child.signal(SIGKILL)
      case .afterARandomDelay:
        usleep(delay)  // the kill point, not a synchronisation
        child.signal(SIGKILL)
      case .insideTheTransaction, .afterTheCommit:
        break  // it kills itself
      }
      let status = child.wait(timeout: 60)
      #expect(status != nil, "\(what)")

      // The old state or the new one, never a mix.
      let after = try onDisk(t)
      let isOld = after == Self.version1Values
      let isNew = after == Self.migrated
      #expect(isOld || isNew, "\(what): the suite holds a mix of \(after.count) keys")
      if isOld { found.old += 1 } else if isNew { found.new += 1 }
      switch point {
      case .insideTheTransaction, .holdingTheLock, .beforeTheRename: #expect(isOld, "\(what)")
      case .afterTheCommit: #expect(isNew, "\(what)")
      case .afterARandomDelay: break
      }

      // The next launch completes it; the values equal an uninterrupted run's.
      let next = try Product.run("appgroups-worker", ["migrate", TestRoot.group], environment: t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
      #expect(next.status == 0, "\(what): \(next.stderr)")
      #expect(next.stdout == (isOld ? "migrated 0 2\n" : "up-to-date 2\n"), "\(what): \(next.stdout)")
      #expect(try onDisk(t) == Self.migrated, "\(what)")
      // And again: nothing changes.
      let bytes = try Data(contentsOf: t.groupSuiteFile)
      let again = try Product.run("appgroups-worker", ["migrate", TestRoot.group], environment: t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
      #expect(again.stdout == "up-to-date 2\n")
      #expect(try Data(contentsOf: t.groupSuiteFile) == bytes, "\(what)")
    }
    print("SchemaProcessTests: after the kill, \(found.old) old and \(found.new) new states")
  }
}

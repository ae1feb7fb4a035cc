import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// A process stopped (SIGSTOP) while it holds a suite's commit lock: others read on, their
/// writes wait at most the bound, stay pending and say so, and land after SIGCONT.
@Suite("Fault: a writer stopped while holding the lock", .processBound)
struct FaultStopTests {
  /// The lock timeout the waiting writers run with.
  static let lockTimeoutMS = 700

  private func repl(_ t: TestRoot, as identity: String) throws -> ChildProcess {
    let child = try ChildProcess(
      "appgroups-worker", ["repl", TestRoot.group],
      environment: t.environment(as: identity).merging([
        "APPGROUPS_WORKER_LOCK_TIMEOUT_MS": String(Self.lockTimeoutMS),
        "APPGROUPS_WORKER_DIAGNOSTICS": "stdout",
      ]) { $1 })
    #expect(child.waitFor("ready"), "\(child.standardError)")
    return child
  }

  /// Sends a command and returns the first answer line with `prefix`.
  private func ask(_ child: ChildProcess, _ command: String, expecting prefix: String) -> String? {
    child.send(command)
    return child.waitForLine(timeout: 30) { $0.hasPrefix(prefix) }
  }

  /// Sends a `wait KEY TEXT SECONDS` and returns its answer.
  private func waitFor(_ child: ChildProcess, _ key: String, _ text: String) -> String? {
    child.send("wait \(key) \(text) 20")
    return child.waitForLine(timeout: 30) { $0.hasPrefix("seen ") || $0.hasPrefix("timeout ") }
  }

  private func diagnosed(_ child: ChildProcess, _ text: String) -> Bool {
    ask(child, "diag-has \(text)", expecting: "diag-has ") == "diag-has true"
  }

  private func number(_ line: String?, field: Int) -> Int? {
    guard let line else { return nil }
    let parts = line.split(separator: " ")
    return parts.count > field ? Int(parts[field]) : nil
  }

  @Test func othersReadOnAndTheirWritesWaitAtMostTheBoundThenLandAfterSIGCONT() throws {
    let t = try TestRoot()
    let writer = try repl(t, as: TestRoot.app)
    let reader = try repl(t, as: TestRoot.widget)
    #expect(ask(writer, "set before one", expecting: "ok") != nil)
    #expect(ask(writer, "sync", expecting: "sync ")?.hasPrefix("sync true") == true)
    #expect(waitFor(reader, "before", "one") == "seen before")

    // A third process stops itself while it holds the lock.
    let marker = t.sandbox.url.appendingPathComponent("holding-lock").path
    let holder = try ChildProcess(
      "appgroups-worker", ["set", TestRoot.group, "holder", "landed"],
      environment: t.environment().merging([
        "APPGROUPS_WORKER_NO_WAIT": "1", "APPGROUPS_TEST_PAUSE_IN_COMMIT": marker,
      ]) { $1 })
    #expect(waitForFile(marker, timeout: 30), "\(holder.standardError)")
    var state = processState(holder.process.processIdentifier)
    for _ in 0..<10_000 where state != "T" {
      sched_yield()
      state = processState(holder.process.processIdentifier)
    }
    #expect(state == "T", "the holder is not stopped")

    // Reads go on, in processes that have the suite open and in a new one.
    let get = ask(reader, "get before", expecting: "value ")
    #expect(get == "value one")
    let took = reader.waitForLine { $0.hasPrefix("took ") }
    #expect((number(took, field: 1) ?? .max) < 100)
    let fresh = try Product.run(
      "appgroups-worker", ["get", TestRoot.group, "before"],
      environment: t.environment(as: TestRoot.widget).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(fresh.stdout == "one\n", "\(fresh.stderr)")

    // A write is in memory at once; synchronize waits at most the bound, returns false,
    // and the change stays pending. The wait is reported.
    #expect(ask(writer, "set during two", expecting: "ok") != nil)
    #expect(ask(writer, "get during", expecting: "value ") == "value two")
    let sync = ask(writer, "sync", expecting: "sync ")
    #expect(sync?.hasPrefix("sync false") == true)
    print("while stopped: \(sync ?? "-")")
    let waited = number(sync, field: 2) ?? .max
    // At most the bound (plus scheduling slack), even though a background commit of the same
    // process was already waiting for the lock when synchronize() was called.
    #expect(waited >= Self.lockTimeoutMS - 50 && waited < Self.lockTimeoutMS + 250, "\(sync ?? "")")
    #expect(ask(writer, "pending", expecting: "pending ") == "pending true")
    // The reader, which has nothing pending, is not blocked by the writer's wait either.
    #expect(ask(reader, "set reader three", expecting: "ok") != nil)
    let readerSync = ask(reader, "sync", expecting: "sync ")
    #expect(readerSync?.hasPrefix("sync false") == true)

    // While the retries wait for the lock (for two bounds and more), the waiting process's
    // own reads and refreshes are not held up by them.
    let start = Date()
    var slowest = 0
    var rounds = 0
    while Date().timeIntervalSince(start) < Double(Self.lockTimeoutMS) * 2.5 / 1000 {
      let refresh = ask(writer, "refresh", expecting: "refresh ")
      slowest = max(slowest, number(refresh, field: 2) ?? .max)
      #expect(ask(writer, "get before", expecting: "value ") == "value one")
      let readTook = writer.waitForLine { $0.hasPrefix("took ") }
      slowest = max(slowest, number(readTook, field: 1) ?? .max)
      rounds += 1
    }
    print("while stopped: \(rounds) refreshes and reads, the slowest took \(slowest) ms")
    #expect(slowest < Self.lockTimeoutMS / 3)
    #expect(diagnosed(writer, "stay pending"))
    #expect(diagnosed(reader, "stay pending"))
    let meanwhile = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(meanwhile["during"] == nil && meanwhile["reader"] == nil && meanwhile["holder"] == nil)

    // SIGCONT: the holder finishes; the pending writes land on their own (retries).
    holder.signal(SIGCONT)
    #expect(holder.waitFor("set"), "\(holder.standardError)")
    #expect(holder.wait() == 0)
    #expect(waitFor(reader, "during", "two") == "seen during")
    #expect(waitFor(writer, "reader", "three") == "seen reader")
    #expect(waitFor(writer, "holder", "landed") == "seen holder")
    #expect(waitFor(reader, "holder", "landed") == "seen holder")
    #expect(diagnosed(writer, "lock acquired"))
    #expect(ask(writer, "pending", expecting: "pending ") == "pending false")

    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["before"] as? String == "one")
    #expect(onDisk["during"] as? String == "two")
    #expect(onDisk["reader"] as? String == "three")
    #expect(onDisk["holder"] as? String == "landed")
    writer.send("quit")
    reader.send("quit")
    #expect(writer.wait() == 0)
    #expect(reader.wait() == 0)
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// Sixteen processes contending for one suite's lock, beside two CPU-bound processes: a waiter
/// is woken by the kernel when the lock is let go, so none waits past the bound, and an exit
/// status tells the truth about every write.
///
/// Thirty-four processes on two cores for minutes: run beside the rest of the suite, they make
/// every other test wait past its time limit. `swift test` skips them unless
/// `APPGROUPS_CONTENTION=1`; CI runs them in a step of their own
/// (`APPGROUPS_CONTENTION=1 swift test --skip-build --filter ContentionTests`).
@Suite(
  "Contention: sixteen processes, one lock", .serialized, .timeLimit(.minutes(10)),
  .enabled(
    if: ProcessInfo.processInfo.environment["APPGROUPS_CONTENTION"] == "1",
    "set APPGROUPS_CONTENTION=1 (CI runs these in a step of their own)"))
struct ContentionTests {
  @Test func sixteenProcessesOfFortyGroupctlWritesEachAllExitZeroAndLand() throws {
    let t = try TestRoot()
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    let writers = 16
    let writes = 40
    let groupctl = Product.url("groupctl").path
    // Each writer is a shell running groupctl 40 times in a row and saying how each one exited.
    let script = """
      i=0
      while [ $i -lt \(writes) ]; do
        "$GROUPCTL" write \(TestRoot.group) "w$WRITER-$i" -int $i 2>>"$ERRORS"
        echo "exit $i $?"
        i=$((i + 1))
      done
      echo finished
      """
    var children: [ChildProcess] = []
    for w in 0..<writers {
      let environment = [
        "APPGROUPS_ROOT": t.path, "GROUPCTL": groupctl, "WRITER": String(w),
        "ERRORS": t.sandbox.url.appendingPathComponent("errors-\(w)").path,
      ]
      children.append(
        try ChildProcess(executable: URL(fileURLWithPath: "/bin/sh"), ["-c", script], environment: environment))
    }
    var failed: [String] = []
    for (w, child) in children.enumerated() {
      var count = 0
      while let line = child.waitForLine(timeout: 180), line != "finished" {
        count += 1
        if !line.hasSuffix(" 0") { failed.append("writer \(w): \(line)") }
      }
      #expect(count == writes, "writer \(w)")
      #expect(child.wait() == 0)
    }
    var messages = ""
    for w in 0..<writers {
      let file = t.sandbox.url.appendingPathComponent("errors-\(w)")
      messages += (try? String(contentsOf: file, encoding: .utf8)) ?? ""
    }
    #expect(failed == [], "\(messages)")
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    var missing: [String] = []
    for w in 0..<writers {
      for i in 0..<writes where onDisk["w\(w)-\(i)"] as? Int != i { missing.append("w\(w)-\(i)") }
    }
    #expect(missing == [])
  }

  @Test func sixteenProcessesOfAHundredIncrementsReachExactly1600WithoutALockTimeout() throws {
    let t = try TestRoot()
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    let processes = 16
    let times = 100
    var children: [ChildProcess] = []
    for i in 0..<processes {
      children.append(
        try ChildProcess(
          "appgroups-worker", ["acked-increments", TestRoot.group, "counter", String(times)],
          environment: t.environment(as: i % 2 == 0 ? TestRoot.app : TestRoot.widget)))
    }
    for child in children { #expect(child.waitFor("ready", timeout: 60), "\(child.standardError)") }
    for child in children { child.send("go") }
    var values: [Int] = []
    var errors: [String] = []
    for child in children {
      while let line = child.waitForLine(timeout: 180) {
        if line.hasPrefix("done ") { break }
        if line.hasPrefix("got "), let n = Int(line.dropFirst(4)) { values.append(n) }
        if line.hasPrefix("error ") { errors.append(line) }
      }
      #expect(child.wait() == 0)
    }
    #expect(errors == [])
    #expect(values.count == processes * times)
    #expect(Set(values) == Set(1...(processes * times)))
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["counter"] as? Int == processes * times)
  }
}

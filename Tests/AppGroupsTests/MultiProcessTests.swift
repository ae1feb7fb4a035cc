import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("Multi-process", .processBound)
struct MultiProcessTests {
  @Test func fourProcessesWritingDistinctKeysLoseNothing() throws {
    let t = try TestRoot()
    let writers = 4
    let keysEach = 250
    var children: [ChildProcess] = []
    for i in 0..<writers {
      let identity = i % 2 == 0 ? TestRoot.app : TestRoot.widget
      let child = try ChildProcess(
        "appgroups-worker", ["write-keys", TestRoot.group, "w\(i)", String(keysEach)],
        environment: t.environment(as: identity))
      children.append(child)
    }
    for child in children { #expect(child.waitFor("ready"), "\(child.standardError)") }
    for child in children { child.send("go") }
    for child in children { #expect(child.waitFor("synced"), "\(child.standardError)") }
    for child in children { child.send(String(writers * keysEach)) }
    for child in children {
      let line = child.waitForLine { $0.hasPrefix("visible ") }
      #expect(line == "visible \(writers * keysEach)", "\(child.standardError)")
      #expect(child.wait() == 0)
    }
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    for i in 0..<writers {
      for k in 0..<keysEach {
        #expect(onDisk["w\(i)-\(k)"] as? Int == k)
      }
    }
    #expect(onDisk.count == writers * keysEach)
  }
}

@Suite("Propagation", .processBound)
struct PropagationTests {
  @Test func aWriteInAnotherProcessReachesAnObserver() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let seen = DispatchSemaphore(value: 0)
    let values = Locked<[String]>([])
    let otherKey = Locked(0)
    let observation = d.observe(["greeting"]) { changes in
      for change in changes {
        if change.key != "greeting" { otherKey.withLock { $0 += 1 } }
        if case .string(let s)? = change.newValue, change.origin == .otherProcess {
          values.withLock { $0.append(s) }
          seen.signal()
        }
      }
    }
    defer { observation.cancel() }
    let writer = try Product.run(
      "appgroups-worker", ["set", TestRoot.group, "greeting", "hello"],
      environment: t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(writer.status == 0)
    #expect(seen.wait(timeout: .now() + 10) == .success)
    #expect(values.withLock { $0 } == ["hello"])
    #expect(d.string(forKey: "greeting") == "hello")
    // A change of another key does not reach an observer of "greeting".
    _ = try Product.run(
      "appgroups-worker", ["set", TestRoot.group, "unrelated", "x"],
      environment: t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    _ = try Product.run(
      "appgroups-worker", ["set", TestRoot.group, "greeting", "again"],
      environment: t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(seen.wait(timeout: .now() + 10) == .success)
    #expect(values.withLock { $0 } == ["hello", "again"])
    #expect(otherKey.withLock { $0 } == 0)
  }
}

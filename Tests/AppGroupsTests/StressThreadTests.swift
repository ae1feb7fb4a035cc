import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// Many threads of one process setting, reading, observing, incrementing and synchronizing
/// one suite while another process writes it too. Run it under the thread sanitizer:
///
///     swift build --build-tests --sanitize=thread --scratch-path .build-tsan
///     swift test --sanitize=thread --scratch-path .build-tsan --skip-build --filter StressThreadTests
@Suite("Stress: threads sharing one suite", .processBound)
struct StressThreadTests {
  @Test func threadsSettingReadingObservingAndIncrementingOneSuiteLoseNothing() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    let writers = 4, keysEach = 150, incrementers = 2, incrementsEach = 40

    // Observers: one for the whole run, others added and cancelled all the time.
    let lastSeen = Locked<[String: PropertyListValue?]>([:])
    let observation = d.observe { changes in
      lastSeen.withLock { seen in
        for change in changes { seen[change.key] = change.newValue }
      }
    }
    defer { observation.cancel() }
    let notifications = Locked(0)
    let center = NotificationCenter.default.addObserver(
      forName: GroupDefaults.didChangeNotification, object: d, queue: nil
    ) { _ in notifications.withLock { $0 += 1 } }
    defer { NotificationCenter.default.removeObserver(center) }

    // Another process writes the same suite meanwhile.
    let other = try ChildProcess(
      "appgroups-worker", ["write-keys", TestRoot.group, "other", "100"],
      environment: t.environment(as: TestRoot.widget))
    #expect(other.waitFor("ready"), "\(other.standardError)")
    other.send("go")

    let done = Locked(false)
    let errors = Locked<[String]>([])
    let group = DispatchGroup()
    func run(_ body: @escaping @Sendable () -> Void) {
      group.enter()
      Thread {
        body()
        group.leave()
      }.start()
    }
    for w in 0..<writers {
      run {
        for k in 0..<keysEach {
          d.set(k, forKey: "t\(w)-\(k)")
          if k % 50 == 49 { _ = d.synchronize() }
        }
      }
    }
    for _ in 0..<incrementers {
      run {
        for _ in 0..<incrementsEach {
          do {
            try d.increment(forKey: "counter")
          } catch {
            errors.withLock { $0.append("increment: \(error)") }
          }
        }
      }
    }
    // Readers, churning observers, token and refresh calls, until the writers are done.
    let busy = DispatchGroup()
    for r in 0..<3 {
      busy.enter()
      Thread {
        var rounds = 0
        while !done.withLock({ $0 }) {
          switch r {
          case 0:
            _ = d.integer(forKey: "counter")
            _ = d.dictionaryRepresentation().count
            _ = d.object(forKey: "t0-1")
          case 1:
            let token = d.changeToken
            _ = d.hasChanged(since: token)
            _ = d.refreshIfChanged()
            _ = d.source(forKey: "t1-1")
          default:
            let churn = d.observe(["t2-\(rounds % keysEach)"]) { _ in }
            churn.cancel()
            let stream = d.changes(for: ["t3-0"])
            _ = stream
          }
          rounds += 1
        }
        busy.leave()
      }.start()
    }
    #expect(group.wait(timeout: .now() + 90) == .success)
    #expect(d.synchronize())
    done.withLock { $0 = true }
    #expect(busy.wait(timeout: .now() + 30) == .success)
    #expect(other.waitFor("synced", timeout: 60), "\(other.standardError)")
    other.send("0")
    #expect(other.wait() == 0)

    #expect(errors.withLock { $0 } == [])
    #expect(d.synchronize())
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["counter"] as? Int == incrementers * incrementsEach)
    var missing = 0
    for w in 0..<writers {
      for k in 0..<keysEach where onDisk["t\(w)-\(k)"] as? Int != k { missing += 1 }
    }
    for k in 0..<100 where onDisk["other-\(k)"] as? Int != k { missing += 1 }
    #expect(missing == 0)
    // In memory too, and the long-lived observer's last word on each key written by one
    // thread is the final value. (Changes made on different threads, like the counter's,
    // reach observers on those threads, in no promised order.)
    #expect(d.integer(forKey: "counter") == incrementers * incrementsEach)
    let seen = lastSeen.withLock { $0 }
    var stale = 0
    for (key, value) in seen where key != "counter" && value != d.value(forKey: key) { stale += 1 }
    #expect(stale == 0, "observers were left with stale values")
    #expect(seen.count >= writers * keysEach)
  }
}

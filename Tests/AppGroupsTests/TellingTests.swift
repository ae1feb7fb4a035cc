@testable import AppGroups
import AppGroupsTestSupport
import Dispatch
import Foundation
import Testing

/// A re-read that finds nothing new, because another thread's re-read has just put the change
/// in memory and not yet told the view, waits for that telling before it returns: after
/// `synchronize()`, the view never answers from a cache the change has not reached.
@Suite("Telling", .processBound, .serialized)
struct TellingTests {
  private func set(_ t: TestRoot, _ key: String, _ value: String) {
    let run = try? Product.run(
      "appgroups-worker", ["set", TestRoot.group, key, value],
      environment: t.environment(as: TestRoot.widget).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(run?.status == 0, "\(run?.stderr ?? "not run")")
  }

  @Test func aSynchronizeWhileTheMonitorIsTellingWaitsForItsTelling() throws {
    let t = try TestRoot()
    set(t, "greeting", "one")
    let d = try t.defaults(TestRoot.group)
    // Read, so that the view caches it.
    #expect(d.string(forKey: "greeting") == "one")
    let path = t.groupSuiteFile.path
    // The monitor's thread, holding the change in memory untold, waits until this thread
    // waits for it (bounded: without the wait, it goes on after 10 s, and the test fails).
    let inMemory = DispatchSemaphore(value: 0)
    let waiting = DispatchSemaphore(value: 0)
    let once = Locked(false)
    SuiteStore.beforeTellingForTesting.withLock {
      $0 = { told in
        guard told == path, !once.withLock({ let was = $0; $0 = true; return was }) else { return }
        inMemory.signal()
        _ = waiting.wait(timeout: .now() + 10)
      }
    }
    SuiteStore.waitingForTellingForTesting.withLock {
      $0 = { told in if told == path { waiting.signal() } }
    }
    defer {
      SuiteStore.beforeTellingForTesting.withLock { $0 = nil }
      SuiteStore.waitingForTellingForTesting.withLock { $0 = nil }
    }
    set(t, "greeting", "two")
    #expect(inMemory.wait(timeout: .now() + 30) == .success, "the change monitor did not re-read")
    // Its re-read finds nothing new (the monitor's thread read it), and waits for the telling.
    #expect(d.synchronize())
    #expect(d.string(forKey: "greeting") == "two")
  }
}

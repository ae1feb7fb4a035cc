@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Synchronization
import Testing

/// A burst of `set` calls is committed once it pauses (so that a `synchronize()` at its end
/// makes the burst's one durable write), but a burst that never pauses is still on disk within
/// ``SuiteStore/burstCeiling`` of its changes, and what `synchronize()` acknowledges is there.
@Suite("Commit: a burst's commit waits for it to pause, within a bound", .processBound)
struct BurstCommitTests {
  /// The largest `n` of the values on disk (read with Foundation), or -1.
  private func newestOnDisk(_ t: TestRoot) -> Int {
    guard let values = try? TestRoot.readOnDisk(t.groupSuiteFile) else { return -1 }
    return values.values.reduce(-1) { max($0, ($1 as? Int) ?? -1) }
  }

  @Test func aBurstThatNeverPausesIsOnDiskWithinTheBound() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    // Whatever the machine's load does to the writer's pace, its burst never pauses: only the
    // bound ends it.
    d.view.suite.burstNeverPausesForTesting.store(true, ordering: .relaxed)
    let written = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
    let done = DispatchSemaphore(value: 0)
    // 500 keys set over and over, each to a new number: a burst as long as the test wants,
    // within the size limit.
    Thread.detachNewThread {
      var n = 0
      while !stop.load(ordering: .relaxed) {
        d.set(n, forKey: "b-\(n % 500)")
        n += 1
        written.store(n, ordering: .relaxed)
      }
      done.signal()
    }
    // Well into the burst: its first commit (made at once) is long past.
    #expect(eventually({ written.load(ordering: .relaxed) >= 20_000 }, within: 60))
    let threshold = written.load(ordering: .relaxed)
    // A value set after `threshold` reaches the disk while the burst goes on.
    let landed = eventually({ newestOnDisk(t) >= threshold }, within: 20)
    let stillWriting = written.load(ordering: .relaxed)
    stop.store(true, ordering: .relaxed)
    #expect(done.wait(timeout: .now() + 60) == .success)
    #expect(landed, "nothing set after \(threshold) reached the disk while the burst went on")
    #expect(stillWriting > threshold)
    // Its end, acknowledged: every key's last value.
    #expect(d.synchronize())
    let last = written.load(ordering: .relaxed) - 1
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk.count == 500)
    #expect(onDisk["b-\(last % 500)"] as? Int == last)
  }

  @Test func aBurstEndedBySynchronizeIsOnDiskWhole() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    let count = 5_000
    for i in 0..<count { d.set(i, forKey: "k-\(i)") }
    #expect(d.synchronize())
    // Nothing is left for a later commit: what is on disk is the whole burst.
    #expect(!d.view.suite.hasPendingChanges)
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk.count == count)
    #expect((0..<count).allSatisfy { onDisk["k-\($0)"] as? Int == $0 })
    // Another process reads it all.
    #expect(try t.readGroupSuite(prefix: "k-")?.count == count)
  }

  /// The commit a `set` schedules, once the commit queue gets to it: at once for a lone `set`;
  /// for a burst's head (``SuiteStore/burstHead`` changes came meanwhile), when the burst
  /// pauses, not a durable write of its first changes on their own.
  @Test func aBurstsHeadWaitsForTheBurstWhereALoneSetIsCommittedAtOnce() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    let store = d.view.suite
    store.burstNeverPausesForTesting.store(true, ordering: .relaxed)
    // Runs `sets` while the commit queue is held, then lets the commit the first `set`
    // scheduled run, and waits until it ran: whether it took the burst as a burst is then
    // on disk. `nil` when the machine held this thread so long that the burst's bound may
    // have passed meanwhile (nothing to conclude).
    func onDiskOnceScheduledCommitRan(_ sets: () -> Void) -> [String: Any]? {
      let held = DispatchSemaphore(value: 0)
      let release = DispatchSemaphore(value: 0)
      store.queue.async {
        held.signal()
        release.wait()
      }
      held.wait()
      sets()
      let released = ContinuousClock.now
      release.signal()
      store.queue.sync {}
      guard ContinuousClock.now - released < SuiteStore.burstCeiling / 2 else { return nil }
      return (try? TestRoot.readOnDisk(t.groupSuiteFile)) ?? [:]
    }
    let lone = onDiskOnceScheduledCommitRan { d.set(1, forKey: "lone") }
    if let lone { #expect(lone["lone"] as? Int == 1, "a lone set was not committed at once") }
    let burst = onDiskOnceScheduledCommitRan {
      for i in 0..<100 { d.set(i, forKey: "k-\(i)") }
    }
    if let burst { #expect(burst["k-0"] == nil, "a burst's head was committed while the burst went on") }
    #expect(d.synchronize())
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk.count == 101)
  }

  /// A burst's commit writes this process's values as they are (not rebuilt key by key) only
  /// while the file is the version they were built on: another process's change, made while
  /// the commit waited for the lock, is read under the lock and kept.
  @Test func aBurstsCommitKeepsAChangeMadeWhileItWaitedForTheLock() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    // Holds the lock 1 s while running (waited for past the bound), then writes "held".
    let holder = try ChildProcess(
      "appgroups-worker", ["hold", TestRoot.group, "1", "busy"],
      environment: t.environment(as: TestRoot.widget).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(holder.waitFor("holding", timeout: 60), "\(holder.standardError)")
    let count = 200
    for i in 0..<count { d.set(i, forKey: "k-\(i)") }
    #expect(d.synchronize())
    #expect(holder.waitFor("released", timeout: 60), "\(holder.standardError)")
    #expect(holder.wait() == 0)
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["held"] as? String == "held")
    #expect((0..<count).allSatisfy { onDisk["k-\($0)"] as? Int == $0 })
    #expect(d.string(forKey: "held") == "held")
  }
}

@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// `synchronize()` waits for a lock whose holder is making progress, as Apple's waits: a
/// commit slowed down past the 1 s bound by a loaded machine costs time, not a false. A holder
/// that is stopped or idle under the lock still ends the wait at the bound.
@Suite("Contention: a holder making progress is waited for", .processBound)
struct LockProgressTests {
  private func holder(_ t: TestRoot, _ mode: String, seconds: Int) throws -> ChildProcess {
    // The suite exists first, so that the holder's lock is the only thing a writer waits for.
    let made = try Product.run("groupctl", ["--root", t.path, "write", TestRoot.group, "k", "before"])
    #expect(made.status == 0, "\(made.stderr)")
    let holder = try ChildProcess(
      "appgroups-worker", ["hold", TestRoot.group, String(seconds), mode],
      environment: t.environment(as: TestRoot.widget).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(holder.waitFor("holding", timeout: 60), "\(holder.standardError)")
    return holder
  }

  private func write(_ t: TestRoot) throws -> (status: Int32, stdout: String, stderr: String) {
    try Product.run(
      "appgroups-worker", ["set", TestRoot.group, "k", "after"],
      environment: t.environment(as: TestRoot.app).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
  }

  @Test func aCommitWaitsPastTheBoundForAHolderThatIsRunning() throws {
    let t = try TestRoot()
    // Holds the lock 3 s while running (as a commit slowed down by a loaded machine is).
    let holder = try holder(t, "busy", seconds: 3)
    let writer = try write(t)
    #expect(writer.status == 0, "\(writer.stdout) \(writer.stderr)")
    #expect(writer.stdout == "set\n", "synchronize() returned false: \(writer.stderr)")
    #expect(holder.waitFor("released", timeout: 60), "\(holder.standardError)")
    #expect(holder.wait() == 0)
    let read = try Product.run("groupctl", ["--root", t.path, "read", TestRoot.group, "k"])
    #expect(read.stdout == "after\n")
  }

  /// A holder whose locking thread is woken often but is on a CPU for far less than a clock
  /// tick (10 ms) a second is live and scheduled, as one is that waits on a lock of its own
  /// process, on a pipe, or is preempted on a loaded machine: a writer waits past the bound
  /// until it lets go. Judged by the clock ticks of its CPU time, such a holder looked idle for
  /// a whole bound, and one of sixteen writers beside two CPU hogs got `synchronize()` false.
  ///
  /// And a holder whose locking thread sleeps, never woken, while another thread of its
  /// process runs (it waits on a lock of its own process whose owner, its change monitor, is
  /// preempted in a refresh: seen in every waiter that gave up among sixteen writers beside two
  /// CPU hogs) is waited for in the same way.
  @Test(arguments: ["naps", "handoff"])
  func aCommitWaitsPastTheBoundForAHolderThatIsLiveWithoutUsingTheCPU(_ mode: String) throws {
    let t = try TestRoot()
    // Holds the lock 4 s (the bound is 1 s): in naps of 20 ms (50 wakes a second), or
    // waiting on a semaphore for another thread that spins.
    let holder = try holder(t, mode, seconds: 4)
    let writer = try write(t)
    #expect(writer.stdout == "set\n", "synchronize() returned false: \(writer.stderr)")
    #expect(!writer.stderr.contains("without making progress"), "\(writer.stderr)")
    #expect(holder.waitFor("released", timeout: 60), "\(holder.standardError)")
    #expect(holder.wait() == 0)
    let read = try Product.run("groupctl", ["--root", t.path, "read", TestRoot.group, "k"])
    #expect(read.stdout == "after\n", "the writer's value, written after the holder's commit")
  }

  @Test(arguments: ["idle", "stopped"])
  func aHolderThatMakesNoProgressEndsTheWaitAtTheBound(_ state: String) throws {
    let t = try TestRoot()
    // Holds the lock far longer than the test waits: the writer must give up by itself.
    let holder = try holder(t, state == "idle" ? "idle" : "busy", seconds: 600)
    defer {
      holder.signal(SIGKILL)
      _ = holder.wait()
    }
    if state == "stopped" { holder.signal(SIGSTOP) }
    let writer = try write(t)
    #expect(writer.status == 1)
    #expect(writer.stdout == "sync-failed\n", "\(writer.stdout)")
    #expect(writer.stderr.contains("without making progress"), "\(writer.stderr)")
  }

  /// A token read while another process holds the lock, with a file in place that the token
  /// does not describe (here an outside edit; in an observer, a commit between its rename and
  /// its token), waits for that process's token, also while its holder sleeps: a loaded
  /// writer asleep on a lock of its own process for longer than the bound gave the older
  /// token, and an observer recorded a token one behind the values it was told of.
  @Test func aTokenWaitsForTheCommitOfAnotherProcessWhoseHolderSleeps() throws {
    let t = try TestRoot()
    let made = try Product.run("groupctl", ["--root", t.path, "write", TestRoot.group, "k", "before"])
    #expect(made.status == 0, "\(made.stderr)")
    let d = try t.defaults(TestRoot.group, as: TestRoot.app)
    // Asleep under the lock for 0.3 s (the bound is 20 ms), then commits and lets go.
    let holder = try ChildProcess(
      "appgroups-worker", ["hold", TestRoot.group, "0.3", "idle"],
      environment: t.environment(as: TestRoot.widget).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(holder.waitFor("holding", timeout: 60), "\(holder.standardError)")
    try editOutside(t.groupSuiteFile) { $0["outside"] = "edit" }
    let token = d.changeToken
    #expect(holder.waitFor("released", timeout: 60), "\(holder.standardError)")
    #expect(holder.wait() == 0)
    #expect(token == d.changeToken, "the token read while the holder slept is its commit's")
    #expect(!d.hasChanged(since: token))
  }

  /// A token read while another process is stopped between its rename and its token (the new
  /// plist in place, the record still the old one's) does not wait for it: a stopped holder
  /// ends the wait at the bound, with the older token, which only makes a consumer read
  /// again. The reader neither moves the token under the writer's lock nor goes back, and
  /// once the writer goes on, its token is the one read.
  @Test func aTokenDoesNotWaitForAWriterStoppedBetweenItsRenameAndItsToken() throws {
    let t = try TestRoot()
    let made = try Product.run("groupctl", ["--root", t.path, "write", TestRoot.group, "k", "before"])
    #expect(made.status == 0, "\(made.stderr)")
    let d = try t.defaults(TestRoot.group, as: TestRoot.app)
    let older = d.changeToken
    let marker = t.sandbox.url.appendingPathComponent("renamed").path
    let writer = try ChildProcess(
      "appgroups-worker", ["set", TestRoot.group, "k", "after"],
      environment: t.environment(as: TestRoot.widget).merging([
        "APPGROUPS_WORKER_NO_WAIT": "1", "APPGROUPS_TEST_PAUSE_AFTER_RENAME": marker,
      ]) { $1 })
    #expect(waitForFile(marker, timeout: 60), "\(writer.standardError)")
    #expect(waitUntilStopped(writer.process.processIdentifier, timeout: 60), "the writer is not stopped")
    #expect((try? TestRoot.readOnDisk(t.groupSuiteFile))?["k"] as? String == "after", "the new plist is in place")

    let start = FileSystem.monotonicNanoseconds()
    let token = d.changeToken
    let took = FileSystem.monotonicNanoseconds() - start
    #expect(processState(writer.process.processIdentifier) == "T", "read while the writer stays stopped")
    #expect(token == older, "the older token: a stopped writer's lock is not taken over")
    // The bound is 20 ms; the wait for a holder that makes progress goes on to the ceiling.
    #expect(took < SuiteFile.tokenWaitCeiling, "waited \(took) ns for a stopped writer")

    // From here on nothing throws: the writer always goes on and is waited for.
    writer.signal(SIGCONT)
    #expect(writer.waitFor("set", timeout: 60), "\(writer.standardError)")
    #expect(writer.wait() == 0)
    let moved = d.changeToken
    #expect(moved > older, "the writer's token, once it goes on")
    #expect(d.hasChanged(since: token))
    #expect(!d.hasChanged(since: moved))
    #expect(d.string(forKey: "k") == "after")
  }

  /// A waiter looks at the lock's holder when its bound runs out. A look that lands while the
  /// lock changes hands (its holder let go, the next one has not recorded itself yet) sees no
  /// holder; under load the next holder can be preempted there for a whole time slice, and
  /// waiters that looked then gave up while the lock was moving (sixteen writers beside two
  /// `yes`: four `synchronize()` false at once). The holder's going counts as the lock
  /// changing hands; two looks that both see none still know nothing.
  @Test func aLookWhileTheLockChangesHandsIsProgress() throws {
    let t = try TestRoot()
    let lock = try LockedFile.opening(t.path + "/probe.lock", options: .init(mapsPage: true))
    try lock.withLock(timeout: .seconds(1), doing: "the probe") { () throws(AppGroupsError) in
      var look = LockedFile.HolderLook()
      _ = lock.holderProgressed(since: &look)
      #expect(look.holder != 0, "the holder records itself as soon as it has the lock")
      lock.unlock()
      #expect(lock.holderProgressed(since: &look), "the holder let go: the lock changes hands")
      #expect(!lock.holderProgressed(since: &look), "two looks that saw no holder know nothing")
      try lock.lock(until: FileSystem.deadline(after: .seconds(1)), bound: .seconds(1), doing: "the probe")
    }
  }
}

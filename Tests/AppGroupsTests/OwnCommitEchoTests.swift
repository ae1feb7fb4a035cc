@testable import AppGroups
import AppGroupsTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

/// A process's change monitor hears the process's own commits too (the rename of its plist):
/// while the commit is still writing, the monitor leaves the event to it, and the commit
/// hands it back only when the file is not as it wrote it. Serialized: the tests share the
/// monitor's hook for events left to a commit.
@Suite("A commit's own event", .serialized)
struct OwnCommitEchoTests {
  @Test func aCommitOfThisProcessIsNotToldBackAsAnotherProcesssChange() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let log = ChangeLog()
    let observation = d.observe { log.record($0) }
    defer { observation.cancel() }
    for value in 0..<20 {
      d.set(value, forKey: "mine")
      #expect(d.synchronize())
    }
    // Heard after every commit's own event: those were handled before it.
    try editOutside(t.groupSuiteFile) { $0["outside"] = "edited" }
    #expect(log.wait { $0.key == "outside" }?.origin == .otherProcess)
    let mine = log.all.filter { $0.key == "mine" }
    #expect(mine.count == 20)
    #expect(mine.allSatisfy { $0.origin == .thisProcess })
    #expect(d.integer(forKey: "mine") == 19)
  }

  /// Something that ignores the lock replaces the plist while a commit of this process is
  /// writing it: the monitor leaves the event to the commit, which finds the file not as it
  /// wrote it and hands the event back; the monitor's thread re-reads and tells. Meanwhile
  /// `hasChanged(since:)` looks at the file rather than trust the token.
  @Test func anOutsideEditHeardWhileThisProcessWritesIsHandedBackAndTold() throws {
    let (t, d) = try Self.suiteWithOneValue()
    let store = d.view.suite
    let log = ChangeLog()
    let toldOnMonitor = Locked<[Bool]>([])
    let observation = d.observe(["outside"]) { changes in
      toldOnMonitor.withLock { $0.append(ChangeMonitor.shared.isCurrentThread) }
      log.record(changes)
    }
    defer { observation.cancel() }
    let left = Self.signalWhenLeftToACommit(store)
    defer { SuiteStore.leftToCommitForTesting.withLock { $0 = nil } }

    // This thread plays a commit of this process that holds the gate and has put its plist
    // in place (its token moved; this process's not yet).
    #expect(store.file.enterGate(before: FileSystem.deadline(after: .seconds(10))) == .entered)
    store.file.inGate { store.file.gateOwnerHasFileLock = true }
    Self.moveTokenAsARename(store)
    let token = d.changeToken
    try editOutside(t.groupSuiteFile) { $0["outside"] = "edited" }
    let wasLeft = left.wait(timeout: .now() + 10) == .success
    #expect(wasLeft, "the monitor did not leave the event to the commit")
    store.file.leaveGate()
    // Left, not yet handled: the token (which an outside edit does not move) is not trusted.
    #expect(d.hasChanged(since: token))
    store.commitLeftGate()

    let change = log.wait { $0.key == "outside" }
    #expect(change?.newValue == .string("edited"))
    #expect(change?.origin == .otherProcess)
    #expect(toldOnMonitor.withLock { $0 } == [true])
    #expect(d.string(forKey: "outside") == "edited")
    #expect(d.string(forKey: "k") == "before")
    #expect(Self.monitorGoesIdle(), "the pass held for the event never ended")
  }

  /// What the commit finds as it wrote it (only its own event was heard) is dropped: nothing
  /// is told, and `hasChanged(since:)` trusts the token again.
  @Test func anEventLeftToACommitThatFindsItsOwnFileIsDropped() throws {
    let (t, d) = try Self.suiteWithOneValue()
    let store = d.view.suite
    let left = Self.signalWhenLeftToACommit(store)
    defer { SuiteStore.leftToCommitForTesting.withLock { $0 = nil } }
    let log = ChangeLog()
    let observation = d.observe { log.record($0) }
    defer { observation.cancel() }

    #expect(store.file.enterGate(before: FileSystem.deadline(after: .seconds(10))) == .entered)
    store.file.inGate { store.file.gateOwnerHasFileLock = true }
    Self.moveTokenAsARename(store)
    // An event that names the plist and changes nothing: the file is touched in place.
    let handle = try FileHandle(forWritingTo: t.groupSuiteFile)
    try handle.close()
    let wasLeft = left.wait(timeout: .now() + 10) == .success
    #expect(wasLeft, "the monitor did not leave the event to the commit")
    // The commit has written: this process's token is the one it moved to.
    store.file.seenToken.store(store.file.lockFile?.token ?? 0, ordering: .releasing)
    store.file.leaveGate()
    store.commitLeftGate()
    #expect(Self.monitorGoesIdle(), "the pass held for the event never ended")
    let token = d.changeToken
    #expect(!d.hasChanged(since: token))
    // Heard after the dropped event: nothing else was told before it.
    try editOutside(t.groupSuiteFile) { $0["outside"] = "edited" }
    #expect(log.wait { $0.key == "outside" } != nil)
    #expect(log.all.map(\.key) == ["outside"])
  }

  /// Whether the change monitor is, at some moment within 10 s, handling no event (other tests
  /// of this process make events too): a pass held for an event and never ended keeps it
  /// busy for ever.
  private static func monitorGoesIdle() -> Bool {
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
      if DirectoryWatcher.Passes.idle() != nil { return true }
      Thread.sleep(forTimeInterval: 0.001)
    }
    return false
  }

  /// Moves the token to describe the plist in place, as a commit does right after its rename
  /// (this process's own token stays behind until the commit has written).
  private static func moveTokenAsARename(_ store: SuiteStore) {
    store.file.lockFile?.advance(to: try? FileSystem.identity(ofPath: store.path))
  }

  /// A test root and its group suite, holding `k` = "before" on disk.
  private static func suiteWithOneValue() throws -> (TestRoot, GroupDefaults) {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    d.set("before", forKey: "k")
    #expect(d.synchronize())
    return (t, d)
  }

  /// A semaphore signalled when the change monitor leaves an event of `store` to a commit.
  private static func signalWhenLeftToACommit(_ store: SuiteStore) -> DispatchSemaphore {
    let left = DispatchSemaphore(value: 0)
    let path = store.path
    SuiteStore.leftToCommitForTesting.withLock {
      $0 = { leftPath in if leftPath == path { left.signal() } }
    }
    return left
  }
}

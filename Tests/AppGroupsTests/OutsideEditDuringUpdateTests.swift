@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// Something that ignores the lock replaces the plist while an atomic update of this process
/// runs its closure under the lock. The update has renamed nothing yet, so the event is not
/// its own: the change monitor re-reads the file at once, the update's look before its rename
/// finds the version it now holds, and the closure runs once. Left to the update instead, the
/// update found the file replaced, started over and ran the closure a second time under the
/// lock (a reader in another process, waiting for the update's token, then waited twice as
/// long, past its ceiling on a loaded machine).
@Suite("An outside edit heard during an atomic update")
struct OutsideEditDuringUpdateTests {
  @Test func isReadAtOnceAndTheClosureRunsOnce() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.app)
    d.set("before", forKey: "k")
    #expect(d.synchronize())
    let observation = d.observe { _ in }
    defer { observation.cancel() }

    let calls = Locked(0)
    let heard = Locked(false)
    try d.update(forKey: "n") { _ in
      let call = calls.withLock { $0 += 1; return $0 }
      if call == 1 {
        try editOutside(t.groupSuiteFile) { $0["outside"] = "edit" }
        // Bounded: the monitor's re-read puts the edit in memory while the closure runs.
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline && d.string(forKey: "outside") != "edit" {
          Thread.sleep(forTimeInterval: 0.001)
        }
        heard.withLock { $0 = d.string(forKey: "outside") == "edit" }
      }
      return .string("updated")
    }
    #expect(heard.withLock { $0 }, "the edit was not read while the update's closure ran")
    #expect(calls.withLock { $0 } == 1, "the update started over")
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["outside"] as? String == "edit")
    #expect(onDisk["n"] as? String == "updated")
    #expect(onDisk["k"] as? String == "before")
  }
}

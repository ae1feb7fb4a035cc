import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// How running apps hear the device: every change reaches them at once, in order, sandboxed
/// or not.
@Suite("Device events", .processBound)
struct DeviceEventsTests {
  /// An app that hears the device (`appgroups-worker device-watch`), launched with
  /// `groupctl run --as` (confined when the kernel has Landlock), or directly.
  func watcher(_ t: LifecycleRoot, sandboxed: Bool = true) throws -> ChildProcess {
    if sandboxed {
      return try t.launch(TestRoot.widget, [Product.url("appgroups-worker").path, "device-watch"])
    }
    let child = try ChildProcess(
      "appgroups-worker", ["device-watch"], environment: t.g.t.environment(as: TestRoot.widget))
    #expect(child.waitFor("ready"), "\(child.standardError)")
    return child
  }

  /// The next `note …` line, as `(word, available, left)`.
  func note(_ child: ChildProcess) -> (word: String, available: Bool, left: Int)? {
    guard let line = child.waitForLine(where: { $0.hasPrefix("note ") }) else { return nil }
    let words = line.split(separator: " ")
    guard words.count == 4 else { return nil }
    return (
      String(words[1]), words[2] == "available=true",
      Int(words[3].dropFirst("left=".count)) ?? -2
    )
  }

  @Test(arguments: [true, false])
  func aRunningAppHearsLockAndUnlockInOrderWithTheGrace(sandboxed: Bool) throws {
    let t = try LifecycleRoot()
    try t.g.ok(["device", "passcode", "set", "1234"])
    let app = try watcher(t, sandboxed: sandboxed)

    try t.g.ok(["device", "lock", "--grace", "30"])
    let will = try #require(note(app), "\(app.standardError)")
    #expect(will.word == "will")
    #expect(will.available, "told before the grace runs out: still available")
    #expect(will.left > 20_000 && will.left <= 30_000, "\(will)")

    try t.g.ok(["device", "unlock", "--passcode", "1234"])
    let did = try #require(note(app))
    #expect(did.word == "did" && did.available)

    // No grace: it is gone by the time the app hears it, and the app hears it all the same.
    try t.g.ok(["device", "lock", "--grace", "0"])
    let gone = try #require(note(app))
    #expect(gone.word == "will" && !gone.available)
    try t.g.ok(["device", "unlock", "--passcode", "1234"])
    #expect(note(app)?.word == "did")
    #expect(app.waitFor("event stateChanged unlocked"))

    // Changes without a passcode tell nothing of protected data, only that the state changed.
    try t.g.ok(["device", "passcode", "clear", "--passcode", "1234"])
    #expect(app.waitFor("event stateChanged unlocked"))
    try t.g.ok(["device", "lock"])
    #expect(app.waitFor("event stateChanged locked"))
    app.send("quit")
    #expect(app.waitForLine { $0.hasPrefix("note ") } == nil, "no note without a passcode")
    #expect(app.wait() == 0)
  }

  /// A lock of a device locked already that cuts the grace short is told again, with the
  /// new deadline, as the first lock was told; a lock that keeps the grace tells nothing.
  @Test(arguments: [true, false])
  func aGraceCutShortIsToldWithItsNewDeadline(sandboxed: Bool) throws {
    let t = try LifecycleRoot()
    try t.g.ok(["device", "passcode", "set", "1234"])
    let app = try watcher(t, sandboxed: sandboxed)

    try t.g.ok(["device", "lock", "--grace", "600"])
    let first = try #require(note(app), "\(app.standardError)")
    #expect(first.word == "will" && first.available, "\(first)")
    #expect(first.left > 500_000 && first.left <= 600_000, "\(first)")
    #expect(app.waitFor("event stateChanged locked"))

    // Kept (a longer grace does not lengthen it): nothing new to tell of protected data.
    try t.g.ok(["device", "lock", "--grace", "3600"])
    try t.g.ok(["device", "lock", "--grace", "30"])
    let cut = try #require(note(app), "the new deadline was not told: \(app.standardError)")
    #expect(cut.word == "will" && cut.available, "\(cut)")
    #expect(cut.left > 0 && cut.left <= 30_000, "\(cut)")
    #expect(app.waitFor("event stateChanged locked"))

    try t.g.ok(["device", "lock", "--grace", "0"])
    // The deadline is the lock's moment: past by the time the app hears it (what is left is
    // measured when it hears, a few milliseconds on a loaded machine).
    let gone = try #require(note(app), "\(app.standardError)")
    #expect(gone.word == "will" && !gone.available && gone.left <= 0, "\(gone)")

    try t.g.ok(["device", "unlock", "--passcode", "1234"])
    #expect(note(app)?.word == "did")
    app.send("quit")
    #expect(app.waitForLine { $0.hasPrefix("note ") } == nil, "no note but those")
    #expect(app.wait() == 0)
  }

  @Test func anAppStoppedMeanwhileHearsWhatItMissedInOrder() throws {
    let t = try LifecycleRoot()
    try t.g.ok(["device", "passcode", "set", "1234"])
    let app = try watcher(t)
    app.signal(SIGSTOP)
    try t.g.ok(["device", "lock", "--grace", "0"])
    try t.g.ok(["device", "unlock", "--passcode", "1234"])
    try t.g.ok(["device", "lock", "--grace", "0"])
    try t.g.ok(["device", "unlock", "--passcode", "1234"])
    app.signal(SIGCONT)
    // Two locks and two unlocks missed: a lock and an unlock, in that order.
    #expect(note(app)?.word == "will")
    let did = try #require(note(app))
    #expect(did.word == "did" && did.available)
    app.send("quit")
    #expect(app.wait() == 0)
  }

  @Test func aRebootOfAnUnlockedDeviceIsHeardAsProtectedDataGoing() throws {
    let t = try LifecycleRoot()
    try t.g.ok(["device", "passcode", "set", "1234"])
    // Not started by groupctl run: it outlives the reboot, and hears it.
    let app = try watcher(t, sandboxed: false)
    try t.g.ok(["device", "reboot"])
    let will = try #require(note(app))
    #expect(will.word == "will" && !will.available)
    #expect(app.waitFor("event stateChanged before-first-unlock"))
    try t.g.ok(["device", "unlock", "--passcode", "1234"])
    #expect(note(app)?.word == "did")
    app.send("quit")
    #expect(app.wait() == 0)
  }

  @Test func aSandboxedAppReadsTheDeviceStateAndNothingOfTheKeybag() throws {
    let t = try LifecycleRoot()
    try t.g.ok(["device", "passcode", "set", "1234"])
    guard (try? AppSandbox.landlockABI()) != nil else { return }  // nothing is confined then
    let state = t.path + "/Device/state"
    let keybag = t.path + "/Keybag/Keybag.plist"
    let run = try t.g.run([
      "run", "--as", TestRoot.widget, "--", Product.url("appgroups-worker").path, "fs-check",
      "read", state, "list", t.path + "/Device", "write", state, "read", keybag,
      "list", t.path + "/Keybag",
    ])
    #expect(
      run.stdout.split(separator: "\n").map(String.init) == [
        "read \(state) ok", "list \(t.path)/Device ok", "write \(state) EACCES",
        "read \(keybag) EACCES", "list \(t.path)/Keybag EACCES",
      ], "\(run)")
  }
}

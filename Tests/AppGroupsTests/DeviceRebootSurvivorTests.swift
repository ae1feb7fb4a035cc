import AppGroups
import AppGroupsKeybag
import AppGroupsKeychain
import AppGroupsTestSupport
import Foundation
import Synchronization
import Testing

/// A process that outlives `groupctl device reboot` (no device lets one): the suites it holds
/// open behave as suites opened before the first unlock, from the moment it can know.
@Suite("A store open across a reboot", .processBound)
struct DeviceRebootSurvivorTests {
  /// Waits until this process has heard the device reach `lockState` (the library's own
  /// handlers run before the events are delivered).
  func hear(_ r: KeybagRoot, _ lockState: DeviceState.LockState, _ change: () throws -> Void)
    throws -> Bool
  {
    let heard = DispatchSemaphore(value: 0)
    let observation = ProtectedData.observe(root: r.root) { event in
      if event.kind == .stateChanged && event.state.lockState == lockState { heard.signal() }
    }
    defer { observation.cancel() }
    try change()
    return heard.wait(timeout: .now() + 20) == .success
  }

  @Test func writesAfterARebootStayInMemoryAndLandAtTheFirstUnlock() throws {
    let unique = UUID().uuidString.prefix(8)
    let (kept, written, admin) = ("kept-\(unique)", "written-\(unique)", "admin-\(unique)")
    let r = try KeybagRoot()
    try r.keybag.setPasscode("1234")
    let defaults = try r.t.defaults(TestRoot.group)
    defaults.set("before", forKey: kept)
    #expect(defaults.synchronize())
    #expect(defaults.unavailableReason == nil)

    let lines = Mutex<[String]>([])
    let heard = try Diagnostics.withHandler({ line in lines.withLock { $0.append(line) } }) {
      () throws -> Bool in try hear(r, .beforeFirstUnlock) { try r.device.reboot() }
    }
    #expect(heard)
    let reason = try #require(defaults.unavailableReason, "the open suite did not hear the reboot")
    #expect(reason.contains("before first unlock"))
    #expect(
      lines.withLock { $0 }.contains { $0.contains("became unavailable while the suite was open") })
    #expect(defaults.string(forKey: kept) == "before", "what it read stays in its memory")

    let plist = try Data(contentsOf: r.t.groupSuiteFile)
    defaults.set("after", forKey: written)
    #expect(defaults.string(forKey: written) == "after", "a write is seen at once")
    #expect(!defaults.synchronize(), "not on disk: synchronize() says false")
    let refused = #expect(throws: AppGroupsError.self) { try defaults.synchronizeOrThrow() }
    #expect(refused?.code == .protectedDataUnavailable)
    #expect(refused?.message.contains("before first unlock") == true)
    #expect(try Data(contentsOf: r.t.groupSuiteFile) == plist, "the plist was written")
    let update = #expect(throws: AppGroupsError.self) {
      try defaults.update(forKey: "count") { _ in .integer(1) }
    }
    #expect(update?.code == .protectedDataUnavailable)

    // The administrator writes meanwhile: no re-read while the file cannot be read.
    let write = try Product.run(
      "groupctl", ["--root", r.t.path, "write", TestRoot.group, admin, "3"])
    #expect(write.status == 0, "\(write.stderr)")
    #expect(!defaults.refreshIfChanged())
    #expect(defaults.string(forKey: admin) == nil)

    // A second reboot, and a wrong passcode: still unavailable, nothing written.
    #expect(try hear(r, .beforeFirstUnlock) { try r.device.reboot() })
    #expect(throws: (any Error).self) { try r.keybag.unlock(passcode: "9999") }
    #expect(!defaults.synchronize())
    #expect(try TestRoot.readOnDisk(r.t.groupSuiteFile)[written] == nil)

    // The first unlock: the file is read under the write, which lands key by key.
    #expect(try hear(r, .unlocked) { try r.keybag.unlock(passcode: "1234") })
    #expect(defaults.unavailableReason == nil)
    #expect(defaults.string(forKey: admin) == "3", "the file was read at the unlock")
    #expect(defaults.synchronize())
    let disk = try TestRoot.readOnDisk(r.t.groupSuiteFile)
    #expect(disk[kept] as? String == "before" && disk[written] as? String == "after")
    #expect(disk[admin] as? String == "3", "the domain was not replaced")
  }

  /// A commit already past its availability check when the device restarts (stopped just
  /// before its rename) is refused at its commit point; so is the landing commit after the
  /// unlock when the device restarts again; the writes land at the next unlock.
  @Test func aCommitInFlightAcrossARebootIsRefusedAtItsCommitPoint() throws {
    let r = try KeybagRoot()
    try r.keybag.setPasscode("1234")
    let marker = r.t.sandbox.url.appendingPathComponent("before-rename").path
    let writer = try ChildProcess(
      "appgroups-worker", ["observe", TestRoot.group],
      environment: r.t.environment().merging([
        "APPGROUPS_WORKER_DIAGNOSTICS": "stdout", "APPGROUPS_TEST_PAUSE_BEFORE_RENAME": marker,
      ]) { $1 })
    let watcher = try ChildProcess(
      "appgroups-worker", ["observe", TestRoot.group], environment: r.t.environment(as: TestRoot.widget))
    #expect(writer.waitFor("ready") && watcher.waitFor("ready"))
    let pid = writer.process.processIdentifier

    /// Waits until the writer is stopped before a rename, runs `during`, lets it go on.
    func stoppedBeforeRename(_ during: () throws -> Void) throws {
      #expect(waitForFile(marker, timeout: 30), "\(writer.standardError)")
      guard FileManager.default.fileExists(atPath: marker) else { return }
      #expect(waitUntilStopped(pid, timeout: 30))
      try during()
      try FileManager.default.removeItem(atPath: marker)
      writer.signal(SIGCONT)
    }

    writer.send("set theme dark")
    #expect(writer.waitFor("ok"))
    writer.send("sync")
    try stoppedBeforeRename { try r.device.reboot() }
    #expect(writer.waitForLine { $0.hasPrefix("sync ") }?.hasPrefix("sync false") == true)
    let said = writer.waitForErrorLine {
      $0.contains("\(TestRoot.group).plist: protected data became unavailable while the suite was open")
    }
    #expect(said?.contains("before first unlock") == true, "\(writer.standardError)")
    #expect(!FileManager.default.fileExists(atPath: r.t.groupSuiteFile.path), "written after the reboot")

    // The unlock lands the write (a commit of the library's own); the device restarts while
    // that commit is stopped before its rename: refused again. A `synchronize()` waits for
    // that commit to end, and says false.
    try r.keybag.unlock(passcode: "1234")
    try stoppedBeforeRename { try r.device.reboot() }
    writer.send("sync")
    #expect(writer.waitForLine { $0.hasPrefix("sync ") }?.hasPrefix("sync false") == true)
    #expect(!FileManager.default.fileExists(atPath: r.t.groupSuiteFile.path), "written after the reboot")

    // The next unlock lands it; the other process hears it.
    try r.keybag.unlock(passcode: "1234")
    try stoppedBeforeRename {}
    watcher.send("wait theme dark 30")
    #expect(watcher.waitFor("seen theme", timeout: 40), "\(writer.standardError)")
    #expect(try TestRoot.readOnDisk(r.t.groupSuiteFile)["theme"] as? String == "dark")
    for child in [writer, watcher] {
      child.send("quit")
      #expect(child.wait() == 0)
    }
  }
}

/// The keychain and protected files ask the device at every call: a process that outlives a
/// reboot is refused from the moment the reboot is written, as one started after it is.
@Suite("Keychain and files across a reboot", .processBound)
struct DeviceRebootKeychainAndFileTests {
  @Test func aKeychainSessionThatOutlivesARebootIsRefusedUntilTheFirstUnlock() throws {
    let k = try KeychainRoot()
    try Keybag(root: k.root).setPasscode("1234")
    let child = try ChildProcess(
      "appgroups-keychain-worker", ["repl"], environment: k.environment(as: KeychainRoot.app))
    #expect(child.waitFor("ready"))
    func ask(_ line: String) -> [String] {
      child.send(line)
      var lines: [String] = []
      while let answer = child.waitForLine(timeout: 30), answer != "end" { lines.append(answer) }
      return lines
    }
    let copy = "copy class=genp svce=s acct=a r_Data=true"
    #expect(ask("add class=genp svce=s acct=a v_Data=secret-a pdmn=ck") == ["status 0"])
    #expect(ask(copy) == ["status 0", "data secret-a"])
    try Device(root: k.root).reboot()
    #expect(ask(copy) == ["status \(errSecInteractionNotAllowed)"])
    #expect(
      ask("update class=genp svce=s acct=a -- v_Data=changed")
        == ["status \(errSecInteractionNotAllowed)"])
    #expect(throws: (any Error).self) { try Keybag(root: k.root).unlock(passcode: "9999") }
    #expect(ask(copy) == ["status \(errSecInteractionNotAllowed)"])
    _ = try Keybag(root: k.root).unlock(passcode: "1234")
    #expect(ask(copy) == ["status 0", "data secret-a"], "the item is as it was")
    child.send("quit")
    #expect(child.wait() == 0)
  }

  @Test func aProtectedFileIsRefusedAfterARebootButAnOpenHandleStaysReadable() throws {
    let r = try KeybagRoot()
    try r.keybag.setPasscode("1234")
    let url = r.root.groupContainerURL(for: TestRoot.group).appendingPathComponent("token")
    try FileManager.default.createDirectory(
      at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try FileProtection.write(
      Data("t".utf8), to: url, options: [.atomic, .completeFileProtectionUntilFirstUserAuthentication],
      root: r.root)
    let handle = try FileProtection.open(forReadingFrom: url, root: r.root)
    try r.device.reboot()
    #expect(throws: CocoaError.self) { try FileProtection.read(contentsOf: url, root: r.root) }
    #expect(throws: CocoaError.self) {
      try FileProtection.write(
        Data("u".utf8), to: url,
        options: [.atomic, .completeFileProtectionUntilFirstUserAuthentication], root: r.root)
    }
    #expect(try handle.readToEnd() == Data("t".utf8), "a file already open stays readable")
    _ = try r.keybag.unlock(passcode: "1234")
    #expect(try FileProtection.read(contentsOf: url, root: r.root) == Data("t".utf8))
  }
}

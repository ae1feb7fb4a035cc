import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// `groupctl device`: the state, passcodes given as arguments and on stdin, bad input, and a
/// reboot with apps running.
@Suite("groupctl device", .processBound)
struct GroupctlDeviceTests {
  @Test func aRootWithNoDeviceStateIsANewDeviceAndNothingIsCreated() throws {
    let g = try GroupctlRoot()
    let shown = try g.run(["device"])
    #expect(shown.status == 0)
    #expect(shown.stdout.contains("state: unlocked (a new device: no device state yet)"))
    #expect(shown.stdout.contains("passcode: none"))
    #expect(!FileManager.default.fileExists(atPath: g.path + "/Device"), "showing creates nothing")
  }

  @Test func badInputIsRefusedAndChangesNothing() throws {
    let g = try GroupctlRoot()
    let usage: [([String], String)] = [
      (["device", "frobnicate"], "unknown device action (not shown: it may be a passcode)"),
      (["device", "passcode"], "missing argument set|clear"),
      (["device", "passcode", "reset"], "unknown passcode action (not shown: it may be a passcode)"),
      (["device", "passcode", "set"], "missing argument NEW-CODE|-"),
      (["device", "passcode", "clear"], "passcode clear needs the current passcode"),
      (["device", "lock", "--grace", "99999"], "--grace '99999' is not a number of seconds"),
      (["device", "lock", "--grace", "-1"], "--grace '-1'"),
      (["device", "reboot", "--grace", "nan"], "--grace 'nan'"),
      // Hexadecimal and exponents, which `Double` reads, are not seconds here.
      (["device", "lock", "--grace", "0x10"], "--grace '0x10' is not a number of seconds"),
      (["device", "lock", "--grace", "1e3"], "--grace '1e3' is not a number of seconds"),
      (["suspend", "--grace", "0x1", "1"], "--grace '0x1' is not a number of seconds from 0 to 60"),
      (["coordinate", "--as", TestRoot.app, "--read", "x", "--timeout", "0x10", "--", "true"],
       "--timeout '0x10' is not a number of seconds more than 0 and at most 3600"),
      (
        ["device", "unlock", "--grace", "1"],
        "--grace applies to 'device lock' and 'device reboot' only"
      ),
      (["device", "lock", "--passcode", "1234"], "--passcode applies to"),
      (["--as", TestRoot.app, "device", "lock"], "device is an administrator's command"),
      (["device", "lock", "extra"], "unexpected argument (not shown: it may be a passcode)"),
      (["device", "unlock", "Zq7pass9Word"], "a passcode is given with --passcode CODE"),
      (["device", "passcode", "set", "NEWcode1", "Zq7pass9Word"], "unexpected argument (not shown"),
      (["device", "passcode", "Zq7pass9Word"], "unknown passcode action (not shown"),
      (["device", "Zq7pass9Word"], "unknown device action (not shown"),
      (
        ["keychain", "add-generic-password", "-a", "A", "-s", "S", "Zq7pass9Word"],
        "unexpected argument (not shown: it may be a password); a password is given with -w"
      ),
    ]
    for (args, message) in usage {
      let result = try g.run(args)
      #expect(result.status == 64, "\(args): \(result)")
      #expect(result.stderr.contains(message), "\(args): \(result.stderr)")
      // A word that may be a passcode or a password is never repeated.
      #expect(!result.stderr.contains("Zq7pass9Word"), "\(args): \(result.stderr)")
    }
    #expect(!FileManager.default.fileExists(atPath: g.path + "/Device"))

    let short = try g.run(["device", "passcode", "set", "Q7"])
    #expect(short.status == 1 && short.stderr.contains("at least 4 characters"), "\(short)")
    #expect(!short.stderr.contains("Q7"), "a refusal never repeats the code")
    #expect(
      try g.run(["device", "unlock", "--passcode", "1234"]).stderr.contains("no passcode is set"))

    try g.ok(["device", "passcode", "set", "1234"])
    try g.ok(["device", "lock"])
    let missing = try g.run(["device", "unlock"])
    #expect(
      missing.status == 1 && missing.stderr.contains("give it to unlock; the device stays locked"))
    // A code that breaks the passcode's rules cannot be it: refused, and not counted.
    let impossible = try g.run(["device", "unlock", "--passcode", "Q7"])
    #expect(
      impossible.status == 1 && impossible.stderr.contains("that cannot be the passcode")
        && impossible.stderr.contains("the attempt was not counted"), "\(impossible)")
    #expect(!impossible.stderr.contains("Q7"))
    let wrong = try g.run(["device", "unlock", "--passcode", "9876"])
    #expect(wrong.status == 1 && wrong.stderr.contains("wrong passcode (1 in a row)"), "\(wrong)")
    #expect(!wrong.stderr.contains("9876"))
    let empty = try g.run(["device", "unlock", "--passcode", "-"], stdin: Data())
    #expect(empty.status == 1 && empty.stderr.contains("stdin has no line left"), "\(empty)")
    #expect(try g.ok(["device"]).contains("state: locked"))
    #expect(try g.ok(["device"]).contains("wrong passcodes: 1 in a row"))
    let change = try g.run(["device", "passcode", "set", "5678", "--passcode", "1234"])
    #expect(change.status == 1 && change.stderr.contains("needs the device unlocked"), "\(change)")
  }

  @Test func passcodesComeFromStdinOneLineEach() throws {
    let g = try GroupctlRoot()
    #expect(
      try g.ok(["device", "passcode", "set", "-"], stdin: Data("1234\n".utf8)) == "passcode set\n")
    // Both on stdin: the current code first.
    #expect(
      try g.ok(
        ["device", "passcode", "set", "-", "--passcode", "-"], stdin: Data("1234\n5678\n".utf8))
        == "passcode changed\n")
    try g.ok(["device", "lock", "--grace", "0"])
    let shown = try g.ok(["device"])
    #expect(
      shown.contains("state: locked") && shown.contains("protected data: unavailable"), "\(shown)")
    #expect(
      try g.ok(["device", "unlock", "--passcode", "-"], stdin: Data("5678\r\n".utf8))
        == "unlocked\n")
    #expect(try g.ok(["device", "unlock", "--passcode", "5678"]) == "already unlocked\n")
    try g.ok(["device", "passcode", "clear", "--passcode", "-"], stdin: Data("5678\n".utf8))
    #expect(try g.ok(["device"]).contains("passcode: none"))
    #expect(
      try g.ok(["device", "lock"]).contains("no passcode is set, so every class stays available"))
    #expect(try g.ok(["device", "lock"]) == "already locked\n")
    #expect(try g.ok(["device", "unlock"]) == "unlocked\n")
  }

  /// A lock of a device locked already cuts a longer grace still running short, and says
  /// so; a longer grace does not lengthen it.
  @Test func aShorterGraceCutsTheEarlierLocksGraceShort() throws {
    let g = try GroupctlRoot()
    try g.ok(["device", "passcode", "set", "1234"])
    #expect(
      try g.ok(["device", "lock", "--grace", "600"])
        == "locked; protected data (class complete) stays available for 10 min\n")
    let longer = try g.ok(["device", "lock", "--grace", "3600"])
    #expect(
      longer.hasPrefix("already locked; protected data (class complete) stays available for")
        && longer.hasSuffix("s more (the earlier lock's grace, which a longer one does not lengthen)\n"),
      "\(longer)")
    #expect(
      try g.ok(["device", "lock", "--grace", "60"])
        == "already locked; the earlier lock's grace is cut short: protected data (class complete)"
        + " stays available for 1 min\n")
    // What is left is the new grace at most, not the earlier lock's ten minutes.
    let shown = try g.ok(["device"])
    let left = shown.split(separator: "\n").first { $0.hasPrefix("protected data: available for ") }
      .flatMap { Double($0.dropFirst("protected data: available for ".count).prefix { $0 != " " }) }
    #expect(left.map { $0 > 0 && $0 <= 60 } == true, "\(shown)")
    #expect(
      try g.ok(["device", "lock", "--grace", "0"])
        == "already locked; the earlier lock's grace is cut short: protected data (class complete)"
        + " is unavailable now\n")
    #expect(try g.ok(["device"]).contains("protected data: unavailable (class complete)"))
    // The kernel dropped the key too, not only the library's answer.
    let state = DeviceState.current(root: g.root)
    let keyring = DeviceKeyring(deviceIdentifier: state.deviceIdentifier, rootPath: g.root.path)
    #expect(try keyring.load(name: "complete", session: state.bootSession) == nil)
    #expect(try g.ok(["device", "lock", "--grace", "0"]) == "already locked\n")
  }

  /// A `passcode set` killed before the keybag is sealed with the code leaves a state that
  /// says "a passcode is set" and a keybag with none: the unlock and the reboot say what is
  /// true, and the device restarts unlocked, as one without a passcode does.
  @Test func aPasscodeSetKilledBeforeTheKeybagIsToldByTheUnlockAndTheReboot() throws {
    let g = try GroupctlRoot()
    try g.ok(["device", "unlock"])
    func killedPasscodeSet() throws { try Self.killedPasscodeSet(g) }
    try killedPasscodeSet()
    try g.ok(["device", "lock", "--grace", "0"])
    let unlocked = try g.run(["device", "unlock"])
    #expect(unlocked.status == 0 && unlocked.stdout == "unlocked\n", "\(unlocked)")
    #expect(unlocked.stderr.contains("the keybag holds no passcode"), "\(unlocked)")
    #expect(try g.ok(["device"]).contains("passcode: none"))

    try killedPasscodeSet()
    let rebooted = try g.run(["device", "reboot"])
    #expect(rebooted.stdout == "rebooted: unlocked, no passcode\n", "\(rebooted)")
    #expect(rebooted.stderr.contains("the keybag holds no passcode"), "\(rebooted)")
    let shown = try g.ok(["device"])
    #expect(shown.contains("state: unlocked") && shown.contains("passcode: none"), "\(shown)")
    #expect(try g.ok(["device", "unlock"]) == "already unlocked\n")
  }

  /// A `passcode set` killed before the keybag is sealed with the code: the state says "a
  /// passcode is set", the keybag holds none, and the next unlock or reboot says so in a note.
  static func killedPasscodeSet(_ g: GroupctlRoot) throws {
    let marker = g.path + "/before-keybag-save"
    try? FileManager.default.removeItem(atPath: marker)
    let child = try ChildProcess(
      "groupctl", ["--root", g.path, "device", "passcode", "set", "1234"],
      environment: ["APPGROUPS_TEST_PAUSE_BEFORE_KEYBAG_SAVE": marker])
    #expect(waitForFile(marker, timeout: 30), "\(child.standardError)")
    child.signal(SIGKILL)
    #expect(child.wait() == SIGKILL)
    #expect(try g.ok(["device"]).contains("passcode: set"))
  }

  /// The reboot's line comes before the note on it wherever both go: one pipe (`2>&1 |`), a
  /// terminal; and with a standard output nobody reads any more, the note is still written
  /// and the reboot, done, exits 0. `print` held the line until the exit, after the note, and
  /// a reader gone ended groupctl with SIGPIPE there.
  @Test func aRebootSaysItsLineBeforeItsNoteWhereverBothGo() throws {
    let g = try GroupctlRoot()
    try g.ok(["device", "unlock"])
    let line = "rebooted: unlocked, no passcode\n"
    let note = "groupctl: note: the keybag holds no passcode"

    // Standard output and error one pipe.
    try Self.killedPasscodeSet(g)
    let both = try Product.run(
      "/bin/sh",
      ["-c", "exec \"$0\" \"$@\" 2>&1", Product.url("groupctl").path, "--root", g.path, "device",
       "reboot"])
    #expect(both.status == 0, "\(both)")
    let lineAt = try #require(both.stdout.range(of: line), "\(both)")
    let noteAt = try #require(both.stdout.range(of: note), "\(both)")
    #expect(lineAt.upperBound <= noteAt.lowerBound, "the note came first: \(both.stdout)")

    // Both a terminal.
    try Self.killedPasscodeSet(g)
    let terminal = try GroupctlKeychainTerminalTests.Terminal()
    let (process, exited) = try terminal.run(["--root", g.path, "device", "reboot"])
    defer { if process.isRunning { process.terminate() } }
    try #require(exited.wait(timeout: .now() + 60) == .success, "\(terminal.seen)")
    #expect(process.terminationStatus == 0, "\(terminal.seen)")
    terminal.drain()
    let seen = terminal.seen.replacingOccurrences(of: "\r\n", with: "\n")
    let lineSeen = try #require(seen.range(of: line), "\(seen)")
    let noteSeen = try #require(seen.range(of: note), "\(seen)")
    #expect(lineSeen.upperBound <= noteSeen.lowerBound, "the note came first: \(seen)")

    // Standard output a pipe whose reader is gone.
    try Self.killedPasscodeSet(g)
    let output = Spawn.pipe()
    let errors = Spawn.pipe()
    try output.fileHandleForReading.close()
    let reboot = Process()
    reboot.executableURL = Product.url("groupctl")
    reboot.arguments = ["--root", g.path, "device", "reboot"]
    reboot.standardInput = FileHandle.nullDevice
    reboot.standardOutput = output.fileHandleForWriting
    reboot.standardError = errors
    try Spawn.run(reboot)
    try output.fileHandleForWriting.close()
    let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    reboot.waitUntilExit()
    #expect(
      reboot.terminationReason == .exit && reboot.terminationStatus == 0,
      "\(reboot.terminationReason) \(reboot.terminationStatus): \(said)")
    #expect(said.contains(note), "\(said)")
    #expect(try g.ok(["device"]).contains("passcode: none"))
  }

  @Test func aRebootTerminatesTheAppsGroupctlRunStarted() throws {
    let t = try LifecycleRoot()
    try t.g.ok(["device", "passcode", "set", "1234"])
    // One that ends on SIGTERM (the widget: the library lands its changes and exits), one that
    // ignores it and is killed at the end of the grace.
    let widget = try t.launch(TestRoot.widget, [Product.url("widget").path, "--watch"])
    let stubborn = try t.launch(
      TestRoot.app, ["/bin/sh", "-c", "trap '' TERM; echo ready; exec sleep 600"])
    let reboot = try t.g.run(["device", "reboot", "--grace", "1"])
    #expect(reboot.status == 0, "\(reboot)")
    #expect(
      reboot.stdout.contains(
        "terminated: \(TestRoot.widget) (\(widget.process.processIdentifier)) exited"),
      "\(reboot.stdout)")
    #expect(
      reboot.stdout.contains(
        "terminated: \(TestRoot.app) (\(stubborn.process.processIdentifier)) killed after the grace period"
      ), "\(reboot.stdout)")
    #expect(reboot.stdout.hasSuffix("rebooted: before-first-unlock, passcode set\n"))
    #expect(widget.wait(timeout: 20) != nil && stubborn.wait(timeout: 20) != nil)
    #expect(t.device.runningApps().isEmpty)
    #expect(t.device.state.lockState == .beforeFirstUnlock)
  }

  /// Many unlocks at once, each with the right code, all succeed: each derives the code's key
  /// (about 100 ms of PBKDF2) before it takes the device's lock, where each derived it holding
  /// the lock and 60 at once waited past its 5 s bound. One unlocks; the others find the
  /// device unlocked; no attempt is counted as wrong.
  @Test func manyUnlocksAtOnceWithTheRightCodeAllSucceed() throws {
    let g = try GroupctlRoot()
    try g.ok(["device", "passcode", "set", "1234"])
    try g.ok(["device", "lock", "--grace", "0"])
    let count = 64
    let unlocks = try (0..<count).map { _ in
      try ChildProcess(
        "groupctl", ["--root", g.path, "device", "unlock", "--passcode", "1234"],
        environment: ["APPGROUPS_ROOT": g.path])
    }
    var said: [String] = []
    for unlock in unlocks {
      let status = unlock.wait(timeout: 120)
      let line = unlock.waitForLine(timeout: 1) ?? ""
      said.append(status == 0 ? line : "exit \(status.map(String.init) ?? "none"): \(unlock.standardError)")
    }
    let failed = said.filter { $0 != "unlocked" && $0 != "already unlocked" }
    #expect(failed.isEmpty, "\(failed.count) of \(count) failed: \(failed.prefix(3))")
    #expect(said.filter { $0 == "unlocked" }.count == 1, "\(said)")
    let shown = try g.ok(["device"])
    #expect(shown.contains("state: unlocked") && !shown.contains("wrong passcodes"), "\(shown)")

    // Wrong codes at once are each counted, under the lock, and the fifth starts the delay:
    // the others are not heard, the right code neither.
    let wrong = try (0..<8).map { _ in
      try ChildProcess(
        "groupctl", ["--root", g.path, "device", "unlock", "--passcode", "9876"],
        environment: ["APPGROUPS_ROOT": g.path])
    }
    var counted: [String] = []
    var delayed = 0
    for attempt in wrong {
      #expect(attempt.wait(timeout: 120) == 1, "\(attempt.standardError)")
      let message = attempt.standardError
      #expect(!message.contains("9876"))
      if let range = message.range(of: #"wrong passcode \(\d in a row\)"#, options: .regularExpression) {
        counted.append(String(message[range]))
      } else if message.contains("wrong passcodes in a row: the next attempt is heard in") {
        delayed += 1
      }
    }
    #expect(
      counted.sorted() == (1...5).map { "wrong passcode (\($0) in a row)" } && delayed == 3,
      "\(counted) \(delayed)")
    let refused = try g.run(["device", "unlock", "--passcode", "1234"])
    #expect(refused.status == 1 && refused.stderr.contains("the next attempt is heard in"))
  }

  @Test func aCommandOnARootWithNoDeviceStateMakesANewDevice() throws {
    let g = try GroupctlRoot()
    #expect(
      try g.ok(["device", "lock"]) == "locked; no passcode is set, so every class stays available\n"
    )
    let shown = try g.ok(["device"])
    #expect(
      shown.contains("state: locked\npasscode: none\nprotected data: available (no passcode)"))
    #expect(shown.contains("boot session: 1"))
  }

  @Test func lockingAndUnlockingWhileAnAppWritesLosesNothing() throws {
    let g = try GroupctlRoot()
    try g.ok(["device", "passcode", "set", "1234"])
    let writer = try ChildProcess(
      "appgroups-worker", ["acked-sets", TestRoot.group, "w", "150"],
      environment: g.t.environment(as: TestRoot.app))
    #expect(writer.waitFor("ready"))
    writer.send("go")
    for _ in 0..<4 {
      try g.ok(["device", "lock", "--grace", "0"])
      try g.ok(["device", "unlock", "--passcode", "1234"])
    }
    // Preferences are of class completeUntilFirstUserAuthentication: a lock does not touch them.
    #expect(writer.waitForLine(timeout: 60) { $0.hasPrefix("done ") } == "done 0")
    #expect(writer.wait() == 0)
    let disk = try TestRoot.readOnDisk(g.t.groupSuiteFile)
    let missing = (0..<150).filter { disk["w-" + String($0)] as? Int != $0 }
    #expect(missing.isEmpty, "acknowledged and not on disk: \(missing)")
  }

  @Test func aRebootLandsWhatARunningAppWroteBeforeItEnds() throws {
    let t = try LifecycleRoot()
    try t.g.ok(["device", "passcode", "set", "1234"])
    let app = try t.launch(
      TestRoot.app, [Product.url("appgroups-worker").path, "repl", TestRoot.group])
    app.send("set written before-reboot")
    #expect(app.waitFor("ok"))
    let reboot = try t.g.run(["device", "reboot", "--grace", "10"])
    #expect(
      reboot.stdout.contains(
        "terminated: \(TestRoot.app) (\(app.process.processIdentifier)) exited"), "\(reboot)")
    #expect(app.wait() != nil)
    // Before the first unlock an app could not read it; the administrator can.
    #expect(try t.g.ok(["read", TestRoot.group, "written"]) == "before-reboot\n")
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// Waits, a bounded time, until `pid` is gone (or a zombie): the kernel gives no event for
/// another process's end.
private func isGone(_ pid: Int32, within seconds: Double = 20) -> Bool {
  let deadline = Date().addingTimeInterval(seconds)
  while Date() < deadline {
    let state = processState(pid)
    if state == nil || state == "Z" { return true }
    usleep(2_000)
  }
  return false
}

/// The app of these tests: a shell (the process `groupctl run` starts) whose child takes an
/// flock on the cache file in the group container, says `locked PID`, and becomes `sleep`,
/// keeping the lock.
private func lockingChild(_ t: LifecycleRoot, shape: String) -> [String] {
  // $0 of the inner shell is the cache file; $$ its pid, which `exec sleep` keeps.
  let child = "exec 9>\"$0\"; flock -x 9; echo \"locked $$\"; exec sleep 600"
  switch shape {
  case "child":
    return [
      "/bin/sh", "-c",
      "sh -c '\(child)' \"$0\" & wait", t.cachePath,
    ]
  default:  // "double fork": the child's parent exits at once, and it leaves the session
    return [
      "/bin/sh", "-c",
      "(setsid sh -c '\(child)' \"$0\" &); echo forked; exec sleep 600", t.cachePath,
    ]
  }
}

extension LifecycleRoot {
  /// Launches `command` as the cache writer, the cache's folder made first, and waits for its
  /// `locked PID` line: the app, and the process that took the lock.
  func launchLocking(_ command: [String]) throws -> (app: ChildProcess, holder: Int32) {
    try FileManager.default.createDirectory(
      atPath: (cachePath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    let app = try launch(Self.writer, command, waitsForReady: false)
    let holder = app.waitForLine { $0.hasPrefix("locked ") }.flatMap { Int32($0.dropFirst(7)) }
    if holder == nil { app.signal(SIGKILL) }
    return (app, try #require(holder, "\(command) never said locked: \(app.standardError)"))
  }

  /// Kills `app` and the process that took its lock, which outlives the app's first process
  /// (it is then a child of init) and would hold the lock on for as long as it sleeps. Only a
  /// process of this root is killed: a pid handed out again is left alone.
  func end(_ app: ChildProcess, holder: Int32) {
    app.signal(SIGKILL)
    let environment = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(holder)/environ"))) ?? Data()
    if environment.split(separator: 0).contains(Data("APPGROUPS_ROOT=\(path)".utf8)) {
      kill(holder, SIGKILL)
    }
  }
}

@Suite("Lifecycle: the app is its whole process tree", .processBound)
struct LifecycleTreeTests {
  @Test(arguments: ["child", "double fork"])
  func aChildHoldingALockIsTerminatedWithItsParentAndNamed(shape: String) throws {
    let t = try LifecycleRoot()
    let (app, child) = try t.launchLocking(lockingChild(t, shape: shape))
    let pid = app.process.processIdentifier
    #expect(child != pid)

    let suspend = try t.g.run(["suspend", LifecycleRoot.writer, "--grace", "1"])
    #expect(suspend.status == 1, "\(suspend)")
    #expect(suspend.stderr == t.report("terminated", pid: pid, holder: "\(child) (sleep)") + "\n")
    #expect(
      suspend.stdout.hasPrefix(
        "terminated: \(LifecycleRoot.writer) (\(pid)) and 1 other process,"), "\(suspend.stdout)")
    #expect(app.wait() == SIGKILL)
    #expect(isGone(child), "the child \(child) still runs: \(processState(child) ?? "?")")
    let log = try String(contentsOf: t.device.logURL, encoding: .utf8)
    #expect(log.contains("held by process \(child) (sleep)"))
  }

  @Test func aSuspendedAppIsStoppedWholeAndResumedWhole() throws {
    let t = try LifecycleRoot()
    let (app, child) = try t.launchLocking(lockingChild(t, shape: "child"))
    defer { t.end(app, holder: child) }
    let pid = app.process.processIdentifier

    let ps = try t.g.ok(["ps"])
    #expect(ps.contains("\(pid)\trunning\t\(LifecycleRoot.writer)\t"), "\(ps)")
    #expect(ps.contains("  process: \(child)\trunning\tsleep\n"), "\(ps)")
    #expect(
      ps.contains(
        "  lock: flock WRITE \(t.cachePath) (\(TestRoot.group)), held by process \(child) (sleep)"),
      "\(ps)")

    let suspend = try t.g.run(["suspend", String(pid), "--report-only"])
    #expect(suspend.status == 0, "\(suspend)")
    #expect(suspend.stderr == t.report("reported", pid: pid, holder: "\(child) (sleep)") + "\n")
    #expect(processState(pid) == "T")
    #expect(processState(child) == "T")
    #expect(try t.g.ok(["ps"]).contains("  process: \(child)\tstopped\tsleep\n"))

    let doctor = try t.g.run(["doctor", "--locks"])
    #expect(doctor.status == 1)
    #expect(
      doctor.stdout.contains(
        "problem: \(LifecycleRoot.writer) (\(pid)), its process \(child) (sleep), is stopped while"
          + " it holds a lock on \(t.cachePath) in group \(TestRoot.group) (flock)"),
      "\(doctor.stdout)")
    #expect(doctor.stdout.contains("'groupctl resume \(pid)'"), "\(doctor.stdout)")

    // Suspended again, through its child's pid: the whole app, stopped already, is not told
    // again (a stopped process cannot handle the SIGTSTP: no answer would come).
    let again = try t.g.run(["suspend", String(child), "--report-only"])
    #expect(again.status == 0, "\(again)")
    #expect(
      again.stdout
        == "suspended: \(LifecycleRoot.writer) (\(pid)) and 1 other process, stopped already\n",
      "\(again)")
    #expect(processState(pid) == "T")

    let resume = try t.g.ok(["resume", String(child)])
    #expect(resume == "resumed: \(LifecycleRoot.writer) (\(pid)) and 1 other process\n")
    #expect(processState(pid) != "T")
    #expect(processState(child) != "T")
    #expect(try t.g.run(["doctor", "--locks"]).status == 0)
  }

  @Test func anInheritedLockIsOneLockWithBothHolders() throws {
    let t = try LifecycleRoot()
    // The shell takes the flock and starts a child that inherits the descriptor: one lock,
    // one open file description, held by both.
    let (app, child) = try t.launchLocking([
      "/bin/sh", "-c", "exec 9>\"$0\"; flock -x 9; sleep 600 & echo \"locked $!\"; wait",
      t.cachePath,
    ])
    defer { t.end(app, holder: child) }
    let pid = app.process.processIdentifier

    let ps = try t.g.ok(["ps"])
    let lines = ps.split(separator: "\n").filter { $0.hasPrefix("  lock: ") }
    #expect(
      lines == [
        "  lock: flock WRITE \(t.cachePath) (\(TestRoot.group)), held by processes \(pid) (sh)"
          + " and \(child) (sleep)"
      ], "\(ps)")
    // Stopped, both processes are said to hold it; it is counted once.
    #expect(try t.g.run(["suspend", String(pid), "--report-only"]).status == 0)
    let doctor = try t.g.run(["doctor", "--locks"])
    #expect(doctor.status == 1)
    #expect(
      doctor.stdout.hasSuffix("1 lock(s) held by stopped processes in \(t.path).\n"), "\(doctor.stdout)")
  }

  @Test func psShowsAnExecutableNamedToForgeALineOnALineOfItsOwn() throws {
    let t = try LifecycleRoot()
    // Outside the root, as a program is.
    let folder = URL(fileURLWithPath: t.path + "-bin")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let forged = folder.path + "/sl\n4242\tsuspended\tcom.evil.app\tx"
    #expect(
      FileManager.default.createFile(
        atPath: forged, contents: try Data(contentsOf: URL(fileURLWithPath: "/bin/sh"))))
    #expect(chmod(forged, 0o755) == 0)
    let app = try t.launch(TestRoot.app, [forged, "-c", "echo ready; exec sleep 600"])
    defer { app.signal(SIGKILL) }
    let pid = app.process.processIdentifier
    let ps = try t.g.ok(["ps"])
    let shown = "\"" + folder.path + #"/sl\n4242\tsuspended\tcom.evil.app\tx""#
    #expect(ps.contains("\(pid)\trunning\t\(TestRoot.app)\t\(shown)\n"), "\(ps)")
    #expect(!ps.contains("\n4242\t"), "\(ps)")
  }

  @Test func aRebootEndsEveryProcessOfEveryAppEvenOneLaunchedDuringIt() throws {
    let t = try LifecycleRoot()
    // An app whose child holds the cache's lock, and one that ignores SIGTERM, so that the
    // reboot waits out its grace.
    let (app, child) = try t.launchLocking(lockingChild(t, shape: "child"))
    defer { t.end(app, holder: child) }
    let stubborn = try t.launch(
      TestRoot.app,
      ["/bin/sh", "-c", "trap 'echo told' TERM; echo ready; while :; do sleep 0.05; done"])
    defer { stubborn.signal(SIGKILL) }

    let reboot = try ChildProcess(
      "groupctl", ["--root", t.path, "device", "reboot", "--grace", "3"],
      environment: ["APPGROUPS_ROOT": t.path])
    // Launched while the reboot waits for the stubborn app.
    #expect(stubborn.waitFor("told"), "\(stubborn.standardError)")
    let late = try t.launch(
      TestRoot.widget, ["/bin/sh", "-c", "echo ready; exec sleep 600"])
    defer { late.signal(SIGKILL) }
    #expect(reboot.wait() == 0, "\(reboot.standardError)")
    #expect(isGone(child), "the child \(child) still runs: \(processState(child) ?? "?")")
    #expect(isGone(late.process.processIdentifier), "the app launched during the reboot still runs")
    #expect(try t.g.ok(["ps"]) == "PID\tSTATE\tBUNDLE-ID\tEXECUTABLE\n")
  }

  @Test func aChildThatListensIsToldAndWaitedFor() throws {
    let t = try LifecycleRoot()
    try t.g.ok(["write", TestRoot.group, "shared", "yes"])
    // The worker's repl opens the group suite: its library hears the notice and answers.
    // The shell is the program run; the worker it starts is allowed with --ro. A command
    // put in the background reads /dev/null unless it is given the shell's input.
    let worker = Product.url("appgroups-worker").path
    let app = try ChildProcess(
      "groupctl",
      [
        "--root", t.path, "run", "--as", LifecycleRoot.writer, "--best-effort",
        "--ro", Product.directory.path, "--", "/bin/sh", "-c",
        "exec 3<&0; \"$0\" repl \(TestRoot.group) 0<&3 & wait", worker,
      ], environment: ["APPGROUPS_ROOT": t.path])
    #expect(app.waitFor("ready"), "\(app.standardError)")
    defer { app.signal(SIGKILL) }
    let pid = app.process.processIdentifier
    app.send("get shared")
    #expect(app.waitFor("value yes"))
    let members = Device.processes(ofApp: pid)
    #expect(members.count == 2, "\(members)")

    let suspend = try t.g.run(["suspend", LifecycleRoot.writer, "--grace", "10"])
    #expect(suspend.status == 0, "\(suspend)")
    #expect(
      suspend.stdout.hasPrefix(
        "suspended: \(LifecycleRoot.writer) (\(pid)) and 1 other process, ready after"),
      "\(suspend.stdout)")
    for member in members { #expect(processState(member.pid) == "T", "\(member)") }
    #expect(try t.g.ok(["resume", String(pid)]).hasPrefix("resumed: "))
    app.send("get shared")
    #expect(app.waitFor("value yes"))
  }
}

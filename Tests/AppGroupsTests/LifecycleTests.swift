import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A root with the cache writer, the example app and the widget in the shared group, and the
/// apps launched in it through `groupctl run --as` (confined when the kernel has Landlock).
struct LifecycleRoot {
  static let writer = "com.example.cache-writer"
  let g: GroupctlRoot

  init(_ name: String = #function) throws {
    g = try GroupctlRoot(name)
    try EntitlementManifest.grant(Self.writer, groups: [TestRoot.group], root: g.root)
  }

  var root: ContainerRoot { g.root }
  var path: String { g.path }
  var device: Device { Device(root: root) }

  /// The cache file the cache writer locks, as the kernel names it.
  var cachePath: String {
    root.groupContainerURL(for: TestRoot.group).path + "/Library/Caches/cache.db"
  }

  /// Launches `command` as `bundleID` with `groupctl run` (`--background`: as iOS prewarms
  /// it), and waits for its `ready` line (when `waitsForReady`).
  func launch(
    _ bundleID: String, _ command: [String], environment: [String: String] = [:],
    waitsForReady: Bool = true, background: Bool = false,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws -> ChildProcess {
    let child = try ChildProcess(
      "groupctl",
      ["--root", path, "run", "--as", bundleID, "--best-effort"] + (background ? ["--background"] : [])
        + ["--"] + command,
      environment: ["APPGROUPS_ROOT": path].merging(environment) { $1 })
    guard waitsForReady else { return child }
    #expect(
      child.waitFor("ready"), "\(command) never said ready: \(child.standardError)",
      sourceLocation: sourceLocation)
    return child
  }

  func launchWriter(_ arguments: [String]) throws -> ChildProcess {
    try launch(Self.writer, [Product.url("cache-writer").path] + arguments)
  }

  /// The 0xdead10cc line for the cache writer's lock, held by the writer itself unless
  /// `holder` (`PID (COMMAND)`) says otherwise.
  func report(_ verb: String, pid: Int32, holder: String? = nil) -> String {
    "\(verb): \(Self.writer) (\(pid)) held a lock on \(cachePath) in group \(TestRoot.group)"
      + " while being suspended (0xdead10cc), held by process \(holder ?? "\(pid) (cache-writer)")"
  }
}

@Suite("Lifecycle", .processBound)
struct LifecycleTests {
  static let lockKinds = ["flock", "posix", "ofd"]

  @Test(arguments: lockKinds)
  func aProcessHoldingALockIsTerminatedOnSuspend(kind: String) throws {
    let t = try LifecycleRoot()
    let writer = try t.launchWriter(["--lock", kind])
    let pid = writer.process.processIdentifier
    let ps = try t.g.ok(["ps"])
    #expect(ps.contains("\(pid)\trunning\t\(LifecycleRoot.writer)\t"))
    #expect(ps.contains("  lock: \(kind) WRITE \(t.cachePath) (\(TestRoot.group))"))

    let suspend = try t.g.run(["suspend", LifecycleRoot.writer, "--grace", "5"])
    #expect(suspend.status == 1, "\(suspend)")
    #expect(suspend.stderr == t.report("terminated", pid: pid) + "\n")
    #expect(suspend.stdout.hasPrefix("terminated: \(LifecycleRoot.writer) (\(pid))"))
    #expect(writer.wait() == SIGKILL)
    #expect(writer.process.terminationReason == .uncaughtSignal)

    let log = try String(contentsOf: t.device.logURL, encoding: .utf8)
    #expect(log.hasSuffix(" " + t.report("terminated", pid: pid) + "\n"))
    let after = try t.g.ok(["ps"])
    #expect(!after.contains("\(pid)\trunning"))
    #expect(after.contains("Terminated (\(t.device.logURL.path)):"))
    #expect(after.contains(t.report("terminated", pid: pid)))
  }

  @Test(arguments: lockKinds)
  func reportOnlySuspendsInstead(kind: String) throws {
    let t = try LifecycleRoot()
    let writer = try t.launchWriter(["--lock", kind])
    let pid = writer.process.processIdentifier

    let suspend = try t.g.run(["suspend", String(pid), "--report-only"])
    #expect(suspend.status == 0, "\(suspend)")
    #expect(suspend.stderr == t.report("reported", pid: pid) + "\n")
    #expect(suspend.stdout.hasPrefix("suspended: \(LifecycleRoot.writer) (\(pid))"))
    #expect(processState(pid) == "T")
    #expect(try t.g.ok(["ps"]).contains("\(pid)\tsuspended\t\(LifecycleRoot.writer)"))

    // The hazard, however the process was stopped.
    let doctor = try t.g.run(["doctor", "--locks"])
    #expect(doctor.status == 1)
    #expect(
      doctor.stdout.contains(
        "problem: \(LifecycleRoot.writer) (\(pid)) is stopped while it holds a lock on"
          + " \(t.cachePath) in group \(TestRoot.group) (\(kind))"))

    #expect(try t.g.ok(["resume", LifecycleRoot.writer]) == "resumed: \(LifecycleRoot.writer) (\(pid))\n")
    #expect(try t.g.ok(["ps"]).contains("\(pid)\trunning\t\(LifecycleRoot.writer)"))
    #expect(try t.g.run(["doctor", "--locks"]).status == 0)
    writer.signal(SIGTERM)
    #expect(writer.waitFor("stopped by SIGTERM"))
    #expect(writer.wait() == 0)
  }

  @Test func theFixedWriterReleasesItsLockAndIsSuspended() throws {
    let t = try LifecycleRoot()
    let writer = try t.launchWriter(["--lock", "flock", "--release-on-suspend"])
    let pid = writer.process.processIdentifier

    let suspend = try t.g.run(["suspend", LifecycleRoot.writer])
    #expect(suspend.status == 0, "\(suspend)")
    #expect(suspend.stderr.isEmpty)
    #expect(suspend.stdout.hasPrefix("suspended: \(LifecycleRoot.writer) (\(pid)), ready after "))
    #expect(writer.waitFor("released \(t.cachePath) for the suspension"))
    #expect(processState(pid) == "T")

    try t.g.ok(["resume", String(pid)])
    #expect(writer.waitFor("locked \(t.cachePath) again after the resume"))
    #expect(try t.g.ok(["ps"]).contains("  lock: flock WRITE \(t.cachePath)"))
    writer.signal(SIGTERM)
    #expect(writer.wait() == 0)
  }

  @Test func theAppIsToldTheGracePeriodItsSuspenderGave() throws {
    let t = try LifecycleRoot()
    let writer = try t.launchWriter(["--lock", "flock", "--release-on-suspend"])
    let pid = writer.process.processIdentifier

    let suspend = try t.g.run(["suspend", "--grace", "2", LifecycleRoot.writer])
    #expect(suspend.status == 0, "\(suspend)")
    #expect(writer.waitFor("suspension notice: 2 s to get ready"))
    #expect(writer.waitFor("released \(t.cachePath) for the suspension"))

    try t.g.ok(["resume", String(pid)])
    #expect(writer.waitFor("locked \(t.cachePath) again after the resume"))
    writer.signal(SIGTERM)
    #expect(writer.wait() == 0)
  }

  @Test func aLockFreeWidgetIsSuspendedAndReRendersOnceOnResume() throws {
    let t = try LifecycleRoot()
    let widget = try t.launch(TestRoot.widget, [Product.url("widget").path])
    let pid = widget.process.processIdentifier

    let suspend = try t.g.run(["suspend", TestRoot.widget])
    #expect(suspend.status == 0, "\(suspend)")
    #expect(suspend.stdout.hasPrefix("suspended: \(TestRoot.widget) (\(pid)), ready after "))
    #expect(processState(pid) == "T")
    #expect(try t.g.ok(["ps"]).contains("\(pid)\tsuspended\t\(TestRoot.widget)"))

    // A value changed while it is suspended: one new entry on resume, not two.
    try t.g.ok(["write", TestRoot.group, "greeting", "-string", "while suspended"])
    try t.g.ok(["resume", TestRoot.widget])
    // The resume and the change monitor race to re-read: either renders the entry.
    var resumed = false
    var entry: String?
    while !resumed || entry == nil {
      guard let line = widget.waitForLine() else { break }
      if line.hasPrefix("resumed: ") { resumed = true }
      if line.hasPrefix("entry #") { entry = line }
    }
    #expect(resumed)
    #expect(entry?.hasPrefix("entry #2 ") == true)
    #expect(entry?.contains("greeting=\"while suspended\"") == true, "\(entry ?? "no entry")")
    widget.signal(SIGTERM)
    #expect(widget.waitFor("stopped by SIGTERM after 2 entries"))
    #expect(widget.wait() == 0)
  }

  @Test func aTerminalsStopGetsThePreparationAndStopsTheApp() throws {
    let t = try LifecycleRoot()
    let widget = try t.launch(TestRoot.widget, [Product.url("widget").path])
    let pid = widget.process.processIdentifier
    // Ctrl-Z: SIGTSTP with no request from groupctl. The app gets ready, then stops itself.
    widget.signal(SIGTSTP)
    #expect(waitUntilStopped(pid, timeout: 20))
    #expect(try t.g.ok(["ps"]).contains("\(pid)\tstopped\t\(TestRoot.widget)"))
    widget.signal(SIGCONT)
    #expect(widget.waitForLine { $0.hasPrefix("resumed: ") } != nil)
    // The library's locks are its own again: a suspension afterwards answers at once.
    let suspend = try t.g.run(["suspend", String(pid)])
    #expect(suspend.stdout.hasPrefix("suspended: \(TestRoot.widget) (\(pid)), ready after "))
    try t.g.ok(["resume", String(pid)])
    widget.signal(SIGTERM)
    #expect(widget.waitFor("stopped by SIGTERM after 1 entries"))
    #expect(widget.wait() == 0)
  }

  /// The notice is heard from the moment the open returns: a stop sent at once is prepared
  /// for and stops the app (its handler is installed before the open returns, not later on
  /// another thread, when a SIGTSTP meanwhile would have been ignored).
  @Test func aStopSentAsTheOpenReturnsIsHeard() throws {
    let t = try LifecycleRoot()
    let worker = try t.launch(
      TestRoot.app, [Product.url("appgroups-worker").path, "stop-after-open", TestRoot.group],
      waitsForReady: false)
    let pid = worker.process.processIdentifier
    #expect(waitUntilStopped(pid, timeout: 20), "\(worker.standardError)")
    worker.signal(SIGCONT)
    #expect(worker.waitFor("resumed"))
    worker.send("quit")
    #expect(worker.wait() == 0)
  }

  @Test func groupDefaultsIsNeverSuspendedHoldingItsLock() throws {
    let t = try LifecycleRoot()
    let worker = try t.launch(
      TestRoot.app, [Product.url("appgroups-worker").path, "write-loop", TestRoot.group, "k", "4"],
      environment: ["APPGROUPS_WORKER_NO_WAIT": "1"], waitsForReady: false)
    let pid = worker.process.processIdentifier
    func synced() -> Int? {
      worker.waitForLine { $0.hasPrefix("synced ") }.flatMap { Int($0.dropFirst(7)) }
    }
    let first = try #require(synced())
    // 100 suspensions and resumes while the worker commits in a loop, by groupctl as a user
    // would run it (a shell loop: one child of the test process, not 200).
    let loop = try ChildProcess(
      executable: URL(fileURLWithPath: "/bin/sh"),
      [
        "-c",
        """
        for i in $(seq 1 100); do
          "$GROUPCTL" suspend --report-only "$PID" 2>&1 || echo "failed suspend $i"
          "$GROUPCTL" resume "$PID" >/dev/null 2>&1 || echo "failed resume $i"
        done
        echo done
        """,
      ],
      environment: [
        "GROUPCTL": Product.url("groupctl").path, "PID": String(pid), "APPGROUPS_ROOT": t.path,
      ])
    var suspended = 0
    var other: [String] = []
    while let line = loop.waitForLine(timeout: 300), line != "done" {
      if line.hasPrefix("suspended: \(TestRoot.app) (\(pid)), ready after ") {
        suspended += 1
      } else {
        other.append(line)
      }
    }
    #expect(suspended == 100)
    #expect(other.isEmpty, "\(other)")
    #expect(loop.wait() == 0)
    #expect(t.device.logLines().isEmpty)
    // The commits went on all along: the last one on disk is far past the first.
    let onDisk = try TestRoot.readOnDisk(t.g.t.groupSuiteFile)
    let last = (0..<4).compactMap { onDisk["k-\($0)"] as? Int }.max() ?? 0
    #expect(last > first + 100, "synced \(first) before, \(last) on disk after")
    #expect(processState(pid) != "T")
    worker.signal(SIGKILL)
    worker.wait()
  }

  @Test func staleRunRecordsArePruned() throws {
    let t = try LifecycleRoot()
    let device = t.device
    // A process that ran and is gone: launched through run, whose record it leaves.
    let ran = try t.g.run(["run", "--as", TestRoot.app, "--best-effort", "--", "/bin/true"])
    #expect(ran.status == 0, "\(ran)")
    let gone = try #require(device.allRecords().first)
    #expect(gone.bundleIdentifier == TestRoot.app)
    #expect(gone.executable.hasSuffix("/true"))
    // A pid that names another process now: the start time differs.
    var me = try Device.currentRecord(bundleIdentifier: TestRoot.widget, executable: "/bin/me")
    var reused = me
    reused.startTime += 1
    reused.bundleIdentifier = "com.example.reused"
    try device.record(reused)
    #expect(device.allRecords().count == 2)

    #expect(try t.g.ok(["ps"]) == "PID\tSTATE\tBUNDLE-ID\tEXECUTABLE\n")
    #expect(device.allRecords().isEmpty)

    me.bundleIdentifier = TestRoot.widget
    try device.record(me)
    // A record of a terabyte (sparse) is not one, and is not read: ps still answers.
    let huge = device.runFolderURL.appendingPathComponent("999999.plist").path
    #expect(FileManager.default.createFile(atPath: huge, contents: nil))
    #expect(truncate(huge, 1 << 40) == 0)
    #expect(try t.g.ok(["ps"]).contains("\(getpid())\trunning\t\(TestRoot.widget)\t/bin/me"))
    #expect(device.allRecords().map(\.pid) == [getpid()])
    device.removeRecord(pid: getpid())
  }

  @Test func aLogGrownPastItsBoundIsReadForItsNewestLines() throws {
    let t = try LifecycleRoot()
    let device = t.device
    try FileManager.default.createDirectory(at: device.runFolderURL, withIntermediateDirectories: true)
    // A log of 300 MiB (sparse: a line of zeros), its oldest report at the start and its
    // newest at the end.
    let old = "2026-01-01T00:00:00Z terminated: \(LifecycleRoot.writer) (1) the oldest\n"
    let new = "2026-12-01T00:00:00Z terminated: \(LifecycleRoot.writer) (2) the newest\n"
    let log = device.logURL.path
    #expect(FileManager.default.createFile(atPath: log, contents: Data(old.utf8)))
    #expect(truncate(log, 300 << 20) == 0)
    let handle = try FileHandle(forWritingTo: device.logURL)
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(("\n" + new).utf8))
    try handle.close()

    #expect(device.logLines() == [String(new.dropLast())])
    let ps = try t.g.ok(["ps"])
    #expect(ps.contains("  " + new), "\(ps)")
    #expect(!ps.contains("the oldest"))
  }

  // MARK: Command lines

  @Test func suspendAndResumeRefuseBadInput() throws {
    let t = try LifecycleRoot()
    for (args, message) in [
      (["suspend"], "missing argument BUNDLE-ID|PID"),
      (["suspend", "0"], "'0' is not a process id"),
      (["suspend", "com..x"], "com..x"),
      (["suspend", "--grace", "soon", "com.example.app"], "--grace 'soon' is not a number"),
      (["suspend", "--grace", "61", "com.example.app"], "--grace '61' is not a number"),
      (["suspend", "--report-only=yes", "com.example.app"], "option '--report-only' takes no value"),
      (["resume"], "missing argument BUNDLE-ID|PID"),
      (["resume", "a", "b"], "unexpected argument 'b'"),
      (["ps", "extra"], "unexpected argument 'extra'"),
      (["--as", "com.example.app", "suspend", "com.example.app"], "administrator's command"),
      (["doctor", "--locks", "--sharing", TestRoot.group, "a.b", "c.d"], "separate checks"),
    ] {
      let result = try t.g.run(args)
      #expect(result.status == 64, "\(args)")
      #expect(result.stderr.contains(message), "\(args): \(result.stderr)")
    }
    let missingRoot = try Product.run("groupctl", ["--root", t.path + "-mistyped", "doctor", "--locks"])
    #expect(missingRoot.status == 1 && missingRoot.stdout.isEmpty, "\(missingRoot)")
    #expect(missingRoot.stderr.contains("there is no root at \(t.path)-mistyped"))
    let notRunning = try t.g.run(["suspend", TestRoot.app])
    #expect(notRunning.status == 1)
    #expect(notRunning.stderr.contains("\(TestRoot.app) is not running on \(t.path)"))
    let noProcess = try t.g.run(["resume", "2147483647"])
    #expect(noProcess.status == 1)
    #expect(
      noProcess.stderr.contains("resuming 2147483647: there is no process 2147483647: it has ended, or never ran"),
      "\(noProcess.stderr)")
    #expect(!noProcess.stderr.contains("kill("), "\(noProcess.stderr)")
    let noneToSuspend = try t.g.run(["suspend", "2147483647"])
    #expect(noneToSuspend.status == 1)
    #expect(
      noneToSuspend.stderr.contains("suspending 2147483647: there is no process 2147483647"), "\(noneToSuspend.stderr)")

    let sleep = URL(fileURLWithPath: "/bin/sleep")
    // A stopped process that is no app: resume leaves it as it is, as suspend does.
    let stranger = try ChildProcess(
      executable: sleep, ["600"], environment: ["APPGROUPS_BUNDLE_ID": "", "APPGROUPS_ROOT": ""])
    defer { stranger.signal(SIGKILL) }
    let strangerID = stranger.process.processIdentifier
    stranger.signal(SIGSTOP)
    #expect(waitUntilStopped(strangerID, timeout: 30))
    let notAnApp = try t.g.run(["resume", String(strangerID)])
    #expect(notAnApp.status == 1 && notAnApp.stdout.isEmpty, "\(notAnApp)")
    #expect(notAnApp.stderr.contains("was not launched with groupctl run"), "\(notAnApp.stderr)")
    #expect(processState(strangerID) == "T")
    // An app of another root is that root's: neither suspended nor resumed from this one.
    let elsewhere = try ChildProcess(
      executable: sleep, ["600"],
      environment: ["APPGROUPS_BUNDLE_ID": TestRoot.app, "APPGROUPS_ROOT": t.path + "-another"])
    defer { elsewhere.signal(SIGKILL) }
    let elsewhereID = elsewhere.process.processIdentifier
    for verb in ["suspend", "resume"] {
      let refused = try t.g.run([verb, String(elsewhereID)])
      #expect(refused.status == 1, "\(verb): \(refused)")
      #expect(
        refused.stderr.contains(
          "process \(elsewhereID) is not an app of the device at \(t.path): its APPGROUPS_ROOT is"
            + " \(t.path)-another, another root's"), "\(verb): \(refused.stderr)")
    }
    #expect(processState(elsewhereID) != "T")
  }
}

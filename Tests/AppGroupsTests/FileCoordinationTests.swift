import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A root where the app and the widget share the group, with a folder of files in the group
/// container to coordinate, and the presenters and coordinators as real processes
/// (`groupctl present`, `groupctl coordinate`, the worker).
struct CoordinationRoot {
  let g: GroupctlRoot

  init(_ name: String = #function) throws {
    g = try GroupctlRoot(name)
    try FileManager.default.createDirectory(
      atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
  }

  var root: ContainerRoot { g.root }
  var container: String { root.groupContainerURL(for: TestRoot.group).path }
  /// `<group container>/Library/Shared`: the folder the tests' files live in.
  var folder: String { container + "/Library/Shared" }
  func file(_ name: String) -> String { folder + "/" + name }

  /// `groupctl present --as BUNDLE-ID PATH`, once it says it is presenting; `hooks`: test hooks
  /// set in its environment (`APPGROUPS_TEST_…`).
  func present(
    _ path: String, as bundleID: String = TestRoot.widget, _ extra: [String] = [],
    hooks: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation
  ) throws -> ChildProcess {
    let child = try ChildProcess(
      "groupctl", ["--root", g.path, "present", "--as", bundleID, path] + extra,
      environment: g.t.environment(as: bundleID).merging(hooks) { $1 })
    #expect(
      child.waitForErrorLine { $0.hasPrefix("presenting \(path) as \(bundleID)") } != nil,
      "\(child.standardError)", sourceLocation: sourceLocation)
    return child
  }

  /// `groupctl coordinate --as BUNDLE-ID ARGUMENTS…`, to its end.
  func coordinate(
    _ arguments: [String], as bundleID: String = TestRoot.app
  ) throws -> (status: Int32, stdout: String, stderr: String) {
    try Product.run(
      "groupctl", ["--root", g.path, "coordinate", "--as", bundleID] + arguments,
      environment: g.t.environment(as: bundleID))
  }

  /// `groupctl coordinate …` started, not waited for.
  func startCoordinate(_ arguments: [String], as bundleID: String = TestRoot.app) throws -> ChildProcess {
    try ChildProcess(
      "groupctl", ["--root", g.path, "coordinate", "--as", bundleID] + arguments,
      environment: g.t.environment(as: bundleID))
  }

  /// The lines a presenter printed up to and including `last`, within the bound.
  func lines(_ child: ChildProcess, through last: String) -> [String] {
    var lines: [String] = []
    while let line = child.waitForLine(timeout: 30) {
      lines.append(line)
      if line == last { break }
    }
    return lines
  }

  /// A new file `name` in ``folder``, its presenter (`groupctl present`), and the path of the
  /// entry of `Library/Coordination/<entryOf>` that `matching` picks (given its name and the
  /// presenter's pid).
  func presentedFile(
    _ name: String, entryOf coordinationFolder: String, matching: (String, Int32) -> Bool
  ) throws -> (item: String, presenter: ChildProcess, entry: String) {
    let item = file(name)
    try "one\n".write(toFile: item, atomically: false, encoding: .utf8)
    let presenter = try present(item)
    let pid = presenter.process.processIdentifier
    let entries = container + "/Library/Coordination/" + coordinationFolder
    let entry = try #require(
      try FileManager.default.contentsOfDirectory(atPath: entries).first { matching($0, pid) })
    return (item, presenter, entries + "/" + entry)
  }

  /// A coordinated write of `item` by the app: `presenter` is asked before it and told after
  /// it, in order; then it is ended (SIGTERM) and exits cleanly.
  func expectAskedAtAWrite(
    _ presenter: ChildProcess, _ item: String, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let write = try coordinate(["--write", item, "--", "/bin/sh", "-c", "echo more >> '\(item)'"])
    #expect(write.status == 0, "\(write)", sourceLocation: sourceLocation)
    #expect(
      lines(presenter, through: "did-change") == ["relinquish-to-writer", "reacquire", "did-change"],
      sourceLocation: sourceLocation)
    presenter.signal(SIGTERM)
    #expect(presenter.wait() == 0, sourceLocation: sourceLocation)
  }

  /// How many lock requests wait for the group container's claims file (`->` lines of
  /// `/proc/locks`): accesses waiting for others.
  func waitingAccesses() -> Int {
    var s = stat()
    guard stat(container + "/Library/Coordination/claims", &s) == 0,
      let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8)
    else { return 0 }
    return table.split(separator: "\n").filter {
      $0.contains("->") && $0.contains("OFDLCK") && $0.contains(":\(s.st_ino) ")
    }.count
  }

  /// Whether process `pid` holds a lock on the group container's claims file (read from
  /// `/proc/PID/fdinfo`): a coordinated access taken or waited for.
  func holdsClaim(_ pid: Int32) -> Bool {
    let claims = container + "/Library/Coordination/claims"
    for fd in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? [] {
      guard (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")) == claims,
        let info = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(fd)", encoding: .utf8)
      else { continue }
      if info.contains("OFDLCK") { return true }
    }
    return false
  }
}

/// Waits, within a bound, until `condition` holds; the kernel gives no event for another
/// process's lock, so this looks every millisecond.
func eventually(_ condition: () -> Bool, within seconds: TimeInterval = 30) -> Bool {
  let deadline = Date().addingTimeInterval(seconds)
  while Date() < deadline {
    if condition() { return true }
    usleep(1000)
  }
  return condition()
}

@Suite("FileCoordination: processes", .processBound)
struct FileCoordinationTests {
  static let readers = 4

  /// Readers share an item; a writer waits for all of them, and readers that come while it
  /// waits wait behind it. Each command appends to a log whose order is the order of events.
  @Test func readersShareAndAWriterExcludesThem() throws {
    let t = try CoordinationRoot()
    let item = t.file("shared.txt")
    try "x\n".write(toFile: item, atomically: false, encoding: .utf8)
    let log = t.file("log")
    #expect(FileManager.default.createFile(atPath: log, contents: nil))

    var readers: [ChildProcess] = []
    for index in 0..<Self.readers {
      readers.append(
        try t.startCoordinate([
          "--read", item, "--", "/bin/sh", "-c",
          "echo in-\(index) >> '\(log)'; echo reading; read line; echo out-\(index) >> '\(log)'",
        ]))
    }
    // Every reader is inside at once: they share the item.
    for reader in readers { #expect(reader.waitFor("reading"), "\(reader.standardError)") }

    let writer = try t.startCoordinate([
      "--write", item, "--", "/bin/sh", "-c", "echo writer-in >> '\(log)'; echo writer-out >> '\(log)'",
    ])
    #expect(eventually { t.waitingAccesses() == 1 })
    // A reader that comes now waits behind the waiting writer.
    let late = try t.startCoordinate([
      "--read", item, "--", "/bin/sh", "-c", "echo late-in >> '\(log)'",
    ])
    #expect(eventually { t.waitingAccesses() == 2 })
    for reader in readers { reader.send("go") }
    for reader in readers { #expect(reader.wait() == 0) }
    #expect(writer.wait() == 0, "\(writer.standardError)")
    #expect(late.wait() == 0, "\(late.standardError)")

    let events = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
    let writerIn = try #require(events.firstIndex(of: "writer-in"))
    #expect(events[writerIn + 1] == "writer-out", "\(events)")
    for index in 0..<Self.readers {
      let out = try #require(events.firstIndex(of: "out-\(index)"))
      #expect(out < writerIn, "\(events)")
    }
    #expect(try #require(events.firstIndex(of: "late-in")) > writerIn + 1, "\(events)")
    #expect(events.count == 2 * Self.readers + 3)
  }

  /// A presenter in another process is asked before the write and told after it, in order.
  @Test func aPresenterIsToldBeforeAndAfterAWrite() throws {
    let t = try CoordinationRoot()
    let item = t.file("notes.txt")
    try "one\n".write(toFile: item, atomically: false, encoding: .utf8)
    let presenter = try t.present(item)

    let write = try t.coordinate(["--write", item, "--", "/bin/sh", "-c", "echo two >> '\(item)'"])
    #expect(write.status == 0, "\(write)")
    #expect(t.lines(presenter, through: "did-change") == ["relinquish-to-writer", "reacquire", "did-change"])

    let read = try t.coordinate(["--read", item, "--", "/bin/cat", item])
    #expect(read.status == 0, "\(read)")
    #expect(read.stdout == "one\ntwo\n")
    #expect(t.lines(presenter, through: "reacquire") == ["save", "relinquish-to-reader", "reacquire"])

    let quiet = try t.coordinate(["--read", item, "--without-changes", "--", "/bin/true"])
    #expect(quiet.status == 0, "\(quiet)")
    #expect(t.lines(presenter, through: "reacquire") == ["relinquish-to-reader", "reacquire"])

    // ps shows who presents what.
    let ps = try t.g.ok(["ps"])
    #expect(ps.contains("\(TestRoot.widget) (\(presenter.process.processIdentifier)) presents \(item)"))
    presenter.signal(SIGTERM)
    #expect(presenter.wait() == 0)
    // Removed on exit: a write now asks nobody.
    #expect(try t.coordinate(["--write", item, "--", "/bin/true"]).status == 0)
    #expect(!(try t.g.ok(["ps"])).contains("presents \(item)"))
  }

  /// A presenter is not told of its own coordinator's writes, and is told of the others', in
  /// its process and in another one.
  @Test func aPresenterIsNeverToldOfItsOwnWrites() throws {
    let t = try CoordinationRoot()
    let item = t.file("own.txt")
    try "".write(toFile: item, atomically: false, encoding: .utf8)
    let worker = try ChildProcess(
      "appgroups-worker", ["present-and-write", item], environment: t.g.t.environment(as: TestRoot.app))
    #expect(worker.waitFor("ready"), "\(worker.standardError)")
    let watcher = try t.present(item)

    worker.send("own")
    #expect(worker.waitForLine() == "wrote own")
    // The other process's presenter heard the write; then a write of this process's own
    // (a coordinator acting for no presenter) is heard by both.
    #expect(t.lines(watcher, through: "did-change") == ["relinquish-to-writer", "reacquire", "did-change"])
    worker.send("other")
    var heard: [String] = []
    while let line = worker.waitForLine(timeout: 30) {
      if line == "wrote other" { continue }
      heard.append(line)
      if line == "presenter did-change" { break }
    }
    #expect(heard == ["presenter relinquish-to-writer", "presenter reacquire", "presenter did-change"])
    #expect(t.lines(watcher, through: "did-change") == ["relinquish-to-writer", "reacquire", "did-change"])
    // The own write was never heard by its presenter: nothing of it came before "wrote own".
    worker.send("quit")
    #expect(worker.wait() == 0)
    #expect(try String(contentsOfFile: item, encoding: .utf8) == "own\nother\n")
    watcher.signal(SIGTERM)
    #expect(watcher.wait() == 0)
  }

  /// A deletion is accommodated by the item's presenter and its folder's; a move is followed.
  @Test func aDeletionAndAMoveAreAccommodated() throws {
    let t = try CoordinationRoot()
    let item = t.file("draft.txt")
    let moved = t.file("final.txt")
    try "draft\n".write(toFile: item, atomically: false, encoding: .utf8)
    let presenter = try t.present(item)
    let folder = try t.present(t.folder)

    let move = try t.coordinate(["--write", item, "--move-to", moved, "--", "/bin/mv", item, moved])
    #expect(move.status == 0, "\(move)")
    #expect(
      t.lines(presenter, through: "did-move \(moved)")
        == ["relinquish-to-writer", "reacquire", "did-move \(moved)"])
    #expect(folder.waitFor("subitem-did-move \(item) \(moved)"))

    // The presenter follows its item: a write at the new place asks it.
    let write = try t.coordinate(["--write", moved, "--", "/bin/sh", "-c", "echo final >> '\(moved)'"])
    #expect(write.status == 0, "\(write)")
    #expect(t.lines(presenter, through: "did-change") == ["relinquish-to-writer", "reacquire", "did-change"])
    #expect(folder.waitFor("subitem-did-change \(moved)"))

    let delete = try t.coordinate(["--write", moved, "--delete", "--", "/bin/rm", moved])
    #expect(delete.status == 0, "\(delete)")
    #expect(
      t.lines(presenter, through: "reacquire")
        == ["relinquish-to-writer", "accommodate-deletion", "reacquire"])
    #expect(folder.waitFor("accommodate-subitem-deletion \(moved)"))
    #expect(!FileManager.default.fileExists(atPath: moved))

    // A new item in the folder appears to the folder's presenter.
    let create = try t.coordinate(["--write", item, "--", "/bin/sh", "-c", "echo again > '\(item)'"])
    #expect(create.status == 0, "\(create)")
    #expect(folder.waitFor("subitem-did-appear \(item)"))
    for child in [presenter, folder] {
      child.signal(SIGTERM)
      #expect(child.wait() == 0)
    }
  }

  /// A presenter's look at its item after the move's event in its folder, begun before the
  /// mover's tell (the item gone from its old path) and ended after the presenter followed the
  /// item (a test hook holds each side until the other), is not heard as a deletion made
  /// without coordination: the presenter hears did-move, and no accommodate-deletion. Such a
  /// look once compared the old path's absence with the new path's stamp.
  @Test func aLookBegunBeforeAMoveIsNotHeardAsADeletion() throws {
    let t = try CoordinationRoot()
    let item = t.file("draft.txt")
    let moved = t.file("final.txt")
    try "draft\n".write(toFile: item, atomically: false, encoding: .utf8)
    let marker = t.g.t.sandbox.url.appendingPathComponent("look-across-move").path
    let presenter = try t.present(item, hooks: ["APPGROUPS_TEST_LOOK_ACROSS_MOVE": marker])

    let move = try t.coordinate(["--write", item, "--move-to", moved, "--", "/bin/mv", item, moved])
    #expect(move.status == 0, "\(move)")
    #expect(
      t.lines(presenter, through: "did-move \(moved)")
        == ["relinquish-to-writer", "reacquire", "did-move \(moved)"])
    // The look is over: what it made the presenter hear is on its queue, before the next ask.
    #expect(waitForFile(marker, timeout: 30), "\(presenter.standardError)")
    let write = try t.coordinate(["--write", moved, "--", "/bin/sh", "-c", "echo final >> '\(moved)'"])
    #expect(write.status == 0, "\(write)")
    #expect(t.lines(presenter, through: "did-change") == ["relinquish-to-writer", "reacquire", "did-change"])
    presenter.signal(SIGTERM)
    #expect(presenter.wait() == 0)
    #expect(!presenter.standardError.contains("did not coordinate"), "\(presenter.standardError)")
  }

  /// The item changed without coordination right after a coordinated write (or move) ended,
  /// before its presenter handled the writer's tell (a test hook stops the presenter's process
  /// there, the tell read): the presenter hears the write's did-change (or did-move), then the
  /// change's did-change, and nothing more. The presenter once took what the item looked like
  /// after the write when it handled the tell, the later change in it, and never heard that
  /// change.
  @Test(arguments: [false, true])
  func aChangeMadeRightAfterACoordinatedWriteIsHeard(moving: Bool) throws {
    let t = try CoordinationRoot()
    let item = t.file("notes.txt")
    let moved = t.file("final.txt")
    try "one\n".write(toFile: item, atomically: false, encoding: .utf8)
    let marker = t.g.t.sandbox.url.appendingPathComponent("before-tell").path
    let presenter = try t.present(item, hooks: ["APPGROUPS_TEST_PAUSE_BEFORE_TELL": marker])

    let (access, told, now) =
      moving
      ? (["--move-to", moved, "--", "/bin/mv", item, moved], "did-move \(moved)", moved)
      : (["--", "/bin/sh", "-c", "echo two >> '\(item)'"], "did-change", item)
    let write = try t.coordinate(["--write", item] + access)
    #expect(write.status == 0, "\(write)")
    try #require(waitForFile(marker, timeout: 30), "\(presenter.standardError)")
    try #require(waitUntilStopped(presenter.process.processIdentifier, timeout: 30))
    let file = try FileHandle(forWritingTo: URL(fileURLWithPath: now))
    try file.seekToEnd()
    try file.write(contentsOf: Data("three\n".utf8))
    try file.close()
    presenter.signal(SIGCONT)
    #expect(t.lines(presenter, through: told) == ["relinquish-to-writer", "reacquire", told])
    #expect(presenter.waitForLine(timeout: 10) == "did-change", "\(presenter.standardError)")

    // Nothing more was heard: the next lines are a read's.
    let read = try t.coordinate(["--read", now, "--without-changes", "--", "/bin/true"])
    #expect(read.status == 0, "\(read)")
    #expect(t.lines(presenter, through: "reacquire") == ["relinquish-to-reader", "reacquire"])
    presenter.signal(SIGTERM)
    #expect(presenter.wait() == 0)
  }

  /// An item whose name holds a newline is printed in quotes, the newline escaped: one line,
  /// one callback. Printed raw, "evil\ndid-move x" made a second line, a move that never was.
  @Test func aNameWithANewlineCannotForgeACallbackLine() throws {
    let t = try CoordinationRoot()
    let folder = try t.present(t.folder)
    let item = t.file("evil\ndid-move x")
    let create = try t.coordinate(["--write", item, "--", "/bin/sh", "-c", "echo x > \"$0\"", item])
    #expect(create.status == 0, "\(create)")
    let expected = "subitem-did-appear \"\(t.folder)/evil\\ndid-move x\""
    let lines = t.lines(folder, through: expected)
    #expect(lines.last == expected && !lines.contains("did-move x"), "\(lines)")
    folder.signal(SIGTERM)
    #expect(folder.wait() == 0)
  }

  /// A presenter in a suspended app cannot answer: the writer gets an error naming the app
  /// and the item after its bound, reported in the lifecycle log, and is not hung; nothing
  /// was written. The fixed presenter removes itself for the suspension.
  @Test func aSuspendedPresenterIsReportedAndTheWriterIsNotHung() throws {
    let t = try CoordinationRoot()
    let item = t.file("suspended.txt")
    try "kept\n".write(toFile: item, atomically: false, encoding: .utf8)
    let presenter = try ChildProcess(
      "groupctl",
      ["--root", t.g.path, "run", "--as", TestRoot.widget, "--best-effort", "--",
       Product.url("groupctl").path, "present", "--as", TestRoot.widget, item],
      environment: t.g.t.environment(as: TestRoot.widget))
    #expect(presenter.waitForErrorLine { $0.hasPrefix("presenting \(item)") } != nil, "\(presenter.standardError)")
    let pid = presenter.process.processIdentifier
    let suspend = try t.g.run(["suspend", TestRoot.widget])
    #expect(suspend.status == 0, "\(suspend)")

    let started = Date()
    let write = try t.coordinate([
      "--write", item, "--timeout", "1", "--", "/bin/sh", "-c", "echo lost >> '\(item)'",
    ])
    #expect(Date().timeIntervalSince(started) < 20)
    #expect(write.status == 1)
    let line =
      "\(TestRoot.widget) (\(pid)) presents \(item) in \(TestRoot.group) and did not answer"
      + " relinquish-to-writer for \(TestRoot.app) ("
    #expect(write.stderr.hasPrefix("groupctl: " + line), "\(write.stderr)")
    #expect(write.stderr.contains("within 1.0 seconds: it is suspended; the coordinated write was not made"))
    #expect(try String(contentsOfFile: item, encoding: .utf8) == "kept\n")
    let log = try String(contentsOf: t.g.root.url.appendingPathComponent("Run/lifecycle.log"), encoding: .utf8)
    #expect(log.contains(" unanswered: " + line))
    #expect(try t.g.ok(["ps"]).contains("unanswered: " + line))
    let doctor = try t.g.run(["doctor"])
    #expect(doctor.stdout.contains("problem: \(TestRoot.widget) (\(pid)) is stopped while it presents \(item)"))

    // Resumed, it catches up (the old ask, then the reacquire) and answers again.
    try t.g.ok(["resume", TestRoot.widget])
    #expect(t.lines(presenter, through: "reacquire") == ["relinquish-to-writer", "reacquire"])
    #expect(try t.coordinate(["--write", item, "--", "/bin/true"]).status == 0)
    #expect(t.lines(presenter, through: "did-change") == ["relinquish-to-writer", "reacquire", "did-change"])
    presenter.signal(SIGTERM)
    #expect(presenter.wait() == 0)

    // The fixed presenter: removed for the suspension, the write goes ahead; back on resume.
    let fixed = try ChildProcess(
      "groupctl",
      ["--root", t.g.path, "run", "--as", TestRoot.widget, "--best-effort", "--",
       Product.url("groupctl").path, "present", "--as", TestRoot.widget, item, "--release-on-suspend"],
      environment: t.g.t.environment(as: TestRoot.widget))
    #expect(fixed.waitForErrorLine { $0.hasPrefix("presenting \(item)") } != nil, "\(fixed.standardError)")
    let clean = try t.g.run(["suspend", TestRoot.widget])
    #expect(clean.status == 0, "\(clean)")
    #expect(clean.stdout.contains(", ready after "), "\(clean)")
    #expect(fixed.waitFor("removed the presenter for the suspension"))
    #expect(try t.coordinate(["--write", item, "--timeout", "1", "--", "/bin/true"]).status == 0)
    try t.g.ok(["resume", TestRoot.widget])
    #expect(fixed.waitFor("presenting again after the resume"))
    #expect(try t.coordinate(["--write", item, "--", "/bin/true"]).status == 0)
    #expect(t.lines(fixed, through: "did-change") == ["relinquish-to-writer", "reacquire", "did-change"])
    fixed.signal(SIGTERM)
    #expect(fixed.wait() == 0)
  }

  /// An app writing in coordinated accesses, suspended again and again, is never terminated
  /// for them: an access in flight finishes first, and none begins until the resume.
  @Test func coordinationIsNeverTheReasonAnAppIsTerminated() throws {
    try suspendAndResumeACoordinatingApp(rounds: 20)
  }

  /// An access's claims are let go before it leaves the suspension barrier: a suspension
  /// whose drain ends the moment the last access leaves stops the app at once, and a thread
  /// kept from the CPU right after it left (here made to sleep there) must not still hold the
  /// claims file open, locked.
  @Test func anAccessLetsItsClaimsGoBeforeItLeavesTheSuspensionBarrier() throws {
    try suspendAndResumeACoordinatingApp(rounds: 5, environment: ["APPGROUPS_TEST_DELAY_AFTER_CLAIM_RELEASE": "300"])
  }

  /// An app (`appgroups-worker coordinate-loop`, with `environment` added to its own) making
  /// coordinated writes in a loop, suspended and resumed `rounds` times: each suspension
  /// succeeds and says nothing on stderr, and the app ends cleanly on SIGTERM.
  func suspendAndResumeACoordinatingApp(
    rounds: Int, environment extra: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let t = try CoordinationRoot()
    let item = t.file("loop.txt")
    try "".write(toFile: item, atomically: false, encoding: .utf8)
    let writer = try ChildProcess(
      "groupctl",
      ["--root", t.g.path, "run", "--as", TestRoot.app, "--best-effort", "--",
       Product.url("appgroups-worker").path, "coordinate-loop", item],
      environment: t.g.t.environment(as: TestRoot.app).merging(extra) { $1 })
    #expect(writer.waitFor("ready"), "\(writer.standardError)", sourceLocation: sourceLocation)
    for round in 0..<rounds {
      let suspend = try t.g.run(["suspend", TestRoot.app])
      #expect(suspend.status == 0, "round \(round): \(suspend)", sourceLocation: sourceLocation)
      #expect(suspend.stderr.isEmpty, "round \(round): \(suspend.stderr)", sourceLocation: sourceLocation)
      guard suspend.status == 0 else { break }
      try t.g.ok(["resume", TestRoot.app])
    }
    writer.signal(SIGTERM)
    let done = writer.waitForLine(timeout: 60) { $0.hasPrefix("done ") }
    #expect(
      done?.hasSuffix(" 0") == true, "\(String(describing: done)) \(writer.standardError)",
      sourceLocation: sourceLocation)
    #expect(writer.wait() == 0, sourceLocation: sourceLocation)
  }
}

@Suite("FileCoordination: bad input", .processBound)
struct FileCoordinationBadInputTests {
  @Test func aURLOutsideEveryContainerIsRefused() throws {
    let t = try CoordinationRoot()
    let outside = t.g.path + "/Run/elsewhere.txt"
    let write = try t.coordinate(["--write", outside, "--", "/bin/echo", "ran"])
    #expect(write.status == 1)
    #expect(write.stdout.isEmpty)
    #expect(write.stderr.contains("\(outside) is not inside a container"), "\(write.stderr)")
    let present = try Product.run(
      "groupctl", ["--root", t.g.path, "present", "--as", TestRoot.widget, "/tmp"],
      environment: t.g.t.environment(as: TestRoot.widget))
    #expect(present.status == 1)
    #expect(present.stderr.contains("/tmp is not inside a container"), "\(present.stderr)")
    // Another group's container is refused to an app that is not a member.
    let intruder = try t.coordinate(["--read", t.file("x"), "--", "/bin/true"], as: "com.example.intruder")
    #expect(intruder.status == 1)
    #expect(intruder.stderr.contains("com.example.intruder is not entitled to \(TestRoot.group)"))
  }

  @Test func aPresenterThatRefusesFailsTheAccessAndNothingIsLost() throws {
    let t = try CoordinationRoot()
    let item = t.file("precious.txt")
    try "precious\n".write(toFile: item, atomically: false, encoding: .utf8)
    let presenter = try t.present(item, ["--refuse", "unsaved changes"])
    let delete = try t.coordinate(["--write", item, "--delete", "--", "/bin/rm", item])
    #expect(delete.status == 1)
    #expect(delete.stderr.contains("\(TestRoot.widget) (\(presenter.process.processIdentifier)), which presents \(item), refused the coordinated write"))
    #expect(delete.stderr.hasSuffix(": unsaved changes\n"), "\(delete.stderr)")
    #expect(FileManager.default.fileExists(atPath: item))
    #expect(t.lines(presenter, through: "reacquire") == ["relinquish-to-writer", "accommodate-deletion", "reacquire"])
    presenter.signal(SIGTERM)
    #expect(presenter.wait() == 0)
  }

  @Test func aPresenterThatNeverAnswersGetsABoundedWait() throws {
    let t = try CoordinationRoot()
    let item = t.file("slow.txt")
    try "slow\n".write(toFile: item, atomically: false, encoding: .utf8)
    let presenter = try t.present(item, ["--never-answer"])
    let write = try t.coordinate(["--write", item, "--timeout", "1", "--", "/bin/true"])
    #expect(write.status == 1)
    #expect(
      write.stderr.contains(
        "did not answer relinquish-to-writer for \(TestRoot.app)"), "\(write.stderr)")
    #expect(write.stderr.contains("it is running, and its presenter has not called the completion handler"))
    presenter.signal(SIGTERM)
    #expect(presenter.wait() == 0)
  }

  /// A presenter whose process crashed is skipped at once, and its registration removed.
  @Test func aCrashedPresenterIsSkipped() throws {
    let t = try CoordinationRoot()
    let item = t.file("crash.txt")
    try "".write(toFile: item, atomically: false, encoding: .utf8)
    let presenter = try t.present(item)
    presenter.signal(SIGKILL)
    _ = presenter.wait()
    let started = Date()
    #expect(try t.coordinate(["--write", item, "--", "/bin/true"]).status == 0)
    #expect(Date().timeIntervalSince(started) < 10)
    let registrations = try FileManager.default.contentsOfDirectory(
      atPath: t.container + "/Library/Coordination/presenters")
    #expect(registrations.filter { !$0.hasPrefix(".") }.isEmpty, "\(registrations)")
  }

  /// A presenter killed while it is asked: the access goes on without it, not waiting its bound.
  @Test func aPresenterKilledWhileAskedIsNotWaitedFor() throws {
    let t = try CoordinationRoot()
    let item = t.file("dying.txt")
    try "".write(toFile: item, atomically: false, encoding: .utf8)
    let presenter = try t.present(item, ["--never-answer"])
    let started = Date()
    let writer = try t.startCoordinate(["--write", item, "--timeout", "60", "--", "/bin/echo", "written"])
    #expect(presenter.waitFor("relinquish-to-writer"))
    presenter.signal(SIGKILL)
    _ = presenter.wait()
    #expect(writer.waitFor("written"), "\(writer.standardError)")
    #expect(writer.wait() == 0)
    #expect(Date().timeIntervalSince(started) < 30)
  }

  /// A writer killed inside its access: the kernel lets its claim go, the next access begins.
  @Test func aKilledWritersClaimIsReleasedByTheKernel() throws {
    let t = try CoordinationRoot()
    let item = t.file("killed.txt")
    try "".write(toFile: item, atomically: false, encoding: .utf8)
    let writer = try t.startCoordinate(["--write", item, "--", "/bin/sh", "-c", "echo inside; read line"])
    #expect(writer.waitFor("inside"))
    #expect(t.holdsClaim(writer.process.processIdentifier))
    writer.signal(SIGKILL)
    writer.send("go")  // the command outlives groupctl: let it end
    _ = writer.wait()
    let next = try t.coordinate(["--write", item, "--timeout", "10", "--", "/bin/echo", "next"])
    #expect(next.status == 0, "\(next)")
    #expect(next.stdout == "next\n")
  }

  /// The item removed by a process that does not coordinate: its presenter hears of it, and
  /// the coordination folder removed under a running presenter is made again.
  @Test func anItemRemovedWithoutCoordinationIsHeard() throws {
    let t = try CoordinationRoot()
    let item = t.file("gone.txt")
    try "gone\n".write(toFile: item, atomically: false, encoding: .utf8)
    let presenter = try t.present(item)
    try FileManager.default.removeItem(atPath: item)
    #expect(presenter.waitFor("accommodate-deletion"))
    #expect(presenter.waitForErrorLine { $0.contains("\(item) was removed by a process that did not coordinate") } != nil)

    // As a user would, from a shell (Foundation's removeItem refuses a FIFO with EPERM).
    let rm = Process()
    rm.executableURL = URL(fileURLWithPath: "/bin/rm")
    rm.arguments = ["-rf", t.container + "/Library/Coordination"]
    try rm.run()
    rm.waitUntilExit()
    // The presenter's process writes its registration and inbox again as soon as they go, so
    // the removal may fail on a folder that is full again: either way, it is presented.
    let presenters = t.container + "/Library/Coordination/presenters"
    #expect(
      eventually {
        ((try? FileManager.default.contentsOfDirectory(atPath: presenters)) ?? [])
          .contains { !$0.hasPrefix(".") }
      })
    let write = try t.coordinate(["--write", item, "--", "/bin/sh", "-c", "echo more >> '\(item)'"])
    #expect(write.status == 0, "\(write)")
    // Told by the coordinator once its registration is back, or by its watch of the item.
    #expect(presenter.waitFor("did-change"))
    presenter.signal(SIGTERM)
    #expect(presenter.wait() == 0)
  }

  /// A registration overwritten in place with bytes that are not one: the presenter's process
  /// writes it again, and the next writer asks the presenter. It stayed damaged, and every
  /// coordinator skipped the presenter without a word (nor asked it to save before a read).
  @Test func aDamagedRegistrationIsWrittenAgain() throws {
    let t = try CoordinationRoot()
    let (item, presenter, path) = try t.presentedFile("damaged.txt", entryOf: "presenters") {
      name, _ in !name.hasPrefix(".")
    }
    let registration = URL(fileURLWithPath: path)
    try Data(repeating: 0xA5, count: 300).write(to: registration)
    #expect(
      eventually {
        guard let data = try? Data(contentsOf: registration) else { return false }
        return (try? PropertyListSerialization.propertyList(from: data, format: nil)) != nil
      }, "\(presenter.standardError)")
    try t.expectAskedAtAWrite(presenter, item)
  }

  /// A presenter's inbox removed and replaced by a regular file under its running process: the
  /// process makes its inbox again, and the next writer asks the presenter. It was never made
  /// again, and every coordinator skipped the presenter as gone.
  @Test func aRemovedInboxIsMadeAgain() throws {
    let t = try CoordinationRoot()
    let (item, presenter, inbox) = try t.presentedFile("inbox.txt", entryOf: "inbox") {
      name, pid in name.hasPrefix("\(pid)-")
    }
    #expect(unlink(inbox) == 0)
    try Data("not a fifo\n".utf8).write(to: URL(fileURLWithPath: inbox))
    #expect(
      eventually { FileStatus(atPath: inbox)?.kind == .fifo }, "\(presenter.standardError)")
    try t.expectAskedAtAWrite(presenter, item)
  }

  /// A file or an empty folder put at a presenter's inbox by another process between the
  /// presenter's look (its inbox gone) and its `mkfifo`, which then found something there: the
  /// presenter took a file for its FIFO and kept it, and every coordinator skipped it as gone;
  /// a folder it could not open nor remove, and every coordinated write in the group failed
  /// ("Is a directory"); another user's FIFO it kept, and whoever held that open for reading
  /// heard the group's asks. Now the inbox it opens is a FIFO of its own user, made again over
  /// any of them. (Another user's FIFO needs root to make; the case runs where the tests do.)
  @Test(arguments: ["file", "folder"] + (geteuid() == 0 ? ["another user's FIFO"] : []))
  func aFilePutAtAnInboxWhileItIsMadeAgainIsReplaced(_ kind: String) throws {
    let t = try CoordinationRoot()
    let item = t.file("remade.txt")
    try "one\n".write(toFile: item, atomically: false, encoding: .utf8)
    let marker = t.g.path + "/before-mkfifo"
    var environment = t.g.t.environment(as: TestRoot.widget)
    environment["APPGROUPS_TEST_PAUSE_BEFORE_MKFIFO"] = marker
    let presenter = try ChildProcess(
      "groupctl", ["--root", t.g.path, "present", "--as", TestRoot.widget, item], environment: environment)
    let pid = presenter.process.processIdentifier
    // Each time the presenter is about to make its inbox: `act` runs while it is stopped there.
    func resumeAtMkfifo(_ act: () throws -> Void = {}) throws {
      try #require(eventually { FileManager.default.fileExists(atPath: marker) }, "\(presenter.standardError)")
      try #require(waitUntilStopped(pid, timeout: 30))
      try act()
      try FileManager.default.removeItem(atPath: marker)
      kill(pid, SIGCONT)
    }
    try resumeAtMkfifo()  // its first inbox
    #expect(presenter.waitForErrorLine { $0.hasPrefix("presenting \(item)") } != nil, "\(presenter.standardError)")
    let inboxes = t.container + "/Library/Coordination/inbox"
    let inbox = try #require(
      try FileManager.default.contentsOfDirectory(atPath: inboxes).first { $0.hasPrefix("\(pid)-") }
        .map { inboxes + "/" + $0 })
    #expect(unlink(inbox) == 0)
    try resumeAtMkfifo {
      switch kind {
      case "file":
        try Data("not a fifo\n".utf8).write(to: URL(fileURLWithPath: inbox))
      case "folder":
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: false)
      default:
        try #require(mkfifo(inbox, 0o666) == 0 && chown(inbox, 65534, 65534) == 0)
      }
    }
    // Made again over it (the presenter stops once more before that mkfifo).
    #expect(
      eventually {
        if FileManager.default.fileExists(atPath: marker) { try? resumeAtMkfifo() }
        guard let found = FileStatus(atPath: inbox) else { return false }
        return found.kind == .fifo && found.owner == geteuid()
      }, "\(presenter.standardError)")
    let write = try t.coordinate(["--write", item, "--", "/bin/sh", "-c", "echo more >> '\(item)'"])
    #expect(write.status == 0, "\(write)")
    #expect(t.lines(presenter, through: "did-change") == ["relinquish-to-writer", "reacquire", "did-change"])
    // Ended with SIGKILL: at a normal exit it removes its inbox, may hear that, and would stop
    // before making it again, with nobody left to resume it.
    presenter.signal(SIGKILL)
    #expect(presenter.wait() == 9)
  }

  /// Bytes with no newline written into a presenter's inbox by a process that is not the
  /// library: the next writer's ask is still read as itself, and the presenter answers. The
  /// ask was read as the end of the foreign line, dropped, and the presenter was blamed.
  @Test func aPartialLineInAnInboxDoesNotHideTheNextAsk() throws {
    let t = try CoordinationRoot()
    let (item, presenter, inbox) = try t.presentedFile("partial.txt", entryOf: "inbox") {
      name, pid in name.hasPrefix("\(pid)-")
    }
    let fd = open(inbox, O_WRONLY | O_NONBLOCK)
    #expect(fd >= 0, "the presenter reads its inbox")
    let foreign = Array("ask 1 /nowhere half-a-line".utf8)
    #expect(write(fd, foreign, foreign.count) == foreign.count)
    close(fd)
    try t.expectAskedAtAWrite(presenter, item)
  }

  /// The claims file replaced by a symbolic link: the access is refused, saying so (it said
  /// "Too many levels of symbolic links"), nothing is written through the link, and once the
  /// link is gone the next access works.
  @Test func aClaimsFileThatIsALinkIsRefusedSayingSo() throws {
    let t = try CoordinationRoot()
    let item = t.file("linked.txt")
    try "one\n".write(toFile: item, atomically: false, encoding: .utf8)
    #expect(try t.coordinate(["--write", item, "--", "/bin/true"]).status == 0)
    let claims = t.container + "/Library/Coordination/claims"
    let outside = t.g.path + "/outside"
    try "kept\n".write(toFile: outside, atomically: false, encoding: .utf8)
    try FileManager.default.removeItem(atPath: claims)
    try FileManager.default.createSymbolicLink(atPath: claims, withDestinationPath: outside)
    let refused = try t.coordinate(["--write", item, "--", "/bin/sh", "-c", "echo two >> '\(item)'"])
    #expect(refused.status == 1, "\(refused)")
    #expect(
      refused.stderr.contains("\(claims) is a symbolic link, which is never followed there"),
      "\(refused.stderr)")
    #expect(try String(contentsOfFile: item, encoding: .utf8) == "one\n")
    #expect(try String(contentsOfFile: outside, encoding: .utf8) == "kept\n")
    try FileManager.default.removeItem(atPath: claims)
    #expect(try t.coordinate(["--write", item, "--", "/bin/true"]).status == 0)
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// Coordinated accesses at the edges of a container: the container itself, items whose name
/// cannot be read, and paths that look like containers inside one.
@Suite("Coordination: claim edges", .processBound)
struct CoordinationClaimEdgeTests {
  /// `groupctl run --as APP -- groupctl coordinate --as APP --write ITEM -- sh -c 'echo held; …'`,
  /// once the access holds its claim.
  func holdWrite(_ t: CoordinationRoot, _ item: String, sourceLocation: SourceLocation = #_sourceLocation) throws
    -> ChildProcess
  {
    let child = try ChildProcess(
      "groupctl",
      ["--root", t.g.path, "run", "--as", TestRoot.app, "--best-effort", "--",
       Product.url("groupctl").path, "coordinate", "--as", TestRoot.app, "--write", item, "--",
       "/bin/sh", "-c", "echo held; exec sleep 60"],
      environment: t.g.t.environment(as: TestRoot.app))
    #expect(child.waitFor("held"), "\(child.standardError)", sourceLocation: sourceLocation)
    return child
  }

  /// Whether `ps`'s output has a `lock:` line ending in `: WHAT`, or in `: WHAT, held by …`.
  static func listsLock(_ ps: String, _ what: String) -> Bool {
    ps.split(separator: "\n").contains {
      $0.contains("lock: ") && ($0.hasSuffix(": " + what) || $0.contains(": " + what + ", held by "))
    }
  }

  /// `groupctl coordinate` run from a shell (no `groupctl run`, no `APPGROUPS_BUNDLE_ID`): the
  /// helper process it starts, which holds the claim too, is named with the app, as the
  /// coordinating process is. It was `process (PID)`.
  @Test func theCommandOfACoordinateIsNamedWithItsApp() throws {
    let t = try CoordinationRoot()
    let item = t.file("named.txt")
    try "one\n".write(toFile: item, atomically: false, encoding: .utf8)
    let access = try ChildProcess(
      "groupctl",
      ["--root", t.g.path, "coordinate", "--as", TestRoot.app, "--write", item, "--",
       "/bin/sh", "-c", "echo \"held $$\"; exec sleep 60"],
      environment: [:])
    let command = try #require(
      access.waitForLine { $0.hasPrefix("held ") }.flatMap { Int32($0.dropFirst(5)) },
      "\(access.standardError)")
    defer {
      kill(command, SIGKILL)
      access.signal(SIGKILL)
      _ = access.wait()
    }
    let ps = try t.g.ok(["ps"])
    #expect(
      ps.contains("  \(TestRoot.app) (\(access.process.processIdentifier)) coordinates a write of \(item)\n"),
      "\(ps)")
    let accesses = ps.split(separator: "\n").filter { $0.contains(" coordinates a write of ") }
    #expect(accesses.count == 2, "the access and its helper: \(ps)")
    #expect(accesses.allSatisfy { $0.hasPrefix("  \(TestRoot.app) (") }, "\(ps)")
  }

  /// A coordinated write of the container itself is a lock like any other: `ps` and
  /// `doctor --locks` show it, and a suspension terminates the app for it (0xdead10cc).
  @Test func aClaimOnTheContainerItselfIsALock() throws {
    let t = try CoordinationRoot()
    let claims = t.container + "/Library/Coordination/claims"
    let holder = try holdWrite(t, t.container)
    let subject = "a coordinated write of \(t.container) (a lock on \(claims))"
    #expect(Self.listsLock(try t.g.ok(["ps"]), "coordinated write of \(t.container)"))
    let suspend = try t.g.run(["suspend", TestRoot.app, "--report-only"])
    #expect(suspend.stderr.contains("held \(subject) in group \(TestRoot.group)"), "\(suspend)")
    let locks = try t.g.run(["doctor", "--locks"])
    #expect(locks.stdout.contains("is stopped while it holds ") && locks.stdout.contains(claims), "\(locks)")
    try t.g.ok(["resume", TestRoot.app])
    let terminated = try t.g.run(["suspend", TestRoot.app])
    #expect(terminated.status == 1, "\(terminated)")
    #expect(terminated.stderr.contains("terminated: \(TestRoot.app) ("), "\(terminated)")
    #expect(terminated.stderr.contains("held \(subject) in group \(TestRoot.group)"), "\(terminated)")
    #expect(holder.wait() != nil)
  }

  /// A claim whose slot's name file was removed is still reported, as an item of the
  /// container whose name is unknown; a name file left empty is written again whole by the
  /// next process that claims the item.
  @Test func aClaimWhoseNameCannotBeReadIsStillALock() throws {
    let t = try CoordinationRoot()
    let names = t.container + "/Library/Coordination/names"
    let item = t.file("a.txt")
    try "a\n".write(toFile: item, atomically: false, encoding: .utf8)

    // An empty name file (a full disk at its creation) is written again.
    #expect(try t.coordinate(["--write", item, "--", "/bin/true"]).status == 0)
    let files = try FileManager.default.contentsOfDirectory(atPath: names)
    for name in files { try Data().write(to: URL(fileURLWithPath: names + "/" + name)) }
    #expect(try t.coordinate(["--write", item, "--", "/bin/true"]).status == 0)
    let contents = try files.map { try String(contentsOfFile: names + "/" + $0, encoding: .utf8) }
    #expect(contents.contains("Library/Shared/a.txt"), "\(contents)")

    // A name file removed is reported as unknown.
    let holder = try holdWrite(t, item)
    for name in try FileManager.default.contentsOfDirectory(atPath: names) {
      try FileManager.default.removeItem(atPath: names + "/" + name)
    }
    let unknown = "an item of \(t.container) whose name is unknown"
    #expect(Self.listsLock(try t.g.ok(["ps"]), "coordinated write of \(unknown)"))
    let suspend = try t.g.run(["suspend", TestRoot.app])
    #expect(suspend.status == 1, "\(suspend)")
    #expect(
      suspend.stderr.contains(
        "held a coordinated write of \(unknown) (a lock on \(t.container)/Library/Coordination/claims)"),
      "\(suspend)")
    #expect(holder.wait() != nil)
  }

  /// A folder shaped like a container (`Data/Application/<id>`, `Shared/AppGroup/<group>`)
  /// inside a group container is a folder of that container: an app outside the group is
  /// refused, and a member is let in.
  @Test func aContainerShapedFolderInsideAContainerIsAFolderOfIt() throws {
    let t = try CoordinationRoot()
    // A manifest planted in the container does not make it a root.
    try "<plist/>".write(toFile: t.container + "/Entitlements.plist", atomically: false, encoding: .utf8)
    for (folder, owner) in [
      ("Data/Application", "com.example.other"), ("Shared/AppGroup", "group.com.example.other"),
    ] {
      let inside = t.container + "/" + folder + "/" + owner
      try FileManager.default.createDirectory(atPath: inside, withIntermediateDirectories: true)
      try "x\n".write(toFile: inside + "/f.txt", atomically: false, encoding: .utf8)
      let intruder = try t.coordinate(
        ["--write", inside + "/f.txt", "--", "/bin/echo", "RAN"], as: "com.example.other")
      #expect(intruder.status == 1, "\(intruder)")
      #expect(intruder.stdout.isEmpty, "\(intruder)")
      #expect(
        intruder.stderr.contains("com.example.other is not entitled to \(TestRoot.group)"),
        "\(intruder)")
    }
    let own = t.container + "/Data/Application/" + TestRoot.app
    try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
    try "x\n".write(toFile: own + "/f.txt", atomically: false, encoding: .utf8)
    let member = try t.coordinate(
      ["--write", own + "/f.txt", "--", "/bin/echo", "RAN"], as: TestRoot.widget)
    #expect(member.status == 0, "\(member)")
    #expect(member.stdout == "RAN\n", "\(member)")
  }

  /// A root that lives below a folder shaped like a container (`…/Data/Application/<id>/…`)
  /// is still the root of its containers: the one whose manifest is there.
  @Test func aRootBelowAContainerShapedFolderIsFound() throws {
    let base = try CoordinationRoot().g.path + "-outer"
    defer { try? FileManager.default.removeItem(atPath: base) }
    let root = base + "/Data/Application/com.example.outer/root"
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    func groupctl(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
      try Product.run("groupctl", ["--root", root] + args, environment: ["APPGROUPS_ROOT": root])
    }
    #expect(try groupctl(["grant", TestRoot.app, TestRoot.group]).status == 0)
    let container = try groupctl(["container", TestRoot.app, TestRoot.group]).stdout
      .trimmingCharacters(in: .newlines)
    try "x\n".write(toFile: container + "/f.txt", atomically: false, encoding: .utf8)
    let ran = try groupctl(
      ["coordinate", "--as", TestRoot.app, "--write", container + "/f.txt", "--", "/bin/echo", "RAN"])
    #expect(ran.status == 0 && ran.stdout == "RAN\n", "\(ran)")
  }

  /// A coordinated move, deletion or replacement of the container, of its `Library` or of
  /// `Library/Coordination` is refused before the command runs, naming the item and why:
  /// the coordination state would go with it. A plain write of `Library` is let in.
  @Test func removingTheCoordinationStateIsRefused() throws {
    let t = try CoordinationRoot()
    let library = t.container + "/Library"
    let old = t.container + "/Old"
    let cases: [(item: String, options: [String], doing: String)] = [
      (library, ["--move-to", old], "moved"),
      (t.container, ["--delete"], "deleted"),
      (library, ["--delete"], "deleted"),
      (library, ["--replace"], "replaced"),
      (t.container, ["--move-to", t.g.path + "/Shared/AppGroup/group.com.example.moved"], "moved"),
    ]
    let plain = try t.coordinate(["--write", library, "--", "/bin/echo", "RAN"])
    #expect(plain.status == 0, "\(plain)")
    #expect(plain.stdout == "RAN\n", "\(plain)")
    for (item, options, doing) in cases {
      let write = try t.coordinate(
        ["--write", item] + options + ["--", "/bin/sh", "-c", "echo RAN; mv '\(library)' '\(old)'"])
      #expect(write.status == 1, "\(options): \(write)")
      #expect(write.stdout.isEmpty, "\(options): \(write)")
      #expect(
        write.stderr.contains(
          "\(item) cannot be \(doing) in a coordinated write: "),
        "\(options): \(write)")
      #expect(
        write.stderr.contains("the coordination state of \(t.container) (\(library)/Coordination)"),
        "\(options): \(write)")
      #expect(!write.stderr.contains("was removed during a coordinated access"), "\(write)")
      #expect(FileManager.default.fileExists(atPath: library + "/Coordination/claims"))
      #expect(!FileManager.default.fileExists(atPath: old))
    }
  }

  /// Whether a line of `text` (indentation aside) begins with `terminated: FAKE`: a line
  /// forged by a file name or another process's text printed raw.
  static func hasForgedLine(_ text: String) -> Bool {
    text.split(separator: "\n").contains {
      $0.drop { $0 == " " || $0 == "\t" }.hasPrefix("terminated: FAKE")
    }
  }

  /// A file name or a presenter's text with a newline or an escape byte in it is printed
  /// and logged quoted and escaped, never raw: it cannot forge a line of a report, a log or
  /// `ps`, nor drive the terminal. `doctor --locks` names the coordinated item.
  @Test func namesAndTextsFromOtherProcessesCannotForgeALine() throws {
    let t = try CoordinationRoot()
    let item = t.file("a\nterminated: FAKE.txt")
    let shown = "\"" + t.folder + "/a\\nterminated: FAKE.txt\""
    try "a\n".write(toFile: item, atomically: false, encoding: .utf8)

    // A presenter's refusal.
    let presenter = try ChildProcess(
      "groupctl",
      ["--root", t.g.path, "run", "--as", TestRoot.widget, "--best-effort", "--",
       Product.url("groupctl").path, "present", "--as", TestRoot.widget, item,
       "--refuse", "no\nterminated: FAKE\u{1B}[2J"],
      environment: t.g.t.environment(as: TestRoot.widget))
    #expect(presenter.waitForErrorLine { $0.hasPrefix("presenting ") } != nil, "\(presenter.standardError)")
    let ps = try t.g.ok(["ps"])
    #expect(ps.contains("  presents: \(shown)\n"), "\(ps)")
    #expect(!Self.hasForgedLine(ps), "\(ps)")
    let refused = try t.coordinate(["--write", item, "--delete", "--", "/bin/true"])
    #expect(refused.status == 1, "\(refused)")
    #expect(refused.stderr.contains("which presents \(shown), refused the coordinated write"), "\(refused)")
    #expect(refused.stderr.hasSuffix(": \"no\\nterminated: FAKE\\U001b[2J\"\n"), "\(refused)")
    #expect(!Self.hasForgedLine(refused.stderr) && !refused.stderr.contains("\u{1B}"), "\(refused)")

    // A presenter that does not answer, in the error and the logs.
    try t.g.ok(["suspend", TestRoot.widget])
    let unanswered = try t.coordinate(["--write", item, "--timeout", "1", "--", "/bin/true"])
    #expect(unanswered.status == 1, "\(unanswered)")
    #expect(unanswered.stderr.contains("presents \(shown) in \(TestRoot.group) and did not answer"), "\(unanswered)")
    #expect(!Self.hasForgedLine(unanswered.stderr), "\(unanswered)")
    let log = try String(contentsOf: t.g.root.url.appendingPathComponent("Run/lifecycle.log"), encoding: .utf8)
    #expect(log.contains("presents \(shown) in"), "\(log)")
    #expect(!Self.hasForgedLine(log), "\(log)")
    #expect(!Self.hasForgedLine(try t.g.ok(["ps"])))
    try t.g.ok(["resume", TestRoot.widget])
    presenter.signal(SIGKILL)
    #expect(presenter.wait() != nil)

    // A stopped app's coordinated write of the item, in suspend's report and doctor --locks.
    let holder = try holdWrite(t, item)
    let subject = "a coordinated write of \(shown) (a lock on \(t.container)/Library/Coordination/claims)"
    let suspend = try t.g.run(["suspend", TestRoot.app, "--report-only"])
    #expect(suspend.stderr.contains("held \(subject) in group"), "\(suspend)")
    #expect(!Self.hasForgedLine(suspend.stderr), "\(suspend)")
    let locks = try t.g.run(["doctor", "--locks"])
    #expect(locks.stdout.contains("is stopped while it holds \(subject) in group \(TestRoot.group)"), "\(locks)")
    #expect(!Self.hasForgedLine(locks.stdout), "\(locks)")
    try t.g.ok(["resume", TestRoot.app])
    #expect(try t.g.run(["suspend", TestRoot.app]).status == 1)
    #expect(holder.wait() != nil)
  }

  /// A coordinated write in an app's own container that does not exist yet makes the
  /// container, as a group container is made on demand, and runs.
  @Test func anAppsOwnContainerIsMadeOnDemand() throws {
    let t = try CoordinationRoot()
    let container = t.g.path + "/Data/Application/" + TestRoot.app
    try #require(!FileManager.default.fileExists(atPath: container))
    let item = container + "/f"
    let write = try t.coordinate(["--write", item, "--", "/bin/sh", "-c", "echo RAN; echo x > '\(item)'"])
    #expect(write.status == 0, "\(write)")
    #expect(write.stdout == "RAN\n", "\(write)")
    #expect(FileManager.default.fileExists(atPath: item))
    #expect(FileManager.default.fileExists(atPath: container + "/Library/Preferences"))
  }
}

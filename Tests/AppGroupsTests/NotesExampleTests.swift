import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// The notes example: a SQLite database (WAL mode) in the group container, written by the app
/// and shown by the widget, which hears of each change as the database's presenter; its
/// held transaction terminated with 0xdead10cc on suspend, and its fixed form suspended
/// cleanly. Every process runs under `groupctl run --as` (confined when the kernel has
/// Landlock).
@Suite("Notes example", .processBound)
struct NotesExampleTests {
  static let app = "com.example.notes"
  static let widget = "com.example.notes.widget"

  struct NotesRoot {
    let g: GroupctlRoot

    init(_ name: String = #function) throws {
      g = try GroupctlRoot(name)
      for app in [NotesExampleTests.app, NotesExampleTests.widget] {
        try EntitlementManifest.grant(app, groups: [TestRoot.group], root: g.root)
      }
    }

    var database: String {
      g.root.groupContainerURL(for: TestRoot.group).path + "/Library/Notes/notes.sqlite"
    }

    func launch(_ bundleID: String, _ arguments: [String]) throws -> ChildProcess {
      try ChildProcess(
        "groupctl",
        ["--root", g.path, "run", "--as", bundleID, "--best-effort", "--", Product.url("notes").path]
          + arguments,
        environment: ["APPGROUPS_ROOT": g.path])
    }

    /// `notes ARGUMENTS` as the app, to its end.
    func notes(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
      try Product.run(
        "groupctl",
        ["--root", g.path, "run", "--as", NotesExampleTests.app, "--best-effort", "--",
         Product.url("notes").path] + arguments,
        environment: ["APPGROUPS_ROOT": g.path])
    }

    func report(_ pid: Int32, _ file: String) -> String {
      "terminated: \(NotesExampleTests.app) (\(pid)) held a lock on \(file) in group"
        + " \(TestRoot.group) while being suspended (0xdead10cc)"
    }
  }

  @Test func theAppWritesAndTheWidgetHearsEachNote() throws {
    let t = try NotesRoot()
    #expect(try t.notes(["add", "first"]).stdout == "added #1: first\n")
    let widget = try t.launch(Self.widget, ["watch", "--count", "2"])
    #expect(widget.waitFor("ready"), "\(widget.standardError)")
    #expect(try t.notes(["add", "second"]).stdout == "added #2: second\n")
    #expect(widget.waitFor("note #2: second"))
    #expect(try t.notes(["add", "third"]).status == 0)
    #expect(widget.waitFor("note #3: third"))
    #expect(widget.wait() == 0)
    let list = try t.notes(["list"])
    #expect(list.stdout == "#1 first\n#2 second\n#3 third\n")
    // The database's files are the app's alone.
    let mode = try FileManager.default.attributesOfItem(atPath: t.database)[.posixPermissions] as? Int
    #expect(mode == 0o600)
  }

  @Test func theWidgetShowsTheNotesOfADatabaseMadeAgain() throws {
    let t = try NotesRoot()
    #expect(try t.notes(["add", "one"]).status == 0)
    #expect(try t.notes(["add", "two"]).status == 0)
    let widget = try t.launch(Self.widget, ["watch", "--count", "2"])
    #expect(widget.waitFor("ready"), "\(widget.standardError)")
    // The database deleted (its folder with it), then made again by the next note: its ids
    // start at 1 again, below the last id the widget saw (2).
    try FileManager.default.removeItem(atPath: (t.database as NSString).deletingLastPathComponent)
    #expect(widget.waitFor("the notes were deleted"), "\(widget.standardError)")
    #expect(try t.notes(["add", "three"]).stdout == "added #1: three\n")
    #expect(widget.waitFor("note #1: three"), "\(widget.standardError)")
    #expect(try t.notes(["add", "four"]).stdout == "added #2: four\n")
    #expect(widget.waitFor("note #2: four"), "\(widget.standardError)")
    #expect(widget.wait() == 0)
  }

  @Test func theDatabaseIsRefusedBeforeTheFirstUnlockOnly() throws {
    let t = try NotesRoot()
    #expect(try t.notes(["add", "one"]).status == 0)
    try t.g.ok(["device", "passcode", "set", "123456"])
    #expect(try t.g.ok(["device", "reboot"]).contains("rebooted: before-first-unlock"))
    let refused = try t.notes(["add", "two"])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("cannot open \(t.database): before first unlock"), "\(refused.stderr)")
    // Unlocked once, then locked: the class (completeUntilFirstUserAuthentication) is there.
    try t.g.ok(["device", "unlock", "--passcode", "123456"])
    try t.g.ok(["device", "lock", "--grace", "0"])
    #expect(try t.notes(["add", "three"]).stdout == "added #2: three\n")
    #expect(try t.notes(["list"]).stdout == "#1 one\n#2 three\n")
  }

  @Test func aHeldTransactionIsTerminatedOnSuspend() throws {
    let t = try NotesRoot()
    let holder = try t.launch(Self.app, ["hold"])
    #expect(holder.waitFor("ready"), "\(holder.standardError)")
    let pid = holder.process.processIdentifier
    let suspend = try t.g.run(["suspend", Self.app])
    #expect(suspend.status == 1, "\(suspend)")
    #expect(suspend.stderr.contains(t.report(pid, t.database)), "\(suspend.stderr)")
    #expect(suspend.stderr.contains(t.report(pid, t.database + "-shm")), "\(suspend.stderr)")
    #expect(holder.wait() == SIGKILL)
    // Nothing acknowledged was lost: the held note was never committed, the others are there.
    #expect(try t.notes(["add", "after"]).status == 0)
    #expect(try t.notes(["list"]).stdout.hasSuffix(" after\n"))
  }

  @Test func theFixedAppCommitsClosesAndIsSuspendedCleanly() throws {
    let t = try NotesRoot()
    let widget = try t.launch(Self.widget, ["watch"])
    #expect(widget.waitFor("ready"), "\(widget.standardError)")
    let holder = try t.launch(Self.app, ["hold", "--release-on-suspend"])
    #expect(holder.waitFor("ready"), "\(holder.standardError)")
    let suspend = try t.g.run(["suspend", Self.app])
    #expect(suspend.status == 0, "\(suspend)")
    #expect(suspend.stderr.isEmpty, "\(suspend.stderr)")
    #expect(holder.waitForLine { $0.hasPrefix("committed #1 and closed ") } != nil)
    // The commit was a coordinated write: the widget heard it.
    #expect(widget.waitFor("note #1: written in a transaction held open"))
    #expect(try t.notes(["add", "while suspended"]).stdout == "added #2: while suspended\n")
    #expect(widget.waitFor("note #2: while suspended"))
    try t.g.ok(["resume", Self.app])
    #expect(holder.waitFor("began a write transaction again after the resume"))
    holder.signal(SIGTERM)
    #expect(holder.waitFor("committed #3"))
    #expect(holder.wait() == 0)
    #expect(widget.waitFor("note #3: written in a transaction held open"))
    widget.signal(SIGTERM)
    #expect(widget.wait() == 0)
  }

  @Test func badInputIsRefused() throws {
    let t = try NotesRoot()
    let usage = try t.notes(["add"])
    #expect(usage.status == 64)
    #expect(usage.stderr.contains("add needs the TEXT of a note"))
    let unknown = try t.notes(["frobnicate"])
    #expect(unknown.status == 64)
    let intruder = try Product.run(
      "notes", ["list"], environment: ["APPGROUPS_ROOT": t.g.path, "APPGROUPS_BUNDLE_ID": "com.example.intruder"])
    #expect(intruder.status == 1)
    #expect(intruder.stderr.contains("com.example.intruder is not entitled to \(TestRoot.group)"))
  }
}

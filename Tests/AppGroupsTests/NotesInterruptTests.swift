import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

extension NotesExampleTests {
  /// `notes add` interrupted (SIGINT, Ctrl-C) while it waits for its coordinated write ends
  /// as the signal ends a program, and writes nothing. SIGINT and SIGTERM were blocked for
  /// every command, so it went on waiting, then added the note and exited 0.
  @Test func anAddInterruptedWhileItWaitsEndsAndWritesNothing() throws {
    let t = try NotesRoot()
    #expect(try t.notes(["add", "first"]).status == 0)
    let writer = try ChildProcess(
      "groupctl",
      ["--root", t.g.path, "coordinate", "--as", Self.app, "--write", t.database, "--",
       "/bin/sh", "-c", "echo writing; read line"],
      environment: ["APPGROUPS_ROOT": t.g.path])
    #expect(writer.waitFor("writing"), "\(writer.standardError)")
    let add = try ChildProcess(
      "notes", ["add", "cancel me"],
      environment: ["APPGROUPS_ROOT": t.g.path, "APPGROUPS_BUNDLE_ID": Self.app])
    // It waits for the writer: its lock request on the claims file is queued behind it.
    #expect(eventually { t.waitingAccesses() == 1 }, "\(add.standardError)")
    add.signal(SIGINT)
    #expect(add.wait() == SIGINT, "\(add.standardError)")
    #expect(add.process.terminationReason == .uncaughtSignal)
    writer.send("go")
    #expect(writer.wait() == 0, "\(writer.standardError)")
    #expect(try t.notes(["list"]).stdout == "#1 first\n")
  }
}

extension NotesExampleTests.NotesRoot {
  /// How many lock requests wait for the group container's claims file (`->` lines of
  /// `/proc/locks`): coordinated accesses waiting for others.
  func waitingAccesses() -> Int {
    let claims = g.root.groupContainerURL(for: TestRoot.group).path + "/Library/Coordination/claims"
    var s = stat()
    guard stat(claims, &s) == 0, let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8)
    else { return 0 }
    return table.split(separator: "\n").filter {
      $0.contains("->") && $0.contains("OFDLCK") && $0.contains(":\(s.st_ino) ")
    }.count
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

extension NotesExampleTests {
  /// `notes hold` whose commit cannot get its coordinated write (here a presenter that never
  /// answers) says plainly that its note was not added, and exits non-zero. The message said
  /// only that the coordinated access did not begin, as if the note might still be there.
  @Test func aHoldWhoseCommitCannotBeginSaysItsNoteWasNotAdded() throws {
    let t = try NotesRoot()
    #expect(try t.notes(["add", "first"]).status == 0)
    let holder = try t.launch(Self.app, ["hold"])
    #expect(holder.waitFor("ready"), "\(holder.standardError)")
    let presenter = try ChildProcess(
      "groupctl",
      ["--root", t.g.path, "present", "--as", Self.widget, t.database, "--never-answer"],
      environment: ["APPGROUPS_ROOT": t.g.path])
    #expect(presenter.waitForErrorLine { $0.hasPrefix("presenting ") } != nil, "\(presenter.standardError)")
    holder.signal(SIGTERM)
    #expect(holder.wait(timeout: 60) == 1, "\(holder.standardError)")
    let message = holder.standardError
    #expect(message.contains("note #2 was not added"), "\(message)")
    #expect(message.contains("rolled back, nothing was written"), "\(message)")
    presenter.signal(SIGTERM)
    #expect(presenter.wait() == 0, "\(presenter.standardError)")
    #expect(try t.notes(["list"]).stdout == "#1 first\n")
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

extension NotesExampleTests {
  /// A backup copied over the database (a restore) has the same generation as the database
  /// the widget showed, the same inode (`cp` writes into the file) and ids below the last one
  /// shown. The widget went on from the last id it had shown, so the restored database's next
  /// notes (#3 and #4, below the #4 it had shown) were never shown.
  @Test func theWidgetShowsEveryNoteAfterABackupIsRestored() throws {
    let t = try NotesRoot()
    for text in ["one", "two"] { #expect(try t.notes(["add", text]).status == 0) }
    let backup = t.g.path + "-notes-backup.sqlite"
    defer { try? FileManager.default.removeItem(atPath: backup) }
    try FileManager.default.copyItem(atPath: t.database, toPath: backup)
    for text in ["three", "four"] { #expect(try t.notes(["add", text]).status == 0) }
    let widget = try t.launch(Self.widget, ["watch"])
    #expect(widget.waitFor("ready"), "\(widget.standardError)")
    try t.g.ok([
      "coordinate", "--as", Self.app, "--write", t.database, "--replace", "--", "/bin/cp", backup, t.database,
    ])
    #expect(widget.waitFor("the notes were deleted"), "\(widget.standardError)")
    #expect(try t.notes(["add", "five"]).stdout == "added #3: five\n")
    #expect(try t.notes(["add", "six"]).stdout == "added #4: six\n")
    #expect(try t.notes(["add", "seven"]).stdout == "added #5: seven\n")
    // The database as it is now, whole, then each new note: none skipped.
    for line in ["note #1: one", "note #2: two", "note #3: five", "note #4: six", "note #5: seven"] {
      #expect(widget.waitFor(line), "\(line) \(widget.standardError)")
    }
    widget.signal(SIGTERM)
    #expect(widget.wait() == 0)
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

extension NotesExampleTests {
  /// Any app of the group can plant a symbolic link where the notes database goes. Dangling,
  /// it passed for a path inside the group container, and libsqlite3 followed it: `notes add`
  /// created its database at the link's target, here the app's own private container, which
  /// its sandbox lets it write. The database is now opened with SQLITE_OPEN_NOFOLLOW.
  @Test func aSymbolicLinkAtTheDatabaseIsRefusedAndNothingIsWrittenThroughIt() throws {
    let t = try NotesRoot()
    let folder = (t.database as NSString).deletingLastPathComponent
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let library = t.g.root.appContainerURL(for: Self.app).appendingPathComponent("Library").path
    try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
    let target = library + "/private.sqlite"
    try FileManager.default.createSymbolicLink(atPath: t.database, withDestinationPath: target)

    let add = try t.notes(["add", "through the link"])
    #expect(add.status == 1, "\(add)")
    #expect(add.stderr.contains("\(t.database): it is a symbolic link"), "\(add.stderr)")
    #expect(!FileManager.default.fileExists(atPath: target))

    // The link removed, the notes are written in the group container again.
    try FileManager.default.removeItem(atPath: t.database)
    #expect(try t.notes(["add", "first"]).stdout == "added #1: first\n")
  }
}

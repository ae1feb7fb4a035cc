import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// A coordinated writer killed in its access tells its item's presenters nothing: they are
/// told to reacquire when its process is gone, and, when the item changed meanwhile, hear of
/// the change as of one made without coordination (`presentedItemDidChange()`).
@Suite("A coordinated writer killed in its access", .processBound)
struct CoordinationKilledWriterTests {
  /// Kills `groupctl coordinate` once its COMMAND has run `script` and said so.
  func killWriter(_ c: CoordinationRoot, _ file: String, after script: String) throws {
    let said = c.g.path + "/written"
    let writer = try c.startCoordinate(
      ["--write", file, "--", "/bin/sh", "-c", "\(script); : > '\(said)'; exec sleep 120"])
    #expect(waitForFile(said, timeout: 30), "\(writer.standardError)")
    writer.signal(SIGKILL)
    #expect(writer.wait(timeout: 30) != nil, "groupctl did not end")
  }

  /// A root whose file (holding `one`) the widget presents.
  func presented(_ name: String = #function) throws -> (CoordinationRoot, String, ChildProcess) {
    let (c, file) = try Self.rootWithDraft(name)
    return (c, file, try c.present(file))
  }

  /// A root and its file to coordinate, holding `one`.
  static func rootWithDraft(_ name: String) throws -> (CoordinationRoot, String) {
    let c = try CoordinationRoot(name)
    let file = c.file("draft.txt")
    try Data("one\n".utf8).write(to: URL(fileURLWithPath: file))
    return (c, file)
  }

  @Test func aChangeItMadeIsHeardAfterTheReacquire() throws {
    let (c, file, presenter) = try presented()
    try killWriter(c, file, after: "echo two >> '\(file)'")
    #expect(c.lines(presenter, through: "did-change") == ["relinquish-to-writer", "reacquire", "did-change"])
    presenter.signal(SIGTERM)
    presenter.wait()
  }

  /// A writer killed before it changed anything: reacquire, and no change is made up (the
  /// next coordinated write's own did-change is the next thing heard).
  @Test func noChangeIsMadeUpWhenItWroteNothing() throws {
    let (c, file, presenter) = try presented()
    try killWriter(c, file, after: ":")
    #expect(c.lines(presenter, through: "reacquire") == ["relinquish-to-writer", "reacquire"])
    let next = try c.coordinate(["--write", file, "--", "/bin/sh", "-c", "echo two >> '\(file)'"])
    #expect(next.status == 0, "\(next.stderr)")
    #expect(c.lines(presenter, through: "did-change") == ["relinquish-to-writer", "reacquire", "did-change"])
    presenter.signal(SIGTERM)
    presenter.wait()
  }
}

/// The claims file removed while an access holds it: the next access locks the file made
/// again and is let in, and the first one says, when it ends, that it did not keep it out.
@Suite("A claims file removed under a running access", .processBound)
struct CoordinationClaimsRemovedTests {
  @Test func theAccessThatHeldItSaysSo() throws {
    let (c, file) = try CoordinationKilledWriterTests.rootWithDraft(#function)
    let go = c.g.path + "/go"
    let started = c.g.path + "/started"
    let first = try c.startCoordinate(
      ["--write", file, "--", "/bin/sh", "-c", ": > '\(started)'; while [ ! -e '\(go)' ]; do :; done"])
    #expect(waitForFile(started, timeout: 30), "\(first.standardError)")
    try FileManager.default.removeItem(atPath: c.container + "/Library/Coordination")
    let second = try c.coordinate(["--write", file, "--timeout", "30", "--", "/bin/sh", "-c", ": > '\(go)'"])
    #expect(second.status == 0, "\(second.stderr)")
    #expect(first.wait(timeout: 30) == 0)
    #expect(
      first.standardError.contains(
        "/Library/Coordination/claims was removed during a coordinated access"),
      "\(first.standardError)")
    #expect(!second.stderr.contains("was removed during"), "\(second.stderr)")
  }
}

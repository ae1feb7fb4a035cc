import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

extension NotesExampleTests {
  /// Writers that come at once while the widget presents the database: each writer, holding
  /// its claim, asks the widget to relinquish; the widget's read after the previous change
  /// must not sit on the presenter's queue waiting behind that very writer. It did: of two
  /// `notes add` at once, one failed after the 5-second presenter timeout ("did not answer
  /// relinquish-to-writer"), and of sixteen, thirteen.
  @Test func notesAddedAtOnceAllLandAndTheWidgetShowsEach() throws {
    let t = try NotesRoot()
    #expect(try t.notes(["add", "first"]).status == 0)
    let count = 6
    let widget = try t.launch(Self.widget, ["watch", "--count", "\(count)"])
    #expect(widget.waitFor("ready"), "\(widget.standardError)")
    let writers = try (1...count).map { try t.launch(Self.app, ["add", "note \($0)"]) }
    for writer in writers {
      #expect(writer.wait(timeout: 60) == 0, "\(writer.standardError)")
    }
    var shown: [String] = []
    while shown.count < count, let line = widget.waitForLine(timeout: 60, where: { $0.hasPrefix("note #") }) {
      shown.append(line)
    }
    for n in 1...count {
      #expect(shown.contains { $0.hasSuffix(": note \(n)") }, "\(shown) \(widget.standardError)")
    }
    // --count: the widget ends once it has shown every one of them.
    #expect(widget.wait(timeout: 60) == 0, "\(widget.standardError)")
    let list = try t.notes(["list"]).stdout
    #expect(list.split(separator: "\n").count == count + 1, "\(list)")
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

extension NotesExampleTests {
  /// A note's text with a newline or a terminal escape is printed quoted and escaped, on one
  /// line, by add, list and the widget. It was printed as it is: a newline in it made a line
  /// that looked like another note ("note #99: transfer approved"), and an escape sequence
  /// reached the terminal.
  @Test func aNoteWithANewlineOrAnEscapeIsPrintedOnOneLine() throws {
    let t = try NotesRoot()
    #expect(try t.notes(["add", "first"]).stdout == "added #1: first\n")
    let widget = try t.launch(Self.widget, ["watch"])
    #expect(widget.waitFor("ready"), "\(widget.standardError)")
    let forged = "hi\nnote #99: transfer approved"
    let shown = #""hi\nnote #99: transfer approved""#
    #expect(try t.notes(["add", forged]).stdout == "added #2: \(shown)\n")
    #expect(widget.waitForLine { $0.hasPrefix("note #") } == "note #2: \(shown)", "\(widget.standardError)")
    #expect(try t.notes(["add", "\u{1B}[31mred\\"]).stdout == #"added #3: "\U001b[31mred\\""# + "\n")
    #expect(widget.waitForLine { $0.hasPrefix("note #") } == #"note #3: "\U001b[31mred\\""#)
    #expect(try t.notes(["list"]).stdout == "#1 first\n#2 \(shown)\n" + #"#3 "\U001b[31mred\\""# + "\n")
    widget.signal(SIGTERM)
    #expect(widget.wait() == 0)
  }
}

import AppGroupsTestSupport
import Foundation
import Testing

/// The tables of `groupctl help COMMAND` (a name, two spaces or more, its description) keep
/// their column when a description is longer than a line: its continuation is never printed
/// left of it.
@Suite("groupctl help layout", .processBound)
struct GroupctlHelpLayoutTests {
  /// Where the description of a table row starts (after its name and a run of two spaces or
  /// more), for a line that starts a row (two spaces, then text); `nil` for any other line.
  private func descriptionColumn(_ line: Substring) -> Int? {
    guard line.hasPrefix("  "), line.dropFirst(2).first.map({ $0 != " " }) == true else { return nil }
    let text = line.dropFirst(2)
    guard let gap = text.range(of: "  ") else { return nil }
    let rest = text[gap.lowerBound...]
    guard let start = rest.firstIndex(where: { $0 != " " }) else { return nil }
    return line.distance(from: line.startIndex, to: start)
  }

  @Test func aWrappedRowOfAHelpTableKeepsItsColumn() throws {
    let overview = try Product.run("groupctl", ["--help"])
    let commands = overview.stdout.split(separator: "\n").compactMap { line -> String? in
      guard line.hasPrefix("  "), line.dropFirst(2).first?.isLetter == true,
        let name = line.split(separator: " ").first
      else { return nil }
      return String(name)
    }
    #expect(commands.contains("device") && commands.contains("coordinate"), "\(commands)")
    for command in commands {
      let help = try Product.run("groupctl", ["help", command])
      #expect(help.status == 0, "\(command): \(help.stderr)")
      var column: Int?
      let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false)
      for (index, line) in lines.enumerated() {
        guard line.hasPrefix(" ") else {
          column = nil
          continue
        }
        let indent = line.prefix { $0 == " " }.count
        if indent == 2 {
          // A new row; within a table, a line with no description is a name too long for the
          // column, whose description follows on the next line, under the column.
          if let row = descriptionColumn(line) {
            column = row
          } else if let table = column {
            let next = index + 1 < lines.count ? lines[index + 1].prefix { $0 == " " }.count : 0
            #expect(
              line.count >= table - 2 && next >= table,
              "groupctl help \(command): \"\(line)\" falls out of its table's column \(table)")
          }
          continue
        }
        // Never left of the column (a row may also put its description on the next line).
        guard let column else { continue }
        #expect(indent >= column, "groupctl help \(command): \"\(line)\" falls out of its row's column \(column)")
      }
    }
  }
}

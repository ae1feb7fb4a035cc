@testable import AppGroups
import Foundation
import Testing

/// A suite file in the old OpenStep text form, edited by hand, that gives a key twice in one
/// dictionary: Foundation's parser keeps the last value without a word, so the file is
/// refused whole, and a salvage leaves out the top-level key concerned, as for XML. Text
/// that only looks like a repeat (in a comment, in a quoted value, in two dictionaries, or
/// keys whose bytes differ) is read as Foundation reads it.
@Suite("OpenStep text: a key given twice")
struct OpenStepRepeatTests {
  static func data(_ lines: [String]) -> Data { Data(lines.joined(separator: "\n").utf8) }

  @Test func aKeyGivenTwiceIsRefusedAndItsTopLevelKeyLeftOut() throws {
    let text = Self.data([
      "// a hand-edited suite",
      "{",
      "  name = kept;",
      "  mode = first;",
      "  nested = { inner = 1; \"inner\" = 2; };",
      "  /* mode = commented; */",
      "  list = (1, two, { mode = x; });",
      "  mode = second;",
      "}",
    ])
    let error = try #require(throws: AppGroupsError.self) { try PropertyListValue(propertyListData: text) }
    #expect(error.code == .corruptPreferences)
    #expect(
      error.message
        == #"the key "inner" is given twice in one dictionary (lines 5 and 5); a dictionary holds each key once"#)
    #expect(PropertyListValue.misreadValues(in: text) == error.message)
    let salvage = try PropertyListValue.salvaging(propertyListData: text)
    #expect(
      salvage.values == [
        "name": .string("kept"),
        "list": .array([.string("1"), .string("two"), .dictionary(["mode": .string("x")])]),
      ])
    let skipped = Dictionary(uniqueKeysWithValues: salvage.skipped.map { ($0.key ?? "", $0.reason) })
    #expect(skipped.keys.sorted() == ["mode", "nested"])
    #expect(skipped["mode"]?.hasPrefix(#"the key "mode" is given twice in one dictionary (lines 4 and 8)"#) == true)
    #expect(skipped["nested"]?.hasPrefix(#"the key "inner" is given twice in one dictionary (lines 5 and 5)"#) == true)
  }

  /// What only looks like a repeat, each read as Foundation reads it.
  @Test(arguments: [
    #"{ a = 1; /* a = 2; */ b = "a = 3; { a = 4; }"; // a = 5;"# + "\n}",
    #"{ list = ({ a = 1; }, { a = 2; }); a = 3; }"#,
    #"{ url = http://example.com/a; a = "x"; }"#,
    #"{ "a\301" = 1; "a\U00C1" = 2; "\UD83D" = 3; "\UDE00" = 4; }"#,
    #"{ "tab\t" = 1; "tabt" = 2; d = <0fbd 77>; }"#,
    #"{ a = 1; "b\"a" = 2; 'a\'' = 3; }"#,
  ])
  func whatOnlyLooksLikeARepeatIsRead(_ text: String) throws {
    try Self.expectRead(Data(text.utf8))
  }

  /// Keys whose bytes are not UTF-8, which would both read as U+FFFD here, are not named
  /// (Foundation refuses such text for its own reason).
  @Test func keysThatAreNotUTF8AreNotTakenForOne() throws {
    let text = Data("{ \"".utf8) + Data([0xFF]) + Data("\" = 1; \"".utf8) + Data([0xFE]) + Data("\" = 2; }".utf8)
    #expect(OpenStepPropertyList.repeatedKeys(in: text, all: true) == [])
  }

  static func expectRead(_ data: Data) throws {
    #expect(PropertyListValue.misreadValues(in: data) == nil)
    let value = try PropertyListValue(propertyListData: data)
    guard case .dictionary(let entries) = value else {
      Issue.record("not a dictionary: \(value)")
      return
    }
    #expect(entries.count >= 2)
  }

  /// Keys that Foundation reads as one: escapes as it reads them, and two spellings of one
  /// character (the dictionary it makes is read by Unicode equivalence).
  @Test(arguments: [
    #"{ "a\101" = 1; aA = 2; }"#,
    "{ \"\\U00e9\" = 1; \"\u{E9}\" = 2; }",
    "{ \"\u{E9}\" = 1; \"e\u{301}\" = 2; }",
    "{ \"x\\ty\" = 1; \"x\ty\" = 2; }",
    #"{ "q\"" = 1; 'q"' = 2; }"#,
  ])
  func keysFoundationReadsAsOneAreARepeat(_ text: String) throws {
    let data = Data(text.utf8)
    let value = try PropertyListValue.salvaging(propertyListData: data)
    #expect(value.values.isEmpty && value.skipped.count == 1, "\(value)")
    #expect(PropertyListValue.misreadValues(in: data)?.contains("is given twice in one dictionary (lines 1 and 1)") == true)
  }

  @Test func textThatIsNotOpenStepIsLeftToTheOtherReaders() throws {
    #expect(OpenStepPropertyList.repeatedKeys(in: Data("(a, a)".utf8), all: true) == nil)
    #expect(OpenStepPropertyList.repeatedKeys(in: Data("<?xml version=\"1.0\"?>".utf8), all: true) == nil)
    #expect(OpenStepPropertyList.repeatedKeys(in: Data("  /* x */ { a = 1; a = 2; }".utf8), all: true)?.count == 1)
    #expect(OpenStepPropertyList.repeatedKeys(in: Data("\"just a string\"".utf8), all: true) == nil)
    // A strings file: pairs with no braces, which Foundation reads as a dictionary.
    let strings = Data("a = 1;\nb = 2;\n\"a\" = 3;\n".utf8)
    #expect(
      PropertyListValue.misreadValues(in: strings)
        == #"the key "a" is given twice in one dictionary (lines 1 and 3); a dictionary holds each key once"#)
    #expect(try PropertyListValue.salvaging(propertyListData: strings).values == ["b": .string("2")])
    // A key given a third time is named again; a quoted and an unquoted spelling are one key.
    let thrice = OpenStepPropertyList.repeatedKeys(in: Data("{ a = 1; \"a\" = 2;\n a = 3; }".utf8), all: true)
    #expect(thrice?.map(\.reason) == [
      #"the key "a" is given twice in one dictionary (lines 1 and 1); a dictionary holds each key once"#,
      #"the key "a" is given twice in one dictionary (lines 1 and 2); a dictionary holds each key once"#,
    ])
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// OpenStep text that Foundation's parser refuses is refused saying what was found, where (line
/// and column) and what was expected there, where Foundation's reason for a whole file is its XML
/// parser's ("Unexpected character {") and its old-style parser's names a line at most
/// ("Missing ';' on line 1").
@Suite("OpenStep text: why it does not read", .processBound)
struct OpenStepSyntaxErrorTests {
  static let app = TestRoot.app

  static let refused: [(String, String)] = [
    ("{a = 1", #"found the end of the text at line 1, column 7, where ';' was expected after the value of the key "a""#),
    ("{a = {;}", "found ';' at line 1, column 7, where a key or '}' was expected in the dictionary opened at line 1, column 6"),
    ("{a = 1}", #"found '}' at line 1, column 7, where ';' was expected after the value of the key "a""#),
    ("{a 1;}", #"found '1' at line 1, column 4, where '=' or ';' was expected after the key "a""#),
    ("{\n  a = 1;\n  b = (x, y\n}\n", "found '}' at line 4, column 1, where ',' or ')' was expected after item 2 in the array opened at line 3, column 7"),
    ("(a,,b)", "found ',' at line 1, column 4, where another item or ')' was expected in the array opened at line 1, column 1"),
    ("<0a 1>", "found '>' at line 1, column 6, where the second hex digit of a byte was expected in the data opened at line 1, column 1"),
    ("(\"a", #"found the end of the text at line 1, column 4, where the closing '"' was expected for the string opened at line 1, column 2"#),
    ("{a = 1;} x", "found 'x' at line 1, column 10, where the text should end, after the root dictionary"),
    ("{a = \u{1B}[2J;}", #"found '\U001b' at line 1, column 6, where a value was expected for the key "a""#),
    ("{\"k\u{7}\" x", #"found 'x' at line 1, column 7, where '=' or ';' was expected after the key "k\U0007""#),
  ]

  /// The reader's message for a file; Foundation's parser refuses each text itself.
  @Test(arguments: refused)
  func aTextFoundationRefusesIsNamedByPlace(text: String, reason: String) throws {
    let data = Data(text.utf8)
    #expect(throws: (any Error).self) { try PropertyListSerialization.propertyList(from: data, format: nil) }
    let error = try #require(throws: AppGroupsError.self) { try PropertyListValue(propertyListData: data) }
    #expect(error.code == .corruptPreferences)
    #expect(
      error.message == "the \(data.count)-byte property list is neither binary nor valid XML or OpenStep text: in"
        + " OpenStep text, \(reason)")
    #expect(!error.message.unicodeScalars.contains { $0.value < 0x20 }, "\(error.message)")
  }

  /// Texts Foundation reads still read; XML that does not read keeps its XML parser's reason.
  @Test(arguments: [
    "{a = 1;}", "(a,)", "()", "{a;}", "a = b; c = d;", "\"one\"", "  // nothing\n",
    "{ \"x\\\"y\" = <0a 0B>; /* c */ l = (1, (2), {}); }",
  ])
  func aTextThatReadsStillReads(text: String) throws {
    _ = try PropertyListValue(propertyListData: Data(text.utf8))
  }

  /// A byte that is not UTF-8 inside a string, which Foundation's parser refuses naming another
  /// place or none, is named by its place, in OpenStep text and in XML.
  @Test(arguments: [
    (Data("{ k = \"".utf8) + Data([0xFF]) + Data("\"; }".utf8), "the byte 0xFF at line 1, column 8 is not UTF-8"),
    (Data("{\n k = \"a".utf8) + Data([0xC3, 0x28]) + Data("b\"; }".utf8), "the byte 0xC3 at line 2, column 8 is not UTF-8"),
    (
      Data("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict><key>k</key><string>".utf8)
        + Data([0xFE]) + Data("</string></dict></plist>\n".utf8),
      "the byte 0xFE at line 2, column 48 is not UTF-8"
    ),
  ])
  func aByteThatIsNotUTF8IsNamedByPlace(data: Data, reason: String) throws {
    #expect(throws: (any Error).self) { try PropertyListSerialization.propertyList(from: data, format: nil) }
    let error = try #require(throws: AppGroupsError.self) { try PropertyListValue(propertyListData: data) }
    #expect(error.code == .corruptPreferences)
    #expect(
      error.message == "the \(data.count)-byte property list is neither binary nor valid XML or OpenStep text: "
        + reason + "; a text property list is read as UTF-8", "\(error.message)")
  }

  @Test func xmlKeepsItsParsersReason() throws {
    let error = try #require(throws: AppGroupsError.self) {
      try PropertyListValue(propertyListData: Data("<dict><key>a</key></dict>".utf8))
    }
    #expect(error.message.contains("Value missing for key inside <dict> at line 1"), "\(error.message)")
    #expect(!error.message.contains("OpenStep text,"), "\(error.message)")
  }

  @Test(arguments: refused.prefix(4))
  func writeRefusesTheLiteralNamingThePlace(text: String, reason: String) throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "k", "kept"])
    let before = try Data(contentsOf: g.appFile())
    let result = try g.run(["write", Self.app, "k", text])
    #expect(result.status == 64, "\(result)")
    #expect(
      result.stderr.contains("is not a property-list literal (\(reason)); use -string to write it as a string"),
      "\(result.stderr)")
    #expect(try Data(contentsOf: g.appFile()) == before)
  }

  @Test func importRefusesTheFileNamingThePlace() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "keep", "me"])
    let before = try Data(contentsOf: g.appFile())
    for (text, reason) in Self.refused {
      let result = try g.run(["import", Self.app, "-"], stdin: Data(text.utf8))
      #expect(result.status == 1, "\(result)")
      #expect(result.stderr.contains("in OpenStep text, \(reason); \(Self.app) was not changed"), "\(result.stderr)")
      #expect(!result.stderr.unicodeScalars.contains("\u{1B}"), "\(result.stderr)")
    }
    #expect(try Data(contentsOf: g.appFile()) == before)
  }

  /// A strings file (`key = value;` with no braces) with more after its last entry than white
  /// space and comments: Foundation's parser reads the entries up to it and drops the rest
  /// without a word (after any other root value it refuses the text, "Junk after plist").
  static let stringsFileJunk: [(String, String, [String: String])] = [
    ("\"a\" = \"b\";\n\"c\" = \"d\";\n}junk\n", "found '}' at line 3, column 1, where a key or the end of the"
      + " text was expected, after the strings file's last entry (it ends at line 2, column 10)", ["a": "b", "c": "d"]),
    ("a = 1; ) b = 2;", "found ')' at line 1, column 8, where a key or the end of the text was expected, after the"
      + " strings file's last entry (it ends at line 1, column 6)", ["a": "1"]),
    ("a = 1;\n// note\n  ;", "found ';' at line 3, column 3, where a key or the end of the text was expected, after"
      + " the strings file's last entry (it ends at line 1, column 6)", ["a": "1"]),
    ("a = 1; \"b = 2;", #"found the end of the text at line 1, column 15, where the closing '"' was expected for"#
      + #" the string opened at line 1, column 8, after the strings file's last entry (it ends at line 1, column 6)"#,
      ["a": "1"]),
  ]

  @Test(arguments: stringsFileJunk)
  func importRefusesAStringsFileWithJunkAfterItsLastEntry(text: String, reason: String, foundation: [String: String])
    throws
  {
    // What Foundation's parser makes of it: the entries before the junk, and no error.
    let read = try PropertyListSerialization.propertyList(from: Data(text.utf8), format: nil)
    #expect(read as? [String: String] == foundation)
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "keep", "me"])
    let before = try Data(contentsOf: g.appFile())
    let result = try g.run(["import", Self.app, "-"], stdin: Data(text.utf8))
    #expect(result.status == 1, "\(result)")
    #expect(
      result.stderr.contains(
        "cannot import standard input: in OpenStep text, \(reason); Foundation's parser reads a strings file's"
          + " entries up to there and drops what follows; \(Self.app) was not changed"),
      "\(result.stderr)")
    #expect(try Data(contentsOf: g.appFile()) == before)
    // The same text as a value of the argument domain is refused too.
    let explain = try g.run(["explain", Self.app, "k", "--", "-k", text])
    if text.first == "\"" {
      #expect(explain.status == 64, "\(explain)")
      #expect(explain.stderr.contains("is not a property-list literal (in OpenStep text, \(reason);"), "\(explain.stderr)")
    }
  }

  /// White space and comments after a strings file's last entry are no junk; a suite's own
  /// file with junk there is read as Foundation reads it (only input from outside is refused).
  @Test func aStringsFileEndingInACommentIsImportedAndASuiteFileWithJunkIsRead() throws {
    let g = try GroupctlRoot()
    try g.ok(["import", Self.app, "-"], stdin: Data("a = 1;\n\"b\" = (x);\n// end\n/* really */\n".utf8))
    #expect(try g.ok(["read", Self.app, "b"]) == "(\n    x\n)\n")
    try Data("a = 2;\n}junk\n".utf8).write(to: g.appFile())
    let read = try g.run(["read", Self.app, "a"])
    #expect(read.status == 0 && read.stdout == "2\n", "\(read)")
  }
}

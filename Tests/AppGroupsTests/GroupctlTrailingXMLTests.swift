import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// XML after a property list's root value, which Foundation's parser drops without a word
/// (`<string>a</string><string>b</string>` reads as "a"): `write` refuses such a literal and
/// `import` such a file, naming what follows the value, and nothing is written; so are an
/// `import-entitlements` file and a value of the argument domain (`-key value`).
@Suite("groupctl write, import, import-entitlements, arguments: XML after the root value", .processBound)
struct GroupctlTrailingXMLTests {
  static let app = TestRoot.app

  static let document = """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <dict>
    \t<key>a</key>
    \t<integer>1</integer>
    </dict>
    </plist>

    """

  @Test(arguments: [
    ("<string>a</string><string>b</string>", #"line 1 holds "<string>b</string>" after the root value"#),
    ("<integer>1</integer><junk/>", #"line 1 holds "<junk/>" after the root value"#),
    ("<integer>1</integer>junk", #"line 1 holds "junk" after the root value"#),
    ("<array><true/></array>\n</array>", #"line 2 holds "</array>" after the root value"#),
    ("<dict/><dict><key>b</key><true/></dict>", #"line 1 holds "<dict><key>b</key><true/></dict>" after the root value"#),
    (#"<plist version="1.0"><true/></plist><false/>"#, #"line 1 holds "<false/>" after </plist>"#),
    ("<true/>\u{1B}[2J", #"line 1 holds "\U001b[2J" after the root value"#),
  ])
  func aLiteralWithXMLAfterItsValueIsRefusedNamingIt(literal: String, named: String) throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "k", "kept"])
    let before = try Data(contentsOf: g.appFile())
    let result = try g.run(["write", Self.app, "k", literal])
    #expect(result.status == 64, "\(result)")
    #expect(result.stderr.contains("is not a property-list literal (\(named);"), "\(result.stderr)")
    #expect(result.stderr.contains("a property list holds one value"), "\(result.stderr)")
    #expect(!result.stderr.unicodeScalars.contains("\u{1B}"), "\(result.stderr)")
    #expect(try Data(contentsOf: g.appFile()) == before)
    #expect(try g.ok(["read", Self.app, "k"]) == "kept\n")
  }

  /// White space, a comment or a processing instruction after the value is not content: the
  /// literal is written.
  @Test(arguments: [
    "<integer>7</integer>  ",
    "<integer>7</integer><!-- a comment -->\n",
    "<integer>7</integer><?x y?>",
    #"<plist version="1.0"><integer>7</integer></plist> <!-- end -->"#,
  ])
  func aLiteralFollowedByWhiteSpaceOrACommentIsWritten(literal: String) throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "k", literal])
    #expect(try g.ok(["read", Self.app, "k"]) == "7\n")
  }

  @Test(arguments: [
    ("</plist>\n<dict><key>b</key><integer>2</integer></dict>\n", #"line 9 holds "<dict><key>b</key><integer>2</integer></…" after </plist>"#),
    ("</plist>junk", #"line 8 holds "junk" after </plist>"#),
    ("</plist>\n<!-- not closed", #"line 9 holds "<!-- not closed" after </plist>"#),
  ])
  func aFileWithXMLAfterItsRootIsRefusedNamingIt(tail: String, named: String) throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "keep", "me"])
    let before = try Data(contentsOf: g.appFile())
    let text = Self.document.replacingOccurrences(of: "</plist>\n", with: tail)
    let file = g.t.sandbox.url.appendingPathComponent("trailing.plist")
    try Data(text.utf8).write(to: file)
    let result = try g.run(["import", Self.app, file.path])
    #expect(result.status == 1, "\(result)")
    #expect(result.stderr.contains("cannot import \(file.path): \(named);"), "\(result.stderr)")
    #expect(result.stderr.contains("\(Self.app) was not changed"), "\(result.stderr)")
    #expect(try Data(contentsOf: g.appFile()) == before)
    // A bare value with another after it, in UTF-16, is refused the same way.
    let bare = Data("<dict><key>a</key><true/></dict>\n<dict/>".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
    let utf16 = try g.run(["import", Self.app, "-"], stdin: Data([0xFF, 0xFE]) + bare)
    #expect(utf16.status == 1, "\(utf16)")
    #expect(utf16.stderr.contains(#"line 2 holds "<dict/>" after the root value"#), "\(utf16.stderr)")
    #expect(try Data(contentsOf: g.appFile()) == before)
  }

  @Test(arguments: [
    "</plist>\n<!-- exported by hand -->\n",
    "</plist>\n\n   \n",
    "</plist>\r\n<?processed yes?>\r\n",
  ])
  func aFileWithACommentOrWhiteSpaceAfterItsRootIsImported(tail: String) throws {
    let g = try GroupctlRoot()
    let file = g.t.sandbox.url.appendingPathComponent("fine.plist")
    try Data(Self.document.replacingOccurrences(of: "</plist>\n", with: tail).utf8).write(to: file)
    try g.ok(["import", Self.app, file.path])
    #expect(try g.ok(["read", Self.app, "a"]) == "1\n")
  }
  /// A suite's own file with XML after its root value is read as Foundation reads it: every
  /// key of the root value is live, for groupctl and for the next write, and nothing is moved
  /// aside (only input from outside is refused for it).
  @Test func aSuiteFileWithXMLAfterItsRootIsReadAsFoundationReadsIt() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "seed", "1"])
    let file = g.appFile()
    let text = Self.document.replacingOccurrences(of: "</plist>\n", with: "</plist>\n<junk/>\n")
    try Data(text.utf8).write(to: file)
    let read = try g.run(["read", Self.app, "a"])
    #expect(read.status == 0 && read.stdout == "1\n", "\(read)")
    try g.ok(["write", Self.app, "b", "2"])
    #expect(try g.ok(["read", Self.app, "a"]) == "1\n")
    #expect(try g.ok(["read", Self.app, "b"]) == "2\n")
    let folder = file.deletingLastPathComponent().path
    let aside = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.contains(".unreadable-") }
    #expect(aside.isEmpty, "\(aside)")
  }

  /// An entitlements file with XML after `</plist>` is refused whole, naming it: the groups
  /// it lists there would otherwise not be granted, without a word.
  @Test(arguments: [
    ("</plist>\n<plist><dict><key>com.apple.security.application-groups</key><array><string>group.more</string></array></dict></plist>\n",
     #"line 8 holds "<plist><dict><key>com.apple.security.app…" after </plist>"#),
    ("</plist>junk", #"line 7 holds "junk" after </plist>"#),
  ])
  func anEntitlementsFileWithXMLAfterItsRootIsRefused(tail: String, named: String) throws {
    let g = try GroupctlRoot()
    let document = """
      <?xml version="1.0" encoding="UTF-8"?>
      <plist version="1.0">
      <dict>
      \t<key>com.apple.security.application-groups</key>
      \t<array><string>group.com.example.shared</string></array>
      </dict>
      </plist>

      """
    let file = g.t.sandbox.url.appendingPathComponent("App.entitlements")
    try Data(document.replacingOccurrences(of: "</plist>\n", with: tail).utf8).write(to: file)
    let result = try g.run(["import-entitlements", "com.example.new", file.path])
    #expect(result.status == 1, "\(result)")
    #expect(
      result.stderr.contains("groupctl: cannot import \(file.path): \(named); a property list holds one value"),
      "\(result.stderr)")
    #expect(result.stderr.contains("nothing was granted"), "\(result.stderr)")
    #expect(try EntitlementManifest.load(root: g.root).entries["com.example.new"] == nil)
    // The same file with a comment after </plist> is imported.
    try Data(document.replacingOccurrences(of: "</plist>\n", with: "</plist>\n<!-- end -->\n").utf8)
      .write(to: file)
    #expect(
      try g.ok(["import-entitlements", "com.example.new", file.path])
        == "com.example.new: granted group.com.example.shared\n")
  }

  /// A `-key value` of the argument domain whose value has XML after its root value: `explain`
  /// and `report` refuse it (64), naming it; an app leaves it out and says so, and reads the
  /// next layer, where Foundation's parser would give it the first value.
  @Test func anArgumentWithXMLAfterItsValueIsRefused() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "mode", "user"])
    let literal = "<string>a</string><string>b</string>"
    let named = #"argument -mode '<string>a</string><string>b</string>' is not a property-list literal"#
      + #" (line 1 holds "<string>b</string>" after the root value; a property list holds one value"#
    for command in [["explain", Self.app, "mode"], ["report", Self.app]] {
      let result = try g.run(command + ["--", "-mode", literal])
      #expect(result.status == 64, "\(command): \(result)")
      #expect(result.stderr.contains("groupctl: \(named)"), "\(command): \(result.stderr)")
      #expect(result.stdout.isEmpty, "\(command): \(result.stdout)")
    }
    // A value after a plain one is still taken, and so is a word that is no property list.
    let taken = try g.ok(["explain", Self.app, "mode", "--", "-mode", "<integer>3</integer> <!-- c -->"])
    #expect(taken.contains("Result: mode = 3, from the argument layer."), "\(taken)")
    let word = try g.ok(["explain", Self.app, "mode", "--", "-mode", "<b>bold</b> text"])
    #expect(word.contains(#"Result: mode = "<b>bold</b> text", from the argument layer."#), "\(word)")

    try g.ok(["write", TestRoot.group, "mode", "user"])
    let environment = g.t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 }
    let app = try Product.run(
      "appgroups-worker", ["get", TestRoot.group, "mode", "-mode", literal], environment: environment)
    #expect(app.status == 0, "\(app)")
    #expect(app.stdout == "user\n", "\(app)")
    #expect(app.stderr.contains("\(named)"), "\(app.stderr)")
    #expect(app.stderr.contains("-mode is left out of NSArgumentDomain"), "\(app.stderr)")
  }
}

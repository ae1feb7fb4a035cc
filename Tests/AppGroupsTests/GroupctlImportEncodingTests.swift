import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// `groupctl import` and `export` with files in odd encodings and with values at the edges of
/// what a property list holds.
@Suite("groupctl import: encodings and edge values", .processBound)
struct GroupctlImportEncodingTests {
  static let app = TestRoot.app

  static func xml(_ body: String, encoding: String = "UTF-8") -> String {
    """
    <?xml version="1.0" encoding="\(encoding)"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <dict>
    \(body)
    </dict>
    </plist>

    """
  }

  /// A file that Foundation's parser reads as a value it does not hold is refused whole,
  /// saying where and why, and the suite keeps what it had.
  @Test(arguments: [
    ("<key>d</key><data>@@@!!</data>", "the <data> on line 6 is not base64"),
    ("<key>d</key>\n<data>QUJD\nRA=Q</data>", "the <data> on line 7 is not base64"),
    ("<key>t</key><date>2024-13-45T99:00:00Z</date>", "the <date> on line 6 (\"2024-13-45T99:00:00Z\") is not a date"),
    ("<key>t</key><date>2023-02-29T00:00:00Z</date>", "the <date> on line 6 (\"2023-02-29T00:00:00Z\") is not a date"),
    ("<key>t</key><date>2024-01-01T00:00:60Z</date>", "the <date> on line 6 (\"2024-01-01T00:00:60Z\") is not a date"),
  ])
  func aMisreadDataOrDateIsRefusedWhole(body: String, reason: String) throws {
    let g = try GroupctlRoot("misread")
    try g.ok(["write", Self.app, "keep", "me"])
    let before = try Data(contentsOf: g.appFile())
    let file = g.t.sandbox.url.appendingPathComponent("odd.plist")
    try Data(Self.xml("<key>other</key><string>x</string>\n" + body).utf8).write(to: file)
    let result = try g.run(["import", Self.app, file.path])
    #expect(result.status == 1)
    #expect(result.stderr.contains("cannot import \(file.path): \(reason)"), "\(result.stderr)")
    #expect(result.stderr.contains("\(Self.app) was not changed"), "\(result.stderr)")
    #expect(try Data(contentsOf: g.appFile()) == before)
  }

  /// A key given twice in one dictionary (one value would be dropped) is refused whole, in XML
  /// and OpenStep text by its lines, in a binary property list by its places.
  /// The parser's reason quotes the file's bytes: a control character in them is escaped in
  /// the message, which never drives the terminal.
  @Test func aParserReasonQuotingAnEscapeByteIsEscaped() throws {
    let g = try GroupctlRoot()
    let result = try g.run(["import", Self.app, "-"], stdin: Data("\u{1B}[2J".utf8))
    #expect(result.status == 1, "\(result)")
    #expect(!result.stderr.unicodeScalars.contains("\u{1B}"), "\(result.stderr)")
    #expect(result.stderr.contains("found '\\U001b' at line 1, column 1"), "\(result.stderr)")
  }

  @Test func aKeyGivenTwiceIsRefusedWhole() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "keep", "me"])
    let before = try Data(contentsOf: g.appFile())
    let top = Self.xml("<key>a</key><string>1</string>\n<key>b</key><string>2</string>\n<key>a</key><string>3</string>")
    let nested = Self.xml("<key>d</key><dict><key>x</key><true/>\n<key>x</key><false/></dict>\n<key>x</key><true/>")
    // A binary file whose second key is written as the first ("b" made "a").
    var binary = try PropertyListValue.dictionary(["a": .string("1"), "b": .string("2")]).propertyListData()
    let b = try #require(binary.firstRange(of: Data([0x51, UInt8(ascii: "b")])))
    binary[b.upperBound - 1] = UInt8(ascii: "a")
    // OpenStep text, which Foundation reads keeping the last value of a key.
    let openStep = "{\n  a = 1;\n  d = { \"x\" = 1; x = 2; };\n}\n"
    let cases: [(Data, String)] = [
      (Data(top.utf8), #"the key "a" is given twice in one dictionary (lines 5 and 7)"#),
      (Data(openStep.utf8), #"the key "x" is given twice in one dictionary (lines 3 and 3)"#),
      (Data(nested.utf8), #"the key "x" is given twice in one dictionary (lines 5 and 6)"#),
      (binary, #"the key "a" is given twice (keys 0 and 1 of dictionary object 0)"#),
    ]
    for (bytes, reason) in cases {
      let result = try g.run(["import", Self.app, "-"], stdin: bytes)
      #expect(result.status == 1)
      #expect(result.stderr.contains("cannot import standard input: \(reason)"), "\(result.stderr)")
      #expect(try Data(contentsOf: g.appFile()) == before)
    }
  }

  /// UTF-16 with or without its byte order mark, and UTF-8 with one, import the same values.
  @Test func utf16WithOrWithoutAMarkAndUTF8WithAMarkImport() throws {
    let g = try GroupctlRoot()
    let utf16 = Self.xml("<key>k</key><string>v\u{e9}</string><key>d</key><data>QUJD</data>", encoding: "UTF-16")
    let utf8 = Self.xml("<key>k</key><string>v\u{e9}</string><key>d</key><data>QUJD</data>")
    func encoded(_ text: String, _ encoding: String.Encoding) throws -> Data {
      try #require(text.data(using: encoding))
    }
    let files: [(String, Data)] = [
      ("utf16le-bom", Data([0xFF, 0xFE]) + (try encoded(utf16, .utf16LittleEndian))),
      ("utf16be-bom", Data([0xFE, 0xFF]) + (try encoded(utf16, .utf16BigEndian))),
      ("utf16le", try encoded(utf16, .utf16LittleEndian)),
      ("utf16be", try encoded(utf16, .utf16BigEndian)),
      ("utf8-bom", Data([0xEF, 0xBB, 0xBF]) + Data(utf8.utf8)),
    ]
    for (name, bytes) in files {
      try g.ok(["write", Self.app, "stale", "1"])
      let result = try g.run(["import", Self.app, "-"], stdin: bytes)
      #expect(result.status == 0, "\(name): \(result.stderr)")
      let values = try g.plist(g.appFile())
      #expect(values.keys.sorted() == ["d", "k"], "\(name)")
      #expect(values["k"] as? String == "v\u{e9}", "\(name)")
      #expect(values["d"] as? Data == Data("ABC".utf8), "\(name)")
    }
  }

  /// What Foundation writes as XML for a date before year 1 or after year 9999 imports again.
  @Test func datesOfAnyYearExportedAsXMLImportAgain() throws {
    let g = try GroupctlRoot()
    let dates: [String: PropertyListValue] = [
      "early": .date(Date(timeIntervalSince1970: -62_198_755_200)),  // -0002-12-31
      "late": .date(Date(timeIntervalSince1970: 253_402_300_800)),  // 10000-01-01
      "leap": .date(Date(timeIntervalSince1970: 951_782_400)),  // 2000-02-29
    ]
    try g.ok(["import", Self.app, "-"], stdin: PropertyListValue.dictionary(dates).propertyListData())
    let xml = try g.run(["export", Self.app, "-", "--xml"])
    #expect(xml.status == 0, "\(xml.stderr)")
    let back = try g.run(["import", "\(Self.app):copy", "-"], stdin: Data(xml.stdout.utf8))
    #expect(back.status == 0, "\(xml.stdout): \(back.stderr)")
    let copied = try g.plist(g.appFile(suite: "copy"))
    for (key, value) in dates {
      guard case .date(let date) = value else { continue }
      #expect((copied[key] as? Date) == date, "\(key)")
    }
  }

  /// A date far beyond any calendar's years (a binary property list holds any double) is
  /// imported, read and exported; reading it prints it rather than ending the process.
  @Test func aDateBeyondTheYearsOfWholeSecondsIsReadWithoutACrash() throws {
    let g = try GroupctlRoot()
    let values: [String: PropertyListValue] = [
      "far": .date(Date(timeIntervalSinceReferenceDate: 1e19)),
      "farther": .date(Date(timeIntervalSinceReferenceDate: 1e300)),
      "before": .date(Date(timeIntervalSinceReferenceDate: -1e19)),
    ]
    try g.ok(["import", Self.app, "-"], stdin: PropertyListValue.dictionary(values).propertyListData())
    for key in ["far", "farther", "before"] {
      let one = try g.run(["read", Self.app, key])
      #expect(one.status == 0, "\(key): \(one.stderr)")
      #expect(!one.stdout.isEmpty && !one.stderr.contains("crashed"), "\(key): \(one.stderr)")
    }
    let far = try g.run(["read", Self.app, "far"])
    #expect(far.stdout.hasPrefix("316887387069-"), "\(far.stdout)")
    let farther = try g.run(["read", Self.app, "farther"])
    #expect(farther.stdout == "1e+300 seconds from 1970-01-01 00:00:00 +0000\n", "\(farther.stdout)")
    let all = try g.run(["read", Self.app])
    #expect(all.status == 0, "\(all.stderr)")
    let file = g.t.sandbox.url.appendingPathComponent("far.plist")
    try g.ok(["export", Self.app, file.path])
    #expect(try PropertyListValue(propertyListData: Data(contentsOf: file)) == .dictionary(values))
  }

  /// A date that XML cannot hold (Foundation writes an infinite one as text no reader takes,
  /// and one past about year 2 billion as another date) is not exported as XML: the export
  /// says which key and how to export it, and writes nothing; binary holds it.
  @Test func aDateXMLCannotHoldIsNotExportedAsXML() throws {
    let g = try GroupctlRoot()
    for (key, date) in [
      ("infinite", Date(timeIntervalSinceReferenceDate: .infinity)),
      ("far", Date(timeIntervalSince1970: 1e17)),
      ("long-ago", Date(timeIntervalSince1970: -1e17)),
    ] {
      let values: [String: PropertyListValue] = [
        "ok": .string("x"), "nested": .dictionary(["list": .array([.integer(1), .date(date)])]),
      ]
      try g.ok(["import", Self.app, "-"], stdin: PropertyListValue.dictionary(values).propertyListData())
      let file = g.t.sandbox.url.appendingPathComponent("\(key).xml")
      let xml = try g.run(["export", Self.app, file.path, "--xml"])
      #expect(xml.status == 1, "\(key)")
      #expect(
        xml.stderr.contains(
          "cannot export \(Self.app) as XML: the date at nested.list[1] (") == true, "\(xml.stderr)")
      #expect(xml.stderr.contains("export it without --xml"), "\(xml.stderr)")
      #expect(!FileManager.default.fileExists(atPath: file.path), "\(key)")
      let binary = try g.run(["export", Self.app, "-"])
      #expect(binary.status == 0, "\(key): \(binary.stderr)")
    }
  }
}

@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// `export --xml` writes a -0.0 as `<real>-0.0</real>`, where Foundation's writer wrote `0.0`
/// and an export then import turned it into 0.0; NaN and the infinities go out as Foundation
/// writes them and come back; every other byte is Foundation's.
@Suite("XML export: -0.0, NaN and the infinities", .processBound)
struct XMLExportSignedZeroTests {
  static let app = TestRoot.app

  static func isNegativeZero(_ value: Any?) -> Bool {
    guard let number = value as? NSNumber else { return false }
    return number.doubleValue == 0 && number.doubleValue.sign == .minus
  }

  static let file = """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <dict>
    \t<key>list</key>
    \t<array>
    \t\t<real>0.0</real>
    \t\t<real>-0.0</real>
    \t\t<dict>
    \t\t\t<key>inner &lt;zero&gt;</key>
    \t\t\t<real>-0</real>
    \t\t</dict>
    \t</array>
    \t<key>minus</key>
    \t<real>-infinity</real>
    \t<key>nan</key>
    \t<real>nan</real>
    \t<key>plus</key>
    \t<real>+infinity</real>
    \t<key>zero</key>
    \t<real>-0.0</real>
    </dict>
    </plist>

    """

  @Test func negativeZeroNaNAndInfinitiesSurviveAnXMLExportAndImport() throws {
    let g = try GroupctlRoot()
    let source = g.t.sandbox.url.appendingPathComponent("in.plist")
    try Data(Self.file.utf8).write(to: source)
    try g.ok(["import", Self.app, source.path])
    let exported = try g.ok(["export", Self.app, "-", "--xml"])
    // Foundation's writer, with each -0.0 given its sign: the file as it was written, but for
    // `-0` spelled as the writer spells it.
    #expect(exported == Self.file.replacingOccurrences(of: "<real>-0</real>", with: "<real>-0.0</real>"))
    let copy = g.t.sandbox.url.appendingPathComponent("out.plist")
    try Data(exported.utf8).write(to: copy)
    try g.ok(["delete", Self.app])
    try g.ok(["import", Self.app, copy.path])
    let stored = try g.plist(g.appFile())
    #expect(Self.isNegativeZero(stored["zero"]))
    let list = try #require(stored["list"] as? [Any])
    #expect(!Self.isNegativeZero(list[0]) && (list[0] as? NSNumber)?.doubleValue == 0)
    #expect(Self.isNegativeZero(list[1]))
    #expect(Self.isNegativeZero((list[2] as? [String: Any])?["inner <zero>"]))
    #expect((stored["nan"] as? NSNumber)?.doubleValue.isNaN == true)
    #expect((stored["plus"] as? NSNumber)?.doubleValue == .infinity)
    #expect((stored["minus"] as? NSNumber)?.doubleValue == -.infinity)
    #expect(try g.ok(["export", Self.app, "-", "--xml"]) == exported)
  }

  /// Both readers take what the writer writes: `-0.0` with its sign, and `nan`, `+infinity`,
  /// `-infinity` (this package's reader took none of the three, leaving the document to
  /// Foundation's).
  @Test(arguments: [("-0.0", -0.0), ("nan", .nan), ("+infinity", .infinity), ("-infinity", -.infinity)])
  func bothReadersReadWhatTheWriterWrites(text: String, number: Double) throws {
    let data = try PropertyListValue.dictionary(["k": .real(number)]).propertyListData(format: .xml)
    #expect(String(decoding: data, as: UTF8.self).contains("<real>\(text)</real>"))
    guard case .dictionary(let values)? = XMLPropertyList.decode(data), case .real(let read)? = values["k"]
    else {
      Issue.record("this package's reader did not take \(text)")
      return
    }
    let foundation = try #require(
      PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
    let theirs = try #require((foundation["k"] as? NSNumber)?.doubleValue)
    for value in [read, theirs] {
      #expect(value.isNaN == number.isNaN && value.sign == number.sign)
      if !number.isNaN { #expect(value == number) }
    }
  }

  /// A value without a -0.0 is written by Foundation's writer byte for byte; one with a -0.0
  /// differs only by the sign.
  @Test func everyOtherByteIsFoundations() throws {
    let value = PropertyListValue.dictionary([
      "a": .array([.real(0.0), .real(1.5e300), .real(-2.25), .integer(-7), .string("-0.0 <&>")]),
      "b": .dictionary(["c": .real(-0.0), "d": .bool(true), "e": .data(Data([0, 1, 2]))]),
      "f": .date(Date(timeIntervalSince1970: 1_000_000_000)), "g": .real(.nan),
    ])
    let foundationValue = PropertyListValue.dictionary([
      "a": .array([.real(0.0), .real(1.5e300), .real(-2.25), .integer(-7), .string("-0.0 <&>")]),
      "b": .dictionary(["c": .real(0.0), "d": .bool(true), "e": .data(Data([0, 1, 2]))]),
      "f": .date(Date(timeIntervalSince1970: 1_000_000_000)), "g": .real(.nan),
    ])
    let foundation = try PropertyListSerialization.data(
      fromPropertyList: foundationValue.foundationValue, format: .xml, options: 0)
    #expect(try foundationValue.propertyListData(format: .xml) == foundation)
    let ours = String(decoding: try value.propertyListData(format: .xml), as: UTF8.self)
    #expect(ours.components(separatedBy: "<real>-0.0</real>").count == 2)
    #expect(ours.replacingOccurrences(of: "<real>-0.0</real>", with: "<real>0.0</real>") == String(decoding: foundation, as: UTF8.self))
  }

  /// `read` prints a stored -0.0 with its sign, as `-0` (a whole real prints without `.0`),
  /// where it printed `0`, which reads back as +0.0: what `read` shows, written back with
  /// `-float`, is the value stored; a 4-byte float -0.0 prints the same, and +0.0 as `0`.
  @Test func readPrintsANegativeZeroWithItsSignAndItWritesBack() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "zero", "-float", "-0.0"])
    try g.ok(["write", Self.app, "plus", "-float", "0.0"])
    #expect(try g.ok(["read", Self.app, "zero"]) == "-0\n")
    #expect(try g.ok(["read", Self.app, "plus"]) == "0\n")
    #expect(try g.ok(["read-type", Self.app, "zero"]) == "Type is float\n")
    let all = try g.ok(["read", Self.app])
    #expect(all.contains("    zero = -0;\n") && all.contains("    plus = 0;\n"), "\(all)")
    try g.ok(["write", Self.app, "again", "-float", "-0"])
    let stored = try g.plist(g.appFile())
    #expect(Self.isNegativeZero(stored["zero"]) && Self.isNegativeZero(stored["again"]))
    #expect(!Self.isNegativeZero(stored["plus"]) && (stored["plus"] as? NSNumber)?.doubleValue == 0)
    // The same through the one-line form `explain` prints.
    #expect(try g.ok(["explain", Self.app, "zero"]).contains("Result: zero = -0, from the application layer."))

    let file = g.t.sandbox.url.appendingPathComponent("float.plist")
    try PropertyListValue.dictionary(["f": .float(-0.0), "list": .array([.float(-0.0), .real(-0.0)])])
      .propertyListData(format: .binary).write(to: file)
    try g.ok(["import", Self.app, file.path])
    #expect(try g.ok(["read", Self.app, "f"]) == "-0\n")
    #expect(try g.ok(["read", Self.app, "list"]) == "(\n    -0,\n    -0\n)\n")
  }
}

@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("PropertyListValue coding")
struct PropertyListValueCodingTests {
  static let xml = """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <dict>
      <key>yes</key><true/>
      <key>no</key><false/>
      <key>one</key><integer>1</integer>
      <key>zero</key><integer>0</integer>
      <key>negative</key><integer>-7</integer>
      <key>big</key><integer>9223372036854775807</integer>
      <key>realOne</key><real>1</real>
      <key>real</key><real>2.5</real>
      <key>text</key><string>héllo</string>
      <key>when</key><date>2001-01-01T00:00:10Z</date>
      <key>bytes</key><data>AQID</data>
      <key>list</key><array><integer>1</integer><true/><real>0</real></array>
    </dict>
    </plist>
    """

  @Test func readsXMLWithTheRightTypes() throws {
    let value = try PropertyListValue(propertyListData: Data(Self.xml.utf8))
    #expect(value == .dictionary([
      "yes": .bool(true), "no": .bool(false), "one": .integer(1), "zero": .integer(0),
      "negative": .integer(-7), "big": .integer(Int.max), "realOne": .real(1), "real": .real(2.5),
      "text": .string("héllo"), "when": .date(Date(timeIntervalSinceReferenceDate: 10)),
      "bytes": .data(Data([1, 2, 3])), "list": .array([.integer(1), .bool(true), .real(0)]),
    ]))
  }

  @Test func readsOpenStepText() throws {
    let value = try PropertyListValue(propertyListData: Data("{ name = \"x y\"; list = (a, b); }".utf8))
    #expect(value == .dictionary(["name": .string("x y"), "list": .array([.string("a"), .string("b")])]))
  }

  @Test func refusesEmptyAndGarbage() {
    for bytes in [Data(), Data("garbage <<".utf8), Data("<?xml version=\"1.0\"?><plist><dict><key>a</key></plist>".utf8),
                  Data([0xFF, 0xFE, 0x00]), Data("bplist00".utf8), Data("bplist15xxxxxxxxxxxx".utf8)] {
      do {
        _ = try PropertyListValue(propertyListData: bytes)
        Issue.record("\(bytes.count) bytes decoded")
      } catch {
        #expect(error.code == .corruptPreferences, "\(error)")
        #expect(!error.message.isEmpty)
      }
    }
  }

  @Test func refusesDeeplyNestedText() {
    let depth = 100_000
    let xml = "<plist version=\"1.0\">" + String(repeating: "<array>", count: depth)
      + String(repeating: "</array>", count: depth) + "</plist>"
    let openStep = String(repeating: "(", count: depth) + String(repeating: ")", count: depth)
    for text in [xml, openStep] {
      #expect(throws: AppGroupsError.self) { try PropertyListValue(propertyListData: Data(text.utf8)) }
    }
  }

  @Test func readsAnXMLIntegerAboveIntMaxAsUnsigned() throws {
    let xml = "<plist version=\"1.0\"><integer>18446744073709551615</integer></plist>"
    #expect(try PropertyListValue(propertyListData: Data(xml.utf8)) == .unsignedInteger(UInt64.max))
    // And writes it back as XML exactly.
    let written = try PropertyListValue.unsignedInteger(UInt64.max).propertyListData(format: .xml)
    #expect(String(decoding: written, as: UTF8.self).contains("<integer>18446744073709551615</integer>"))
  }

  @Test func writesAFloatAsAnXMLReal() throws {
    let data = try PropertyListValue.dictionary(["f": .float(12.34)]).propertyListData(format: .xml)
    let text = String(decoding: data, as: UTF8.self)
    #expect(text.contains("<real>12.34"))
    // XML has one kind of real: it reads back as the float's double.
    #expect(try PropertyListValue(propertyListData: data) == .dictionary(["f": .real(Double(Float(12.34)))]))
  }

  @Test func writesXMLThatKeepsTypes() throws {
    let value = PropertyListValue.dictionary([
      "yes": .bool(true), "no": .bool(false), "one": .integer(1), "realOne": .real(1),
      "when": .date(Date(timeIntervalSinceReferenceDate: 10)), "bytes": .data(Data([1, 2, 3])),
      "list": .array([.string("é"), .integer(-3)]),
    ])
    let data = try value.propertyListData(format: .xml)
    let text = String(decoding: data, as: UTF8.self)
    #expect(text.contains("<true/>"))
    #expect(text.contains("<false/>"))
    #expect(text.contains("<integer>1</integer>"))
    #expect(text.contains("<real>1</real>"))
    #expect(try PropertyListValue(propertyListData: data) == value)
  }

  @Test func xmlDropsFractionsOfASecond() throws {
    let value = PropertyListValue.date(Date(timeIntervalSinceReferenceDate: 10.75))
    let back = try PropertyListValue(propertyListData: value.propertyListData(format: .xml))
    guard case .date(let date) = back else {
      Issue.record("read \(back)")
      return
    }
    #expect(abs(date.timeIntervalSinceReferenceDate - 10.75) < 1)
  }

  @Test func binaryIsTheDefault() throws {
    let data = try sampleValue.propertyListData()
    #expect(data.starts(with: Array("bplist00".utf8)))
    #expect(try PropertyListValue(propertyListData: data) == sampleValue)
  }

  @Test func foundationNumbersConvertByTheirType() {
    #expect(PropertyListValue(NSNumber(value: true)) == .bool(true))
    #expect(PropertyListValue(NSNumber(value: 1)) == .integer(1))
    #expect(PropertyListValue(NSNumber(value: 1.0)) == .real(1))
    #expect(PropertyListValue(NSNumber(value: Float(0.5))) == .float(0.5))
    #expect(PropertyListValue(NSNumber(value: UInt64(7))) == .integer(7))
    #expect(PropertyListValue(NSNumber(value: UInt64.max)) == .unsignedInteger(UInt64.max))
    #expect(PropertyListValue(NSNumber(value: Int8(-3))) == .integer(-3))
  }
}

@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// The package's XML reader against Foundation's parser: what it reads, it reads as
/// Foundation does; what it does not take (`nil`) goes to Foundation, so it must never
/// accept a document Foundation refuses or read one differently.
@Suite("XML property lists")
struct XMLPropertyListTests {
  /// Foundation's reading of `data` as a ``PropertyListValue``, or `nil` when it refuses it.
  static func foundation(_ data: Data) -> PropertyListValue? {
    (try? PropertyListSerialization.propertyList(from: data, format: nil)).flatMap(PropertyListValue.init)
  }

  static func xml(_ object: Any) throws -> Data {
    try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)
  }

  @Test func readsWhatFoundationWritesAsFoundationReadsIt() throws {
    let seed = FaultSettings.seed()
    var random = SeededGenerator(seed: seed)
    for _ in 0..<300 {
      var object: [String: Any] = [:]
      for _ in 0..<Int.random(in: 0...12, using: &random) {
        object[FuzzPropertyListTests.randomString(&random)] =
          FuzzPropertyListTests.randomValue(&random, depth: 3)
      }
      let data = try Self.xml(object)
      guard let expected = Self.foundation(data) else { continue }
      // A real that is not finite is written "+infinity": left to Foundation.
      if let mine = XMLPropertyList.decode(data) {
        #expect(mine == expected, "seed \(seed): \(String(decoding: data, as: UTF8.self))")
      }
    }
  }

  @Test func theCommonFormIsReadWithoutFoundation() throws {
    let data = Data(
      """
      <?xml version="1.0" encoding="UTF-8"?>
      <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
      <plist version="1.0">
      <!-- a comment -->
      <dict>
      \t<key>a &amp; b</key>
      \t<array><string>x&lt;y&#x41;&#66;</string><integer>-42</integer><real>1.5</real><true/><false/></array>
      \t<key>when</key><date>2024-02-29T12:34:56Z</date>
      \t<key>bytes</key><data>
      \tAAEC
      \t</data>
      \t<key>empty</key><dict/>
      </dict>
      </plist>

      """.utf8)
    let expected: PropertyListValue = .dictionary([
      "a & b": .array([.string("x<yAB"), .integer(-42), .real(1.5), .bool(true), .bool(false)]),
      "when": .date(Date(timeIntervalSince1970: 1_709_210_096)),
      "bytes": .data(Data([0, 1, 2])),
      "empty": .dictionary([:]),
    ])
    #expect(XMLPropertyList.decode(data) == expected)
    #expect(Self.foundation(data) == expected)
  }

  @Test(arguments: [
    #"<?xml version="1.0" encoding="UTF-16"?><plist version="1.0"><dict/></plist>"#,
    #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>a</key><true/><key>a</key><false/></dict></plist>"#,
    #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><string><![CDATA[x]]></string></plist>"#,
    #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><integer>99999999999999999999</integer></plist>"#,
    #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><date>2023-02-30T00:00:00Z</date></plist>"#,
    #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><string>a&bogus;</string></plist>"#,
    #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict></plist>"#,
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\"><string>a\rb</string></plist>",
    // A white space that is not XML's (U+0085) inside base64: Foundation reads it its own way.
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\"><data>AAE\u{85}C</data></plist>",
    // Padding inside base64 (fuzzing found it): Foundation reads the "=" as a zero digit.
    #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><data>CMDBCxTYiboEKQ=9</data></plist>"#,
  ])
  func whatItDoesNotTakeIsLeftToFoundation(_ text: String) {
    #expect(XMLPropertyList.decode(Data(text.utf8)) == nil)
  }

  /// Seeded mutations of valid documents: whenever the reader takes one, Foundation reads
  /// the same value from it.
  @Test func mutatedDocumentsAreReadAsFoundationReadsThemOrLeftToIt() throws {
    let seed = FaultSettings.seed() &+ 2
    var random = SeededGenerator(seed: seed)
    var taken = 0
    var failures: [String] = []
    for _ in 0..<2_000 {
      var object: [String: Any] = [:]
      for _ in 0..<Int.random(in: 1...6, using: &random) {
        object[FuzzPropertyListTests.randomString(&random)] =
          FuzzPropertyListTests.randomValue(&random, depth: 2)
      }
      let input = FuzzPropertyListTests.mutate(try Self.xml(object), &random)
      guard let mine = XMLPropertyList.decode(input) else { continue }
      taken += 1
      if Self.foundation(input) != mine {
        failures.append("seed \(seed &- 2): \(input.base64EncodedString())")
        if failures.count >= 3 { break }
      }
    }
    #expect(failures == [])
    #expect(taken > 0)
  }
}

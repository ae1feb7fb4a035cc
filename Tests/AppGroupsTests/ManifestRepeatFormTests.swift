import AppGroupsTestSupport
import Foundation
import Testing

@testable import AppGroups

/// A key written twice in a manifest written in any form a property-list reader takes: XML with
/// other line ends, `CDATA` sections, comments, processing instructions and a document type
/// around or inside its keys. Each is refused, naming the key and both lines; a manifest that
/// writes each key once is read.
@Suite("EntitlementManifest with a key written twice, in every form")
struct ManifestRepeatFormTests {
  static let groupsKey = "<key>com.apple.security.application-groups</key>"

  /// `body`'s answer for the path of a manifest holding `data`, removed after.
  static func withManifest<T>(_ data: Data, _ body: (String) throws -> T) throws -> T {
    let folder = FileManager.default.temporaryDirectory
      .appendingPathComponent("manifest-repeat-form-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = folder + "/Entitlements.plist"
    try data.write(to: URL(fileURLWithPath: path))
    return try body(path)
  }

  /// Why a manifest holding `data` is refused when it is loaded whole, after its path (checked
  /// to be the same when a new process looks `app`'s entry up in it); `nil` when it is read.
  static func refusal(of data: Data, app: String = "com.example.app") throws -> String? {
    try withManifest(data) { path in
      let loaded = ManifestRepeatTests.refusal { _ = try EntitlementManifest.load(from: URL(fileURLWithPath: path)) }
      #expect(ManifestRepeatTests.refusal { _ = try EntitlementManifest.entry(of: app, atPath: path) } == loaded)
      guard let loaded else { return nil }
      #expect(loaded.hasPrefix(path + ": "))
      return String(loaded.dropFirst(path.count + 2))
    }
  }

  static func refusal(of text: String) throws -> String? { try refusal(of: Data(text.utf8)) }

  /// Lines ended as XML ends them: CRLF, and a carriage return alone (an editor's old Mac
  /// setting) further down; both lines are counted as an editor shows them.
  @Test func linesEndedByCRLFAndByACarriageReturnAreCounted() throws {
    let text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n<plist version=\"1.0\">\r\n<dict>\r\n"
      + "\t<key>com.example.app</key>\r\n\t<dict/>\r\n"  // lines 4, 5
      + "\t<key>com.example.widget</key>\r\t<dict/>\r"  // lines 6, 7
      + "\t<key>com.example.app</key>\r\t<dict/>\r</dict>\r</plist>\r"  // line 8
    #expect(
      try Self.refusal(of: text)
        == "entry com.example.app is listed twice (lines 4 and 8); a bundle identifier has one entry")
  }

  /// A key in a `CDATA` section is its contents as they are, `</key>` included: two fields that
  /// differ after it are two fields, and a bundle identifier written once plainly and once in
  /// a section is listed twice.
  @Test func aKeyInACDATASectionIsItsContents() throws {
    let fields = ManifestRepeatTests.document("""
      	<key>com.example.app</key>
      	<dict>
      		<key><![CDATA[x-note</key>one]]></key><string>1</string>
      		<key><![CDATA[x-note</key>two]]></key><string><![CDATA[<key>x-note</key>]]></string>
      	</dict>
      """)
    #expect(try Self.refusal(of: fields) == nil)
    let entries = ManifestRepeatTests.document("""
      	<key><![CDATA[com.example.]]>app</key>
      	<dict><key>x-note</key><string><![CDATA[</dict><key>com.example.app</key>]]></string></dict>
      	<key>com.example.app</key>
      	<dict/>
      """)
    #expect(
      try Self.refusal(of: entries)
        == "entry com.example.app is listed twice (lines 4 and 6); a bundle identifier has one entry")
  }

  /// A document type, processing instructions and comments around the keys (holding keys of
  /// their own), attributes on the tags, and a closing tag with white space before its `>`, all
  /// of which Foundation's parser takes.
  @Test func markupAroundTheKeysIsPassedOver() throws {
    let text = """
      <?xml version="1.0" encoding="UTF-8"?>
      <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN"
        "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
      <?editor keys="<key>com.example.app</key>"?>
      <plist version="1.0">
      <!-- <dict><key>com.example.app</key> -->
      <dict>
      	<!-- <key>com.example.app</key> -->
      	<key>com.example.app</key >
      	<dict><key id="1">executable</key><string>/usr/bin/one</string></dict>
      	<?editor mark?>
      	<key>com.example.app</key>
      	<dict/>
      </dict>
      </plist>

      """
    #expect(
      try Self.refusal(of: text)
        == "entry com.example.app is listed twice (lines 9 and 12); a bundle identifier has one entry")
  }

  /// A field given twice in one entry, written differently: `<key/>` and `<key></key>` are one
  /// (empty) key, and a reference is the character it stands for.
  @Test func aFieldGivenTwiceInAnEntryIsFoundHoweverItIsWritten() throws {
    let empty = ManifestRepeatTests.document("""
      	<key>com.example.app</key>
      	<dict>
      		<key/><string>one</string>
      		<key></key><string>two</string>
      	</dict>
      """)
    #expect(
      try Self.refusal(of: empty)
        == "entry com.example.app: \"\" is given twice (lines 6 and 7); a field is given once")
    let referenced = ManifestRepeatTests.document("""
      	<key>com.example.app</key>
      	<dict>
      		\(Self.groupsKey)<array><string>group.a</string></array>
      		<key>executable</key><string>/usr/bin/one</string>
      		<key>com.apple.security.application&#x2D;groups</key><array/>
      	</dict>
      """)
    #expect(
      try Self.refusal(of: referenced)
        == "entry com.example.app: com.apple.security.application-groups is given twice (lines 6 and 8); a field is given once")
  }
}

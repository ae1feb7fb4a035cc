import AppGroupsTestSupport
import Foundation
import Testing

@testable import AppGroups

/// A key written twice in a manifest written in any form a property-list reader takes: XML with
/// other line ends, `CDATA` sections, comments, processing instructions and a document type
/// around or inside its keys, and the binary format, which has no lines. Each is refused, naming
/// the key and where both are; a manifest that writes each key once is read.
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

  // MARK: Binary manifests

  /// A binary manifest of `objects` (each one's bytes, the top one first), with 1-byte
  /// references: a writer that, unlike Foundation's, lets a dictionary hold a key twice.
  static func binary(_ objects: [[UInt8]]) -> Data {
    CraftedPropertyList.file(objects: objects, referenceSize: 1)
  }

  static func string(_ text: String) -> [UInt8] { CraftedPropertyList.ascii(text) }

  static func dictionary(_ keys: [UInt8], _ values: [UInt8]) -> [UInt8] {
    [0xD0 | UInt8(keys.count)] + keys + values
  }

  @Test func aBinaryManifestListingABundleIdentifierTwiceIsRefused() throws {
    let data = Self.binary([
      Self.dictionary([1, 2, 3], [4, 6, 8]),
      Self.string("com.example.app"), Self.string("com.example.widget"), Self.string("com.example.app"),
      Self.dictionary([5], [7]), Self.string(EntitlementManifest.applicationGroupsKey),
      Self.dictionary([], []), [0xA1, 10],
      Self.dictionary([5], [9]), [0xA1, 11], Self.string("group.a"), Self.string("group.b"),
    ])
    for app in ["com.example.app", "com.example.widget"] {
      #expect(
        try Self.refusal(of: data, app: app)
          == "entry com.example.app is listed twice (keys 0 and 2 of dictionary object 0); a bundle identifier has one entry")
    }
  }

  /// A field twice in one entry: the same string object named twice, or two objects of the
  /// same text.
  @Test func aBinaryManifestGivingAFieldTwiceIsRefused() throws {
    let sameObject = Self.binary([
      Self.dictionary([1], [2]), Self.string("com.example.app"),
      Self.dictionary([3, 3], [4, 5]), Self.string("executable"),
      Self.string("/usr/bin/one"), Self.string("/usr/bin/two"),
    ])
    let twoObjects = Self.binary([
      Self.dictionary([1, 2], [3, 7]), Self.string("com.example.widget"), Self.string("com.example.app"),
      Self.dictionary([], []), Self.string("executable"), Self.string("/usr/bin/one"),
      Self.string("executable"), Self.dictionary([4, 6], [5, 5]),
    ])
    for (data, object) in [(sameObject, 2), (twoObjects, 7)] {
      #expect(
        try Self.refusal(of: data)
          == "entry com.example.app: executable is given twice (keys 0 and 1 of dictionary object \(object)); a field is given once")
    }
  }

  /// Entries that share their keys' string objects (as a writer that writes each string once
  /// makes them) hold each key once: the manifest is read.
  @Test func aBinaryManifestWithoutRepeatsIsRead() throws {
    let data = Self.binary([
      Self.dictionary([1, 2], [3, 6]), Self.string("com.example.app"), Self.string("com.example.widget"),
      Self.dictionary([4, 7], [5, 8]), Self.string(EntitlementManifest.applicationGroupsKey),
      [0xA1, 9], Self.dictionary([4], [5]), Self.string("executable"), Self.string("/usr/bin/app"),
      Self.string("group.a"),
    ])
    #expect(try Self.refusal(of: data) == nil)
    try Self.withManifest(data) { path in
      let manifest = try EntitlementManifest.load(from: URL(fileURLWithPath: path))
      #expect(manifest.groups(for: "com.example.app") == ["group.a"])
      #expect(manifest.groups(for: "com.example.widget") == ["group.a"])
      #expect(manifest.entries["com.example.app"]?.executable == "/usr/bin/app")
      let lookup = try EntitlementManifest.entry(of: "com.example.widget", atPath: path)
      #expect(lookup.isListed && lookup.entry.applicationGroups == ["group.a"])
    }
  }
}

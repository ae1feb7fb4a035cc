import AppGroupsTestSupport
import Foundation
import Testing

@testable import AppGroups

/// A manifest that writes a key twice: a bundle identifier with two entries, or a field given
/// twice in one entry, would mean what one of the two says and drop the other without a word.
/// It is refused, naming the key and both lines, by every way of reading it; a group or a
/// keychain access group listed twice in one array means the same as once, and is read once.
@Suite("EntitlementManifest with a key written twice")
struct ManifestRepeatTests {
  static let groupsKey = "<key>com.apple.security.application-groups</key>"

  /// An XML manifest whose root dictionary holds `entries`, from line 4 on.
  static func document(_ entries: String) -> String {
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n" + entries
      + "\n</dict>\n</plist>\n"
  }

  /// The app listed on lines 4 and 11, with other groups in each entry.
  static let listedTwice = document("""
    	<key>com.example.app</key>
    	<dict>
    		\(groupsKey)
    		<array><string>group.a</string></array>
    	</dict>
    	<key>com.example.widget</key>
    	<dict/>
    	<key>com.example.app</key>
    	<dict>
    		\(groupsKey)
    		<array><string>group.b</string></array>
    	</dict>
    """)

  /// The app's executable given on lines 6 and 7.
  static let fieldTwice = document("""
    	<key>com.example.app</key>
    	<dict>
    		<key>executable</key><string>/usr/bin/one</string>
    		<key>executable</key><string>/usr/bin/two</string>
    	</dict>
    """)

  static func write(_ text: String) throws -> (folder: String, path: String) {
    let folder = FileManager.default.temporaryDirectory
      .appendingPathComponent("manifest-repeat-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let path = folder + "/Entitlements.plist"
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return (folder, path)
  }

  static func refusal(_ body: () throws -> Void) -> String? {
    do {
      try body()
      return nil
    } catch let error as AppGroupsError {
      #expect(error.code == .invalidManifest)
      return error.message
    } catch {
      return "\(error)"
    }
  }

  @Test func aBundleIdentifierListedTwiceIsRefusedNamingItAndBothLines() throws {
    let (folder, path) = try Self.write(Self.listedTwice)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let url = URL(fileURLWithPath: path)
    let loaded = Self.refusal { _ = try EntitlementManifest.load(from: url) }
    #expect(loaded == "\(path): entry com.example.app is listed twice (lines 4 and 11); a bundle identifier has one entry")
    // What a new process opening its suite reads: the same refusal, for every app of the
    // manifest (the widget's own entry is fine; the manifest is not).
    for app in ["com.example.app", "com.example.widget"] {
      #expect(Self.refusal { _ = try EntitlementManifest.entry(of: app, atPath: path) } == loaded)
    }
  }

  @Test func aFieldGivenTwiceInOneEntryIsRefused() throws {
    let (folder, path) = try Self.write(Self.fieldTwice)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let message = Self.refusal {
      _ = try EntitlementManifest.load(from: URL(fileURLWithPath: path))
    }
    #expect(message == "\(path): entry com.example.app: executable is given twice (lines 6 and 7); a field is given once")
    #expect(Self.refusal { _ = try EntitlementManifest.entry(of: "com.example.app", atPath: path) } == message)
  }

  /// Written as XML allows: a reference, a CDATA section, a comment holding a key, CRLF lines.
  @Test func theKeysAreComparedAsXMLReadsThem() throws {
    let text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n<plist version=\"1.0\">\r\n<dict>\r\n"
      + "<!-- <key>com.example.widget</key> -->\r\n"
      + "<key>com.example.widget</key><dict/>\r\n"
      + "<key>com&#46;example.app</key><dict/>\r\n"
      + "<key><![CDATA[com.example.app]]></key><dict/>\r\n</dict>\r\n</plist>\r\n"
    let (folder, path) = try Self.write(text)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    #expect(
      Self.refusal { _ = try EntitlementManifest.load(from: URL(fileURLWithPath: path)) }
        == "\(path): entry com.example.app is listed twice (lines 6 and 7); a bundle identifier has one entry")
  }

  /// The same group twice in one array grants what it grants once: nothing is lost, and the
  /// file is read with it once (and written so by the next grant).
  @Test func aGroupListedTwiceInOneArrayIsReadOnce() throws {
    let text = Self.document("""
      	<key>com.example.app</key>
      	<dict>
      		<key>com.apple.developer.team-identifier</key><string>ABCDE12345</string>
      		\(Self.groupsKey)
      		<array><string>group.a</string><string>group.b</string><string>group.a</string></array>
      		<key>keychain-access-groups</key>
      		<array><string>ABCDE12345.x</string><string>ABCDE12345.x</string></array>
      	</dict>
      """)
    let (folder, path) = try Self.write(text)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let entry = try #require(try EntitlementManifest.load(from: URL(fileURLWithPath: path)).entries["com.example.app"])
    #expect(entry.applicationGroups == ["group.a", "group.b"])
    #expect(entry.keychainAccessGroups == ["ABCDE12345.x"])
  }

  /// groupctl refuses such a manifest, naming the app and the lines, exits 1, and leaves the
  /// file as it was, whatever it was asked to do with it.
  @Test func groupctlRefusesItAndChangesNothing() throws {
    let t = try TestRoot(grant: false)
    try Data(Self.listedTwice.utf8).write(to: t.root.manifestURL)
    for args in [["list"], ["grant", "com.example.other", "group.c"], ["revoke", "com.example.app"], ["doctor"]] {
      let result = try Product.run(
        "groupctl", ["--root", t.path] + args, environment: ["APPGROUPS_ROOT": t.path])
      #expect(result.status != 0, "\(args): \(result.stdout)")
      // doctor says it among its findings, on standard output; the others on stderr.
      #expect(
        (result.stderr + result.stdout).contains("entry com.example.app is listed twice (lines 4 and 11)"),
        "\(args): \(result.stderr)")
      #expect(try String(contentsOf: t.root.manifestURL, encoding: .utf8) == Self.listedTwice, "\(args)")
    }
  }
}

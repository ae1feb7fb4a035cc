import AppGroupsTestSupport
import Foundation
import Testing

@testable import AppGroups

/// The manifest walked on its XML for one app's entry (what a new process opening a suite
/// does) against the manifest read whole: whenever the walk answers, the whole reading
/// answers the same; whenever the whole reading refuses the manifest, the walk gives up (and
/// the whole reading's error is the one thrown).
@Suite("EntitlementManifest walked on its XML")
struct ManifestScanTests {
  static let apps = ["com.example.app", "com.example.widget", "com.example.other"]
  static let groupsKey = "<key>com.apple.security.application-groups</key>"

  /// Manifests the walk takes: as groupctl writes them, and plain ones written by hand.
  static func plainManifests() throws -> [String] {
    var manifest = EntitlementManifest()
    manifest.entries["com.example.app"] = .init(
      applicationGroups: ["group.com.example.shared", "group.com.example.other"],
      executable: "/opt/example/bin/app", keychainAccessGroups: ["ABCDE12345.com.example.shared"],
      teamIdentifier: "ABCDE12345")
    manifest.entries["com.example.widget"] = .init(
      applicationGroups: ["group.com.example.shared"],
      applicationIdentifier: "ABCDE12345.com.example.widget")
    manifest.entries["com.example.tool"] = .init()
    let written = String(decoding: try manifest.propertyListData(), as: UTF8.self)
    // The repository's own manifest.
    let committed = try String(
      contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Containers/Entitlements.plist"),
      encoding: .utf8)
    return [
      written, committed,
      plist("<dict/>"),
      plist("<dict></dict>"),
      appEntry(""),
      plist("<dict><key>com.example.app</key><dict/></dict>"),
      appEntry("\(groupsKey)<array/>"),
      appEntry("\(groupsKey)<array><string>group.a</string><string>group.b</string><string>group.a</string></array>"),
      appEntry("<key>executable</key><string>/usr/bin/app</string>"),
      // A bare name from an older manifest is read and kept.
      appEntry("<key>executable</key><string>app</string>"),
      appEntry("\(groupsKey)<array><string>group.x</string></array><key>com.apple.security.app-sandbox</key><true/>"),
      appEntry("<key>other</key><dict><key>a</key><array><integer>1</integer><data>AAEC</data></array></dict>"),
      appEntry("<!-- a comment --> \(groupsKey) <!-- another --> <array> <string>group.x</string> </array>"),
      appEntry("\(groupsKey)<array><string>group&#46;x</string><string>group.a&#45;b</string></array>"),
      plist("<dict><key>com.example&#46;app</key><dict/></dict>"),
      appEntry("<key>keychain-access-groups</key><array/>"),
    ]
  }

  /// Manifests, and near misses, the walk must refuse or read as the whole reading does.
  static let oddManifests: [String] = [
    "", "<plist/>",
    plist("<array/>"),
    plist("<string>x</string>"),
    plist("<dict><key>com.example.app</key><string>x</string></dict>"),
    plist("<dict><key>com.example.app</key><array/></dict>"),
    plist("<dict><key>com.example/app</key><dict/></dict>"),
    plist("<dict><key>com.example.app</key><dict/><key>com.example.app</key><dict>\(groupsKey)<array><string>group.x</string></array></dict></dict>"),
    appEntry("\(groupsKey)<array/>\(groupsKey)<array><string>group.x</string></array>"),
    appEntry("\(groupsKey)<string>group.x</string>"),
    appEntry("\(groupsKey)<array><string>group.x</string><true/></array>"),
    appEntry("\(groupsKey)<array><string>com.example.x</string></array>"),
    appEntry("\(groupsKey)<array><string/></array>"),
    appEntry("<key>executable</key><false/>"),
    appEntry("<key>executable</key><string>bin/app</string>"),
    appEntry("<key>executable</key><string/>"),
    appEntry("<key>keychain-access-groups</key><array><string>ABCDE12345.x</string></array>"),
    appEntry("<key>com.apple.developer.team-identifier</key><string>abc</string>"),
    appEntry("<key>application-identifier</key><string>ABCDE12345.com.example.widget</string>"),
    appEntry("<key>application-identifier</key><integer>1</integer>"),
    appEntry("<key>com.apple.developer.team-identifier</key><string>ABCDE12345</string><key>keychain-access-groups</key><array><string>OTHER12345.x</string></array>"),
    appEntry("<key>other</key><integer>+1</integer>"),
    appEntry("<key>other</key><string><![CDATA[x]]></string>"),
    appEntry("\(groupsKey)<array><string>group.\u{e9}</string></array>"),
    appEntry("\(groupsKey)<array><string>group.a\rb</string></array>"),
    appEntry("\(groupsKey)<array><string>group.a&bogus;</string></array>"),
    appEntry("\(groupsKey)<array><string>group.a</string></array><!-- unterminated"),
    appEntry("\(groupsKey)<array><string>group.a</string><string>group.b</string></array>") + "x",
    appEntry("\(groupsKey)<array>" + String(repeating: "<string>group.a</string>", count: 70) + "</array>"),
    plist("<dict>" + (0..<70).map { "<key>com.example.app\($0)</key><dict/>" }.joined() + "</dict>"),
    plist("<dict><key>com.example.app</key><dict/>"),
    plist("<dict><key>com.example.app</key></dict>"),
    plist("<dict><key/><dict/></dict>"),
    plist("<dict><string>com.example.app</string><dict/></dict>"),
  ]

  /// What the walk and the whole reading say of `text` for `app`; the first difference.
  static func difference(_ text: String, _ app: String) -> String? {
    let data = Data(text.utf8)
    guard let walked = EntitlementManifest.scannedEntry(of: app, in: data) else { return nil }
    let whole: EntitlementManifest.EntryLookup
    do {
      whole = try EntitlementManifest.entry(of: app, decoding: data, path: "/m")
    } catch {
      return "\(app): the walk answered, the whole reading refused (\(error.message)): \(text)"
    }
    guard walked.present, whole.present, walked.isListed == whole.isListed,
      walked.entry == whole.entry
    else { return "\(app): \(walked) against \(whole): \(text)" }
    return nil
  }

  @Test func theWalkTakesThePlainForm() throws {
    for text in try Self.plainManifests() {
      for app in Self.apps {
        #expect(
          EntitlementManifest.scannedEntry(of: app, in: Data(text.utf8)) != nil,
          "\(app): \(text)")
        #expect(Self.difference(text, app) == nil)
      }
    }
    let committed = try #require(try Self.plainManifests().dropFirst().first)
    let lookup = try #require(
      EntitlementManifest.scannedEntry(of: "com.example.app", in: Data(committed.utf8)))
    #expect(lookup.isListed && lookup.present)
    #expect(lookup.entry.applicationGroups == ["group.com.example.shared"])
    #expect(lookup.entry.teamIdentifier == "EXAMPLE123")
    let repeated = try Self.plainManifests()[7]
    #expect(
      EntitlementManifest.scannedEntry(of: "com.example.app", in: Data(repeated.utf8))?.entry
        .applicationGroups == ["group.a", "group.b"])
  }

  @Test func whatTheWholeReadingRefusesTheWalkGivesUp() {
    for text in Self.oddManifests {
      for app in Self.apps {
        #expect(Self.difference(text, app) == nil)
      }
    }
    // Each that the whole reading refuses, the walk gives up on.
    var refused = 0
    for text in Self.oddManifests {
      let data = Data(text.utf8)
      guard (try? EntitlementManifest.entry(of: "com.example.app", decoding: data, path: "/m")) == nil
      else { continue }
      refused += 1
      #expect(EntitlementManifest.scannedEntry(of: "com.example.app", in: data) == nil, "\(text)")
    }
    #expect(refused >= 20)
  }

  /// A repeated key, of an entry or of a field in one, is the whole reading's to judge: the
  /// XML reader gives up on it, and Foundation reads it its own way.
  @Test func aRepeatedKeyIsLeftToTheWholeReading() {
    let repeated = [
      plist(
        "<dict><key>com.example.app</key><dict/><key>com.example.widget</key><dict/>"
          + "<key>com.example.app</key><dict>\(Self.groupsKey)<array><string>group.x</string></array></dict></dict>"),
      appEntry("<key>executable</key><string>/a</string><key>executable</key><string>/b</string>"),
      appEntry("<key>other</key><true/><key>other</key><false/>"),
    ]
    for text in repeated {
      #expect(EntitlementManifest.scannedEntry(of: "com.example.app", in: Data(text.utf8)) == nil)
      #expect(Self.difference(text, "com.example.app") == nil)
    }
  }

  /// Every byte of plain manifests deleted, and replaced by bytes that matter to XML, one at a
  /// time, and every length cut short: the walk answers as the whole reading or gives up.
  @Test func damagedManifestsAreWalkedAsReadWholeOrLeftToIt() throws {
    let bases = try Self.plainManifests()
    let sources = [bases[0], bases[1], bases[7], bases[11], bases[13]]
    var failures: [String] = []
    var walked = 0
    for source in sources {
      let bytes = Array(source.utf8)
      var variants: [[UInt8]] = []
      for index in bytes.indices {
        var deleted = bytes
        deleted.remove(at: index)
        variants.append(deleted)
        variants.append(Array(bytes[..<index]))
        for replacement in "</>&x.-".utf8 where replacement != bytes[index] {
          var replaced = bytes
          replaced[index] = replacement
          variants.append(replaced)
        }
      }
      for variant in variants {
        let text = String(decoding: variant, as: UTF8.self)
        guard String(validating: variant, as: UTF8.self) != nil else { continue }
        for app in Self.apps.prefix(2) {
          if EntitlementManifest.scannedEntry(of: app, in: Data(variant)) != nil { walked += 1 }
          if let difference = Self.difference(text, app) { failures.append(difference) }
        }
        if failures.count >= 3 { break }
      }
    }
    #expect(failures == [])
    #expect(walked > 1_000)
  }

  /// Through a suite's resolution: a manifest the walk gives up on still refuses with the
  /// whole reading's error, and one it takes grants as before.
  @Test func resolutionReadsTheWalkAndTheWholeReadingAlike() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    let identity = try AppIdentity(bundleIdentifier: "com.example.app")
    let resolver = SuiteResolver(identity: identity, root: root)
    try Data(appEntry("\(Self.groupsKey)<array><string>group.x</string></array>").utf8)
      .write(to: root.manifestURL)
    #expect(try resolver.resolve(suiteName: "group.x").kind == .group)
    let refusal = caught { try resolver.resolve(suiteName: "group.y") }
    #expect(refusal?.code == .notEntitled)
    try Data(appEntry("\(Self.groupsKey)<array><string>group.x</string><true/></array>").utf8)
      .write(to: root.manifestURL)
    let error = try #require(caught { try resolver.resolve(suiteName: "group.x") })
    #expect(error.code == .invalidManifest)
    #expect(error.message.contains("found boolean at index 1"), "\(error.message)")
  }
}

import AppGroupsTestSupport
import Foundation
import Testing

@testable import AppGroups

/// An XML manifest with one entry, com.example.app, whose fields are `fields`.
private func manifest(_ fields: String) -> String {
  """
  <?xml version="1.0" encoding="UTF-8"?>
  <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
  <plist version="1.0">
  <dict><key>com.example.app</key><dict>\(fields)</dict></dict>
  </plist>
  """
}

private func strings(_ key: String, _ values: [String]) -> String {
  "<key>\(key)</key><array>" + values.map { "<string>\($0)</string>" }.joined() + "</array>"
}

private func string(_ key: String, _ value: String) -> String {
  "<key>\(key)</key><string>\(value)</string>"
}

private let groupsKey = EntitlementManifest.applicationGroupsKey
private let keychainKey = EntitlementManifest.keychainAccessGroupsKey
private let appIDKey = EntitlementManifest.applicationIdentifierKey
private let teamKey = EntitlementManifest.teamIdentifierKey

@Suite("EntitlementManifest: keychain entitlements")
struct ManifestKeychainTests {
  @Test func accessGroupsInTheOrderIOSListsThem() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    let text = manifest(
      strings(keychainKey, ["ABCDE12345.com.example.shared", "ABCDE12345.com.example.more"])
        + string(appIDKey, "ABCDE12345.com.example.app")
        + strings(groupsKey, ["group.com.example.shared"]))
    try Data(text.utf8).write(to: root.manifestURL)
    let loaded = try EntitlementManifest.load(root: root)
    #expect(
      loaded.keychainAccessGroups(for: "com.example.app") == [
        "ABCDE12345.com.example.shared", "ABCDE12345.com.example.more",
        "ABCDE12345.com.example.app", "group.com.example.shared",
      ])
    #expect(loaded.applicationIdentifier(for: "com.example.app") == "ABCDE12345.com.example.app")
    #expect(loaded.keychainAccessGroups(for: "com.example.intruder") == [])
    #expect(loaded.allKeychainAccessGroups.count == 4)
  }

  @Test func appGroupsAloneAreAccessGroups() throws {
    let loaded = EntitlementManifest(entries: [
      "com.example.widget": .init(applicationGroups: ["group.a", "group.b"])
    ])
    #expect(loaded.keychainAccessGroups(for: "com.example.widget") == ["group.a", "group.b"])
    #expect(loaded.applicationIdentifier(for: "com.example.widget") == nil)
  }

  @Test func theTeamGivesTheAppID() throws {
    let loaded = EntitlementManifest(entries: [
      "com.example.app": .init(
        applicationGroups: ["group.a"], keychainAccessGroups: ["ABCDE12345.shared"],
        teamIdentifier: "ABCDE12345")
    ])
    #expect(loaded.applicationIdentifier(for: "com.example.app") == "ABCDE12345.com.example.app")
    #expect(
      loaded.keychainAccessGroups(for: "com.example.app") == [
        "ABCDE12345.shared", "ABCDE12345.com.example.app", "group.a",
      ])
  }

  @Test func roundTripKeepsEverything() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    let text = manifest(
      strings(keychainKey, ["ABCDE12345.com.example.shared"])
        + string(appIDKey, "ABCDE12345.com.example.app") + string(teamKey, "ABCDE12345")
        + strings(groupsKey, ["group.com.example.shared"])
        + "<key>aps-environment</key><string>development</string>")
    try Data(text.utf8).write(to: root.manifestURL)
    let before = try EntitlementManifest.load(root: root)
    // A grant of something else keeps every keychain entitlement and the unknown key.
    try EntitlementManifest.grant("com.example.app", groups: ["group.com.example.more"], root: root)
    try EntitlementManifest.grant("com.example.other", groups: ["group.x"], root: root)
    let after = try EntitlementManifest.load(root: root)
    var expected = try #require(before.entries["com.example.app"])
    expected.applicationGroups.append("group.com.example.more")
    #expect(after.entries["com.example.app"] == expected)
    let written = try String(contentsOf: root.manifestURL, encoding: .utf8)
    #expect(written.contains("aps-environment"))
    #expect(written.contains("<key>keychain-access-groups</key>"))
    #expect(written.contains("<key>com.apple.developer.team-identifier</key>"))
    // Foundation reads the written file as Apple's keys say.
    let plist = try #require(
      try PropertyListSerialization.propertyList(from: Data(written.utf8), format: nil)
        as? [String: Any])
    let app = try #require(plist["com.example.app"] as? [String: Any])
    #expect(app[keychainKey] as? [String] == ["ABCDE12345.com.example.shared"])
    #expect(app[appIDKey] as? String == "ABCDE12345.com.example.app")
  }

  @Test func grantAndRevokeKeychainAccess() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    try EntitlementManifest.grant("com.example.app", groups: ["group.a"], root: root)
    try EntitlementManifest.grantKeychainAccess(
      "com.example.app", keychainAccessGroups: ["ABCDE12345.shared"], teamIdentifier: "ABCDE12345",
      root: root)
    try EntitlementManifest.grantKeychainAccess(
      "com.example.app", keychainAccessGroups: ["ABCDE12345.shared", "ABCDE12345.more"], root: root)
    var loaded = try EntitlementManifest.load(root: root)
    #expect(
      loaded.entries["com.example.app"]?.keychainAccessGroups == [
        "ABCDE12345.shared", "ABCDE12345.more",
      ])
    #expect(loaded.entries["com.example.app"]?.applicationGroups == ["group.a"])
    try EntitlementManifest.revokeKeychainAccess(
      "com.example.app", keychainAccessGroups: ["ABCDE12345.shared"], root: root)
    loaded = try EntitlementManifest.load(root: root)
    #expect(loaded.entries["com.example.app"]?.keychainAccessGroups == ["ABCDE12345.more"])
    #expect(throws: AppGroupsError.self) {
      try EntitlementManifest.revokeKeychainAccess(
        "com.example.app", keychainAccessGroups: ["ABCDE12345.more", "ABCDE12345.never"],
        root: root)
    }
    // Nothing of a failed revoke changed.
    #expect(
      try EntitlementManifest.load(root: root).entries["com.example.app"]?.keychainAccessGroups
        == ["ABCDE12345.more"])
  }

  /// Keychain entitlements a provisioning profile would refuse: the grant throws and writes
  /// nothing.
  @Test(
    arguments: [
      (["ABCDE12345.shared"], nil, nil, "needs the app's App ID prefix"),
      (["FGHIJ67890.shared"], "ABCDE12345", nil, "does not start with the app's App ID prefix"),
      (
        ["group.com.example.shared"], "ABCDE12345", nil,
        "does not start with the app's App ID prefix"
      ),
      (["ABCDE12345."], "ABCDE12345", nil, "does not start with the app's App ID prefix"),
      (["ABCDE12345.a/b"], "ABCDE12345", nil, "contains '/'"),
      (["ABCDE12345.*"], "ABCDE12345", nil, "contains '*'"),
      ([], "TEAMID", nil, "is not a team identifier"),
      ([], "abcde12345", nil, "is not a team identifier"),
      ([], nil, "ABCDE12345.com.example.other", "must be the App ID prefix, a dot and the bundle"),
      ([], nil, "com.example.app", "must be the App ID prefix, a dot and the bundle"),
      ([], nil, "$(AppIdentifierPrefix).com.example.app", "its prefix"),
      ([], nil, "ABC.com.example.app", "its prefix"),
    ] as [([String], String?, String?, String)])
  func refusesWhatAProfileRefuses(
    groups: [String], team: String?, appID: String?, expected: String
  ) throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    try EntitlementManifest.grant("com.example.app", groups: ["group.a"], root: root)
    let before = try Data(contentsOf: root.manifestURL)
    let error = try #require(throws: AppGroupsError.self) {
      try EntitlementManifest.grantKeychainAccess(
        "com.example.app", keychainAccessGroups: groups, teamIdentifier: team,
        applicationIdentifier: appID, root: root)
    }
    #expect(error.code == .invalidName)
    #expect(error.message.contains("entry com.example.app"))
    #expect(error.message.contains(expected), "\(error.message)")
    #expect(try Data(contentsOf: root.manifestURL) == before)
  }

  /// Manifests on disk with keychain entitlements of the wrong shape: each is an invalid
  /// manifest whose message names the entry, the key and the reason.
  @Test(arguments: [
    (strings(keychainKey, ["ABCDE12345.x"]), "needs the app's App ID prefix"),
    (
      "<key>\(keychainKey)</key><string>ABCDE12345.x</string>",
      "must be an array of strings, found string"
    ),
    ("<key>\(keychainKey)</key><array><integer>1</integer></array>", "found integer at index 0"),
    ("<key>\(appIDKey)</key><array/>", "application-identifier must be a string, found array"),
    ("<key>\(teamKey)</key><true/>", "com.apple.developer.team-identifier must be a string"),
    (string(teamKey, "ABCDE1234"), "is not a team identifier"),
    (
      string(teamKey, "ABCDE12345") + strings(keychainKey, ["ZZZZZ12345.x"]),
      "does not start with the app's App ID prefix ABCDE12345.",
    ),
  ])
  func malformedOnDisk(fields: String, expected: String) throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    try Data(manifest(fields).utf8).write(to: root.manifestURL)
    let error = try #require(throws: AppGroupsError.self) {
      try EntitlementManifest.load(root: root)
    }
    #expect(error.code == .invalidManifest)
    #expect(error.message.contains(root.manifestURL.path))
    #expect(error.message.contains("entry com.example.app"))
    #expect(error.message.contains(expected), "\(error.message)")
  }

  @Test func legacyAppIDPrefixDiffersFromTheTeam() throws {
    // An App ID prefix from before teams (a seed id) is the prefix its groups must carry.
    let entry = EntitlementManifest.Entry(
      keychainAccessGroups: ["SEED123456.shared"],
      applicationIdentifier: "SEED123456.com.example.app",
      teamIdentifier: "ABCDE12345")
    let manifest = EntitlementManifest(entries: ["com.example.app": entry])
    _ = try manifest.propertyListData()
    #expect(manifest.keychainAccessGroups(for: "com.example.app").first == "SEED123456.shared")
  }
}

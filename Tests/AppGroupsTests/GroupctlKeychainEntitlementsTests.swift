import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("groupctl keychain entitlements", .processBound)
struct GroupctlKeychainEntitlementsTests {
  @Test func grantListAndRevokeKeychainGroups() throws {
    let g = try GroupctlRoot(grant: false)
    try g.ok(["grant", "com.example.app", "group.com.example.shared"])
    try g.ok([
      "grant", "com.example.app", "--team", "ABCDE12345",
      "--keychain-group", "ABCDE12345.com.example.shared",
    ])
    try g.ok(["grant", "com.example.widget", "group.com.example.shared", "--team=ABCDE12345"])
    let manifest = try EntitlementManifest.load(root: g.root)
    #expect(
      manifest.keychainAccessGroups(for: "com.example.app") == [
        "ABCDE12345.com.example.shared", "ABCDE12345.com.example.app", "group.com.example.shared",
      ])
    #expect(try plutilLintFailure(g.root.manifestURL) == nil)

    #expect(
      try g.ok(["list"])
        == "com.example.app     group.com.example.shared\n"
        + "                    keychain: ABCDE12345.com.example.shared (default),"
        + " ABCDE12345.com.example.app, group.com.example.shared  (team: ABCDE12345)\n"
        + "com.example.widget  group.com.example.shared\n"
        + "                    keychain: ABCDE12345.com.example.widget (default),"
        + " group.com.example.shared  (team: ABCDE12345)\n")
    let json = try g.ok(["list", "--json", "com.example.app"])
    let decoded = try #require(
      try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
    #expect(decoded[0]["keychainAccessGroups"] as? [String] == ["ABCDE12345.com.example.shared"])
    #expect(
      decoded[0]["accessGroups"] as? [String]
        == manifest.keychainAccessGroups(for: "com.example.app"))
    #expect(decoded[0]["applicationIdentifier"] as? String == "ABCDE12345.com.example.app")
    #expect(decoded[0]["teamIdentifier"] as? String == "ABCDE12345")

    let doctor = try g.run(["doctor"])
    #expect(
      doctor.stdout.contains(
        "ok: com.example.app keychain access groups: ABCDE12345.com.example.shared (default),"
          + " ABCDE12345.com.example.app, group.com.example.shared"), "\(doctor.stdout)")

    try g.ok(["revoke", "com.example.app", "--keychain-group", "ABCDE12345.com.example.shared"])
    #expect(
      try EntitlementManifest.load(root: g.root).entries["com.example.app"]?.keychainAccessGroups
        == [])
  }

  /// An App Group is registered to one team: granting it to an app of another team is
  /// refused, and in a manifest written by hand that gives it to two teams, neither team's
  /// apps hold it as a keychain access group (another team's app read the team's items in it),
  /// and `doctor` says why.
  @Test func anApplicationGroupBelongsToOneTeam() throws {
    let g = try GroupctlRoot(grant: false)
    try g.ok(["grant", "com.example.app", "group.com.example.shared", "--team", "ABCDE12345"])
    try g.ok(["grant", "com.other.app", "group.com.other.shared", "--team", "ZZZZZ99999"])
    let before = try Data(contentsOf: g.root.manifestURL)
    let refused = try g.run(["grant", "com.other.app", "group.com.example.shared"])
    #expect(refused.status == 1, "\(refused)")
    #expect(
      refused.stderr.contains(
        "application group group.com.example.shared is held by com.example.app (team"
          + " ABCDE12345) and by com.other.app (team ZZZZZ99999)"), "\(refused.stderr)")
    #expect(try Data(contentsOf: g.root.manifestURL) == before, "nothing is written")
    // An app with no team may still share it.
    try g.ok(["grant", "com.example.widget", "group.com.example.shared"])

    // Written by hand.
    var manifest = try #require(
      try PropertyListSerialization.propertyList(
        from: Data(contentsOf: g.root.manifestURL), format: nil) as? [String: [String: Any]])
    manifest["com.other.app"]?["com.apple.security.application-groups"] = [
      "group.com.other.shared", "group.com.example.shared",
    ]
    try PropertyListSerialization.data(fromPropertyList: manifest, format: .xml, options: 0)
      .write(to: g.root.manifestURL)
    let loaded = try EntitlementManifest.load(root: g.root)
    #expect(!loaded.keychainAccessGroups(for: "com.other.app").contains("group.com.example.shared"))
    #expect(!loaded.keychainAccessGroups(for: "com.example.app").contains("group.com.example.shared"))
    let doctor = try g.run(["doctor"])
    #expect(doctor.status == 1, "\(doctor)")
    #expect(
      doctor.stdout.contains("problem: application group group.com.example.shared is held by"),
      "\(doctor.stdout)")
  }

  @Test func grantRefusesAnotherTeamsGroupAndWritesNothing() throws {
    let g = try GroupctlRoot(grant: false)
    try g.ok(["grant", "com.example.app", "group.a", "--team", "ABCDE12345"])
    let before = try Data(contentsOf: g.root.manifestURL)
    let cases: [([String], String, Int32)] = [
      (
        ["grant", "com.example.app", "group.b", "--keychain-group", "ZZZZZ99999.shared"],
        "does not start with the app's App ID prefix ABCDE12345.", 1
      ),
      (
        ["grant", "com.example.other", "--keychain-group", "ABCDE12345.x"],
        "needs the app's App ID prefix", 1
      ),
      (
        ["grant", "com.example.app", "--team", "team"], "--team: \"team\" is not a team identifier",
        64
      ),
      (["grant", "com.example.app"], "missing argument GROUP-ID", 64),
    ]
    for (args, message, status) in cases {
      let result = try g.run(args)
      #expect(result.status == status, "\(args): \(result.stderr)")
      #expect(result.stderr.contains(message), "\(args): \(result.stderr)")
    }
    // The refused grants changed nothing, not even the application group given beside them.
    #expect(try Data(contentsOf: g.root.manifestURL) == before)
  }

  @Test func importEntitlementsExpandsXcodeVariables() throws {
    let g = try GroupctlRoot(grant: false)
    let file = g.t.sandbox.url.appendingPathComponent("App.entitlements")
    let entitlements: [String: Any] = [
      "com.apple.security.application-groups": ["group.com.example.shared"],
      "keychain-access-groups": [
        "$(AppIdentifierPrefix)com.example.shared", "$(AppIdentifierPrefix)$(CFBundleIdentifier)",
      ],
      "application-identifier": "$(AppIdentifierPrefix)$(PRODUCT_BUNDLE_IDENTIFIER)",
      "aps-environment": "development",
    ]
    try PropertyListSerialization.data(fromPropertyList: entitlements, format: .xml, options: 0)
      .write(to: file)
    // Without a team the prefix is unknown: refused, nothing written.
    let refused = try g.run(["import-entitlements", "com.example.app", file.path])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("$(AppIdentifierPrefix)"))
    #expect(refused.stderr.contains("needs the app's team: pass --team TEAMID"))
    #expect(!FileManager.default.fileExists(atPath: g.root.manifestURL.path))

    #expect(
      try g.ok(["import-entitlements", "com.example.app", file.path, "--team", "ABCDE12345"])
        == "com.example.app: granted group.com.example.shared\n"
        + "com.example.app: keychain access groups ABCDE12345.com.example.shared,"
        + " ABCDE12345.com.example.app\n"
        + "com.example.app: App ID ABCDE12345.com.example.app\n")
    var manifest = try EntitlementManifest.load(root: g.root)
    let entry = try #require(manifest.entries["com.example.app"])
    #expect(entry.teamIdentifier == "ABCDE12345")
    #expect(entry.applicationIdentifier == "ABCDE12345.com.example.app")
    #expect(
      manifest.keychainAccessGroups(for: "com.example.app") == [
        "ABCDE12345.com.example.shared", "ABCDE12345.com.example.app", "group.com.example.shared",
      ])

    // The widget's file, imported with the team the manifest already records for it.
    try g.ok(["grant", "com.example.widget", "--team", "ABCDE12345"])
    let widgetFile = g.t.sandbox.url.appendingPathComponent("Widget.entitlements")
    try PropertyListSerialization.data(
      fromPropertyList: ["keychain-access-groups": ["$(TeamIdentifierPrefix)com.example.shared"]],
      format: .xml, options: 0
    ).write(to: widgetFile)
    try g.ok(["import-entitlements", "com.example.widget", widgetFile.path])
    manifest = try EntitlementManifest.load(root: g.root)
    #expect(
      manifest.keychainAccessGroups(for: "com.example.widget") == [
        "ABCDE12345.com.example.shared", "ABCDE12345.com.example.widget",
      ])

    let unknown = g.t.sandbox.url.appendingPathComponent("Unknown.entitlements")
    try PropertyListSerialization.data(
      fromPropertyList: ["keychain-access-groups": ["$(SOMETHING_ELSE)x"]], format: .xml,
      options: 0
    ).write(to: unknown)
    let result = try g.run(["import-entitlements", "com.example.app", unknown.path])
    #expect(result.status == 1)
    #expect(result.stderr.contains("$(SOMETHING_ELSE)"))
    #expect(result.stderr.contains("cannot expand"))
  }
}

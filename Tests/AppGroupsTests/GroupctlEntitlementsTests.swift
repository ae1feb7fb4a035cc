import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("groupctl entitlements and containers", .processBound)
struct GroupctlEntitlementsTests {
  @Test func grantAndRevokeEditTheManifest() throws {
    let g = try GroupctlRoot(grant: false)
    try g.ok(["grant", "com.example.app", "group.a", "group.b"])
    try g.ok(["grant", "com.example.app", "group.b", "group.c", "--executable", "/usr/bin/app"])
    var manifest = try EntitlementManifest.load(root: g.root)
    #expect(manifest.groups(for: "com.example.app") == ["group.a", "group.b", "group.c"])
    #expect(manifest.entries["com.example.app"]?.executable == "/usr/bin/app")
    #expect(try plutilLintFailure(g.root.manifestURL) == nil)
    #expect(try mode(g.root.manifestURL) == 0o600)

    try g.ok(["revoke", "com.example.app", "group.a", "group.c"])
    manifest = try EntitlementManifest.load(root: g.root)
    #expect(manifest.groups(for: "com.example.app") == ["group.b"])

    let notHeld = try g.run(["revoke", "com.example.app", "group.a"])
    #expect(notHeld.status == 1)
    #expect(notHeld.stderr.contains("com.example.app does not hold group.a"))

    try g.ok(["revoke", "com.example.app"])
    #expect(try EntitlementManifest.load(root: g.root).entries.isEmpty)
    let unknown = try g.run(["revoke", "com.example.app"])
    #expect(unknown.status == 1)
    #expect(unknown.stderr.contains("com.example.app has no entry in \(g.root.manifestURL.path)"))
  }

  @Test func grantRefusesBadNames() throws {
    let g = try GroupctlRoot(grant: false)
    let cases: [([String], String)] = [
      (["grant", "com.example.app", "shared"], "invalid group identifier \"shared\""),
      (["grant", "../app", "group.a"], "invalid bundle identifier \"../app\""),
      (["grant", "com.example.app", "group.a", "--executable", "bin/app"], "bin/app: no such file"),
      (
        ["grant", "com.example.app", "group.a", "--executable", "no-such-program-here"],
        "no program of that name in PATH"
      ),
    ]
    for (args, message) in cases {
      let result = try g.run(args)
      #expect(result.status == 1, "\(args)")
      #expect(result.stderr.contains(message), "\(args): \(result.stderr)")
    }
    #expect(!FileManager.default.fileExists(atPath: g.root.manifestURL.path))
  }

  @Test func listPrintsTextAndJSON() throws {
    let g = try GroupctlRoot(grant: false)
    let empty = try g.run(["list"])
    #expect(empty.status == 0)
    #expect(empty.stdout.isEmpty)
    #expect(empty.stderr.contains("no manifest at \(g.root.manifestURL.path)"))
    #expect(try g.ok(["list", "--json"]) == "[]\n")

    try g.ok(["grant", "com.example.app", "group.com.example.shared"])
    try g.ok(["grant", "com.example.widget", "group.com.example.shared", "group.x"])
    try g.ok(["grant", "com.example.widget", "group.x", "--executable", "/opt/bin/widget"])
    #expect(
      try g.ok(["list"])
        == "com.example.app     group.com.example.shared\n"
        + "com.example.widget  group.com.example.shared, group.x  (executable: /opt/bin/widget)\n")
    #expect(
      try g.ok(["list", "com.example.app"]) == "com.example.app  group.com.example.shared\n")

    let json = try g.ok(["list", "--json"])
    let decoded = try #require(
      try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
    #expect(decoded.count == 2)
    #expect(decoded[1]["bundleIdentifier"] as? String == "com.example.widget")
    #expect(
      decoded[1]["applicationGroups"] as? [String] == ["group.com.example.shared", "group.x"])
    #expect(decoded[1]["executable"] as? String == "/opt/bin/widget")
    #expect(decoded[0]["executable"] == nil)

    let unknown = try g.run(["list", "com.example.nobody"])
    #expect(unknown.status == 1)
    #expect(unknown.stderr.contains("com.example.nobody has no entry"))
  }

  @Test func aBrokenManifestIsAnError() throws {
    let g = try GroupctlRoot(grant: false)
    try Data("<plist><array/></plist>".utf8).write(to: g.root.manifestURL)
    for args in [["list"], ["grant", "com.example.app", "group.a"], ["container", "x", "groups"]] {
      let result = try g.run(args)
      #expect(result.status == 1, "\(args)")
      #expect(result.stderr.contains(g.root.manifestURL.path), "\(args): \(result.stderr)")
    }
  }

  @Test func containerPrintsPathsLikeSimctl() throws {
    let g = try GroupctlRoot()
    let app = try g.ok(["container", TestRoot.app])
    #expect(app == g.root.appContainerURL(for: TestRoot.app).path + "\n")
    #expect(try g.ok(["container", TestRoot.app, "app"]) == app)
    #expect(try mode(g.root.appContainerURL(for: TestRoot.app)) == 0o700)

    let groupPath = g.root.groupContainerURL(for: TestRoot.group).path
    #expect(try g.ok(["container", TestRoot.widget, TestRoot.group]) == groupPath + "\n")
    #expect(
      try g.ok(["container", TestRoot.widget, "groups"]) == "\(TestRoot.group)\t\(groupPath)\n")
    #expect(FileManager.default.fileExists(atPath: groupPath + "/Library/Preferences"))

    let refused = try g.run(["container", "com.example.stranger", TestRoot.group])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("com.example.stranger is not entitled to \(TestRoot.group)"))
    let noEntry = try g.run(["container", "com.example.stranger", "groups"])
    #expect(noEntry.status == 1)
    #expect(noEntry.stderr.contains("com.example.stranger has no entry"))
    let badName = try g.run(["container", "../x"])
    #expect(badName.status == 1)
    #expect(badName.stderr.contains("invalid bundle identifier"))
  }

  @Test func containerRefusesAGroupWhereTheAppGoes() throws {
    let g = try GroupctlRoot()
    let refused = try g.run(["container", TestRoot.group])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("\(TestRoot.group) is an application group, not an app"))
    #expect(refused.stderr.contains("groupctl container \(TestRoot.app) \(TestRoot.group)"))
    #expect(refused.stdout.isEmpty)
    #expect(
      !FileManager.default.fileExists(atPath: g.root.appContainerURL(for: TestRoot.group).path))
  }

  @Test func importEntitlementsReadsAnXcodeFile() throws {
    let g = try GroupctlRoot(grant: false)
    let file = g.t.sandbox.url.appendingPathComponent("App.entitlements")
    let entitlements: [String: Any] = [
      "com.apple.security.application-groups": ["group.com.example.shared", "group.more"],
      "com.apple.security.app-sandbox": true,
    ]
    try PropertyListSerialization.data(fromPropertyList: entitlements, format: .xml, options: 0)
      .write(to: file)
    #expect(
      try g.ok(["import-entitlements", "com.example.app", file.path])
        == "com.example.app: granted group.com.example.shared, group.more\n")
    #expect(
      try EntitlementManifest.load(root: g.root).groups(for: "com.example.app")
        == ["group.com.example.shared", "group.more"])

    let cases: [([String: Any]?, String)] = [
      (["com.apple.security.app-sandbox": true], "has no com.apple.security.application-groups"),
      (["com.apple.security.application-groups": "group.a"], "is not an array of strings"),
      (
        ["com.apple.security.application-groups": ["$(TeamIdentifierPrefix)group.a"]],
        "holds an Xcode build variable"
      ),
      (nil, "not a property list"),
    ]
    for (contents, message) in cases {
      let bad = g.t.sandbox.url.appendingPathComponent("Bad.entitlements")
      if let contents {
        try PropertyListSerialization.data(fromPropertyList: contents, format: .xml, options: 0)
          .write(to: bad)
      } else {
        try Data("<plist><dict>".utf8).write(to: bad)
      }
      let result = try g.run(["import-entitlements", "com.example.other", bad.path])
      #expect(result.status == 1, "\(message)")
      #expect(result.stderr.contains(message), "\(result.stderr)")
    }
    #expect(try EntitlementManifest.load(root: g.root).entries["com.example.other"] == nil)
  }

  @Test(arguments: [
    ["grant", "com.example.app", "group.a"], ["revoke", "com.example.app"], ["list"],
    ["container", "com.example.app"], ["import-entitlements", "com.example.app", "x"],
    ["doctor"],
  ])
  func administratorCommandsRefuseAs(args: [String]) throws {
    let g = try GroupctlRoot()
    let result = try g.run(["--as", TestRoot.app] + args)
    #expect(result.status == 64)
    #expect(
      result.stderr.contains("is an administrator's command; --as com.example.app does not apply"))
  }
}

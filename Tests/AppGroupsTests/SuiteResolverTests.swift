import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

@testable import AppGroups


/// A root in `sandbox` whose manifest is the committed example's, bound:
/// com.example.app (executable `/opt/bin/app`) and com.example.widget
/// (executable `/opt/bin/widget`) both hold group.com.example.shared.
private func exampleRoot(_ sandbox: borrowing Sandbox) throws -> ContainerRoot {
  let root = ContainerRoot(url: sandbox.url)
  try EntitlementManifest.grant(
    "com.example.app", groups: ["group.com.example.shared"], executable: "/opt/bin/app",
    root: root)
  try EntitlementManifest.grant(
    "com.example.widget", groups: ["group.com.example.shared"], executable: "/opt/bin/widget",
    root: root)
  return root
}

private func resolver(
  _ bundleIdentifier: String, executable: String? = nil, root: ContainerRoot
) throws -> SuiteResolver {
  SuiteResolver(
    identity: try AppIdentity(bundleIdentifier: bundleIdentifier, executablePath: executable),
    root: root)
}

/// Every file and folder under `path`, relative to it.
private func contents(_ path: String) -> [String] {
  (FileManager.default.subpaths(atPath: path) ?? []).sorted()
}

@Suite("SuiteResolver")
struct SuiteResolverTests {
  @Test func standardSuite() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let location = try resolver("com.example.app", executable: "/opt/bin/app", root: root)
      .resolve(suiteName: nil)
    #expect(location.kind == .standard)
    #expect(location.domain == "com.example.app")
    #expect(location.containerURL == root.appContainerURL(for: "com.example.app"))
    #expect(
      location.preferencesDirectory.path == location.containerURL.path + "/Library/Preferences")
    #expect(location.fileURL.path == location.preferencesDirectory.path + "/com.example.app.plist")
    #expect(location.root == root)
  }

  @Test func groupSuiteForEntitledApps() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let app = try resolver("com.example.app", root: root).resolve(
      suiteName: "group.com.example.shared")
    let widget = try resolver("com.example.widget", root: root).resolve(
      suiteName: "group.com.example.shared")
    #expect(app.kind == .group)
    #expect(app.domain == "group.com.example.shared")
    #expect(app.containerURL == root.groupContainerURL(for: "group.com.example.shared"))
    #expect(
      app.fileURL.path == app.containerURL.path
        + "/Library/Preferences/group.com.example.shared.plist")
    // Both members reach the same file.
    #expect(app == widget)
  }

  @Test func unentitledGroupIsRefused() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let error = try #require(
      caught {
        try resolver("com.example.intruder", root: root).resolve(
          suiteName: "group.com.example.shared")
      })
    #expect(error.code == .notEntitled)
    #expect(
      error.message
        == "com.example.intruder is not entitled to group.com.example.shared "
        + "(manifest: \(root.manifestURL.path))"
    )
    // A member of one group is not entitled to another.
    let other = caught {
      try resolver("com.example.app", root: root).resolve(suiteName: "group.com.example.other")
    }
    #expect(other?.code == .notEntitled)
  }

  @Test func noManifestIsSaid() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    let error = try #require(
      caught {
        try resolver("com.example.app", root: root).resolve(suiteName: "group.com.example.shared")
      })
    #expect(error.code == .notEntitled)
    #expect(error.message.contains("(no manifest at \(root.manifestURL.path))"))
    // The standard and private suites need no manifest.
    #expect(try resolver("com.example.app", root: root).resolve(suiteName: nil).kind == .standard)
    #expect(
      try resolver("com.example.app", root: root).resolve(suiteName: "notes").kind == .privateSuite)
  }

  @Test(arguments: [
    "", "../../etc/x", "a/b", "a\0b", ".hidden", "my suite", String(repeating: "s", count: 256),
  ])
  func invalidSuiteNames(_ name: String) throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let error = try #require(
      caught { try resolver("com.example.app", root: root).resolve(suiteName: name) })
    #expect(error.code == .invalidName)
    #expect(error.message.hasPrefix("invalid suite name "))
  }

  @Test func suiteFileNamesMustFit() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let app = try resolver("com.example.app", root: root)
    let longest = String(repeating: "n", count: SuiteResolver.maximumDomainByteCount)
    #expect(try app.resolve(suiteName: longest).kind == .privateSuite)
    let error = caught { try app.resolve(suiteName: longest + "n") }
    #expect(error?.code == .invalidName)
    #expect(error?.message.contains("longer than 200 bytes (201)") == true)
    // The standard suite is named after the bundle identifier.
    let longApp = try resolver(String(repeating: "a", count: 230), root: root)
    #expect(caught { try longApp.resolve(suiteName: nil) }?.code == .invalidName)
    // A file named after the longest domain, with the longest suffix, can be created.
    let name = ".\(longest).plist.tmp-\(Int32.max)-\(UInt32.max)"
    #expect(name.utf8.count <= 255)
    #expect(FileManager.default.createFile(atPath: sandbox.path + "/" + name, contents: Data()))
  }

  @Test func invalidGroupNames() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let bare = caught { try resolver("com.example.app", root: root).resolve(suiteName: "group.") }
    #expect(bare?.code == .invalidName)
    #expect(bare?.message.contains("has nothing after 'group.'") == true)
    let escape = caught {
      try resolver("com.example.app", root: root).resolve(suiteName: "group.a/../../b")
    }
    #expect(escape?.code == .invalidName)
  }

  @Test func reservedSuiteNames() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let own = try #require(
      caught { try resolver("com.example.app", root: root).resolve(suiteName: "com.example.app") })
    #expect(own.code == .reservedSuiteName)
    #expect(own.message.contains("com.example.app's own bundle identifier"))
    #expect(own.message.contains("returns nil"))
    #expect(own.message.contains("suite name nil"))
    let global = try #require(
      caught { try resolver("com.example.app", root: root).resolve(suiteName: "NSGlobalDomain") })
    #expect(global.code == .reservedSuiteName)
    #expect(global.message.contains("global domain"))
    // Another app's bundle identifier is just a private suite name.
    #expect(
      try resolver("com.example.app", root: root).resolve(suiteName: "com.example.widget").kind
        == .privateSuite)
  }

  @Test func privateSuite() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let location = try resolver("com.example.app", root: root).resolve(
      suiteName: "com.example.app.notes")
    #expect(location.kind == .privateSuite)
    #expect(location.domain == "com.example.app.notes")
    #expect(location.containerURL == root.appContainerURL(for: "com.example.app"))
    #expect(
      location.fileURL.path.hasSuffix(
        "/Data/Application/com.example.app/Library/Preferences/com.example.app.notes.plist"))
    // Another app's private suite of the same name is elsewhere.
    let widget = try resolver("com.example.widget", root: root).resolve(
      suiteName: "com.example.app.notes")
    #expect(widget.fileURL != location.fileURL)
  }

  @Test func globalDomain() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    let location = try resolver("com.example.app", root: root).globalDomain()
    #expect(location.kind == .global)
    #expect(location.domain == "NSGlobalDomain")
    #expect(location.containerURL == root.globalContainerURL)
    #expect(location.fileURL == root.globalPreferencesURL)
    #expect(location.preferencesDirectory.path == root.path + "/Global/Library/Preferences")
  }

  @Test func resolvingCreatesNothing() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let before = contents(root.path)
    let resolver = try resolver("com.example.app", root: root)
    _ = try resolver.resolve(suiteName: nil)
    _ = try resolver.resolve(suiteName: "group.com.example.shared")
    _ = try resolver.resolve(suiteName: "private")
    _ = resolver.globalDomain()
    #expect(contents(root.path) == before)
  }

  @Test func executableMismatch() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let impostor = try resolver(
      "com.example.app", executable: "/opt/example/bin/widget", root: root)
    for name in [nil, "group.com.example.shared", "private"] as [String?] {
      let error = try #require(caught { try impostor.resolve(suiteName: name) })
      #expect(error.code == .executableMismatch)
      #expect(
        error.message
          == "com.example.app is bound to executable '/opt/bin/app' in \(root.manifestURL.path) "
          + "but this process runs /opt/example/bin/widget")
    }
    #expect(
      impostor.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.shared")
        == nil)
    // A program of the same name elsewhere is another program.
    let renamed = try resolver("com.example.app", executable: "/somewhere/else/app", root: root)
    #expect(caught { try renamed.resolve(suiteName: nil) }?.code == .executableMismatch)
    let genuine = try resolver("com.example.app", executable: "/opt/bin/app", root: root)
    #expect(try genuine.resolve(suiteName: "group.com.example.shared").kind == .group)
  }

  @Test func aBareNameFromAnOlderManifestBindsNoProgramAndSaysSo() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    // As earlier versions wrote it: a bare name, which any program of that name matched.
    try Data(
      """
      <?xml version="1.0" encoding="UTF-8"?>
      <plist version="1.0"><dict><key>com.example.widget</key><dict>
      <key>com.apple.security.application-groups</key><array><string>group.s</string></array>
      <key>executable</key><string>widget</string></dict></dict></plist>
      """.utf8
    ).write(to: root.manifestURL)
    let manifest = try EntitlementManifest.load(root: root)
    #expect(manifest.entries["com.example.widget"]?.executable == "widget")
    #expect(manifest.entries["com.example.widget"]?.executableIsBareName == true)
    for running in ["/opt/bin/widget", "/tmp/renamed-worker/widget"] {
      let error = try #require(
        caught { try resolver("com.example.widget", executable: running, root: root).resolve(suiteName: "group.s") })
      #expect(error.code == .executableMismatch)
      #expect(
        error.message
          == "com.example.widget is bound to 'widget' in \(root.manifestURL.path), a bare file"
          + " name, which any program of that name could claim; it binds no program until it"
          + " names one file: 'groupctl grant com.example.widget --executable PATH' (this"
          + " process runs \(running))")
    }
    // Rewriting the manifest for another app keeps the binding as written.
    try EntitlementManifest.grant("com.example.app", groups: ["group.s"], root: root)
    #expect(try EntitlementManifest.load(root: root).entries["com.example.widget"]?.executable == "widget")
    // A new bare binding is refused; a path is the fix.
    #expect(
      caught {
        try EntitlementManifest.grant("com.example.widget", groups: [], executable: "widget", root: root)
      }?.code == .invalidName)
    try EntitlementManifest.grant(
      "com.example.widget", groups: [], executable: "/opt/bin/widget", root: root)
    #expect(
      try resolver("com.example.widget", executable: "/opt/bin/widget", root: root)
        .resolve(suiteName: "group.s").kind == .group)
  }

  @Test func executableMatchByAbsolutePath() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    let binaries = sandbox.path + "/bin"
    try FileManager.default.createDirectory(atPath: binaries, withIntermediateDirectories: false)
    let real = try #require(Paths.realPath(binaries)) + "/tool"
    #expect(FileManager.default.createFile(atPath: real, contents: Data()))
    try EntitlementManifest.grant(
      "com.example.tool", groups: ["group.t"], executable: real, root: root)

    #expect(
      try resolver("com.example.tool", executable: real, root: root).resolve(suiteName: "group.t")
        .kind == .group)
    // Same file name, another folder: refused.
    let elsewhere = caught {
      try resolver("com.example.tool", executable: "/usr/local/bin/tool", root: root).resolve(
        suiteName: nil)
    }
    #expect(elsewhere?.code == .executableMismatch)
    #expect(elsewhere?.message.contains("bound to executable '\(real)'") == true)

    // A binding through a link matches the real path the process reports.
    let link = sandbox.path + "/tool-link"
    #expect(symlink(real, link) == 0)
    try EntitlementManifest.grant("com.example.linked", groups: [], executable: link, root: root)
    #expect(
      try resolver("com.example.linked", executable: real, root: root).resolve(suiteName: nil).kind
        == .standard)
  }

  @Test func identityWithoutExecutableIsNotChecked() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    #expect(try resolver("com.example.app", root: root).resolve(suiteName: nil).kind == .standard)
  }

  @Test func malformedManifestIsNeverNoEntitlements() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    try Data("<plist><array/></plist>".utf8).write(to: root.manifestURL)
    let resolver = try resolver("com.example.app", root: root)
    for name in [nil, "group.com.example.shared", "private"] as [String?] {
      let error = caught { try resolver.resolve(suiteName: name) }
      #expect(error?.code == .invalidManifest)
      #expect(error?.message.contains(root.manifestURL.path) == true)
    }
    let container = caught {
      try resolver.container(forSecurityApplicationGroupIdentifier: "group.x")
    }
    #expect(container?.code == .invalidManifest)
  }

  @Test func groupContainerURL() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let app = try resolver("com.example.app", root: root)
    let url = try #require(
      app.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.shared"))
    #expect(url == root.groupContainerURL(for: "group.com.example.shared"))
    // Created on first use, with its Library folders.
    var s = stat()
    #expect(stat(url.path + "/Library/Preferences", &s) == 0)
    #expect(s.st_mode & 0o7777 == 0o700)
    #expect(
      try app.container(forSecurityApplicationGroupIdentifier: "group.com.example.shared") == url)

    let intruder = try resolver("com.example.intruder", root: root)
    #expect(
      intruder.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.shared")
        == nil)
    let reason = caught {
      try intruder.container(forSecurityApplicationGroupIdentifier: "group.com.example.shared")
    }
    #expect(reason?.code == .notEntitled)
    #expect(
      reason?.message.contains("com.example.intruder is not entitled to group.com.example.shared")
        == true)
    #expect(
      app.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.other") == nil)
    #expect(
      !FileManager.default.fileExists(
        atPath: root.groupContainerURL(for: "group.com.example.other").path))
    let invalid = caught {
      try app.container(forSecurityApplicationGroupIdentifier: "com.example.shared")
    }
    #expect(invalid?.code == .invalidName)
  }

  @Test func grantAndRevokeApplyToTheNextResolution() throws {
    let sandbox = try Sandbox()
    let root = try exampleRoot(sandbox)
    let newcomer = try resolver("com.example.newcomer", root: root)
    #expect(
      caught { try newcomer.resolve(suiteName: "group.com.example.shared") }?.code == .notEntitled)
    try EntitlementManifest.grant(
      "com.example.newcomer", groups: ["group.com.example.shared"], root: root)
    #expect(try newcomer.resolve(suiteName: "group.com.example.shared").kind == .group)
    try EntitlementManifest.revoke(
      "com.example.newcomer", groups: ["group.com.example.shared"], root: root)
    #expect(
      caught { try newcomer.resolve(suiteName: "group.com.example.shared") }?.code == .notEntitled)
  }
}

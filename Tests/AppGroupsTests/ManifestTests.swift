import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

@testable import AppGroups


/// The committed example manifest, byte for byte (Containers/Entitlements.plist).
private let committedManifest = """
  <?xml version="1.0" encoding="UTF-8"?>
  <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
  <plist version="1.0">
  <dict>
  \t<key>com.example.app</key>
  \t<dict>
  \t\t<key>com.apple.developer.team-identifier</key>
  \t\t<string>EXAMPLE123</string>
  \t\t<key>com.apple.security.application-groups</key>
  \t\t<array>
  \t\t\t<string>group.com.example.shared</string>
  \t\t</array>
  \t\t<key>keychain-access-groups</key>
  \t\t<array>
  \t\t\t<string>EXAMPLE123.com.example.shared</string>
  \t\t</array>
  \t</dict>
  \t<key>com.example.widget</key>
  \t<dict>
  \t\t<key>com.apple.developer.team-identifier</key>
  \t\t<string>EXAMPLE123</string>
  \t\t<key>com.apple.security.application-groups</key>
  \t\t<array>
  \t\t\t<string>group.com.example.shared</string>
  \t\t</array>
  \t\t<key>keychain-access-groups</key>
  \t\t<array>
  \t\t\t<string>EXAMPLE123.com.example.shared</string>
  \t\t</array>
  \t</dict>
  </dict>
  </plist>

  """

/// An XML property list whose root dictionary's body is `body`.
func plist(_ body: String) -> String {
  """
  <?xml version="1.0" encoding="UTF-8"?>
  <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
  <plist version="1.0">
  \(body)
  </plist>
  """
}

/// An entry for com.example.app whose fields are `fields`.
func appEntry(_ fields: String) -> String {
  plist("<dict><key>com.example.app</key><dict>\(fields)</dict></dict>")
}

private let groupsKey = "<key>com.apple.security.application-groups</key>"

@Suite("EntitlementManifest")
struct ManifestTests {
  @Test func loadsTheCommittedFormat() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    try Data(committedManifest.utf8).write(to: root.manifestURL)
    let manifest = try EntitlementManifest.load(root: root)
    #expect(manifest.entries.count == 2)
    #expect(manifest.groups(for: "com.example.app") == ["group.com.example.shared"])
    // Bound to no executable: where the binaries are depends on where the package is.
    #expect(manifest.entries["com.example.widget"]?.executable == nil)
    #expect(manifest.isEntitled("com.example.widget", to: "group.com.example.shared"))
    #expect(!manifest.isEntitled("com.example.widget", to: "group.com.example.other"))
    #expect(!manifest.isEntitled("com.example.intruder", to: "group.com.example.shared"))
    #expect(manifest.groups(for: "com.example.intruder") == [])
    #expect(
      manifest.keychainAccessGroups(for: "com.example.widget") == [
        "EXAMPLE123.com.example.shared", "EXAMPLE123.com.example.widget", "group.com.example.shared",
      ])
    // Writing it back gives the same bytes: sorted keys, tabs, as Apple writes it.
    #expect(String(decoding: try manifest.propertyListData(), as: UTF8.self) == committedManifest)
  }

  @Test func committedFileIsTheFormat() throws {
    // The repository's own manifest, when the tests run from the package folder.
    let url = URL(fileURLWithPath: #filePath)
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Containers/Entitlements.plist")
    guard let data = try? Data(contentsOf: url) else { return }
    #expect(String(decoding: data, as: UTF8.self) == committedManifest)
  }

  @Test func roundTrip() throws {
    let sandbox = try Sandbox()
    let url = sandbox.url.appendingPathComponent("Entitlements.plist")
    let manifest = EntitlementManifest(entries: [
      "com.example.b": .init(
        applicationGroups: ["group.z", "group.a"], executable: "/opt/b & <c>"),
      "com.example.a": .init(applicationGroups: []),
      "com.example.c": .init(applicationGroups: ["group.c"], executable: "c"),
    ])
    let data = try manifest.propertyListData()
    let text = String(decoding: data, as: UTF8.self)
    // Keys sorted; the order of groups kept.
    let a = try #require(text.range(of: "com.example.a"))
    let b = try #require(text.range(of: "com.example.b"))
    let c = try #require(text.range(of: "com.example.c"))
    #expect(a.lowerBound < b.lowerBound && b.lowerBound < c.lowerBound)
    #expect(
      text.contains("\t\t<array>\n\t\t\t<string>group.z</string>\n\t\t\t<string>group.a</string>"))
    #expect(text.contains("&amp;"))
    try data.write(to: url)
    #expect(try EntitlementManifest.load(from: url) == manifest)
  }

  @Test func missingFileIsEmpty() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url.appendingPathComponent("nothing-here"))
    let manifest = try EntitlementManifest.load(root: root)
    #expect(manifest.entries.isEmpty)
    #expect(!manifest.isEntitled("com.example.app", to: "group.com.example.shared"))
    #expect(try EntitlementManifest.loadIfPresent(from: root.manifestURL) == nil)
  }

  @Test func unknownKeysAreIgnoredAndKept() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    let text = appEntry(
      "\(groupsKey)<array><string>group.x</string></array>"
        + "<key>com.apple.security.app-sandbox</key><true/>")
    try Data(text.utf8).write(to: root.manifestURL)
    #expect(try EntitlementManifest.load(root: root).groups(for: "com.example.app") == ["group.x"])
    try EntitlementManifest.grant("com.example.app", groups: ["group.y"], root: root)
    let written = try String(contentsOf: root.manifestURL, encoding: .utf8)
    #expect(written.contains("com.apple.security.app-sandbox"))
    #expect(
      try EntitlementManifest.load(root: root).groups(for: "com.example.app") == [
        "group.x", "group.y",
      ])
  }

  /// Each malformed manifest, and what its message must contain besides the path.
  static let malformed: [(name: String, text: String, expected: [String])] = [
    ("not a property list", "<plist><dict><key>a</key>", ["not a property list"]),
    ("empty file", "", ["not a property list"]),
    (
      "root is an array", plist("<array><string>a</string></array>"),
      ["root must be a dictionary", "found array"]
    ),
    ("root is a string", plist("<string>x</string>"), ["found string"]),
    (
      "entry not a dictionary", plist("<dict><key>com.example.app</key><string>x</string></dict>"),
      ["entry com.example.app: must be a dictionary, found string"]
    ),
    (
      "entry an array", plist("<dict><key>com.example.app</key><array/></dict>"),
      ["entry com.example.app: must be a dictionary, found array"]
    ),
    (
      "groups an integer", appEntry("\(groupsKey)<integer>3</integer>"),
      [
        "entry com.example.app: com.apple.security.application-groups "
          + "must be an array of strings, found integer"
      ]
    ),
    (
      "groups a string", appEntry("\(groupsKey)<string>group.x</string>"),
      ["entry com.example.app", "must be an array of strings, found string"]
    ),
    (
      "groups a dictionary", appEntry("\(groupsKey)<dict/>"),
      ["entry com.example.app", "found dictionary"]
    ),
    (
      "a group not a string",
      appEntry("\(groupsKey)<array><string>group.x</string><true/></array>"),
      ["entry com.example.app", "found boolean at index 1"]
    ),
    (
      "a group a real", appEntry("\(groupsKey)<array><real>1.5</real></array>"),
      ["entry com.example.app", "found real at index 0"]
    ),
    (
      "a group without the prefix",
      appEntry("\(groupsKey)<array><string>com.example.shared</string></array>"),
      [
        "entry com.example.app", "invalid group identifier \"com.example.shared\"",
        "does not start with 'group.'",
      ]
    ),
    (
      "a group with a slash", appEntry("\(groupsKey)<array><string>group.a/../b</string></array>"),
      ["entry com.example.app", "contains '/' at offset 7"]
    ),
    (
      "an invalid bundle identifier", plist("<dict><key>com.example/app</key><dict/></dict>"),
      ["entry \"com.example/app\"", "invalid bundle identifier", "contains '/' at offset 11"]
    ),
    (
      "a bundle identifier with a space", plist("<dict><key>my app</key><dict/></dict>"),
      ["entry \"my app\"", "contains ' ' at offset 2"]
    ),
    (
      "executable not a string", appEntry("<key>executable</key><false/>"),
      ["entry com.example.app: executable must be a string, found boolean"]
    ),
    (
      "executable an integer", appEntry("<key>executable</key><integer>7</integer>"),
      ["entry com.example.app", "found integer"]
    ),
    (
      "executable empty", appEntry("<key>executable</key><string></string>"),
      ["entry com.example.app", "executable \"\": empty"]
    ),
    (
      "executable relative", appEntry("<key>executable</key><string>bin/app</string>"),
      ["entry com.example.app", "relative path"]
    ),
  ]

  @Test(arguments: 0..<malformed.count)
  func malformedManifestIsAnErrorNeverEmpty(_ index: Int) throws {
    let (name, text, expected) = Self.malformed[index]
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    try Data(text.utf8).write(to: root.manifestURL)
    let error = try #require(caught { try EntitlementManifest.load(root: root) }, "\(name)")
    #expect(error.code == .invalidManifest, "\(name)")
    #expect(error.message.hasPrefix(root.manifestURL.path + ": "), "\(name): \(error.message)")
    for part in expected {
      #expect(error.message.contains(part), "\(name): \(error.message)")
    }
    // An update refuses to overwrite it.
    let grant = caught {
      try EntitlementManifest.grant("com.example.other", groups: ["group.x"], root: root)
    }
    #expect(grant?.code == .invalidManifest, "\(name)")
    #expect(try Data(contentsOf: root.manifestURL) == Data(text.utf8), "\(name)")
  }

  @Test func unreadableManifestIsAnError() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    // A folder where the file should be: open succeeds, read fails (EISDIR), even as root.
    try FileManager.default.createDirectory(
      at: root.manifestURL, withIntermediateDirectories: false)
    let error = try #require(caught { try EntitlementManifest.load(root: root) })
    #expect(error.code == .invalidManifest)
    #expect(error.message.hasPrefix(root.manifestURL.path + ": cannot be read"))
  }

  @Test func binaryManifestIsRead() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    let object: [String: Any] = [
      "com.example.app": [EntitlementManifest.applicationGroupsKey: ["group.b"]]
    ]
    let data = try PropertyListSerialization.data(
      fromPropertyList: object, format: .binary, options: 0)
    try data.write(to: root.manifestURL)
    #expect(try EntitlementManifest.load(root: root).groups(for: "com.example.app") == ["group.b"])
  }

  @Test func grantAndRevoke() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url.appendingPathComponent("new-root"))
    // The root is created by the first grant.
    let granted = try EntitlementManifest.grant(
      "com.example.app", groups: ["group.a", "group.b"], executable: "/usr/bin/app", root: root)
    #expect(granted.groups(for: "com.example.app") == ["group.a", "group.b"])
    var s = stat()
    #expect(stat(root.manifestURL.path, &s) == 0)
    #expect(s.st_mode & 0o777 == 0o600)

    // No duplicates; order kept; executable unchanged when not given.
    try EntitlementManifest.grant(
      "com.example.app", groups: ["group.b", "group.c", "group.a"], root: root)
    var loaded = try EntitlementManifest.load(root: root)
    #expect(loaded.groups(for: "com.example.app") == ["group.a", "group.b", "group.c"])
    #expect(loaded.entries["com.example.app"]?.executable == "/usr/bin/app")
    try EntitlementManifest.grant("com.example.app", groups: [], executable: "/opt/app", root: root)
    #expect(
      try EntitlementManifest.load(root: root).entries["com.example.app"]?.executable == "/opt/app")

    // Revoking groups keeps the rest and the binding.
    try EntitlementManifest.revoke("com.example.app", groups: ["group.b"], root: root)
    loaded = try EntitlementManifest.load(root: root)
    #expect(loaded.groups(for: "com.example.app") == ["group.a", "group.c"])
    #expect(loaded.entries["com.example.app"]?.executable == "/opt/app")

    // A group it does not hold: .notFound naming it, and nothing changes.
    let missingGroup = caught {
      try EntitlementManifest.revoke(
        "com.example.app", groups: ["group.a", "group.zzz"], root: root)
    }
    #expect(missingGroup?.code == .notFound)
    #expect(missingGroup?.message.contains("group.zzz") == true)
    #expect(
      try EntitlementManifest.load(root: root).groups(for: "com.example.app") == [
        "group.a", "group.c",
      ])

    // No groups: the whole entry goes.
    try EntitlementManifest.revoke("com.example.app", root: root)
    #expect(try EntitlementManifest.load(root: root).entries["com.example.app"] == nil)

    let missingApp = caught { try EntitlementManifest.revoke("com.example.app", root: root) }
    #expect(missingApp?.code == .notFound)
    #expect(
      missingApp?.message.contains("com.example.app has no entry in \(root.manifestURL.path)")
        == true)
  }

  @Test func grantValidatesNames() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    #expect(
      caught { try EntitlementManifest.grant("bad id", groups: ["group.a"], root: root) }?.code
        == .invalidName)
    #expect(
      caught { try EntitlementManifest.grant("com.a", groups: ["shared"], root: root) }?.code
        == .invalidName)
    #expect(
      caught { try EntitlementManifest.grant("com.a", groups: [], executable: "x/y", root: root) }?
        .code
        == .invalidName)
    // A bare name would bind every program of that name.
    let bare = caught { try EntitlementManifest.grant("com.a", groups: [], executable: "x", root: root) }
    #expect(bare?.code == .invalidName)
    #expect(bare?.message.contains("a binding names one file, by its absolute path") == true)
    #expect(!FileManager.default.fileExists(atPath: root.manifestURL.path))
    // An update body cannot write an invalid name either.
    let invalid = caught {
      try EntitlementManifest.update(root: root) {
        $0.entries["../x"] = .init(applicationGroups: [])
      }
    }
    #expect(invalid?.code == .invalidName)
    #expect(
      caught { try EntitlementManifest(entries: ["a/b": .init()]).propertyListData() }?.code
        == .invalidName)
  }

  @Test func updateBodyErrorWritesNothing() throws {
    struct Stop: Error {}
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    try EntitlementManifest.grant("com.example.app", groups: ["group.a"], root: root)
    let before = try Data(contentsOf: root.manifestURL)
    #expect(throws: Stop.self) {
      try EntitlementManifest.update(root: root) { manifest in
        manifest.entries = [:]
        throw Stop()
      }
    }
    #expect(try Data(contentsOf: root.manifestURL) == before)
  }

  @Test func lockTimeoutNamesTheLockFile() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    // Another open file description holds the lock, as another process would.
    let holder = try LockedFile(path: root.manifestURL.path + ".lock")
    #expect(holder.tryLock())
    defer { holder.unlock() }
    let started = ContinuousClock.now
    let error = caught {
      try EntitlementManifest.update(root: root, timeout: .milliseconds(300)) { manifest in
        manifest.entries["com.example.app"] = .init(applicationGroups: ["group.a"])
      }
    }
    #expect(error?.code == .lockTimeout)
    #expect(error?.message.contains(root.manifestURL.path + ".lock") == true)
    #expect(ContinuousClock.now - started >= .milliseconds(300))
    #expect(!FileManager.default.fileExists(atPath: root.manifestURL.path))
  }

  @Test func concurrentGrantsAllLand() async throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    let apps = ["com.example.one", "com.example.two", "com.example.three"]
    let rounds = 20
    // One thread per app, all granting at once through `update`.
    let failures = await withTaskGroup(of: [String].self) { group in
      for app in apps {
        group.addTask {
          await withCheckedContinuation { (continuation: CheckedContinuation<[String], Never>) in
            let thread = Thread {
              var failures: [String] = []
              for round in 0..<rounds {
                do {
                  try EntitlementManifest.update(root: root) { manifest in
                    var entry = manifest.entries[app] ?? .init()
                    entry.applicationGroups.append("group.\(app).\(round)")
                    manifest.entries[app] = entry
                  }
                } catch {
                  failures.append("\(app) round \(round): \(error)")
                }
              }
              continuation.resume(returning: failures)
            }
            thread.start()
          }
        }
      }
      var all: [String] = []
      for await failures in group { all += failures }
      return all
    }
    #expect(failures.isEmpty, "\(failures.count) failed updates, first: \(failures.prefix(2))")
    let manifest = try EntitlementManifest.load(root: root)
    for app in apps {
      #expect(manifest.groups(for: app) == (0..<rounds).map { "group.\(app).\($0)" })
    }
    // No temporary file left behind.
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: root.path)
      .filter { $0.hasPrefix(".") }
    #expect(leftovers == [])
  }
}

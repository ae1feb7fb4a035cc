import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("groupctl doctor", .processBound)
struct GroupctlDoctorTests {
  static let group = TestRoot.group

  /// A root with a manifest, a group suite, an app suite and a forced value.
  private func healthyRoot(_ name: String = #function) throws -> GroupctlRoot {
    let g = try GroupctlRoot(name)
    try g.ok(["write", Self.group, "k", "v"])
    try g.ok(["write", TestRoot.app, "k", "v"])
    try g.ok(["force", Self.group, "f", "v"])
    return g
  }

  private var preferences: (GroupctlRoot) -> String {
    { $0.t.groupSuiteFile.deletingLastPathComponent().path }
  }

  @Test func aHealthyRootPasses() throws {
    let g = try healthyRoot()
    let result = try g.run(["doctor"])
    #expect(result.status == 0, "\(result.stdout)")
    #expect(result.stdout.contains("ok: manifest \(g.root.manifestURL.path): 2 apps, 1 group"))
    #expect(result.stdout.hasSuffix("No problems found in \(g.path).\n"))
    #expect(!result.stdout.contains("problem:"))
  }

  struct Damage: Sendable, CustomTestStringConvertible {
    var testDescription: String
    /// Damages the root; returns the path the finding must name.
    var apply: @Sendable (GroupctlRoot) throws -> String
    /// What the finding says, and what its advice says.
    var message: String
    var advice: String
  }

  @Test(arguments: [
    Damage(
      testDescription: "temporary file of a writer that is gone",
      apply: { g in
        let path =
          g.t.groupSuiteFile.deletingLastPathComponent().path
          + "/.\(TestRoot.group).plist.tmp-99999999-42"
        try Data("partial".utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
      }, message: "is a temporary file left by a writer that was stopped mid-write",
      advice: "rm '"),
    Damage(
      testDescription: "temporary file of a writer that is gone, in the staging folder",
      apply: { g in
        let staging = g.t.groupSuiteFile.deletingLastPathComponent().path + "/.staging"
        try FileManager.default.createDirectory(
          atPath: staging, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = staging + "/.\(TestRoot.group).plist.tmp-99999999-42"
        try Data("partial".utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
      }, message: "is a temporary file left by a writer that was stopped mid-write",
      advice: "rm '"),
    Damage(
      testDescription: "quarantined file",
      apply: { g in
        let path = g.t.groupSuiteFile.path + ".unreadable-20260101T000000Z"
        try #require(
          FileManager.default.createFile(
            atPath: path, contents: Data("junk".utf8), attributes: [.posixPermissions: 0o600]))
        return path
      }, message: "could not be read and was moved aside",
      advice: "restore what you need with groupctl import"),
    Damage(
      testDescription: "damaged journal",
      apply: { g in
        try g.ok(["import", TestRoot.group, "-"], stdin: try TestRoot.largeSuitePlist())
        try g.ok(["write", TestRoot.group, "first", "1"])
        try g.ok(["write", TestRoot.group, "second", "2"])
        // A flipped byte in the last record's payload, within the published length.
        let journal = g.t.groupSuiteFile.path + ".journal"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: journal))
        bytes[bytes.count - 5] ^= 0xff
        try bytes.write(to: URL(fileURLWithPath: journal))
        return journal
      }, message: "cannot be read whole: bytes ",
      advice: "write any key of the suite"),
    Damage(
      testDescription: "journal kept aside",
      apply: { g in
        let path = g.t.groupSuiteFile.path + ".journal.unreadable-20260101T000000Z"
        try #require(
          FileManager.default.createFile(
            atPath: path, contents: Data("junk".utf8), attributes: [.posixPermissions: 0o600]))
        return path
      }, message: "is a suite's journal that could not be read whole, moved aside",
      advice: "restore what you need with groupctl write"),
    Damage(
      testDescription: "temporary journal of a writer that is gone",
      apply: { g in
        let path =
          g.t.groupSuiteFile.deletingLastPathComponent().path
          + "/.\(TestRoot.group).plist.journal.tmp-99999999-42"
        try Data("partial".utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
      }, message: "is a temporary file left by a writer that was stopped mid-write",
      advice: "rm '"),
    Damage(
      testDescription: "unreadable preferences file",
      apply: { g in
        try Data("junk <".utf8).write(to: g.t.groupSuiteFile)
        return g.t.groupSuiteFile.path
      }, message: "cannot be read (the 6-byte property list is neither binary nor valid XML or OpenStep text",
      advice: "plutil -p"),
    Damage(
      testDescription: "unreadable managed file",
      apply: { g in
        let url = g.managedFile(TestRoot.group)
        try Data("junk <".utf8).write(to: url)
        return url.path
      }, message: "its forced values are ignored", advice: "force the values again"),
    Damage(
      testDescription: "folder open to others",
      apply: { g in
        let path = g.root.groupContainerURL(for: TestRoot.group).path
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        return path
      }, message: "has mode 0755, not 0700", advice: "chmod 700 '"),
    Damage(
      testDescription: "file readable by others",
      apply: { g in
        let path = g.t.groupSuiteFile.path
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        return path
      }, message: "has mode 0644, not 0600", advice: "chmod 600 '"),
    Damage(
      testDescription: "symbolic link out of the root",
      apply: { g in
        let path = g.root.appContainerURL(for: "com.example.linked").path
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/tmp")
        return path
      }, message: "is a symbolic link to /tmp, outside the root", advice: "replace it"),
    Damage(
      testDescription: "bound executable missing",
      apply: { g in
        try g.ok(["grant", "com.example.bound", TestRoot.group, "--executable", "/no/such/exe"])
        return "com.example.bound is bound to the executable /no/such/exe"
      }, message: "no process can claim com.example.bound", advice: "groupctl revoke"),
    Damage(
      testDescription: "bare-name binding of an older manifest",
      apply: { g in
        _ = try EntitlementManifest.update(root: g.root) { manifest in
          manifest.entries["com.example.legacy"] = .init(
            applicationGroups: [TestRoot.group], executable: "widget")
        }
        return "com.example.legacy is bound to 'widget', a bare file name"
      }, message: "it binds no program, so every process is refused com.example.legacy",
      advice: "groupctl grant com.example.legacy --executable PATH"),
    Damage(
      testDescription: "manifest that does not load",
      apply: { g in
        try Data("<plist><array/></plist>".utf8).write(to: g.root.manifestURL)
        return g.root.manifestURL.path
      }, message: "the manifest cannot be used", advice: "plutil -lint"),
  ])
  func eachProblemIsFoundWithWhatToDo(_ damage: Damage) throws {
    let g = try healthyRoot()
    let subject = try damage.apply(g)
    let result = try g.run(["doctor"])
    #expect(result.status == 1, "\(result.stdout)")
    let lines = result.stdout.split(separator: "\n").map(String.init)
    let index = try #require(
      lines.firstIndex {
        $0.hasPrefix("problem: ") && $0.contains(subject) && $0.contains(damage.message)
      }, "\(result.stdout)")
    #expect(lines[index + 1].hasPrefix("  fix: "))
    #expect(lines[index + 1].contains(damage.advice), "\(lines[index + 1])")
    #expect(result.stdout.hasSuffix("found in \(g.path).\n"))
  }

  @Test func aLockLeftBehindIsANoteAndOneInUseIsLeftAlone() throws {
    let g = try healthyRoot()
    // A suite opened and never written leaves its lock file without a plist:
    // that is normal (the global domain's, here), and not reported.
    let healthy = try g.run(["doctor"])
    #expect(healthy.status == 0, "\(healthy.stdout)")
    #expect(!healthy.stdout.contains(".lock"), "\(healthy.stdout)")

    // A watch holds the lock open: the plist may go, the lock is left alone.
    try g.ok(["write", "com.example.fresh", "k", "v"])
    let child = try ChildProcess(
      "groupctl", ["--root", g.path, "watch", "com.example.fresh"],
      environment: ["APPGROUPS_ROOT": g.path])
    #expect(child.waitForError("watching com.example.fresh (Ctrl-C to stop)"))
    let plist = g.appFile("com.example.fresh")
    let lock = plist.path + ".lock"
    try FileManager.default.removeItem(at: plist)
    #expect(child.waitForLine(timeout: 10) == "k deleted")
    let during = try g.run(["doctor"])
    #expect(during.status == 0, "\(during.stdout)")
    #expect(!during.stdout.contains(lock))
    child.signal(SIGINT)
    #expect(child.wait(timeout: 10) == 0)

    // Once nobody has it open, it is a note: harmless, and how to tidy up.
    let after = try g.run(["doctor"])
    #expect(after.status == 0, "\(after.stdout)")
    let lines = after.stdout.split(separator: "\n").map(String.init)
    let index = try #require(lines.firstIndex { $0.hasPrefix("note: \(lock) was left behind") })
    #expect(lines[index + 1] == "  fix: rm '\(lock)' to tidy up")
  }

  @Test func aTemporaryFileOfALiveWriterIsLeftAlone() throws {
    let g = try healthyRoot()
    let path =
      g.t.groupSuiteFile.deletingLastPathComponent().path
      + "/.\(TestRoot.group).plist.tmp-\(getpid())-7"
    try #require(
      FileManager.default.createFile(
        atPath: path, contents: Data(), attributes: [.posixPermissions: 0o600]))
    let result = try g.run(["doctor"])
    #expect(result.status == 0, "\(result.stdout)")
    #expect(result.stdout.contains("note: \(path) is being written by process \(getpid())"))
  }

  @Test func aMissingRootIsAProblem() throws {
    let g = try GroupctlRoot()
    let missing = g.path + "/nowhere"
    let result = try Product.run("groupctl", ["--root", missing, "doctor"])
    #expect(result.status == 1)
    #expect(result.stdout.contains("problem: the root \(missing) does not exist"))
    #expect(!FileManager.default.fileExists(atPath: missing))
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// One file, one verdict: `groupctl` (read, export, report, schema, doctor) and an app read a
/// suite's file through the same reader, so they never disagree about what is in it.
@Suite("One reader, one verdict", .processBound)
struct OneVerdictTests {
  let group = TestRoot.group

  /// `{"good": "yes", "archived": <uid 3>}`: a keyed archive's uid, which no property-list
  /// API hands out as a value.
  static let withUID = CraftedPropertyList.file(
    objects: [
      [0xD2, 1, 2, 3, 4], CraftedPropertyList.ascii("good"), CraftedPropertyList.ascii("archived"),
      CraftedPropertyList.ascii("yes"), [0x80, 3],
    ], referenceSize: 1)

  private func copies(_ g: GroupctlRoot) throws -> [String] {
    let folder = g.t.groupSuiteFile.deletingLastPathComponent().path
    return try FileManager.default.contentsOfDirectory(atPath: folder)
      .filter { $0.hasPrefix(TestRoot.group + ".plist.unreadable-") }
  }

  @Test func aValueThatCannotBeReadCostsToolsNoMoreThanItCostsApps() throws {
    let g = try GroupctlRoot()
    try FileManager.default.createDirectory(
      at: g.t.groupSuiteFile.deletingLastPathComponent(), withIntermediateDirectories: true,
      attributes: [.posixPermissions: 0o700])
    try Self.withUID.write(to: g.t.groupSuiteFile)

    // groupctl reads the other keys, as an app does, and says what it left out.
    let read = try g.run(["read", group])
    #expect(read.status == 0, "\(read.stderr)")
    #expect(read.stdout.contains("good = yes"), "\(read.stdout)")
    #expect(read.stderr.contains("\"archived\"") && read.stderr.contains("left out"), "\(read.stderr)")
    #expect(try g.ok(["read", group, "good"]) == "yes\n")
    let export = try g.run(["export", group, "-"])
    #expect(export.status == 0, "\(export.stderr)")
    #expect(try g.ok(["report", group]).contains("  good "))
    let before = try g.run(["doctor"])
    #expect(before.stdout.contains("1 value(s) cannot be read: \"archived\""), "\(before.stdout)")
    #expect(!before.stdout.contains("reads as empty"), "\(before.stdout)")

    // Two apps open it: the same keys; one copy of the whole file is kept aside.
    var environment = g.t.environment(as: TestRoot.widget)
    environment["APPGROUPS_WORKER_NO_WAIT"] = "1"
    for _ in 0..<2 {
      let app = try Product.run("appgroups-worker", ["get", group, "good"], environment: environment)
      #expect(app.stdout == "yes\n", "\(app.stderr)")
    }
    let kept = try copies(g)
    #expect(kept.count == 1, "\(kept)")
    let after = try g.run(["doctor"])
    #expect(after.stdout.contains("is a copy of \(g.t.groupSuiteFile.path), kept when 1 of its values could not be read"), "\(after.stdout)")
    #expect(!after.stdout.contains("started again empty"), "\(after.stdout)")
  }

  @Test(arguments: [["-string", "2"], ["-float", "3.5"], ["-string", "abc"], ["-bool", "true"], ["-int", "-1"]])
  func aSchemaMarkerThatIsNotAVersionIsMalformedForAppsAndGroupctlAlike(_ marker: [String]) throws {
    let g = try GroupctlRoot()
    try g.ok(["write", group, "unread", "-int", "5"])
    try g.ok(["write", group, "AppGroupsSchemaVersion"] + marker)

    let schema = try g.run(["schema", group])
    #expect(schema.status == 1)
    #expect(schema.stderr.contains("not a schema version"), "\(schema.stderr)")
    #expect(try g.ok(["report", group]).contains("not a version number"))
    let doctor = try g.run(["doctor"])
    #expect(doctor.status == 1)
    #expect(doctor.stdout.contains("its schema marker AppGroupsSchemaVersion holds"), "\(doctor.stdout)")

    // An app registering its schema (version 2: unread -> unreadCount) migrates nothing.
    let app = try Product.run(
      "appgroups-worker", ["migrate", group],
      environment: g.t.environment(as: TestRoot.app).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(app.status == 1)
    #expect(app.stderr.contains("not a version (an integer of 0 or more)"), "\(app.stderr)")
    #expect(app.stderr.contains("outcome=malformedMarker-not-migrated"), "\(app.stderr)")
    let onDisk = try TestRoot.readOnDisk(g.t.groupSuiteFile)
    #expect(onDisk["unread"] as? Int == 5)
    #expect(onDisk["unreadCount"] == nil)
  }

  @Test func aVersionIsReadAsOneVersionEverywhere() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", group, "AppGroupsSchemaVersion", "-int", "2"])
    #expect(try g.ok(["schema", group]) == "2\n")
    let app = try Product.run(
      "appgroups-worker", ["migrate", group],
      environment: g.t.environment(as: TestRoot.app).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(app.stdout.contains("up-to-date 2"), "\(app.stdout) \(app.stderr)")
    #expect(try g.run(["doctor"]).status == 0)
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("Schema: groupctl report and schema", .processBound)
struct SchemaGroupctlTests {
  let group = TestRoot.group

  @Test func theReportListsKeysTypesAndDomainsInOrderWithoutValues() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", group, "theme", "sepia-secret"])
    try g.ok(["write", group, "unreadCount", "-int", "31337"])
    try g.ok(["write", group, "AppGroupsSchemaVersion", "-int", "2"])
    try g.ok(["write", "-g", "theme", "light"])
    try g.ok(["force", group, "unreadCount", "-int", "0"])
    let report = try g.ok(["report", group, "--", "-greeting", "hello-secret"])
    let lines = report.split(separator: "\n").map(String.init)
    #expect(lines.contains("schema: version 2 (AppGroupsSchemaVersion)"), "\(report)")
    let domains = lines.compactMap { line -> String? in
      let word = line.trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init)
      return ["managed", "argument", "application", "global", "registration"].contains(word ?? "") ? word : nil
    }
    #expect(domains == ["managed", "argument", "application", "global", "registration"])
    #expect(lines.contains { $0.hasPrefix("  theme ") && $0.hasSuffix("string      application > global") }, "\(report)")
    #expect(lines.contains { $0.hasPrefix("  unreadCount ") && $0.hasSuffix("integer     managed > application") }, "\(report)")
    #expect(lines.contains { $0.hasPrefix("  greeting ") && $0.hasSuffix("string      argument") }, "\(report)")
    for secret in ["sepia-secret", "31337", "hello-secret", "light"] {
      #expect(!report.contains(secret), "the report shows a value: \(secret)")
    }
    let withValues = try g.ok(["report", group, "--values"])
    #expect(withValues.contains("= sepia-secret"), "\(withValues)")
    #expect(withValues.contains("= 0"), "the managed value wins: \(withValues)")
  }

  @Test func theReportAsAnAppIsRefusedWhereTheAppIs() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", group, "k", "v"])
    let refused = try g.run(["--as", "com.example.stranger", "report", group])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("com.example.stranger is not entitled to group.com.example.shared"))
    let allowed = try g.ok(["--as", TestRoot.widget, "report", group])
    #expect(allowed.contains("as com.example.widget"))
    #expect(allowed.contains("schema: no marker (AppGroupsSchemaVersion): version 0"))
  }

  @Test func schemaPrintsTheRecordedVersion() throws {
    let g = try GroupctlRoot()
    let missing = try g.run(["schema", group])
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("Domain group.com.example.shared does not exist"))
    try g.ok(["write", group, "unread", "-int", "3"])
    #expect(try g.ok(["schema", group]) == "0\n")
    let d = try g.t.defaults(group)
    try d.register(PreferenceSchema(
      version: 2, keys: [PreferenceKey<Int>("unreadCount", default: 0)],
      migrations: [Migration(to: 2, [.rename("unread", to: PreferenceKey<Int>("unreadCount", default: 0))])]))
    #expect(try g.ok(["schema", group]) == "2\n")
    #expect(try g.ok(["--as", TestRoot.app, "schema", group]) == "2\n")
    try g.ok(["write", group, "AppGroupsSchemaVersion", "two"])
    let bad = try g.run(["schema", group])
    #expect(bad.status == 1)
    #expect(bad.stderr.contains("AppGroupsSchemaVersion holds a string, not a schema version"), "\(bad.stderr)")
    let usage = try g.run(["schema"])
    #expect(usage.status == 64)
  }
}

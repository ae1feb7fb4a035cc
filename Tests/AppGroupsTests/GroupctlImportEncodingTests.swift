import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// `groupctl import` and `export` with files in odd encodings and with values at the edges of
/// what a property list holds.
@Suite("groupctl import: encodings and edge values", .processBound)
struct GroupctlImportEncodingTests {
  static let app = TestRoot.app

  /// A date far beyond any calendar's years (a binary property list holds any double) is
  /// imported, read and exported; reading it prints it rather than ending the process.
  @Test func aDateBeyondTheYearsOfWholeSecondsIsReadWithoutACrash() throws {
    let g = try GroupctlRoot()
    let values: [String: PropertyListValue] = [
      "far": .date(Date(timeIntervalSinceReferenceDate: 1e19)),
      "farther": .date(Date(timeIntervalSinceReferenceDate: 1e300)),
      "before": .date(Date(timeIntervalSinceReferenceDate: -1e19)),
    ]
    try g.ok(["import", Self.app, "-"], stdin: PropertyListValue.dictionary(values).propertyListData())
    for key in ["far", "farther", "before"] {
      let one = try g.run(["read", Self.app, key])
      #expect(one.status == 0, "\(key): \(one.stderr)")
      #expect(!one.stdout.isEmpty && !one.stderr.contains("crashed"), "\(key): \(one.stderr)")
    }
    let far = try g.run(["read", Self.app, "far"])
    #expect(far.stdout.hasPrefix("316887387069-"), "\(far.stdout)")
    let farther = try g.run(["read", Self.app, "farther"])
    #expect(farther.stdout == "1e+300 seconds from 1970-01-01 00:00:00 +0000\n", "\(farther.stdout)")
    let all = try g.run(["read", Self.app])
    #expect(all.status == 0, "\(all.stderr)")
    let file = g.t.sandbox.url.appendingPathComponent("far.plist")
    try g.ok(["export", Self.app, file.path])
    #expect(try PropertyListValue(propertyListData: Data(contentsOf: file)) == .dictionary(values))
  }
}

@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// A commit of many changes (a burst's, the one `synchronize()` waits for at its end) may fill a
/// large suite's journal up to a quarter of the plist, instead of rewriting the whole domain
/// once more; the next small commit folds it into the plist. Another process reads what was
/// appended, a writer killed after its acknowledgement loses nothing, and a commit too large
/// for the journal rewrites the plist.
@Suite("Journal: a burst's commit appended", .processBound)
struct JournalBurstTests {
  /// The suite with the large base in its plist (written by Foundation), opened.
  private func largeSuite(_ t: TestRoot) throws -> GroupDefaults {
    try t.writeLargeSuitePlist()
    let d = try t.defaults(TestRoot.group)
    #expect(d.string(forKey: "base-0") == "value-0-of-the-large-base")
    return d
  }

  private func journal(_ t: TestRoot) -> String { t.groupSuiteFile.path + ".journal" }

  private func size(_ path: String) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int
  }

  @Test func aCommitOfManyChangesIsAppendedAndTheNextSmallCommitFoldsIt() throws {
    let t = try TestRoot()
    let d = try largeSuite(t)
    let plist = try Data(contentsOf: t.groupSuiteFile)
    let count = 400
    // One commit of 400 changes: about 8 KB of record, past a small commit's bound.
    try d.view.suite.transaction(timeout: .seconds(10)) { _ in
      var changes: [String: PropertyListValue?] = [:]
      for i in 0..<count { changes["t-\(i)"] = .string("v\(i)") }
      return changes
    }
    #expect(try Data(contentsOf: t.groupSuiteFile) == plist, "the plist was rewritten")
    let journalSize = try #require(size(journal(t)))
    #expect(journalSize > SuiteJournal.smallCommitBound(forPlistSize: plist.count))
    #expect(journalSize <= SuiteJournal.bound(forPlistSize: plist.count))
    // Another process, and Foundation alone, read what was appended.
    let seen = try #require(try t.readGroupSuite(prefix: "t-"))
    #expect(seen.count == count)
    #expect((0..<count).allSatisfy { seen["t-\($0)"] == "v\($0)" })
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["t-399"] as? String == "v399")
    #expect(onDisk.count == TestRoot.largeSuiteCount + count)
    // A small commit finds the journal past its own bound: it rewrites the plist.
    d.set("small", forKey: "t-small")
    #expect(d.synchronize())
    #expect(try Data(contentsOf: t.groupSuiteFile) != plist, "the journal was not folded into the plist")
    #expect((size(journal(t)) ?? 0) <= SuiteJournal.smallCommitBound(forPlistSize: size(t.groupSuiteFile.path) ?? 0))
    let folded = try TestRoot.readPlist(t.groupSuiteFile)
    #expect(folded["t-0"] as? String == "v0")
    #expect(folded["t-small"] as? String == "small")
    #expect(try t.readGroupSuite(prefix: "t-")?.count == count + 1)
  }

  @Test func aCommitTooLargeForTheJournalRewritesThePlist() throws {
    let t = try TestRoot()
    let d = try largeSuite(t)
    let plist = try Data(contentsOf: t.groupSuiteFile)
    // About 60 KB of record: more than a quarter of the plist.
    try d.view.suite.transaction(timeout: .seconds(10)) { _ in
      var changes: [String: PropertyListValue?] = [:]
      for i in 0..<3_000 { changes["big-\(i)"] = .string("value \(i)") }
      return changes
    }
    #expect(try Data(contentsOf: t.groupSuiteFile) != plist)
    #expect(size(journal(t)) == nil)
    #expect(try t.readGroupSuite(prefix: "big-")?.count == 3_000)
  }

  @Test func aWriterKilledAfterItsBurstWasAcknowledgedLosesNothing() throws {
    let t = try TestRoot()
    _ = try largeSuite(t)
    let writer = try ChildProcess(
      "appgroups-worker", ["write-keys", TestRoot.group, "w", "3000"], environment: t.environment(as: TestRoot.widget))
    #expect(writer.waitFor("ready"), "\(writer.standardError)")
    writer.send("go")
    #expect(writer.waitFor("synced", timeout: 60), "\(writer.standardError)")
    // Killed while it waits: no flush at exit, nothing but what `synchronize()` acknowledged.
    writer.signal(SIGKILL)
    #expect(writer.wait() == SIGKILL)
    let seen = try #require(try t.readGroupSuite(prefix: "w-"))
    #expect(seen.count == 3000)
    #expect((0..<3000).allSatisfy { seen["w-\($0)"] == "\($0)" })
    let base = try #require(try t.readGroupSuite(prefix: "base-"))
    #expect(base.count == TestRoot.largeSuiteCount)
  }
}

@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// A large suite's small commits go to its journal (`<suite>.plist.journal`): one append and
/// one `fdatasync(2)` instead of the whole domain rewritten. Other processes read the plist
/// and the journal; the journal is folded back into the plist as it grows; a torn, forged or
/// damaged record, and a plist replaced from outside, never show a value that was not
/// acknowledged, and never cost one that was.
@Suite("Journal: small commits to a large suite", .processBound)
struct JournalTests {
  private static let baseCount = TestRoot.largeSuiteCount

  /// The suite with its base keys in the plist (written by Foundation, so that no commit of
  /// the base itself went to a journal), opened.
  private func largeSuite(_ t: TestRoot) throws -> GroupDefaults {
    try t.writeLargeSuitePlist()
    let d = try t.defaults(TestRoot.group)
    #expect(d.string(forKey: "base-0") == "value-0-of-the-large-base")
    let size = try #require(try FileManager.default.attributesOfItem(atPath: t.groupSuiteFile.path)[.size] as? Int)
    #expect(size > 16 * 1024)
    return d
  }

  private func journal(_ t: TestRoot) -> String { t.groupSuiteFile.path + ".journal" }

  private func size(_ path: String) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int
  }

  /// The values a new process reads for keys starting with `prefix`.
  private func read(_ t: TestRoot, _ prefix: String) throws -> [String: String] {
    try #require(try t.readGroupSuite(prefix: prefix))
  }

  @Test func aSmallCommitToALargeSuiteIsAppendedAndAnotherProcessReadsIt() throws {
    let t = try TestRoot()
    let d = try largeSuite(t)
    let plist = try Data(contentsOf: t.groupSuiteFile)
    d.set("new", forKey: "k-0")
    #expect(d.synchronize())
    d.set(nil, forKey: "base-7")
    #expect(d.synchronize())
    // The plist was not rewritten: the two commits are in the journal.
    #expect(try Data(contentsOf: t.groupSuiteFile) == plist)
    let journalSize = try #require(size(journal(t)))
    #expect(journalSize < 1024)
    // The journal's format, read with Foundation alone.
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["k-0"] as? String == "new")
    #expect(onDisk["base-7"] == nil)
    #expect(onDisk.count == Self.baseCount)
    #expect(try read(t, "k-") == ["k-0": "new"])
    let base = try read(t, "base-")
    #expect(base.count == Self.baseCount - 1)
    #expect(base["base-7"] == nil)
    #expect(base["base-8"] == "value-8-of-the-large-base")
  }

  /// An atomic update of a few keys (an `increment`, a small transaction) is a small commit
  /// like a `set`'s: appended to a large suite's journal, with the plist left as it is. How an
  /// atomic update hands its change to the store does not decide how the file writes it: a
  /// rewrite here would make every contending incrementer wait for a whole plist's `fsync`,
  /// `rename` and folder `fsync` per increment instead of one `fdatasync(2)`.
  @Test func anIncrementAndASmallTransactionOfALargeSuiteAreAppended() throws {
    let t = try TestRoot()
    let d = try largeSuite(t)
    let plist = try Data(contentsOf: t.groupSuiteFile)
    func inode() throws -> Int {
      try #require(try FileManager.default.attributesOfItem(atPath: t.groupSuiteFile.path)[.systemFileNumber] as? Int)
    }
    let before = try inode()
    #expect(try d.increment(forKey: "k-counter") == 1)
    let first = try #require(size(journal(t)), "the increment rewrote the plist instead of appending")
    #expect(try d.increment(forKey: "k-counter", by: 2) == 3)
    let second = try #require(size(journal(t)))
    #expect(second > first)
    try d.view.suite.transaction(timeout: .seconds(10)) { current in
      guard case .integer(let n)? = current["k-counter"] else { return [:] }
      return ["k-counter": .integer(n + 1), "k-tx": .string("tx")]
    }
    #expect(try #require(size(journal(t))) > second)
    // The plist was never rewritten: the same file, the same bytes.
    #expect(try inode() == before)
    #expect(try Data(contentsOf: t.groupSuiteFile) == plist)
    // Foundation alone, and another process, read the appended values.
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["k-counter"] as? Int == 4)
    #expect(onDisk.count == Self.baseCount + 2)
    #expect(try read(t, "k-") == ["k-counter": "4", "k-tx": "tx"])
  }

  @Test func theJournalIsFoldedIntoThePlistAsItGrowsAndNoCommitIsLost() throws {
    let t = try TestRoot()
    let d = try largeSuite(t)
    let first = try #require(try FileManager.default.attributesOfItem(atPath: t.groupSuiteFile.path)[.systemFileNumber] as? Int)
    var compactions = 0
    var inode = first
    for i in 0..<400 {
      d.set("v\(i)", forKey: "k-\(i)")
      #expect(d.synchronize())
      let plistSize = try #require(size(t.groupSuiteFile.path))
      // The journal stays within its bound, a sixteenth of the plist.
      #expect((size(journal(t)) ?? 0) <= SuiteJournal.bound(forPlistSize: plistSize))
      let now = try #require(try FileManager.default.attributesOfItem(atPath: t.groupSuiteFile.path)[.systemFileNumber] as? Int)
      if now != inode { compactions += 1 }
      inode = now
    }
    #expect(compactions >= 2, "the journal was never folded into the plist")
    let seen = try read(t, "k-")
    #expect(seen.count == 400)
    #expect((0..<400).allSatisfy { seen["k-\($0)"] == "v\($0)" })
    // What was folded in is in the plist itself, readable by Foundation.
    let onDisk = try TestRoot.readPlist(t.groupSuiteFile)
    #expect(onDisk["k-0"] as? String == "v0")
    #expect(onDisk["base-1999"] as? String == "value-1999-of-the-large-base")
  }

  @Test func aWatcherInAnotherProcessIsToldOfTheAppendedKeyOnly() throws {
    let t = try TestRoot()
    let d = try largeSuite(t)
    let watcher = try ChildProcess("appgroups-worker", ["observe", TestRoot.group], environment: t.environment(as: TestRoot.widget))
    #expect(watcher.waitFor("ready"), "\(watcher.standardError)")
    var told: [String] = []
    func waitUntilTold(_ text: String) -> Bool {
      watcher.waitForLine(timeout: 30) { line in
        if line.hasPrefix("changed ") { told.append(line) }
        return line == text
      } != nil
    }
    d.set("one", forKey: "told")
    #expect(d.synchronize())
    #expect(waitUntilTold("changed told one"), "\(watcher.standardError)")
    d.set("two", forKey: "told")
    d.set(nil, forKey: "base-3")
    #expect(d.synchronize())
    // The two changes may come in one batch or two, in either order.
    let both: Set = ["changed told two", "changed base-3 (nil)"]
    #expect(
      watcher.waitForLine(timeout: 30) { line in
        if line.hasPrefix("changed ") { told.append(line) }
        return both.isSubset(of: told)
      } != nil, "\(told) \(watcher.standardError)")
    watcher.send("get told")
    #expect(waitUntilTold("value two"), "\(watcher.standardError)")
    watcher.send("quit")
    #expect(watcher.wait() == 0)
    // Only the keys that changed were reported: no base key but the one removed.
    #expect(Set(told) == ["changed told one", "changed told two", "changed base-3 (nil)"], "\(told)")
  }

  @Test func aRecordPastThePublishedLengthIsNeverShownAndIsCutOffByTheNextAppend() throws {
    let t = try TestRoot()
    let d = try largeSuite(t)
    d.set("acked", forKey: "k-acked")
    #expect(d.synchronize())
    // A writer that died after its append, before its fdatasync returned and the token moved:
    // a whole, well-formed record, and then half of another.
    let forged = try #require(SuiteJournal.record([.init("k-unacked", .string("never acknowledged"))]))
    let handle = try #require(FileHandle(forWritingAtPath: journal(t)))
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(forged) + Data(forged.prefix(9)))
    try handle.close()
    #expect(try read(t, "k-") == ["k-acked": "acked"])
    // The next commit appends where the published records end.
    d.set("later", forKey: "k-later")
    #expect(d.synchronize())
    #expect(try read(t, "k-") == ["k-acked": "acked", "k-later": "later"])
  }

  @Test(arguments: [false, true])
  func aWriterStoppedBeforePublishingShowsNothingUntilItDoes(killed: Bool) throws {
    let t = try TestRoot()
    let d = try largeSuite(t)
    d.set("first", forKey: "k-first")
    #expect(d.synchronize())  // the journal exists: the worker's commit is an append
    let marker = t.sandbox.url.appendingPathComponent("paused-before-publish").path
    var environment = t.environment(as: TestRoot.widget)
    environment["APPGROUPS_TEST_PAUSE_BEFORE_PUBLISH"] = marker
    environment["APPGROUPS_WORKER_NO_WAIT"] = "1"
    let writer = try ChildProcess("appgroups-worker", ["set", TestRoot.group, "k-stopped", "s"], environment: environment)
    #expect(waitForFile(marker, timeout: 30), "\(writer.standardError)")
    #expect(waitUntilStopped(writer.process.processIdentifier, timeout: 30))
    // Its record is in the journal and synced, but not published: no reader shows it.
    #expect(try read(t, "k-") == ["k-first": "first"])
    if killed {
      writer.signal(SIGKILL)
      #expect(writer.wait() == SIGKILL)  // the status of a process killed by a signal is its number
      // Never acknowledged, never shown; the next append takes its place.
      d.set("after", forKey: "k-after")
      #expect(d.synchronize())
      #expect(try read(t, "k-") == ["k-first": "first", "k-after": "after"])
    } else {
      writer.signal(SIGCONT)
      #expect(writer.waitFor("set", timeout: 30), "\(writer.standardError)")
      #expect(writer.wait() == 0)
      #expect(try read(t, "k-") == ["k-first": "first", "k-stopped": "s"])
    }
  }

  @Test func aDamagedRecordIsKeptAsideAndTheRecordsBeforeItStay() throws {
    let t = try TestRoot()
    // Three commits of another process (none open here, so no watcher of this process repairs
    // the journal before the widget below does).
    try t.writeLargeSuitePlist()
    var environment = t.environment(as: TestRoot.widget)
    environment["APPGROUPS_WORKER_NO_WAIT"] = "1"
    let writer = try Product.run("appgroups-worker", ["acked-sets", TestRoot.group, "k", "3"], environment: environment)
    #expect(writer.stdout.contains("done 0"), "\(writer.stdout) \(writer.stderr)")
    // A flipped byte in the second record's payload.
    var bytes = try Data(contentsOf: URL(fileURLWithPath: journal(t)))
    let firstLength = Int(bytes[SuiteJournal.headerSize]) | Int(bytes[SuiteJournal.headerSize + 1]) << 8
    let second = SuiteJournal.headerSize + 12 + firstLength
    bytes[second + 20] ^= 0xff
    try bytes.write(to: URL(fileURLWithPath: journal(t)))
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile).keys.filter { $0.hasPrefix("k-") } == ["k-0"])
    // Another process folds what it could read into the plist and keeps the journal aside,
    // saying so.
    environment["APPGROUPS_WORKER_DIAGNOSTICS"] = "stdout"
    let run = try Product.run("appgroups-worker", ["set", TestRoot.group, "k-widget", "w"], environment: environment)
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.contains("not whole records"), "\(run.stdout)")
    let folder = t.groupSuiteFile.deletingLastPathComponent().path
    let aside = try FileManager.default.contentsOfDirectory(atPath: folder).filter {
      $0.hasPrefix(TestRoot.group + ".plist.journal.unreadable-")
    }
    #expect(aside.count == 1)
    // The record read is in the plist itself; the widget's own commit came after the repair.
    #expect(try TestRoot.readPlist(t.groupSuiteFile)["k-0"] as? Int == 0)
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["k-0"] as? Int == 0)
    #expect(onDisk["k-1"] == nil)
    #expect(onDisk["k-widget"] as? String == "w")
  }

  @Test func aPlistReplacedFromOutsideLeavesTheJournalOfTheOldOneUnread() throws {
    let t = try TestRoot()
    let d = try largeSuite(t)
    d.set("journaled", forKey: "k-journaled")
    #expect(d.synchronize())
    #expect(FileManager.default.fileExists(atPath: journal(t)))
    try editOutside(t.groupSuiteFile) { $0 = ["k-outside": "replaced"] }
    #expect(try read(t, "k-") == ["k-outside": "replaced"])
    #expect(try read(t, "base-").isEmpty)
  }

  @Test func appendsAcknowledgedWhileTheLockFileIsRemovedAreAllRead() throws {
    let t = try TestRoot()
    _ = try largeSuite(t)
    let count = 120
    var environment = t.environment(as: TestRoot.widget)
    environment["APPGROUPS_WORKER_NO_WAIT"] = "1"
    let writers = try (0..<3).map { n in
      try ChildProcess("appgroups-worker", ["acked-sets", TestRoot.group, "w\(n)", String(count)], environment: environment)
    }
    // Partway through, the lock file goes twice under the writers: the new one publishes no
    // journal length until a commit records one.
    var acked: [String] = []
    var done: [String?] = Array(repeating: nil, count: writers.count)
    for removal in 1...3 {
      for (n, writer) in writers.enumerated() where done[n] == nil {
        while let line = writer.waitForLine(timeout: 120) {
          if line.hasPrefix("acked ") { acked.append("w\(n)-" + line.dropFirst(6)) }
          if line.hasPrefix("done ") { done[n] = line; break }
          if removal < 3 && line == "acked \(removal * count / 3)" { break }
        }
      }
      if removal < 3 { try? FileManager.default.removeItem(atPath: t.groupSuiteFile.path + ".lock") }
    }
    for (n, writer) in writers.enumerated() {
      #expect(done[n] == "done 0", "\(writer.standardError)")
      #expect(writer.wait() == 0)
    }
    #expect(acked.count == writers.count * count)
    let seen = try read(t, "w")
    #expect(acked.filter { seen[$0] == nil } == [], "acknowledged but not read back")
    #expect(seen.count == acked.count)
    #expect(try read(t, "base-").count == Self.baseCount)
  }

  @Test func sixteenWritersAppendingAtOnceLoseNothing() throws {
    let t = try TestRoot()
    _ = try largeSuite(t)
    let count = 40
    let writers = try (0..<16).map { n in
      try ChildProcess(
        "appgroups-worker", ["acked-sets", TestRoot.group, "w\(n)", String(count)],
        environment: t.environment(as: n % 2 == 0 ? TestRoot.app : TestRoot.widget))
    }
    for writer in writers { #expect(writer.waitFor("ready"), "\(writer.standardError)") }
    for writer in writers { writer.send("go") }
    var acked: [String] = []
    for (n, writer) in writers.enumerated() {
      var done: String?
      while done == nil, let line = writer.waitForLine(timeout: 120) {
        if line.hasPrefix("acked ") { acked.append("w\(n)-" + line.dropFirst(6)) }
        if line.hasPrefix("done ") { done = line }
      }
      #expect(done == "done 0", "\(writer.standardError)")
      #expect(writer.wait() == 0)
    }
    #expect(acked.count == 16 * count)
    let seen = try read(t, "w")
    let lost = acked.filter { seen[$0] == nil }
    #expect(lost == [], "acknowledged but not read back")
    // And read with Foundation alone, the plist and the journal's records.
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(acked.filter { onDisk[$0] == nil } == [], "acknowledged but not on disk")
    #expect(try read(t, "base-").count == Self.baseCount)
  }

  /// A watching process re-reads the lock file it has mapped, without looking at its path,
  /// while its kernel watch says nothing replaced it: here the lock file is removed and made
  /// again by a new process that never held the old one (so nothing marks the old page
  /// retired), and the appends it publishes in the new one still reach the watcher.
  @Test func aWatcherHearsAppendsPublishedInALockFileMadeAgain() throws {
    let t = try TestRoot()
    _ = try largeSuite(t)
    let plist = try Data(contentsOf: t.groupSuiteFile)
    let watcher = try ChildProcess("appgroups-worker", ["observe", TestRoot.group], environment: t.environment(as: TestRoot.widget))
    #expect(watcher.waitFor("ready"), "\(watcher.standardError)")
    var environment = t.environment(as: TestRoot.app)
    environment["APPGROUPS_WORKER_NO_WAIT"] = "1"
    for round in 0..<3 {
      if round > 0 { try FileManager.default.removeItem(atPath: t.groupSuiteFile.path + ".lock") }
      let writer = try ChildProcess("appgroups-worker", ["acked-sets", TestRoot.group, "r\(round)", "1"], environment: environment)
      #expect(writer.wait() == 0, "\(writer.standardError)")
      #expect(
        watcher.waitForLine(timeout: 30) { $0.hasPrefix("changed r\(round)-0 ") } != nil,
        "\(watcher.standardError)")
    }
    // Appended, not rewritten: only the lock file's page says how far the journal goes.
    #expect(try Data(contentsOf: t.groupSuiteFile) == plist)
    watcher.send("quit")
    #expect(watcher.wait() == 0)
  }
}

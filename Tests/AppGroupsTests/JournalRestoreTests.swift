@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// A large suite's journal whose plist was only touched, or copied or restored with the whole
/// root (`cp -R`, `cp -a`): a new inode or modification time, the same bytes. Its header names
/// the plist by a check of its bytes too, so the acknowledged commits in it are still read, by
/// `groupctl` and by a new process alike, and the next commit folds them into the plist. They
/// were ignored as a journal of another version and kept aside: from an app's view,
/// acknowledged values were gone. A plist replaced by other bytes still leaves its journal
/// unread, said and kept aside.
@Suite("Journal: a plist touched or copied", .processBound)
struct JournalRestoreTests {
  private static let group = TestRoot.group

  /// What moves the plist's identity and keeps its bytes.
  enum Restore: String, CaseIterable, Sendable {
    /// Only the modification time moves (`touch`).
    case touched
    /// `cp -R` of the whole root to a new folder: new inodes and modification times.
    case copied
    /// `cp -a` of the whole root: new inodes, the modification times kept.
    case copiedWithTimes
  }

  /// The root a test reads from: the test's own, or its copy.
  struct Root {
    let path: String

    var plist: String {
      ContainerRoot(path: path).groupContainerURL(for: TestRoot.group)
        .appendingPathComponent("Library/Preferences/\(TestRoot.group).plist").path
    }
    var journal: String { plist + ".journal" }

    @discardableResult
    func groupctl(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
      try Product.run("groupctl", ["--root", path] + args, environment: ["APPGROUPS_ROOT": path])
    }

    /// The values of the keys starting with `acked-` and of `base-3` that a new process (an
    /// app, through AppGroups) reads, each as text.
    func readInAnotherProcess() throws -> [String: String] {
      let run = try Product.run(
        "appgroups-worker", ["dump", TestRoot.group, ""],
        environment: [
          "APPGROUPS_ROOT": path, "APPGROUPS_BUNDLE_ID": TestRoot.widget, "APPGROUPS_WORKER_NO_WAIT": "1",
        ])
      #expect(run.status == 0, "\(run.stderr)")
      var values: [String: String] = [:]
      for line in run.stdout.split(separator: "\n") where line.hasPrefix("entry ") {
        let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
        if parts.count == 3, parts[1].hasPrefix("acked-") || parts[1] == "base-3" { values[parts[1]] = parts[2] }
      }
      return values
    }

    /// The files kept aside from the journal's path.
    func keptAside() throws -> [String] {
      let folder = (plist as NSString).deletingLastPathComponent
      return try FileManager.default.contentsOfDirectory(atPath: folder)
        .filter { $0.hasPrefix(TestRoot.group + ".plist.journal.unreadable-") }
    }
  }

  /// A large suite (its base written by Foundation) whose journal holds three commits
  /// acknowledged by `groupctl`: `acked-1`, the removal of `base-3`, `acked-2`.
  private func suiteWithJournal(_ t: TestRoot) throws -> Root {
    try t.writeLargeSuitePlist()
    // The mode the library gives a plist, so that `doctor` finds nothing else to say.
    try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: t.groupSuiteFile.path)
    let root = Root(path: t.path)
    let plist = try Data(contentsOf: t.groupSuiteFile)
    for args in [["write", Self.group, "acked-1", "one"], ["delete", Self.group, "base-3"], ["write", Self.group, "acked-2", "two"]] {
      let run = try root.groupctl(args)
      #expect(run.status == 0, "\(args): \(run.stderr)")
    }
    #expect(try Data(contentsOf: t.groupSuiteFile) == plist, "the three commits went to the journal")
    #expect(FileManager.default.fileExists(atPath: root.journal))
    return root
  }

  /// Moves the identity of the plist of `t`'s root as `restore` does: the root to read from.
  private func restore(_ t: TestRoot, _ restore: Restore) throws -> Root {
    switch restore {
    case .touched:
      try FileManager.default.setAttributes(
        [.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: t.groupSuiteFile.path)
      return Root(path: t.path)
    case .copied, .copiedWithTimes:
      let copy = t.sandbox.path + "-copy"
      let cp = Process()
      cp.executableURL = URL(fileURLWithPath: "/bin/cp")
      cp.arguments = [restore == .copied ? "-R" : "-a", t.path, copy]
      try cp.run()
      cp.waitUntilExit()
      #expect(cp.terminationStatus == 0)
      let root = Root(path: copy)
      var original = stat()
      var copied = stat()
      #expect(stat(t.groupSuiteFile.path, &original) == 0 && stat(root.plist, &copied) == 0)
      #expect(original.st_ino != copied.st_ino, "a copy has new inodes")
      return root
    }
  }

  private func removeCopy(_ t: TestRoot) {
    try? FileManager.default.removeItem(atPath: t.sandbox.path + "-copy")
  }

  private static let acknowledged = ["acked-1": "one", "acked-2": "two"]

  @Test(arguments: Restore.allCases)
  func acknowledgedJournalWritesSurviveAPlistTouchedOrCopied(_ kind: Restore) throws {
    let t = try TestRoot()
    defer { removeCopy(t) }
    _ = try suiteWithJournal(t)
    let root = try restore(t, kind)

    // groupctl reads every acknowledged commit and says nothing of another version.
    let read = try root.groupctl(["read", Self.group, "acked-1"])
    #expect(read.status == 0 && read.stdout == "one\n", "\(read)")
    #expect(!read.stderr.contains("another version"), "\(read.stderr)")
    #expect(try root.groupctl(["read", Self.group, "base-3"]).status != 0, "the removal is read too")
    let doctor = try root.groupctl(["doctor"])
    #expect(!doctor.stdout.contains("another version") && !doctor.stderr.contains("another version"), "\(doctor)")
    #expect(doctor.status == 0, "\(doctor)")

    // A new process reads them, and so does the journal's format read with Foundation alone.
    #expect(try root.readInAnotherProcess() == Self.acknowledged)
    let onDisk = try TestRoot.readOnDisk(URL(fileURLWithPath: root.plist))
    #expect(onDisk["acked-2"] as? String == "two" && onDisk["base-3"] == nil)
    #expect(try root.keptAside().isEmpty)
    #expect(FileManager.default.fileExists(atPath: root.journal))

    // This process, through the library.
    let d = try GroupDefaults(
      suiteName: Self.group, identity: AppIdentity(bundleIdentifier: TestRoot.app), root: ContainerRoot(path: root.path))
    #expect(d.string(forKey: "acked-1") == "one" && d.string(forKey: "acked-2") == "two")
    #expect(d.object(forKey: "base-3") == nil)
    #expect(d.string(forKey: "base-4") == "value-4-of-the-large-base")
  }

  /// The next commit after the touch or the copy folds the journal into the plist with its own
  /// change: every value stays, nothing is kept aside, and the commit after it starts a new
  /// journal that names the plist it leaves.
  @Test(arguments: Restore.allCases)
  func theNextCommitAfterATouchOrACopyKeepsEveryValue(_ kind: Restore) throws {
    let t = try TestRoot()
    defer { removeCopy(t) }
    _ = try suiteWithJournal(t)
    let root = try restore(t, kind)

    let write = try root.groupctl(["write", Self.group, "acked-3", "three"])
    #expect(write.status == 0, "\(write.stderr)")
    #expect(!write.stderr.contains("another version"), "\(write.stderr)")
    #expect(try root.keptAside().isEmpty, "nothing kept aside")
    // Folded: the plist itself holds the journal's commits and the new one.
    let plist = try TestRoot.readPlist(URL(fileURLWithPath: root.plist))
    #expect(plist["acked-1"] as? String == "one" && plist["acked-3"] as? String == "three")
    #expect(plist["base-3"] == nil)
    #expect(!FileManager.default.fileExists(atPath: root.journal), "the folded journal was removed")
    var expected = Self.acknowledged
    expected["acked-3"] = "three"
    #expect(try root.readInAnotherProcess() == expected)

    // The next small commit starts a journal again, read by its identity.
    #expect(try root.groupctl(["write", Self.group, "acked-4", "four"]).status == 0)
    let header = try #require(FileManager.default.contents(atPath: root.journal)).prefix(8)
    #expect(String(decoding: header, as: UTF8.self) == "AGJRNL02")
    expected["acked-4"] = "four"
    #expect(try root.readInAnotherProcess() == expected)
    #expect(try root.groupctl(["read", Self.group, "acked-4"]).stdout == "four\n")
  }

  /// A process with the suite open reads the token after the touch: the token moves for the
  /// outside edit, and its record must not say that the touched plist has no journal.
  @Test func theTokenMovedForATouchLeavesTheJournalRead() throws {
    let t = try TestRoot()
    _ = try suiteWithJournal(t)
    let d = try t.defaults(Self.group)
    #expect(d.string(forKey: "acked-1") == "one")
    let before = d.changeToken
    try FileManager.default.setAttributes(
      [.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: t.groupSuiteFile.path)
    #expect(d.changeToken != before, "the token moved for the outside edit")
    #expect(d.string(forKey: "acked-1") == "one")
    let root = Root(path: t.path)
    #expect(try root.readInAnotherProcess() == Self.acknowledged)
    #expect(try root.groupctl(["read", Self.group, "acked-2"]).stdout == "two\n")
    // And this process's next commit folds it.
    d.set("three", forKey: "acked-3")
    #expect(d.synchronize())
    #expect(try root.keptAside().isEmpty)
    var expected = Self.acknowledged
    expected["acked-3"] = "three"
    #expect(try root.readInAnotherProcess() == expected)
  }

  /// A journal written by an older build (`AGJRNL01`: the plist's device where the check is
  /// now) is read by its identity as before; this build adds nothing to it: its next commit
  /// folds it into the plist, so that no write it acknowledges rests on a header that a touch
  /// or copy of the plist would orphan.
  @Test func aVersionOneJournalIsReadAndFoldedByTheNextCommit() throws {
    let t = try TestRoot()
    let root = try suiteWithJournal(t)
    // Its header written as an older build writes it, in place (the lock file publishes the
    // journal's inode).
    var s = stat()
    #expect(stat(root.plist, &s) == 0)
    var header = Array("AGJRNL01".utf8)
    for i in 0..<8 { header.append(UInt8(truncatingIfNeeded: UInt64(s.st_dev) >> (8 * UInt64(i)))) }
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: root.journal))
    try handle.seek(toOffset: 0)
    try handle.write(contentsOf: Data(header))
    try handle.close()

    #expect(try root.groupctl(["read", Self.group, "acked-1"]).stdout == "one\n")
    #expect(try root.readInAnotherProcess() == Self.acknowledged)
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["acked-2"] as? String == "two")
    // Not added to: the next commit folds it, and the journal is gone.
    #expect(try root.groupctl(["write", Self.group, "acked-3", "three"]).status == 0)
    #expect(!FileManager.default.fileExists(atPath: root.journal))
    var expected = Self.acknowledged
    expected["acked-3"] = "three"
    #expect(try root.readInAnotherProcess() == expected)

    // Touched now, nothing is hidden: the values are in the plist.
    try FileManager.default.setAttributes(
      [.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: t.groupSuiteFile.path)
    #expect(try root.readInAnotherProcess() == expected)
    #expect(try root.groupctl(["write", Self.group, "acked-4", "four"]).status == 0)
    #expect(try root.keptAside().isEmpty)
    expected["acked-4"] = "four"
    #expect(try root.readInAnotherProcess() == expected)
  }
  /// A compaction cut short between its new plist's rename and the old journal's removal,
  /// where the new plist has the old one's bytes (a key set and set back): the journal left at
  /// the path is never applied, not even once the plist is touched or copied, since the lock
  /// file's record names the new plist, not the version the journal's header names, and does
  /// not vouch for it. Before, a touch or copy made it match the new plist by content, and its
  /// folded record set the key back to the value the later commit had replaced.
  @Test(arguments: Restore.allCases)
  func aJournalLeftByACompactionCutShortIsNotAppliedAfterATouchOrCopy(_ kind: Restore) throws {
    let t = try TestRoot()
    defer { removeCopy(t) }
    let root = Root(path: t.path)
    // A large suite written by this package, so that a rewrite gives back its very bytes; its
    // key `big` too large for the journal, so that setting it back rewrites the plist.
    let big = String(repeating: "b", count: 20_000)
    var xml = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict>"#
    for i in 0..<800 { xml += "<key>k\(i)</key><string>value-\(i)-padding</string>" }
    xml += "<key>big</key><string>\(big)</string></dict></plist>"
    let file = t.sandbox.url.appendingPathComponent("large.plist")
    try Data(xml.utf8).write(to: file)
    #expect(try root.groupctl(["import", Self.group, file.path]).status == 0)
    let base = try Data(contentsOf: URL(fileURLWithPath: root.plist))

    #expect(try root.groupctl(["write", Self.group, "big", "changed"]).status == 0)
    try #require(FileManager.default.fileExists(atPath: root.journal), "a small commit is journaled")
    // The journal as the compaction finds it, kept by a second link to its inode.
    let saved = t.sandbox.url.appendingPathComponent("journal.saved").path
    try FileManager.default.linkItem(atPath: root.journal, toPath: saved)
    #expect(try root.groupctl(["write", Self.group, "big", big]).status == 0)
    #expect(!FileManager.default.fileExists(atPath: root.journal), "setting it back rewrote the plist")
    #expect(try Data(contentsOf: URL(fileURLWithPath: root.plist)) == base, "with the same bytes")
    // The crash's state: the new plist, the old journal still at its path.
    try FileManager.default.linkItem(atPath: saved, toPath: root.journal)

    let read = try restore(t, kind)
    let value = try read.groupctl(["read", Self.group, "big"])
    #expect(value.status == 0 && value.stdout == big + "\n", "\(value.stdout.prefix(40)) \(value.stderr)")
    #expect(try read.groupctl(["write", Self.group, "other", "1"]).status == 0)
    #expect(try read.groupctl(["read", Self.group, "big"]).stdout == big + "\n")
  }
  /// A record on disk that was never published (its writer died before the lock file said it
  /// was durable) is not read after a touch or copy either: the lock file's record for the
  /// version the journal's header names bounds it, as it bounds a reader of the plist as it was.
  /// Before, a touched plist and a copy read it, and the original root did not.
  @Test(arguments: Restore.allCases)
  func aRecordNeverPublishedIsNotReadAfterATouchOrCopy(_ kind: Restore) throws {
    let t = try TestRoot()
    defer { removeCopy(t) }
    let root = try suiteWithJournal(t)
    let plist = try Data(contentsOf: t.groupSuiteFile)
    let lock = URL(fileURLWithPath: root.plist + ".lock")
    let published = try Data(contentsOf: lock)
    #expect(try root.groupctl(["write", Self.group, "acked-2", "unpublished"]).status == 0)
    #expect(try Data(contentsOf: t.groupSuiteFile) == plist, "the write went to the journal")
    // The writer's death before it published: the lock file as it was, written in place.
    let handle = try FileHandle(forUpdating: lock)
    try handle.write(contentsOf: published)
    try handle.close()
    #expect(try root.groupctl(["read", Self.group, "acked-2"]).stdout == "two\n")

    let read = try restore(t, kind)
    #expect(try read.groupctl(["read", Self.group, "acked-2"]).stdout == "two\n")
    #expect(try read.readInAnotherProcess() == Self.acknowledged)
    // Nor does the next commit, of another key, make it the value: an app that opens the
    // suite first moves the token for the touch or copy, which keeps the bound.
    let app = try read.readInAnotherProcess()
    #expect(app == Self.acknowledged)
    #expect(try read.groupctl(["write", Self.group, "acked-3", "three"]).status == 0)
    var expected = Self.acknowledged
    expected["acked-3"] = "three"
    #expect(try read.readInAnotherProcess() == expected)
    #expect(try read.groupctl(["read", Self.group, "acked-2"]).stdout == "two\n")
  }

  /// How the commit that lands between an app's read of the plist and its read of the
  /// journal folds the journal into a new plist.
  enum Fold: String, CaseIterable, Sendable {
    /// A small commit, which folds a journal read by its content (the plist was touched).
    case smallCommit
    /// A commit too large for the journal, which rewrites the plist (a compaction).
    case compaction
  }

  /// An app reads the plist, then its journal: at its open, and again when the plist changed
  /// meanwhile (here a touch, which the open's look after its watch is set up finds). A
  /// commit that folds the journal into a new plist between the two reads (renamed in, the
  /// token moved, the journal removed) left the read with the old plist alone: the
  /// acknowledged commits the journal held were missing, and the value they removed back,
  /// until the watcher heard the rename, and for good for a one-shot reader (4 to 43 of ~2,000
  /// `appgroups-worker dump` opens racing touches and folds, the journal's `openat` slowed by
  /// 20 ms). The read is done again when the plist read was replaced. The reader is stopped
  /// between its two reads (`APPGROUPS_TEST_PAUSE_BEFORE_JOURNAL_READ`), so nothing is left to
  /// chance.
  @Test(arguments: Fold.allCases)
  func aReadRacingAFoldingCommitGivesEveryAcknowledgedValue(_ fold: Fold) throws {
    let t = try TestRoot()
    let root = try suiteWithJournal(t)
    let marker = t.sandbox.url.appendingPathComponent("before-journal-read").path
    let reader = try ChildProcess(
      "appgroups-worker", ["dump", Self.group, ""],
      environment: [
        "APPGROUPS_ROOT": root.path, "APPGROUPS_BUNDLE_ID": TestRoot.widget, "APPGROUPS_WORKER_NO_WAIT": "1",
        "APPGROUPS_TEST_PAUSE_BEFORE_JOURNAL_READ": marker,
      ])
    let pid = reader.process.processIdentifier
    // Never left stopped, whatever fails below.
    var continued = false
    defer { if !continued { reader.signal(SIGCONT) } }
    func stopped() throws {
      try #require(waitForFile(marker, timeout: 30), "\(reader.standardError)")
      try #require(waitUntilStopped(pid, timeout: 30))
      let paused = try String(contentsOfFile: marker, encoding: .utf8)
      #expect(paused.hasSuffix("/\(Self.group).plist"), "stopped reading \(paused)")
    }
    // The open, stopped with the plist read: touched now, so that the open reads it again once
    // it has read the journal, and stops there too (the marker removed).
    try stopped()
    _ = try restore(t, .touched)
    try FileManager.default.removeItem(atPath: marker)
    reader.signal(SIGCONT)
    try stopped()

    // The folding commit, acknowledged while the reader holds the touched plist.
    let third = fold == .compaction ? String(repeating: "c", count: 40_000) : "three"
    let write = try root.groupctl(["write", Self.group, "acked-3", third])
    #expect(write.status == 0, "\(write.stderr)")
    #expect(!FileManager.default.fileExists(atPath: root.journal), "the commit folded the journal")

    // The marker left in place: every later read goes on.
    reader.signal(SIGCONT)
    continued = true
    var read: [String: String] = [:]
    while let line = reader.waitForLine(timeout: 30), !line.hasPrefix("dumped ") {
      let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
      if parts.count == 3, parts[0] == "entry", parts[1].hasPrefix("acked-") || parts[1] == "base-3" {
        read[parts[1]] = parts[2]
      }
    }
    #expect(reader.wait() == 0, "\(reader.standardError)")
    // The values acknowledged before the open began are read: the journal's two and its
    // removal of `base-3` (the commit that raced it may be read too, or not).
    read["acked-3"] = nil
    #expect(read == Self.acknowledged, "\(reader.standardError)")
  }

  /// A re-read that finds the plist the version it read only catches up its journal. A commit
  /// that folds the journal into a new plist after the plist was looked at and before the
  /// journal is read removes the journal; a later commit's new journal may take its inode
  /// (ext4 hands a freed inode out again), and is then read on from where this process stood,
  /// as the old plist's: here its record at the offsets of the last acknowledged one. The
  /// catch-up gave that record in place of the acknowledged one (`acked-4` lost, `acked-5`,
  /// never written, served) until the next event. It now reads the file whole when the token
  /// record, read after the journal, no longer names the plist read (the fold moved it).
  @Test func aCatchUpRacingAFoldingCommitReadsTheFileWhole() throws {
    let t = try TestRoot()
    let root = try suiteWithJournal(t)
    let file = try SuiteFile(path: root.plist, options: SuiteStore.Options())
    let opened = try file.load()
    #expect(opened.values["acked-2"] == .string("two"))
    let stood = try #require(FileManager.default.attributesOfItem(atPath: root.journal)[.size] as? Int)
    // Acknowledged before the re-read begins: the journal grows by its record.
    #expect(try root.groupctl(["write", Self.group, "acked-4", "four"]).status == 0)
    let grown = try #require(FileManager.default.attributesOfItem(atPath: root.journal)[.size] as? Int)
    // What a journal of the new plist holds at those offsets, when it took the old one's inode.
    let foreign = try #require(SuiteJournal.record([SuiteJournal.Change("acked-5", .string("five"))]))
    try #require(foreign.count == grown - stood, "a record of the same length")

    let plist = root.plist, journal = root.journal
    let saved = t.sandbox.url.appendingPathComponent("journal.inode").path
    let folded = Mutex<String?>(nil)
    SuiteFile.beforeCatchUpReadForTesting.withLock {
      $0 = { path in
        guard path == plist, folded.withLock({ $0 == nil }) else { return }
        // The old journal's inode, kept by a second link.
        var outcome = "linked"
        if link(journal, saved) != 0 { outcome = "link: \(errno)" }
        // The folding commit (a compaction), acknowledged: the journal is removed.
        let run = try? root.groupctl(["write", Self.group, "big", String(repeating: "c", count: 40_000)])
        if run?.status != 0 { outcome = "write: \(run?.stderr ?? "not run")" }
        if FileManager.default.fileExists(atPath: journal) { outcome = "the journal was not folded" }
        // The inode back at the journal's path, holding the foreign record where the
        // acknowledged one was.
        if let handle = FileHandle(forUpdatingAtPath: saved) {
          handle.seek(toFileOffset: UInt64(stood))
          handle.write(Data(foreign))
          handle.closeFile()
        }
        if link(saved, journal) != 0 { outcome = "link back: \(errno)" }
        folded.withLock { $0 = outcome }
      }
    }
    defer { SuiteFile.beforeCatchUpReadForTesting.withLock { $0 = nil } }
    var reloaded = false
    _ = file.reread { read in if case .reloaded = read { reloaded = true } }
    try #require(folded.withLock { $0 } == "linked", "\(folded.withLock { $0 } ?? "no catch-up")")
    let values = file.persisted
    #expect(reloaded, "the file was read whole")
    #expect(values["acked-4"] == .string("four"), "the acknowledged value")
    #expect(values["acked-5"] == nil, "no record of another plist's journal")
    let foldedValue = values["big"] == .string(String(repeating: "c", count: 40_000))
    #expect(foldedValue, "the folding commit's value")
    #expect(values["acked-1"] == .string("one") && values["base-3"] == nil)
  }
}

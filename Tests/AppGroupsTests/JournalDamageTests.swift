@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A large suite's journal damaged on disk, as a disk, an editor or a cleanup script damages
/// it: no acknowledged commit is lost without a word. The records that can be read are read
/// (behind a damaged header too), a journal shorter than its lock file says is damage, what
/// cannot be read is kept aside and the user is told where, once, and `groupctl doctor` says
/// so before and after. A folder in the journal's place is moved aside and writes go on.
@Suite("Journal: damage on disk", .processBound)
struct JournalDamageTests {
  private static let keys = (0..<5).map { "acked-\($0)" }

  /// A large suite (its base in the plist) whose five keys `acked-0` … `acked-4` were each
  /// committed and acknowledged by another process, so that each is one record of the
  /// journal. Returns the journal's bytes.
  private func suiteWithJournal(_ t: TestRoot) throws -> [UInt8] {
    try t.writeLargeSuitePlist()
    let writer = try Product.run(
      "appgroups-worker", ["acked-sets", TestRoot.group, "acked", String(Self.keys.count)],
      environment: t.environment(as: TestRoot.app).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(writer.status == 0, "\(writer.stderr)")
    #expect(writer.stdout.contains("done 0"), "\(writer.stdout)")
    let journal = try #require(FileManager.default.contents(atPath: journalPath(t)))
    #expect(recordEnds([UInt8](journal)).count == Self.keys.count, "one record per acknowledged commit")
    return [UInt8](journal)
  }

  private func journalPath(_ t: TestRoot) -> String { t.groupSuiteFile.path + ".journal" }

  /// Where each record of `journal` ends, walking the lengths from the 40-byte header.
  private func recordEnds(_ journal: [UInt8]) -> [Int] {
    var ends: [Int] = []
    var offset = SuiteJournal.headerSize
    while offset + 12 <= journal.count {
      let length = (0..<4).reduce(0) { $0 | Int(journal[offset + $1]) << (8 * $1) }
      offset += 12 + length
      ends.append(offset)
    }
    return ends
  }

  /// What `groupctl read GROUP KEY` prints for each key, or `nil` for a key it says is not there.
  private func groupctlRead(_ t: TestRoot, _ keys: [String]) throws -> [String: String] {
    var seen: [String: String] = [:]
    for key in keys {
      let run = try Product.run("groupctl", ["--root", t.path, "read", TestRoot.group, key])
      if run.status == 0 { seen[key] = run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) }
    }
    return seen
  }

  private func doctor(_ t: TestRoot) throws -> (status: Int32, stdout: String) {
    let run = try Product.run("groupctl", ["--root", t.path, "doctor"])
    return (run.status, run.stdout + run.stderr)
  }

  /// Another app opens the suite (a new process, its diagnostics on stdout): its values of
  /// the five keys, and its diagnostics.
  private func openInAnotherProcess(_ t: TestRoot) throws -> (values: [String: String], diagnostics: [String]) {
    var environment = t.environment(as: TestRoot.widget)
    environment["APPGROUPS_WORKER_NO_WAIT"] = "1"
    environment["APPGROUPS_WORKER_DIAGNOSTICS"] = "stdout"
    let run = try Product.run("appgroups-worker", ["dump", TestRoot.group, "acked-"], environment: environment)
    #expect(run.status == 0, "\(run.stderr)")
    var values: [String: String] = [:]
    var diagnostics: [String] = []
    for line in run.stdout.split(separator: "\n").map(String.init) {
      if line.hasPrefix("diag ") { diagnostics.append(String(line.dropFirst(5))) }
      let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
      if parts.count == 3, parts[0] == "entry" { values[parts[1]] = parts[2] }
    }
    return (values, diagnostics)
  }

  /// The files kept aside from the journal's path.
  private func keptAside(_ t: TestRoot) throws -> [String] {
    let folder = t.groupSuiteFile.deletingLastPathComponent().path
    return try FileManager.default.contentsOfDirectory(atPath: folder)
      .filter { $0.hasPrefix(TestRoot.group + ".plist.journal.unreadable-") }
      .map { folder + "/" + $0 }
  }

  enum HeaderDamage: String, CaseIterable, Sendable {
    case badMagic, wrongPlistSize, randomBytes
  }

  @Test(arguments: HeaderDamage.allCases)
  func recordsBehindADamagedHeaderAreReadAndTheJournalIsKeptAside(_ damage: HeaderDamage) throws {
    let t = try TestRoot()
    var journal = try suiteWithJournal(t)
    switch damage {
    case .badMagic:
      journal.replaceSubrange(0..<8, with: Array("XXXXXXXX".utf8))
    case .wrongPlistSize:
      journal[24] &+= 1
    case .randomBytes:
      var generator = SystemRandomNumberGenerator()
      for i in 0..<SuiteJournal.headerSize { journal[i] = UInt8.random(in: 0 ... .max, using: &generator) }
    }
    try Data(journal).write(to: URL(fileURLWithPath: journalPath(t)))
    let expected = Dictionary(uniqueKeysWithValues: Self.keys.enumerated().map { ($1, String($0)) })

    // groupctl reads every acknowledged key, and doctor names the damage.
    #expect(try groupctlRead(t, Self.keys) == expected)
    let before = try doctor(t)
    #expect(before.status == 1)
    #expect(before.stdout.contains("its header is damaged"), "\(before.stdout)")

    // Another app opens the suite: it reads them too, folds them into the plist, keeps the
    // journal aside byte for byte and says where.
    let opened = try openInAnotherProcess(t)
    #expect(opened.values == expected)
    let aside = try keptAside(t)
    #expect(aside.count == 1)
    let said = opened.diagnostics.filter { $0.contains(journalPath(t)) }
    #expect(said.count == 1, "\(opened.diagnostics)")
    #expect(said.allSatisfy { $0.contains("its header is damaged") && $0.contains(aside.first ?? "?") }, "\(said)")
    #expect(try aside.first.map { try Data(contentsOf: URL(fileURLWithPath: $0)) } == Data(journal))
    let onDisk = try TestRoot.readPlist(t.groupSuiteFile)
    #expect(Self.keys.allSatisfy { onDisk[$0] != nil }, "the records read are in the plist itself")
    #expect(onDisk.count == TestRoot.largeSuiteCount + Self.keys.count)

    // Said once: the next app finds nothing to say, and doctor points at the copy.
    let again = try openInAnotherProcess(t)
    #expect(again.values == expected)
    #expect(again.diagnostics.isEmpty, "\(again.diagnostics)")
    let after = try doctor(t)
    #expect(after.status == 1)
    #expect(after.stdout.contains("could not be read whole, moved aside"), "\(after.stdout)")
    #expect(!after.stdout.contains("its header is damaged"), "\(after.stdout)")
  }

  @Test(arguments: [true, false])
  func aJournalShorterThanItsPublishedLengthIsDamage(atARecordBoundary: Bool) throws {
    let t = try TestRoot()
    let journal = try suiteWithJournal(t)
    let ends = recordEnds(journal)
    // Cut after the third record, or within the fifth: the last records are gone from disk.
    let cut = atARecordBoundary ? ends[2] : ends[4] - 5
    let kept = atARecordBoundary ? 3 : 4
    try Data(journal.prefix(cut)).write(to: URL(fileURLWithPath: journalPath(t)))
    let expected = Dictionary(uniqueKeysWithValues: Self.keys.prefix(kept).enumerated().map { ($1, String($0)) })

    #expect(try groupctlRead(t, Self.keys) == expected)
    let before = try doctor(t)
    #expect(before.status == 1)
    #expect(
      before.stdout.contains("it is \(cut) bytes long, shorter than the \(journal.count) its lock file publishes as durable"),
      "\(before.stdout)")

    let opened = try openInAnotherProcess(t)
    #expect(opened.values == expected)
    let aside = try keptAside(t)
    #expect(aside.count == 1)
    #expect(
      opened.diagnostics.contains { $0.contains("shorter than the \(journal.count)") && $0.contains(aside.first ?? "?") },
      "\(opened.diagnostics)")
    #expect(try aside.first.map { try Data(contentsOf: URL(fileURLWithPath: $0)) } == Data(journal.prefix(cut)))
    let onDisk = try TestRoot.readPlist(t.groupSuiteFile)
    #expect(Self.keys.prefix(kept).allSatisfy { onDisk[$0] != nil })
    #expect(try doctor(t).stdout.contains("could not be read whole, moved aside"))
  }

  /// What every reader says of a journal removed from outside while its lock file publishes
  /// `length` bytes of it.
  private func goneText(_ t: TestRoot, _ length: Int) -> String {
    "\(journalPath(t)), the suite's last small commits, is gone, though its lock file publishes"
      + " \(length) bytes of it as durable: the changes acknowledged since the plist was last"
      + " written whole are lost"
  }

  /// A journal removed from outside (`rm`, a cleanup script) while its lock file publishes its
  /// length: `groupctl read` says that the acknowledged changes it held are lost, and reads
  /// the plist as it is, writing nothing. While a commit holds the suite's lock (a compaction
  /// removes the journal after it moved the token), it says nothing: it cannot tell that from
  /// a commit in flight.
  @Test func aJournalRemovedFromOutsideIsSaidByRead() throws {
    let t = try TestRoot()
    let journal = try suiteWithJournal(t)
    try FileManager.default.removeItem(atPath: journalPath(t))
    let plistBefore = try Data(contentsOf: t.groupSuiteFile)

    // The lock held, as by a commit in flight: not said.
    let fd = open(t.groupSuiteFile.path + ".lock", O_RDONLY)
    #expect(fd >= 0)
    #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
    let held = try Product.run("groupctl", ["--root", t.path, "read", TestRoot.group, Self.keys[2]])
    #expect(flock(fd, LOCK_UN) == 0)
    close(fd)
    #expect(held.status == 1)
    #expect(!held.stderr.contains("is gone"), "\(held.stderr)")

    let read = try Product.run("groupctl", ["--root", t.path, "read", TestRoot.group, Self.keys[2]])
    #expect(read.status == 1, "the key was only in the journal")
    #expect(read.stderr.contains("\(TestRoot.group): " + goneText(t, journal.count)), "\(read.stderr)")
    #expect(read.stderr.contains("the next commit writes the plist whole"), "\(read.stderr)")
    // The whole suite too, and every value the plist holds is read.
    let all = try Product.run("groupctl", ["--root", t.path, "read", TestRoot.group])
    #expect(all.status == 0, "\(all.stderr)")
    #expect(all.stderr.contains(goneText(t, journal.count)), "\(all.stderr)")
    // A read writes nothing.
    #expect(try Data(contentsOf: t.groupSuiteFile) == plistBefore)
    #expect(!FileManager.default.fileExists(atPath: journalPath(t)))
    #expect(try keptAside(t).isEmpty)
  }

  /// `groupctl doctor` says so too, until a write rewrites the plist; that write says what it
  /// did, and the suite's writes go on. Another app that opens the suite says it as well.
  @Test func aJournalRemovedFromOutsideIsSaidByDoctor() throws {
    let t = try TestRoot()
    let journal = try suiteWithJournal(t)
    try FileManager.default.removeItem(atPath: journalPath(t))

    let before = try doctor(t)
    #expect(before.status == 1)
    #expect(before.stdout.contains("problem: " + goneText(t, journal.count)), "\(before.stdout)")
    #expect(try doctor(t).stdout.contains(goneText(t, journal.count)), "doctor writes nothing")

    let opened = try openInAnotherProcess(t)
    #expect(opened.values.isEmpty)
    #expect(opened.diagnostics.filter { $0.contains(goneText(t, journal.count)) }.count == 1, "\(opened.diagnostics)")

    let write = try Product.run("groupctl", ["--root", t.path, "write", TestRoot.group, "after", "landed"])
    #expect(write.status == 0, "\(write.stderr)")
    #expect(write.stderr.contains("it is gone, though its lock file publishes \(journal.count) bytes"), "\(write.stderr)")
    let after = try doctor(t)
    #expect(after.status == 0, "\(after.stdout)")
    #expect(!after.stdout.contains("is gone"), "\(after.stdout)")
    #expect(try groupctlRead(t, ["after"]) == ["after": "landed"])
  }

  /// A file put where the journal belongs while this process has the suite open and its lock
  /// file publishes no journal: a re-read does not look there, but the commit that starts a
  /// journal does first, and keeps the file aside instead of renaming a journal over it.
  @Test func aFileWhereTheJournalBelongsIsKeptAsideByTheCommitThatStartsOne() throws {
    let t = try TestRoot()
    try t.writeLargeSuitePlist()
    let d = try t.defaults(TestRoot.group)
    // The token moves for the plist written from outside: its record names this version, with
    // no journal.
    _ = d.changeToken
    try Data("keep me".utf8).write(to: URL(fileURLWithPath: journalPath(t)))
    d.set("landed", forKey: "after")
    #expect(d.synchronize())
    let aside = try keptAside(t)
    #expect(aside.count == 1)
    #expect(try aside.first.map { try String(contentsOfFile: $0, encoding: .utf8) } == "keep me")
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["after"] as? String == "landed")
    #expect(!FileManager.default.fileExists(atPath: journalPath(t)), "the commit rewrote the plist")
  }

  /// A sparse terabyte where the journal belongs, with no journal published: the commit that
  /// starts one looks at it, and keeps it aside unread instead of reading it whole for its
  /// header.
  @Test func aFileTooLargeWhereTheJournalBelongsIsKeptAsideUnread() throws {
    let t = try TestRoot()
    try t.writeLargeSuitePlist()
    #expect(FileManager.default.createFile(atPath: journalPath(t), contents: nil))
    #expect(truncate(journalPath(t), 1 << 40) == 0)
    let said = MessageLog()
    try Diagnostics.withHandler({ said.append($0) }) {
      let d = try t.defaults(TestRoot.group)
      d.set("landed", forKey: "after")
      #expect(d.synchronize())
    }
    let aside = try keptAside(t)
    #expect(aside.count == 1)
    #expect(
      try aside.first.map { try FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int } == 1 << 40)
    #expect(
      said.lines.contains { $0.contains("more than the \(PropertyListFile.maximumBytes) bytes a journal is read for") },
      "\(said.lines)")
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["after"] as? String == "landed")
  }

  @Test(arguments: [true, false])
  func aFolderWhereTheJournalBelongsIsMovedAsideAndWritesGoOn(largeSuite: Bool) throws {
    let t = try TestRoot()
    if largeSuite {
      _ = try suiteWithJournal(t)
      try FileManager.default.removeItem(atPath: journalPath(t))
    } else {
      let first = try Product.run("groupctl", ["--root", t.path, "write", TestRoot.group, "small", "yes"])
      #expect(first.status == 0, "\(first.stderr)")
    }
    // A folder in the journal's place, with a file in it that must not be lost.
    try FileManager.default.createDirectory(atPath: journalPath(t), withIntermediateDirectories: false)
    try Data("keep me".utf8).write(to: URL(fileURLWithPath: journalPath(t) + "/note"))

    let before = try doctor(t)
    #expect(before.status == 1)
    #expect(before.stdout.contains("\(journalPath(t)), the suite's last small commits, cannot be read whole: it is a folder"), "\(before.stdout)")
    #expect(before.stdout.contains("nothing of it is read") && !before.stdout.contains("folds what can be read"), "\(before.stdout)")
    // `read` says that nothing of it is read, not that what could be is shown.
    let read = try Product.run("groupctl", ["--root", t.path, "read", TestRoot.group])
    #expect(read.stderr.contains("it is a folder") && read.stderr.contains("nothing of it is read"), "\(read.stderr)")

    // A write exits 0 and is on disk; the folder was moved aside, said once, with its file.
    let write = try Product.run("groupctl", ["--root", t.path, "write", TestRoot.group, "after", "landed"])
    #expect(write.status == 0, "\(write.stderr)")
    let aside = try keptAside(t)
    #expect(aside.count == 1)
    #expect(write.stderr.contains("it is a folder, not a regular file") && write.stderr.contains(aside.first ?? "?"), "\(write.stderr)")
    #expect(try aside.first.map { try String(contentsOfFile: $0 + "/note", encoding: .utf8) } == "keep me")
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["after"] as? String == "landed")

    // synchronize() is true for the next writers, small commits and large.
    var environment = t.environment(as: TestRoot.widget)
    environment["APPGROUPS_WORKER_NO_WAIT"] = "1"
    for i in 0..<3 {
      let set = try Product.run("appgroups-worker", ["set", TestRoot.group, "later-\(i)", "v"], environment: environment)
      #expect(set.status == 0 && set.stdout.contains("set"), "\(set.stdout) \(set.stderr)")
      #expect(!set.stderr.contains("folder"), "\(set.stderr)")
    }
    #expect(try groupctlRead(t, ["after", "later-2"]) == ["after": "landed", "later-2": "v"])
    let after = try doctor(t)
    #expect(after.stdout.contains("stood where the journal of \(t.groupSuiteFile.path) belongs"), "\(after.stdout)")
  }
}

/// Space is given back: a commit that would leave a large suite's files holding more values
/// that are gone than live ones rewrites the plist instead of appending to its journal.
@Suite("Journal: space given back", .processBound)
struct JournalSpaceTests {
  private func size(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
  }

  @Test(arguments: [true, false])
  func aCommitThatRemovesMoreThanItKeepsRewritesThePlist(deleting: Bool) throws {
    let t = try TestRoot()
    try FileManager.default.createDirectory(
      at: t.groupSuiteFile.deletingLastPathComponent(), withIntermediateDirectories: true,
      attributes: [.posixPermissions: 0o700])
    // The 2,000-key base (about 70 KiB) and a value of 1 MB.
    var base = try PropertyListSerialization.propertyList(from: TestRoot.largeSuitePlist(), format: nil) as? [String: Any] ?? [:]
    base["big"] = Data(repeating: 0xA5, count: 1 << 20)
    try PropertyListSerialization.data(fromPropertyList: base, format: .binary, options: 0).write(to: t.groupSuiteFile)
    #expect(size(t.groupSuiteFile.path) > 1 << 20)

    let run = try Product.run(
      "groupctl", ["--root", t.path] + (deleting ? ["delete", TestRoot.group, "big"] : ["write", TestRoot.group, "big", "small now"]))
    #expect(run.status == 0, "\(run.stderr)")
    // The megabyte is given back: the plist was rewritten, no journal keeps it alive.
    #expect(size(t.groupSuiteFile.path) < 200 * 1024, "\(size(t.groupSuiteFile.path)) bytes")
    let onDisk = try TestRoot.readPlist(t.groupSuiteFile)
    #expect(onDisk.count == TestRoot.largeSuiteCount + (deleting ? 0 : 1))
    #expect(onDisk["big"] as? String == (deleting ? nil : "small now"))
    // A small commit after it still goes to the journal.
    let small = try Product.run("groupctl", ["--root", t.path, "write", TestRoot.group, "k", "v"])
    #expect(small.status == 0, "\(small.stderr)")
    #expect(size(t.groupSuiteFile.path + ".journal") > 0)
  }
}

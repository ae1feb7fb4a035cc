import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// Writers killed with SIGKILL: at random points, while holding the lock, and between writing
/// the temporary file and renaming it. The file always parses, no temporary file is left once
/// a survivor commits, the lock is free, and every value whose `synchronize()` returned true
/// is there.
@Suite("Fault: writers killed with SIGKILL", .timeLimit(.minutes(10)))
struct FaultKillTests {
  static let slots = 8

  /// What one killed writer had confirmed: its key prefix and the last `synced N` it printed.
  struct Incarnation: Sendable {
    var prefix: String
    var lastSynced: Int
  }

  @Test func writersKilledAtRandomPointsLoseNothingThatWasSynchronized() throws {
    let seed = FaultSettings.seed()
    let heavy = FaultSettings.stressEnabled
    let lanes = heavy ? 4 : 3
    let killsPerLane = FaultSettings.integer(
      "APPGROUPS_KILLS_PER_LANE", default: heavy ? 150 : 18)
    print("FaultKillTests: seed \(seed) (replay: APPGROUPS_SEED=\(seed)), \(lanes) lanes × \(killsPerLane) kills")
    let t = try TestRoot()
    let folder = t.groupSuiteFile.deletingLastPathComponent()
    let environment = t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 }

    let incarnations = Locked<[Incarnation]>([])
    let problems = Locked<[String]>([])
    let tempsSeenAfterKill = Locked(0)
    DispatchQueue.concurrentPerform(iterations: lanes) { lane in
      var random = SeededGenerator(seed: seed &+ UInt64(lane) &* 0x1000_0000_01B3)
      for round in 0..<killsPerLane {
        let prefix = "L\(lane)r\(round)"
        let child: ChildProcess
        do {
          child = try ChildProcess(
            "appgroups-worker", ["write-loop", TestRoot.group, prefix, String(Self.slots)],
            environment: environment)
        } catch {
          problems.withLock { $0.append("\(prefix): cannot start: \(error)") }
          return
        }
        var last = -1
        func record(_ line: String) {
          if line.hasPrefix("synced "), let n = Int(line.dropFirst(7)) { last = max(last, n) }
        }
        // Kill after a random number of confirmed synchronizations, plus a random few
        // hundred microseconds: anywhere in the loop, often in the middle of a commit.
        let confirmations = Int.random(in: 0...10, using: &random)
        let extra = UInt32.random(in: 0...3_000, using: &random)
        for _ in 0..<confirmations {
          guard let line = child.waitForLine(timeout: 30, where: { $0.hasPrefix("synced ") })
          else {
            problems.withLock { $0.append("\(prefix): no progress: \(child.standardError)") }
            break
          }
          record(line)
        }
        usleep(extra)
        let pid = child.process.processIdentifier
        child.signal(SIGKILL)
        _ = child.wait(timeout: 30)
        // Lines the writer printed before it died still count.
        while let line = child.waitForLine(timeout: 5) { record(line) }
        incarnations.withLock { $0.append(Incarnation(prefix: prefix, lastSynced: last)) }
        // In the staging folder; in the suite's folder where the file system has no O_TMPFILE.
        let staged = entries(of: folder.appendingPathComponent(".staging"))
        if (entries(of: folder) + staged).contains(where: { $0.contains(".tmp-\(pid)-") }) {
          tempsSeenAfterKill.withLock { $0 += 1 }
        }
        // The file parses at every moment, whoever was killed where.
        if FileManager.default.fileExists(atPath: t.groupSuiteFile.path) {
          do {
            _ = try TestRoot.readOnDisk(t.groupSuiteFile)
          } catch {
            problems.withLock { $0.append("after killing \(prefix): the file does not parse: \(error)") }
          }
        }
      }
    }
    #expect(problems.withLock { $0 } == [])
    let killed = incarnations.withLock { $0 }
    print(
      "FaultKillTests: \(killed.count) kills, \(killed.filter { $0.lastSynced >= 0 }.count) after "
        + "at least one synchronize, \(tempsSeenAfterKill.withLock { $0 }) left a temporary file")
    #expect(killed.count == lanes * killsPerLane)

    try checkSurvivorCommitAndInvariants(t, killed)
  }

  @Test func aWriterKilledWhileHoldingTheLockLeavesItFree() throws {
    let t = try TestRoot()
    let marker = t.sandbox.url.appendingPathComponent("holding-lock").path
    let killed = try ChildProcess(
      "appgroups-worker", ["set", TestRoot.group, "lost", "never-synchronized"],
      environment: t.environment().merging([
        "APPGROUPS_WORKER_NO_WAIT": "1", "APPGROUPS_TEST_PAUSE_IN_COMMIT": marker,
      ]) { $1 })
    #expect(waitForFile(marker, timeout: 30), "\(killed.standardError)")
    killed.signal(SIGKILL)
    _ = killed.wait()
    try checkSurvivorCommitAndInvariants(t, [])
  }

  @Test func aWriterKilledBetweenWritingAndRenamingLeavesATemporaryFileTheNextCommitRemoves() throws {
    let t = try TestRoot()
    let (killed, marker) = try t.workerPausedBeforeRename(["set", TestRoot.group, "lost", "never-synchronized"])
    #expect(waitForFile(marker, timeout: 30), "\(killed.standardError)")
    let folder = t.groupSuiteFile.deletingLastPathComponent()
    let pid = killed.process.processIdentifier
    killed.signal(SIGKILL)
    _ = killed.wait()
    // Named in the suite's staging folder, which nobody watches, then renamed across.
    let staging = folder.appendingPathComponent(".staging")
    #expect(entries(of: staging).contains { $0.contains(".tmp-\(pid)-") })
    // The old file is intact: the rename never happened.
    let before = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(before["kept"] as? String == "yes")
    #expect(before["lost"] == nil)
    try checkSurvivorCommitAndInvariants(t, [])
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["kept"] as? String == "yes")
  }

  @Test func aWriterKilledWhileMovingTheTokenLeavesItRepairedNotGoingBack() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set("one", forKey: "k")
    #expect(d.synchronize())
    let before = d.changeToken
    // A writer killed inside the token's sequence lock leaves the sequence odd (word 1 of
    // the lock file): every reader would spin, then see no token at all.
    let fd = open(t.groupSuiteFile.path + ".lock", O_RDWR | O_CLOEXEC)
    #expect(fd >= 0)
    var sequence: UInt64 = 0
    #expect(pread(fd, &sequence, 8, 8) == 8)
    sequence |= 1
    #expect(pwrite(fd, &sequence, 8, 8) == 8)
    close(fd)
    let during = d.changeToken
    #expect(during > before, "the token went back or did not move past the torn update")
    #expect(!d.hasChanged(since: during))
    // Another process reads the same, and its commit moves the token on.
    let writer = try Product.run(
      "appgroups-worker", ["set", TestRoot.group, "k", "two"],
      environment: t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(writer.status == 0, "\(writer.stderr)")
    #expect(d.hasChanged(since: during))
    #expect(d.changeToken > during)
    _ = d.refreshIfChanged()
    #expect(d.string(forKey: "k") == "two")
  }

  /// A survivor commits within its lock timeout; then no temporary or quarantined file is
  /// left, the lock is free, the file parses, and every synchronized value is there.
  private func checkSurvivorCommitAndInvariants(_ t: TestRoot, _ killed: [Incarnation]) throws {
    let survivor = try Product.run(
      "appgroups-worker", ["set", TestRoot.group, "survivor", "landed"],
      environment: t.environment().merging([
        "APPGROUPS_WORKER_NO_WAIT": "1", "APPGROUPS_WORKER_LOCK_TIMEOUT_MS": "2000",
      ]) { $1 })
    #expect(survivor.status == 0 && survivor.stdout == "set\n", "\(survivor.stderr)")

    let folder = t.groupSuiteFile.deletingLastPathComponent()
    let names = entries(of: folder)
    #expect(names.filter { $0.contains(".tmp-") } == [], "temporary files left")
    let staging = entries(of: folder.appendingPathComponent(".staging"))
    #expect(staging.filter { $0.contains(".tmp-") } == [], "temporary files left in the staging folder")
    #expect(names.filter { $0.contains(".unreadable-") } == [], "a file was found unreadable")

    // The lock is free.
    let lockPath = t.groupSuiteFile.path + ".lock"
    let fd = open(lockPath, O_RDWR | O_CLOEXEC)
    #expect(fd >= 0)
    if fd >= 0 {
      #expect(flock(fd, LOCK_EX | LOCK_NB) == 0, "the lock is still held")
      close(fd)
    }

    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["survivor"] as? String == "landed")
    var lost: [String] = []
    for incarnation in killed where incarnation.lastSynced >= 0 {
      let last = incarnation.lastSynced
      for n in max(0, last - Self.slots + 1)...last {
        let key = "\(incarnation.prefix)-\(n % Self.slots)"
        // The slot holds n or a later value written to the same slot.
        guard let value = onDisk[key] as? Int, value >= n, value % Self.slots == n % Self.slots
        else {
          lost.append("\(key) (synchronized \(n), found \(String(describing: onDisk[key])))")
          continue
        }
      }
    }
    #expect(lost == [], "synchronized values lost")
  }
}

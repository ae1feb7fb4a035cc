import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// `groupctl rename` against another process's commit of the same key.
@Suite("groupctl rename under contention", .processBound)
struct GroupctlRenameContentionTests {
  /// Whether some process waits for a lock on the file whose inode is `inode` (a `->` line of
  /// `/proc/locks`).
  private func someoneWaitsForLock(onInode inode: UInt64) -> Bool {
    guard let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return false }
    return table.split(separator: "\n").contains { $0.contains("->") && $0.contains(":\(inode) ") }
  }

  @Test func aRenameMovesTheValueOnDiskAtItsCommitNotACopyReadBefore() throws {
    let g = try GroupctlRoot()
    let group = TestRoot.group
    try g.ok(["write", group, "draft", "first"])

    // Another process stops itself holding the suite's lock, about to commit draft = second.
    let marker = g.path + "/holding-lock"
    let holder = try ChildProcess(
      "appgroups-worker", ["set", group, "draft", "second"],
      environment: g.t.environment().merging([
        "APPGROUPS_WORKER_NO_WAIT": "1", "APPGROUPS_TEST_PAUSE_IN_COMMIT": marker,
      ]) { $1 })
    #expect(waitForFile(marker, timeout: 30), "\(holder.standardError)")
    #expect(eventually { processState(holder.process.processIdentifier) == "T" }, "the holder is not stopped")

    // The rename starts and waits for the lock.
    let lockFile = g.t.groupSuiteFile.path + ".lock"
    let inode = try #require(FileStatus(atPath: lockFile)?.inode)
    let rename = try ChildProcess(
      "groupctl", ["--root", g.path, "rename", group, "draft", "final"], environment: ["APPGROUPS_ROOT": g.path])
    #expect(eventually { someoneWaitsForLock(onInode: inode) }, "the rename never waited for the lock")

    // The holder's commit lands first and is acknowledged; the rename moves that value.
    holder.signal(SIGCONT)
    #expect(holder.waitForLine(timeout: 30) == "set")
    #expect(holder.wait(timeout: 30) == 0, "\(holder.standardError)")
    #expect(rename.wait(timeout: 30) == 0, "\(rename.standardError)")
    let onDisk = try TestRoot.readPlist(g.t.groupSuiteFile)
    #expect(onDisk["final"] as? String == "second", "\(onDisk)")
    #expect(onDisk["draft"] == nil, "\(onDisk)")
  }
}

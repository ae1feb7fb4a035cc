import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A commit whose temporary file is removed before its rename: what a writer does that holds
/// a lock file made again after the one this commit holds was removed (it takes the temporary
/// for a killed writer's leftover). The commit starts its pass over instead of failing.
@Suite("Storage: a commit's temporary file removed before its rename", .processBound)
struct LockFileRemovedWritersTests {
  @Test func theCommitStartsOverAndLands() throws {
    let t = try TestRoot()
    let (writer, marker) = try t.workerPausedBeforeRename(["increment", TestRoot.group, "counter", "1"])
    let pid = writer.process.processIdentifier
    defer { writer.signal(SIGKILL) }
    let folder = t.groupSuiteFile.deletingLastPathComponent()
    let staging = folder.appendingPathComponent(".staging")
    // First pass: stopped with its temporary file written and named; the file is removed.
    #expect(waitForFile(marker, timeout: 30), "\(writer.standardError)")
    #expect(waitUntilStopped(pid, timeout: 30))
    var removed = 0
    for dir in [staging, folder] {
      for name in entries(of: dir) where name.contains(".tmp-\(pid)-") {
        if unlink(dir.appendingPathComponent(name).path) == 0 { removed += 1 }
      }
    }
    #expect(removed == 1)
    try FileManager.default.removeItem(atPath: marker)
    writer.signal(SIGCONT)
    // Second pass: the commit started over (it stops at the same point again), then lands: the
    // increment (an atomic update, which throws when its write fails) is acknowledged once.
    #expect(waitForFile(marker, timeout: 30), "\(writer.standardError)")
    #expect(waitUntilStopped(pid, timeout: 30))
    writer.signal(SIGCONT)
    #expect(writer.wait(timeout: 30) == 0, "\(writer.standardError)")
    #expect(!writer.standardError.contains("No such file"), "\(writer.standardError)")
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["counter"] as? Int == 1)
    #expect(onDisk["kept"] as? String == "yes")
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// `groupctl coordinate` ended from outside while its COMMAND runs: the COMMAND ends with it,
/// so that it cannot go on writing the file after the access ended and the next one began.
@Suite("groupctl coordinate ended from outside", .processBound)
struct GroupctlCoordinateKillTests {
  @Test func theCommandEndsWithGroupctlEvenKilledBySIGKILL() throws {
    let c = try CoordinationRoot()
    let file = c.file("draft.txt")
    try Data("one\n".utf8).write(to: URL(fileURLWithPath: file))
    let pidFile = c.g.path + "/command.pid"
    // The COMMAND says its pid, then is a long-running program (the shell execs it).
    let coordinate = try c.startCoordinate(
      ["--write", file, "--", "/bin/sh", "-c", "echo $$ > '\(pidFile)'; exec sleep 120"])
    #expect(waitForFile(pidFile, timeout: 30), "\(coordinate.standardError)")
    #expect(eventually { (try? String(contentsOfFile: pidFile, encoding: .utf8))?.hasSuffix("\n") == true })
    let pid = try #require(Int32((try String(contentsOfFile: pidFile, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines)))
    defer {
      // Only the test's own sleep, should it have outlived groupctl.
      if (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8))?.hasPrefix("sleep") == true {
        kill(pid, SIGKILL)
      }
    }
    #expect(eventually { processState(pid).map { "SR".contains($0) } == true })

    coordinate.signal(SIGKILL)
    #expect(coordinate.wait(timeout: 30) != nil, "groupctl did not end")
    // Gone, or a zombie no one has reaped yet.
    #expect(eventually({ processState(pid).map { $0 == "Z" } ?? true }, within: 10), "the COMMAND outlived groupctl")

    // The next coordinated write runs.
    let next = try c.coordinate(["--write", file, "--timeout", "5", "--", "/bin/sh", "-c", "echo two >> '\(file)'"])
    #expect(next.status == 0, "\(next.stderr)")
    #expect(try String(contentsOfFile: file, encoding: .utf8) == "one\ntwo\n")
  }
}

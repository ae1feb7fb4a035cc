import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// `groupctl coordinate … -- COMMAND`: every process of COMMAND's tree ends with the access,
/// a grandchild that left COMMAND's session included, whether groupctl is killed (SIGKILL,
/// SIGTERM) or COMMAND exits; the next coordinated writer is let in only once they are gone.
@Suite("groupctl coordinate ends COMMAND's whole tree", .processBound)
struct GroupctlCoordinateTreeTests {
  /// A COMMAND that starts a grandchild in a session of its own (a double fork and `setsid`,
  /// as a daemon does), which writes its pid to `grandchildFile` and runs on; COMMAND writes
  /// its own pid to `commandFile` once the grandchild's is there, then `rest`.
  static func command(_ grandchildFile: String, _ commandFile: String, then rest: String) -> [String] {
    [
      "/bin/sh", "-c",
      "( setsid /bin/sh -c 'echo $$ > \"$1.tmp\"; mv \"$1.tmp\" \"$1\"; exec sleep 120' sh '\(grandchildFile)' & );"
        + " while [ ! -s '\(grandchildFile)' ]; do :; done;"
        + " echo $$ > '\(commandFile).tmp'; mv '\(commandFile).tmp' '\(commandFile)'; \(rest)",
    ]
  }

  /// A root, its file to coordinate (holding `one`), and where the pids are written.
  static func root(_ name: String = #function) throws -> (
    CoordinationRoot, file: String, grandchildFile: String, commandFile: String
  ) {
    let c = try CoordinationRoot(name)
    let file = c.file("draft.txt")
    try Data("one\n".utf8).write(to: URL(fileURLWithPath: file))
    return (c, file, c.g.path + "/grandchild.pid", c.g.path + "/command.pid")
  }

  static func pid(in path: String) throws -> Int32 {
    try #require(Int32(try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
  }

  /// Kills `pid` should it still be the test's own sleep (it outlived what should have ended it).
  static func cleanUp(_ pid: Int32) {
    if (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8))?.hasPrefix("sleep") == true {
      kill(pid, SIGKILL)
    }
  }

  /// Gone, or a zombie no one has reaped yet.
  static func ended(_ pid: Int32) -> Bool { processState(pid).map { $0 == "Z" } ?? true }

  /// groupctl ended by `signal` while COMMAND and its grandchild run: both end, groupctl ends
  /// by the signal, and the next coordinated write is let in only when the
  /// grandchild is gone (its COMMAND checks, with `kill -0`, which a zombie would pass too).
  func endGroupctl(with signal: Int32, name: String = #function) throws {
    let (c, file, grandchildFile, commandFile) = try Self.root(name)
    let coordinate = try c.startCoordinate(
      ["--write", file, "--"] + Self.command(grandchildFile, commandFile, then: "exec sleep 120"))
    #expect(waitForFile(commandFile, timeout: 30), "\(coordinate.standardError)")
    let grandchild = try Self.pid(in: grandchildFile)
    let command = try Self.pid(in: commandFile)
    defer {
      Self.cleanUp(grandchild)
      Self.cleanUp(command)
    }
    #expect(eventually { processState(command).map { "SR".contains($0) } == true })
    #expect(
      (try? String(contentsOfFile: "/proc/\(grandchild)/stat", encoding: .utf8)).map { !$0.isEmpty } == true,
      "the grandchild runs")

    coordinate.signal(signal)
    let status = coordinate.wait(timeout: 30)
    #expect(
      status == signal && coordinate.process.terminationReason == .uncaughtSignal,
      "groupctl did not end on signal \(signal): \(String(describing: status))")
    let next = try c.coordinate([
      "--write", file, "--timeout", "30", "--", "/bin/sh", "-c",
      "if kill -0 \(grandchild) 2>/dev/null; then echo 'the grandchild still runs' >&2; exit 3; fi; echo two >> '\(file)'",
    ])
    #expect(next.status == 0, "\(next.stderr)")
    #expect(try String(contentsOfFile: file, encoding: .utf8) == "one\ntwo\n")
    #expect(eventually({ Self.ended(command) && Self.ended(grandchild) }, within: 10), "COMMAND's tree outlived groupctl")
  }

  @Test func aGrandchildInItsOwnSessionEndsWhenGroupctlIsKilled() throws {
    try endGroupctl(with: SIGKILL)
  }

  /// Started by the test process from a thread that blocks every signal, as Dispatch's
  /// threads do: groupctl inherits that mask, and SIGTERM, left pending, did not end it.
  @Test func groupctlEndsOnSIGTERMWhateverMaskItInherited() throws {
    try endGroupctl(with: SIGTERM)
  }

  /// COMMAND exits 0 and leaves its grandchild running: the grandchild is killed before
  /// groupctl ends the access, and groupctl's status is COMMAND's.
  @Test func whatCommandLeftRunningEndsWithTheAccess() throws {
    let (c, file, grandchildFile, commandFile) = try Self.root()
    let result = try c.coordinate(
      ["--write", file, "--"] + Self.command(grandchildFile, commandFile, then: "exit 0"))
    #expect(result.status == 0, "\(result.stderr)")
    let grandchild = try Self.pid(in: grandchildFile)
    defer { Self.cleanUp(grandchild) }
    #expect(processState(grandchild) == nil, "the grandchild outlived the access")

    // COMMAND's own status and signal still come through.
    #expect(try c.coordinate(["--write", file, "--", "/bin/sh", "-c", "exit 7"]).status == 7)
    #expect(try c.coordinate(["--write", file, "--", "/bin/sh", "-c", "kill -TERM $$"]).status == 128 + SIGTERM)
  }
}

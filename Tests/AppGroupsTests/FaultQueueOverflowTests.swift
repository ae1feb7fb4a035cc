import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// A suite flooded with changes faster than a slow reader takes them: the reader's inotify
/// queue overflows (events are lost), and the reader still converges on the final values.
@Suite("Fault: inotify queue overflow", .processBound)
struct FaultQueueOverflowTests {
  private func repl(_ t: TestRoot, as identity: String) throws -> ChildProcess {
    let child = try ChildProcess(
      "appgroups-worker", ["repl", TestRoot.group],
      environment: t.environment(as: identity).merging(["APPGROUPS_WORKER_DIAGNOSTICS": "stdout"]) { $1 })
    #expect(child.waitFor("ready"), "\(child.standardError)")
    return child
  }

  private func ask(_ child: ChildProcess, _ command: String, _ prefix: String) -> String? {
    child.send(command)
    return child.waitForLine(timeout: 30) { $0.hasPrefix(prefix) }
  }

  @Test func aReaderWhoseQueueOverflowedStillConvergesOnTheFinalValues() throws {
    let t = try TestRoot()
    let maxQueued = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))
      .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 16_384
    let reader = try repl(t, as: TestRoot.widget)
    let writer = try repl(t, as: TestRoot.app)
    let folder = t.groupSuiteFile.deletingLastPathComponent()

    // The reader's next change blocks its inotify thread: from then on it is a slow reader.
    #expect(ask(reader, "block-next-change", "armed") == "armed")
    #expect(ask(writer, "seti counter 0", "ok") == "ok")
    #expect(ask(writer, "sync", "sync ")?.hasPrefix("sync true") == true)
    #expect(reader.waitForLine(timeout: 30) { $0 == "blocked" } != nil, "\(reader.standardError)")

    // A witness watch that reads nothing during the flood, to show the kernel dropped events.
    let witness = inotify_init1(CInt(IN_NONBLOCK | IN_CLOEXEC))
    #expect(witness >= 0)
    defer { close(witness) }
    #expect(inotify_add_watch(witness, folder.path, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO)) >= 0)

    // The flood: more events than the queue holds, then real commits whose events are lost.
    let noise = maxQueued + 2_000
    #expect(ask(writer, "noise \(folder.path) \(noise)", "noise done") == "noise done")
    let commits = 40
    for n in 1...commits {
      #expect(ask(writer, "seti counter \(n)", "ok") == "ok")
      #expect(ask(writer, "sync", "sync ")?.hasPrefix("sync true") == true)
    }
    #expect(ask(writer, "set final done", "ok") == "ok")
    #expect(ask(writer, "sync", "sync ")?.hasPrefix("sync true") == true)
    #expect(witnessSawOverflow(witness), "the queue did not overflow: the test proves nothing")

    // The slow reader resumes: it reads an overflow, re-reads the suite, and converges.
    #expect(ask(reader, "release", "released") == "released")
    reader.send("wait final done 20")
    #expect(reader.waitForLine(timeout: 30) { $0.hasPrefix("seen ") || $0.hasPrefix("timeout ") } == "seen final")
    #expect(ask(reader, "get counter", "value ") == "value \(commits)")
    print("overflow: \(noise) noise events (queue holds \(maxQueued)), \(commits + 1) commits after them")

    for child in [reader, writer] {
      child.send("quit")
      #expect(child.wait() == 0)
    }
  }

  private func witnessSawOverflow(_ fd: CInt) -> Bool {
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    var overflowed = false
    while true {
      let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if n <= 0 { return overflowed }
      var offset = 0
      while offset + MemoryLayout<inotify_event>.size <= n {
        let (mask, length) = buffer.withUnsafeBytes { raw -> (UInt32, UInt32) in
          let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
          return (event.mask, event.len)
        }
        if mask & UInt32(IN_Q_OVERFLOW) != 0 { overflowed = true }
        offset += MemoryLayout<inotify_event>.size + Int(length)
      }
    }
  }
}

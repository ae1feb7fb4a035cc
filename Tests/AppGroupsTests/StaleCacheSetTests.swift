import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A `set` of the value this process holds in memory while another process's later commit is
/// not heard yet (its change monitor busy in a slow observer, or the app suspended): the set
/// still goes to disk, and `synchronize()` true means it is there. It was taken for a no-op,
/// and the other process's value stayed on disk though `synchronize()` said true.
@Suite("Stale cache: a set equal to what memory holds", .processBound)
struct StaleCacheSetTests {
  private func ask(_ child: ChildProcess, _ command: String, _ prefix: String) -> String? {
    child.send(command)
    return child.waitForLine(timeout: 30) { $0.hasPrefix(prefix) }
  }

  private func read(_ t: TestRoot, _ key: String) throws -> String {
    let result = try Product.run(
      "appgroups-worker", ["get", TestRoot.group, key],
      environment: t.environment(as: TestRoot.widget).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(result.status == 0, "\(result.stderr)")
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  @Test func aSetOfTheValueInMemoryLandsOverAnUnheardCommit() throws {
    let t = try TestRoot()
    let other = t.environment(as: TestRoot.widget).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 }
    func write(_ key: String, _ value: String) throws {
      let result = try Product.run("appgroups-worker", ["set", TestRoot.group, key, value], environment: other)
      #expect(result.status == 0, "\(result.stderr)")
    }
    try write("k", "1")
    let app = try ChildProcess(
      "appgroups-worker", ["repl", TestRoot.group], environment: t.environment(as: TestRoot.app))
    defer { app.signal(SIGKILL) }
    #expect(app.waitFor("ready"), "\(app.standardError)")
    #expect(ask(app, "get k", "value ") == "value 1")

    // The app's monitor is held by its observer on the next change; another process then
    // writes k = 2, which the app cannot hear.
    #expect(ask(app, "block-next-change", "armed") == "armed")
    try write("x", "9")
    #expect(app.waitForLine(timeout: 30) { $0 == "blocked" } != nil, "\(app.standardError)")
    try write("k", "2")

    // The app sets k = 1, what its memory holds, after that commit: it is the last write.
    #expect(ask(app, "set k 1", "ok") == "ok")
    #expect(ask(app, "sync", "sync ")?.hasPrefix("sync true") == true)
    #expect(try read(t, "k") == "1", "synchronize() said true: k = 1 is on disk")
    #expect(ask(app, "release", "released") == "released")
    app.send("quit")
    #expect(app.wait(timeout: 10) == 0)
  }

  /// A value that `==` finds equal to the one held but that is stored as other bytes: -0.0
  /// over 0.0, a decomposed "é" over a composed one. Each is written, as a device writes it.
  @Test func aValueEqualButNotIdenticalIsWritten() throws {
    let t = try TestRoot()
    let defaults = try t.defaults(TestRoot.group)
    defaults.set(0.0, forKey: "zero")
    defaults.set("caf\u{e9}", forKey: "word")
    #expect(defaults.synchronize())
    defaults.set(-0.0, forKey: "zero")
    defaults.set("cafe\u{301}", forKey: "word")
    #expect(defaults.synchronize())
    let stored = try #require(
      try PropertyListSerialization.propertyList(
        from: Data(contentsOf: t.groupSuiteFile), format: nil) as? [String: Any])
    #expect((stored["zero"] as? Double)?.sign == .minus, "\(stored)")
    #expect((stored["word"] as? String).map { Array($0.utf8) } == Array("cafe\u{301}".utf8), "\(stored)")
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A suite's Preferences folder (or its whole group container) removed while processes watch
/// the suite, and created again by another process's write: the watchers hear every key
/// written afterwards. Real processes; every wait is for a line, with a deadline.
@Suite("A removed folder that comes back", .processBound)
struct FolderReturnTests {
  static let group = TestRoot.group
  static let rounds = 20

  enum Removal: String, CaseIterable, Sendable {
    /// `rm -rf …/Library/Preferences`
    case preferencesFolder
    /// `rm -rf` of the group container
    case groupContainer
  }

  private func folder(_ t: TestRoot, _ removal: Removal) -> URL {
    switch removal {
    case .preferencesFolder: t.groupSuiteFile.deletingLastPathComponent()
    case .groupContainer: t.root.groupContainerURL(for: Self.group)
    }
  }

  @Test(arguments: Removal.allCases)
  func watchHearsKeysWrittenAfterTheFolderCameBack(_ removal: Removal) throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.group, "seed", "0"])
    let watch = try ChildProcess(
      "groupctl", ["--root", g.path, "watch", Self.group], environment: ["APPGROUPS_ROOT": g.path])
    defer { watch.signal(SIGKILL) }
    #expect(watch.waitForError("watching \(Self.group) (Ctrl-C to stop)"), "\(watch.standardError)")

    for round in 0..<Self.rounds {
      try FileManager.default.removeItem(at: folder(g.t, removal))
      try g.ok(["write", Self.group, "key\(round)", "value\(round)"])
      let heard = watch.waitForLine(timeout: 10) { $0 == "key\(round) = value\(round)" }
      #expect(heard != nil, "round \(round): stderr: \(watch.standardError)")
      if heard == nil { return }
    }
    watch.signal(SIGINT)
    #expect(watch.wait(timeout: 10) == 0)
  }

  @Test(arguments: Removal.allCases)
  func aLibraryObserverHearsAndReadsKeysWrittenAfterTheFolderCameBack(_ removal: Removal) throws {
    let t = try TestRoot()
    let observer = try ChildProcess(
      "appgroups-worker", ["observe", Self.group], environment: t.environment())
    defer { observer.signal(SIGKILL) }
    #expect(observer.waitFor("ready"), "\(observer.standardError)")
    let writerEnvironment = t.environment(as: TestRoot.widget)
      .merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 }

    for round in 0..<Self.rounds {
      try FileManager.default.removeItem(at: folder(t, removal))
      // Another app's write creates the folders again.
      let write = try Product.run(
        "appgroups-worker", ["set", Self.group, "key\(round)", "value\(round)"],
        environment: writerEnvironment)
      #expect(write.status == 0, "round \(round): \(write.stderr)")
      let heard = observer.waitForLine(timeout: 10) { $0 == "changed key\(round) value\(round)" }
      #expect(heard != nil, "round \(round): stderr: \(observer.standardError)")
      if heard == nil { return }
      observer.send("get key\(round)")
      #expect(observer.waitForLine(timeout: 10) { $0.hasPrefix("value ") } == "value value\(round)")
    }
    observer.send("quit")
    #expect(observer.wait(timeout: 10) == 0)
  }

  @Test func aSuiteOpenInThisProcessHearsAWriteAfterTheFolderCameBack() throws {
    let t = try TestRoot()
    let defaults = try t.defaults(Self.group)
    defaults.set("here", forKey: "before")
    #expect(defaults.synchronize())
    let heard = DispatchSemaphore(value: 0)
    let observation = defaults.observe(["after"]) { _ in heard.signal() }
    defer { observation.cancel() }

    try FileManager.default.removeItem(at: folder(t, .preferencesFolder))
    let write = try Product.run(
      "appgroups-worker", ["set", Self.group, "after", "there"],
      environment: t.environment(as: TestRoot.widget).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(write.status == 0, "\(write.stderr)")
    #expect(heard.wait(timeout: .now() + 10) == .success)
    #expect(defaults.string(forKey: "after") == "there")
    #expect(defaults.string(forKey: "before") == nil)  // removed with the folder
  }

  /// `refreshIfChanged()` called while the change monitor has not yet handled another
  /// process's write (its thread is held in an observer) must still see it, by the token.
  @Test(arguments: [false, true])
  func refreshIfChangedSeesAWriteTheMonitorHasNotHandledYet(afterTheFolderCameBack: Bool) throws {
    let t = try TestRoot()
    let observer = try ChildProcess(
      "appgroups-worker", ["observe", Self.group], environment: t.environment())
    defer { observer.signal(SIGKILL) }
    #expect(observer.waitFor("ready"), "\(observer.standardError)")
    let writerEnvironment = t.environment(as: TestRoot.widget)
      .merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 }
    func write(_ key: String) throws {
      let result = try Product.run(
        "appgroups-worker", ["set", Self.group, key, "v"], environment: writerEnvironment)
      #expect(result.status == 0, "\(result.stderr)")
    }

    try write("first")
    #expect(observer.waitFor("changed first v"))
    if afterTheFolderCameBack {
      try FileManager.default.removeItem(at: folder(t, .preferencesFolder))
      try write("back")
      #expect(observer.waitFor("changed back v"))
    }
    observer.send("block-next-change")
    #expect(observer.waitFor("armed"))
    try write("held")
    #expect(observer.waitFor("blocked"))
    try write("unseen")
    observer.send("refresh")
    let answer = observer.waitForLine { $0.hasPrefix("refresh ") }
    // After the folder came back, the token is read from the new lock file's page: the store
    // mapped it when it re-read the suite that came back.
    #expect(answer?.hasPrefix("refresh true") == true, "\(answer ?? "no answer")")
    observer.send("release")
    #expect(observer.waitFor("released"))
    // Read (or, once released, heard) either way.
    observer.send("wait unseen v 10")
    #expect(observer.waitForLine { $0.hasPrefix("seen ") || $0.hasPrefix("timeout ") } == "seen unseen")
    observer.send("quit")
    #expect(observer.wait(timeout: 10) == 0)
  }
}

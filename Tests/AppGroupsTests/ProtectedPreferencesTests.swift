import AppGroups
import AppGroupsKeybag
import AppGroupsTestSupport
import ExampleSchema
import Foundation
import Synchronization
import Testing

/// Preferences before the first unlock: a suite's file is of class
/// completeUntilFirstUserAuthentication.
@Suite("Preferences before first unlock", .processBound)
struct ProtectedPreferencesTests {
  /// A device whose group suite holds `values`, restarted with a passcode: before its first
  /// unlock. Nothing of it is open in this process.
  func deviceBeforeFirstUnlock(_ name: String = #function, values: [String: String]) throws
    -> KeybagRoot
  {
    let r = try KeybagRoot(name)
    for (key, value) in values {
      _ = try Product.run(
        "groupctl", ["--root", r.t.path, "write", TestRoot.group, key, value])
    }
    try r.keybag.setPasscode("1234")
    try r.device.reboot()
    #expect(r.state.lockState == .beforeFirstUnlock)
    return r
  }

  @Test func aSuiteReadsAsRegisteredDefaultsAndKeepsWritesInMemoryUntilTheFirstUnlock() throws {
    let unique = UUID().uuidString.prefix(8)
    let stored = "stored-\(unique)"
    let same = "same-\(unique)"
    let r = try deviceBeforeFirstUnlock(values: [stored: "user", same: "same"])
    let lines = Mutex<[String]>([])
    let defaults = try Diagnostics.withHandler({ line in lines.withLock { $0.append(line) } }) {
      try r.t.defaults(TestRoot.group)
    }
    defaults.register(defaults: [stored: "registered", same: "same"])
    #expect(defaults.string(forKey: stored) == "registered", "the registered default, not the file")
    #expect(defaults.source(forKey: stored) == .registration)
    #expect(defaults.dictionaryRepresentation()[stored] as? String == "registered")
    #expect(
      defaults.persistentDomain(forName: TestRoot.group) == nil, "no persisted key is visible")
    let reason = try #require(defaults.unavailableReason)
    #expect(reason.contains("before first unlock"))
    let said = lines.withLock { $0 }.filter { $0.contains(r.t.groupSuiteFile.path) }
    #expect(said.count == 1, "one diagnostic per suite: \(said)")
    #expect(said.first?.contains("protected data is unavailable") == true)

    defaults.set("mine", forKey: "written-\(unique)")
    #expect(defaults.string(forKey: "written-\(unique)") == "mine", "a write is seen at once")
    #expect(!defaults.synchronize(), "not on disk: synchronize() says false")
    let update = #expect(throws: AppGroupsError.self) {
      try defaults.update(forKey: "count") { _ in .integer(1) }
    }
    #expect(update?.code == .protectedDataUnavailable)
    let replace = #expect(throws: AppGroupsError.self) {
      try defaults.replacePersistentDomain(TestRoot.group, with: [:])
    }
    #expect(replace?.code == .protectedDataUnavailable)

    // The first unlock: the file is read, the write lands beside the stored values, and the
    // observer hears each key whose effective value changed (not `same`: it reads the same).
    let heard = Mutex<[String: String]>([:])
    let changed = DispatchSemaphore(value: 0)
    // Other tests of this process register defaults too (the registration domain is the
    // process's, as on Apple platforms): only this test's keys count.
    let observation = defaults.observe { changes in
      let mine = changes.filter { $0.key.hasSuffix(unique) }
      guard !mine.isEmpty else { return }
      heard.withLock { heard in
        for change in mine {
          heard[change.key] = change.newValue.map { "\($0.foundationValue)" } ?? "(nil)"
        }
      }
      changed.signal()
    }
    try r.keybag.unlock(passcode: "1234")
    #expect(changed.wait(timeout: .now() + 20) == .success, "no change heard at the first unlock")
    #expect(heard.withLock { $0 } == [stored: "user"])
    #expect(defaults.string(forKey: stored) == "user")
    #expect(defaults.source(forKey: stored) == .application)
    #expect(defaults.synchronize())
    #expect(defaults.unavailableReason == nil, "the suite and the global domain are read")
    let disk = try TestRoot.readOnDisk(r.t.groupSuiteFile)
    #expect(disk[stored] as? String == "user" && disk[same] as? String == "same")
    #expect(disk["written-\(unique)"] as? String == "mine")
    observation.cancel()
  }

  @Test func pendingWritesLandKeyByKeyAtTheFirstUnlockWhileOthersWrite() throws {
    let r = try deviceBeforeFirstUnlock(values: ["theme": "dark", "untouched": "kept"])
    let environment = { (app: String) in
      r.t.environment(as: app).merging(["APPGROUPS_WORKER_DIAGNOSTICS": "stdout"]) { $1 }
    }
    let app = try ChildProcess(
      "appgroups-worker", ["observe", TestRoot.group], environment: environment(TestRoot.app))
    let widget = try ChildProcess(
      "appgroups-worker", ["observe", TestRoot.group], environment: environment(TestRoot.widget))
    for child in [app, widget] {
      #expect(child.waitForLine { $0.contains("protected data is unavailable") } != nil)
      #expect(child.waitFor("ready"))
    }
    // The app reads nothing, and writes as if it were its first launch.
    app.send("get theme")
    #expect(app.waitFor("value (nil)"))
    app.send("set theme system")
    app.send("set fromApp 1")
    app.send("sync")
    #expect(app.waitForLine { $0.hasPrefix("sync ") }?.hasPrefix("sync false") == true)
    widget.send("set fromWidget 2")
    // The administrator writes meanwhile (groupctl reads the files as the machine's owner).
    _ = try Product.run(
      "groupctl", ["--root", r.t.path, "write", TestRoot.group, "fromAdmin", "3"])
    let refused = try Product.run(
      "groupctl", ["--root", r.t.path, "--as", TestRoot.app, "write", TestRoot.group, "x", "1"])
    #expect(refused.status == 1 && refused.stderr.contains("protected data is unavailable"))

    #expect(
      try Product.run("groupctl", ["--root", r.t.path, "device", "unlock", "--passcode", "1234"])
        .status == 0)
    // Each process hears what the others' files hold, and lands its own writes.
    for (child, other) in [(app, "fromWidget"), (widget, "fromApp")] {
      child.send("wait \(other) \(other == "fromApp" ? "1" : "2") 20")
      #expect(child.waitFor("seen \(other)"), "\(child.standardError)")
      child.send("wait fromAdmin 3 20")
      #expect(child.waitFor("seen fromAdmin"))
      child.send("wait untouched kept 20")
      #expect(child.waitFor("seen untouched"))
      child.send("quit")
      #expect(child.wait() == 0)
    }
    let disk = try TestRoot.readOnDisk(r.t.groupSuiteFile)
    #expect(disk["untouched"] as? String == "kept", "the domain was not replaced")
    #expect(disk["fromApp"] as? String == "1" && disk["fromWidget"] as? String == "2")
    #expect(disk["fromAdmin"] as? String == "3")
    // The prewarm overwrite: the app's first-launch value landed over the user's choice.
    #expect(disk["theme"] as? String == "system")
  }

  /// Writes made before the first unlock through a suite object the app then lets go of still
  /// land at the unlock: the process keeps them, not the object.
  @Test func writesOfASuiteLetGoOfBeforeTheFirstUnlockLandAtIt() throws {
    let unique = UUID().uuidString.prefix(8)
    let key = "let-go-\(unique)"
    let r = try deviceBeforeFirstUnlock(values: ["theme": "dark"])
    try Diagnostics.withHandler({ _ in }) {
      let defaults = try r.t.defaults(TestRoot.group)
      defaults.set("mine", forKey: key)
      #expect(!defaults.synchronize())
    }
    try r.keybag.unlock(passcode: "1234")
    let again = try r.t.defaults(TestRoot.group)
    #expect(again.synchronize())
    let disk = try TestRoot.readOnDisk(r.t.groupSuiteFile)
    #expect(disk[key] as? String == "mine", "the write made before the unlock was dropped")
    #expect(disk["theme"] as? String == "dark")
  }

  /// A process that ends before the first unlock cannot land the writes it kept in memory:
  /// it says which keys go with it, and the file keeps what it held.
  @Test func writesStillInMemoryWhenTheProcessEndsAreSaidToBeLost() throws {
    let r = try deviceBeforeFirstUnlock(values: ["theme": "dark"])
    let before = try Data(contentsOf: r.t.groupSuiteFile)
    let app = try ChildProcess(
      "appgroups-worker", ["repl", TestRoot.group], environment: r.t.environment(as: TestRoot.app))
    #expect(app.waitFor("ready"))
    app.send("set theme system")
    app.send("set welcomed 1")
    #expect(app.waitFor("ok") && app.waitFor("ok"))
    app.send("quit")
    #expect(app.wait() == 0)
    let said = app.waitForErrorLine { $0.contains("were not written") }
    #expect(said != nil, "\(app.standardError)")
    #expect(said?.contains(r.t.groupSuiteFile.path) == true)
    #expect(said?.contains(#"2 changed key(s) ("theme", "welcomed")"#) == true, "\(said ?? "")")
    #expect(said?.contains("protected data is unavailable (before first unlock") == true)
    #expect(try Data(contentsOf: r.t.groupSuiteFile) == before)
  }

  @Test func groupctlAsAnAppRefusesBeforeTheFirstUnlockAndSaysWhy() throws {
    let r = try deviceBeforeFirstUnlock(values: ["theme": "dark"])
    func groupctl(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
      try Product.run("groupctl", ["--root", r.t.path] + args)
    }
    for args in [
      ["--as", TestRoot.app, "read", TestRoot.group, "theme"],
      ["--as", TestRoot.app, "write", TestRoot.group, "theme", "light"],
      ["--as", TestRoot.app, "delete", TestRoot.group, "theme"],
      ["--as", TestRoot.app, "export", TestRoot.group, "-"],
    ] {
      let result = try groupctl(args)
      #expect(result.status == 1, "\(args): \(result)")
      #expect(
        result.stderr.contains(
          "cannot be read or written as \(TestRoot.app): protected data is unavailable (before first unlock"
        ),
        "\(args): \(result.stderr)")
    }
    // The commands that look through every domain: an empty answer would say there is none.
    for args in [
      ["--as", TestRoot.app, "read"], ["--as", TestRoot.app, "domains"],
      ["--as", TestRoot.app, "find", "dark"],
    ] {
      let result = try groupctl(args)
      #expect(result.status == 1 && result.stdout.isEmpty, "\(args): \(result)")
      #expect(
        result.stderr.contains(
          "no domain can be read as \(TestRoot.app): protected data is unavailable (before first unlock"
        ),
        "\(args): \(result.stderr)")
    }
    let explain = try groupctl(["--as", TestRoot.app, "explain", TestRoot.group, "theme"])
    #expect(explain.status == 0)
    #expect(
      explain.stdout.contains("application   unavailable (protected data): before first unlock"))
    #expect(explain.stdout.contains("on disk: dark"))
    let report = try groupctl(["--as", TestRoot.app, "report", TestRoot.group])
    #expect(
      report.stdout.contains("unavailable (protected data): before first unlock"), "\(report)")
    #expect(report.stdout.contains("keys (0):"))
    // The administrator reads the file: it stands outside the device.
    #expect(try groupctl(["read", TestRoot.group, "theme"]).stdout == "dark\n")
    _ = try groupctl(["device", "unlock", "--passcode", "1234"])
    #expect(
      try groupctl(["--as", TestRoot.app, "read", TestRoot.group, "theme"]).stdout == "dark\n")
    #expect(try groupctl(["--as", TestRoot.app, "find", "dark"]).stdout.contains("theme = dark"))
  }

  @Test func aSchemaWaitsForTheFirstUnlockToMigrate() throws {
    let r = try deviceBeforeFirstUnlock(values: ["unread": "7"])
    let defaults = try r.t.defaults(TestRoot.group)
    let refused = #expect(throws: AppGroupsError.self) {
      try defaults.register(ExampleSchema.schema)
    }
    #expect(refused?.code == .protectedDataUnavailable)
    #expect(refused?.message.contains("nothing was migrated") == true)
    #expect(defaults[PreferenceKeys.theme] == .system, "the defaults are registered all the same")
    try r.keybag.unlock(passcode: "1234")
    #expect(defaults.synchronize())
    let report = try defaults.register(ExampleSchema.schema)
    #expect(report.outcome == .migrated || report.outcome == .upToDate)
    #expect(defaults.storedSchemaVersion == ExampleSchema.schema.version)
  }
}

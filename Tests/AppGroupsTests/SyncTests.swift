@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// Rewrites a property-list file with Foundation, as an outside tool would:
/// atomically (a rename) or in place (truncate and write).
func editOutside(
  _ url: URL, atomically: Bool = true, _ change: (inout [String: Any]) -> Void
) throws {
  var values = (try? TestRoot.readOnDisk(url)) ?? [:]
  change(&values)
  let data = try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
  try data.write(to: url, options: atomically ? .atomic : [])
}

/// Collects the changes an observer is told of, and waits for one.
final class ChangeLog: Sendable {
  private let changes = Locked<[GroupDefaults.Change]>([])
  private let arrived = DispatchSemaphore(value: 0)

  func record(_ batch: [GroupDefaults.Change]) {
    changes.withLock { $0 += batch }
    arrived.signal()
  }

  var all: [GroupDefaults.Change] { changes.withLock { $0 } }

  /// Waits (bounded) until a recorded change satisfies `matching`.
  func wait(
    timeout: Duration = .seconds(10), for matching: (GroupDefaults.Change) -> Bool
  ) -> GroupDefaults.Change? {
    let deadline = ContinuousClock.now + timeout
    while true {
      if let found = all.first(where: matching) { return found }
      let left = ContinuousClock.now.duration(to: deadline)
      if left <= .zero { return nil }
      let (seconds, attoseconds) = left.components
      let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
      _ = arrived.wait(timeout: .now() + .nanoseconds(nanoseconds))
    }
  }
}

@Suite("Change propagation", .processBound)
struct SyncTests {
  @Test func anObserverOfOneKeyIsNotCalledForAnotherKey() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let onlyA = ChangeLog()
    let everything = ChangeLog()
    let a = d.observe(["a"], handler: onlyA.record)
    let all = d.observe(handler: everything.record)
    defer {
      a.cancel()
      all.cancel()
    }
    let env = t.environment(as: TestRoot.app)
    #expect(try Product.run("app", ["set", "b", "one"], environment: env).status == 0)
    #expect(try Product.run("app", ["set", "a", "two"], environment: env).status == 0)
    #expect(onlyA.wait { $0.key == "a" && $0.newValue == .string("two") } != nil)
    #expect(everything.wait { $0.key == "b" } != nil)
    #expect(onlyA.all.map(\.key) == ["a"])
    #expect(onlyA.all.first?.origin == .otherProcess)
  }

  @Test(arguments: [true, false])
  func anOutsideEditOfThePlistIsNoticed(atomically: Bool) throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    d.set("before", forKey: "greeting")
    #expect(d.synchronize())
    let log = ChangeLog()
    let observation = d.observe(["greeting"], handler: log.record)
    defer { observation.cancel() }
    let token = d.changeToken

    try editOutside(t.groupSuiteFile, atomically: atomically) { $0["greeting"] = "edited" }

    let change = log.wait { $0.newValue == .string("edited") }
    #expect(change?.oldValue == .string("before"))
    #expect(change?.origin == .otherProcess)
    #expect(d.string(forKey: "greeting") == "edited")
    #expect(d.hasChanged(since: token))
  }

  /// A burst that sets one key twice posts its changed keys sorted and each once.
  @Test func aBurstPostsItsChangedKeysSortedAndEachOnce() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let posted = Locked<[[String]]>([])
    let arrived = DispatchSemaphore(value: 0)
    let observer = NotificationCenter.default.addObserver(
      forName: GroupDefaults.didChangeNotification, object: d, queue: nil
    ) { note in
      // Another test's registration (the process's domain) is heard here too: not ours.
      let keys = (note.userInfo?[GroupDefaults.changedKeysKey] as? [String] ?? ["?"])
        .filter { ["a", "b", "c", "?"].contains($0) }
      guard !keys.isEmpty else { return }
      posted.withLock { $0.append(keys) }
      arrived.signal()
    }
    defer { NotificationCenter.default.removeObserver(observer) }
    for (key, value) in [("b", 1), ("a", 1), ("b", 2), ("c", 1), ("a", 2)] {
      d.set(value, forKey: key)
    }
    let deadline = ContinuousClock.now + .seconds(10)
    while Set(posted.withLock { $0.joined() }) != ["a", "b", "c"], ContinuousClock.now < deadline {
      _ = arrived.wait(timeout: .now() + .milliseconds(100))
    }
    let batches = posted.withLock { $0 }
    #expect(Set(batches.joined()) == ["a", "b", "c"])
    for keys in batches {
      #expect(keys == Array(Set(keys)).sorted(), "\(keys)")
    }
  }

  /// A burst's `didChangeNotification`s come at most one per pause
  /// (``SuiteView/notificationPause``), not one per turn of a Dispatch worker, and together
  /// tell every key of the burst: the last one comes after the last change.
  @Test func aBurstPostsAtMostOneNotificationPerPause() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let count = 3_000
    let posted = Locked<(notifications: Int, keys: Set<String>)>((0, []))
    let arrived = DispatchSemaphore(value: 0)
    let observer = NotificationCenter.default.addObserver(
      forName: GroupDefaults.didChangeNotification, object: d, queue: nil
    ) { note in
      let keys = (note.userInfo?[GroupDefaults.changedKeysKey] as? [String] ?? []).filter { $0.hasPrefix("n-") }
      guard !keys.isEmpty else { return }
      posted.withLock {
        $0.notifications += 1
        $0.keys.formUnion(keys)
      }
      arrived.signal()
    }
    defer { NotificationCenter.default.removeObserver(observer) }
    let start = ContinuousClock.now
    for i in 0..<count { d.set(i, forKey: "n-\(i)") }
    let deadline = ContinuousClock.now + .seconds(30)
    while posted.withLock({ $0.keys.count }) < count, ContinuousClock.now < deadline {
      _ = arrived.wait(timeout: .now() + .milliseconds(100))
    }
    let elapsed = ContinuousClock.now - start
    let (notifications, keys) = posted.withLock { $0 }
    #expect(keys.count == count)
    // Each batch is taken at least a pause after the one before, however the threads are
    // scheduled (a writer preempted between its sets makes batches of one change each).
    let pauses = Int(elapsed / .nanoseconds(Int(SuiteView.notificationPause)))
    #expect(notifications <= pauses + 2, "\(notifications) notifications in \(elapsed)")
  }

  /// Opening a suite leaves the global domain closed (its lock file ready, from an earlier
  /// process) until a read reaches it; that read sees what is on disk then.
  @Test func theGlobalDomainIsOpenedOnTheFirstReadThatReachesIt() throws {
    let t = try TestRoot()
    // The suite holds "own" before it is opened (a set of a new key would read the layers
    // below it, for the change's old value), and the global lock file is there.
    try FileManager.default.createDirectory(
      at: t.groupSuiteFile.deletingLastPathComponent(), withIntermediateDirectories: true)
    try editOutside(t.groupSuiteFile) { $0["own"] = "mine" }
    let globalPath = t.root.globalPreferencesURL.path
    let globalFolder = t.root.globalPreferencesURL.deletingLastPathComponent()
    try FileManager.default.createDirectory(at: globalFolder, withIntermediateDirectories: true)
    let lockPage = Data(count: 4096)
    #expect(FileManager.default.createFile(atPath: globalPath + ".lock", contents: lockPage))
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    #expect(d.string(forKey: "own") == "mine")
    #expect(SuiteStore.existing(path: globalPath) == nil, "the global domain was opened at once")
    try editOutside(t.root.globalPreferencesURL) { $0["shared"] = "from global" }
    #expect(d.string(forKey: "shared") == "from global")
    #expect(d.source(forKey: "shared") == .global)
    #expect(SuiteStore.existing(path: globalPath) != nil)
  }

  /// A global lock file that is a symbolic link refuses the suite at open, as it did before
  /// the global domain was opened lazily, and nothing is created through the link.
  @Test func aGlobalLockFileThatIsALinkRefusesTheSuiteAtOpen() throws {
    let t = try TestRoot()
    let globalLock = t.root.globalPreferencesURL.path + ".lock"
    let globalFolder = t.root.globalPreferencesURL.deletingLastPathComponent()
    try FileManager.default.createDirectory(at: globalFolder, withIntermediateDirectories: true)
    let target = t.root.url.deletingLastPathComponent()
      .appendingPathComponent("outside-\(UUID().uuidString).lock").path
    defer { unlink(target) }
    #expect(symlink(target, globalLock) == 0)
    #expect(throws: AppGroupsError.self) { _ = try t.defaults(TestRoot.group, as: TestRoot.widget) }
    #expect(!FileManager.default.fileExists(atPath: target))
  }

  /// An observer hears of the global domain's changes although no read reached that layer.
  @Test func anObserverHearsOfTheGlobalDomainBeforeAnyReadReachesIt() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let log = ChangeLog()
    let observation = d.observe(handler: log.record)
    defer { observation.cancel() }
    try editOutside(t.root.globalPreferencesURL) { $0["shared"] = "from global" }
    let change = log.wait { $0.key == "shared" }
    #expect(change?.newValue == .string("from global"))
    #expect(change?.origin == .otherProcess)
  }

  @Test func aManagedValueReachesObserversAndMasksLaterWrites() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let theme = ChangeLog()
    let everything = ChangeLog()
    let themeObservation = d.observe(["theme"], handler: theme.record)
    let allObservation = d.observe(handler: everything.record)
    defer {
      themeObservation.cancel()
      allObservation.cancel()
    }
    let managed = t.root.managedPreferencesURL(forDomain: TestRoot.group)
    try editOutside(managed) { $0["theme"] = "forced" }
    #expect(theme.wait { $0.newValue == .string("forced") } != nil)
    #expect(d.source(forKey: "theme") == .managed)

    // The app cannot write a forced key.
    let env = t.environment(as: TestRoot.app)
    let refused = try Product.run("app", ["theme", "dark"], environment: env)
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("forced by an administrator"))
    // An outside edit of the suite writes the masked key and a marker: the
    // observer of the masked key hears nothing, its effective value did not change.
    try editOutside(t.groupSuiteFile) {
      $0["theme"] = "dark"
      $0["marker"] = 1
    }
    #expect(everything.wait { $0.key == "marker" } != nil)
    #expect(theme.all.count == 1)
    #expect(d.string(forKey: "theme") == "forced")

    // The administrator lifts it: the suite's value shows through.
    try editOutside(managed) { $0.removeValue(forKey: "theme") }
    let lifted = theme.wait { $0.newValue == .string("dark") }
    #expect(lifted?.oldValue == .string("forced"), "\(theme.all)")
  }

  @Test func aGlobalDomainChangeReachesObservers() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let log = ChangeLog()
    let observation = d.observe(["AppleLanguages"], handler: log.record)
    defer { observation.cancel() }
    try editOutside(t.root.globalPreferencesURL) { $0["AppleLanguages"] = ["fr"] }
    let change = log.wait { $0.key == "AppleLanguages" }
    #expect(change?.newValue == .array([.string("fr")]))
    #expect(d.source(forKey: "AppleLanguages") == .global)
  }

  /// A change heard from another process is posted on the change monitor's thread, after
  /// the observers were told; a handler added with no queue runs there and may
  /// `synchronize()`, `set` and read without hanging the monitor: the next change is heard.
  /// (That next change may be heard first by the commit the handler's `set` scheduled, when it
  /// is still under way on the commit queue: a commit reads what another process wrote before
  /// it writes, and tells of it from its own thread. The second post is then not on the
  /// monitor's thread; under load, 1 whole-suite run in 10 saw that.)
  @Test func aNotificationHandlerOnTheMonitorsThreadMaySynchronizeAndSet() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let order = Locked<[String]>([])
    let arrived = DispatchSemaphore(value: 0)
    let observation = d.observe(["remote"]) { changes in
      if case .string(let value)? = changes.last?.newValue {
        order.withLock { $0.append("observer \(value)") }
      }
    }
    defer { observation.cancel() }
    let observer = NotificationCenter.default.addObserver(
      forName: GroupDefaults.didChangeNotification, object: d, queue: nil
    ) { note in
      let info = note.userInfo ?? [:]
      guard (info[GroupDefaults.changedKeysKey] as? [String])?.contains("remote") == true,
        info[GroupDefaults.originKey] as? String == "otherProcess"
      else { return }
      let onMonitor = ChangeMonitor.shared.isCurrentThread
      let synchronized = d.synchronize()
      d.set(d.integer(forKey: "replies") + 1, forKey: "replies")
      let committed = d.synchronize()
      let value = d.string(forKey: "remote") ?? "nil"
      order.withLock { $0.append("notification \(onMonitor) \(synchronized) \(committed) \(value)") }
      arrived.signal()
    }
    defer { NotificationCenter.default.removeObserver(observer) }

    for value in ["one", "two"] {
      try editOutside(t.groupSuiteFile) { $0["remote"] = value }
      #expect(arrived.wait(timeout: .now() + 10) == .success, "no notification of \(value)")
    }
    let seen = order.withLock { $0 }
    #expect(
      seen.count == 4
        && Array(seen[..<3]) == ["observer one", "notification true true true one", "observer two"]
        && ["notification true true true two", "notification false true true two"].contains(seen[3]),
      "\(seen)")
    #expect(d.integer(forKey: "replies") == 2)
  }

  @Test func didChangeNotificationSaysWhereTheChangeCameFrom() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let posted = Locked<[(origin: String, keys: [String], changes: Int)]>([])
    let arrived = DispatchSemaphore(value: 0)
    let observer = NotificationCenter.default.addObserver(
      forName: GroupDefaults.didChangeNotification, object: d, queue: nil
    ) { note in
      let info = note.userInfo ?? [:]
      #expect(info[GroupDefaults.suiteNameKey] as? String == TestRoot.group)
      // Another test's registration (the process's domain) is heard here too: not ours.
      let keys = info[GroupDefaults.changedKeysKey] as? [String] ?? []
      guard keys.contains(where: { ["local", "remote"].contains($0) }) else { return }
      posted.withLock {
        $0.append(
          (
            info[GroupDefaults.originKey] as? String ?? "?",
            info[GroupDefaults.changedKeysKey] as? [String] ?? [],
            (info[GroupDefaults.changesKey] as? [GroupDefaults.Change])?.count ?? -1
          ))
      }
      arrived.signal()
    }
    defer { NotificationCenter.default.removeObserver(observer) }

    d.set("mine", forKey: "local")
    #expect(arrived.wait(timeout: .now() + 10) == .success)
    #expect(d.synchronize())
    try editOutside(t.groupSuiteFile) { $0["remote"] = "theirs" }
    #expect(arrived.wait(timeout: .now() + 10) == .success)

    let notes = posted.withLock { $0 }
    #expect(notes.count == 2)
    #expect(notes.first?.origin == "thisProcess")
    #expect(notes.first?.keys == ["local"])
    #expect(notes.first?.changes == 1)
    // The outside edit's file holds "local" too (it was committed): only "remote" changed.
    #expect(notes.last?.origin == "otherProcess")
    #expect(notes.last?.keys == ["remote"])
  }

  @Test func refreshIfChangedReReadsOnlyWhenTheTokenMoved() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    #expect(!d.refreshIfChanged())
    let token = d.changeToken
    #expect(!d.hasChanged(since: token))
    #expect(try Product.run("app", ["unread", "9"], environment: t.environment()).status == 0)
    #expect(d.hasChanged(since: token))
    // Whoever re-reads first (this call or the change monitor), the value is there.
    d.refreshIfChanged()
    #expect(d.integer(forKey: "unreadCount") == 9)
    #expect(!d.refreshIfChanged())
  }

  /// The token read in an observer describes the values it was told of: the
  /// new file is visible from its rename on, and the token waits for the
  /// commit in flight, so a consumer never records an older token with newer
  /// values (and then re-reads for nothing on resume).
  @Test func theTokenReadInAnObserverDescribesTheChange() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let log = ChangeLog()
    let tokens = Locked<[ChangeToken]>([])
    let observation = d.observe(["unreadCount"]) { changes in
      tokens.withLock { $0.append(d.changeToken) }
      log.record(changes)
    }
    defer { observation.cancel() }
    for count in 1...3 {
      #expect(try Product.run("app", ["unread", "\(count)"], environment: t.environment()).status == 0)
      #expect(log.wait { $0.newValue == .integer(count) } != nil)
      let seen = try #require(tokens.withLock { $0.last })
      #expect(seen == d.changeToken)
      #expect(!d.hasChanged(since: seen))
    }
  }

  /// The kernel's event queue overflows while the monitor's thread is held:
  /// the event of an outside edit is lost, and the overflow re-reads every
  /// watched suite, so the observer still hears of it.
  @Test func anEventQueueOverflowReReadsEveryWatchedSuite() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let log = ChangeLog()
    let observation = d.observe(["greeting"], handler: log.record)
    defer { observation.cancel() }
    let folder = t.groupSuiteFile.deletingLastPathComponent().path

    let entered = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    let holding = Locked(true)
    let overflows = Locked(0)
    ChangeMonitor.beforeHandlingForTesting.withLock {
      $0 = { events in
        overflows.withLock { $0 += events.filter { $0.kind == .overflow }.count }
        let hold = holding.withLock { hold in
          defer { hold = false }
          return hold
        }
        if hold {
          entered.signal()
          gate.wait()
        }
      }
    }
    defer { ChangeMonitor.beforeHandlingForTesting.withLock { $0 = nil } }

    // Hold the monitor's thread in its next batch.
    #expect(FileManager.default.createFile(atPath: folder + "/trigger", contents: nil))
    #expect(entered.wait(timeout: .now() + 10) == .success)
    // More events than the kernel queues (alternating names, so none merge).
    let text = try String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8)
    let limit = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 16384
    for i in 0..<(limit + 64) {
      let fd = open(folder + (i % 2 == 0 ? "/flood-a" : "/flood-b"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
      if fd >= 0 { close(fd) }
    }
    try editOutside(t.groupSuiteFile) { $0["greeting"] = "after overflow" }
    gate.signal()

    #expect(log.wait { $0.newValue == .string("after overflow") } != nil)
    #expect(overflows.withLock { $0 } >= 1)
  }

  /// When the kernel refuses a watch (out of watches), the folder is polled
  /// and changes still arrive, just later.
  @Test func aFolderTheKernelWillNotWatchIsPolled() throws {
    let t = try TestRoot()
    let folder = (t.groupSuiteFile.path as NSString).deletingLastPathComponent
    DirectoryWatcher.injectAddWatchFailure.withLock { $0[folder] = ENOSPC }
    defer { DirectoryWatcher.injectAddWatchFailure.withLock { _ = $0.removeValue(forKey: folder) } }
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    let log = ChangeLog()
    let observation = d.observe(["greeting"], handler: log.record)
    defer { observation.cancel() }
    #expect(try Product.run("app", ["set", "greeting", "polled"], environment: t.environment()).status == 0)
    let change = log.wait { $0.newValue == .string("polled") }
    #expect(change?.origin == .otherProcess)
  }
}

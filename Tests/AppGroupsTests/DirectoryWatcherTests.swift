@testable import AppGroups
import AppGroupsTestSupport
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing

@Suite("DirectoryWatcher")
struct DirectoryWatcherTests {
  typealias Event = DirectoryWatcher.Event

  @Test func renameIntoDirectoryIsMovedTo() throws {
    let sandbox = try Sandbox()
    let log = EventLog()
    let watcher = DirectoryWatcher(handler: log.record)
    defer { watcher.close() }
    let watch = try watcher.watch(directory: sandbox.path)
    #expect(!watch.isPolling)

    try writeFile(sandbox.path + "/.suite.plist.tmp", "v1")
    try renameFile(sandbox.path + "/.suite.plist.tmp", sandbox.path + "/suite.plist")

    let expected = Event(directory: sandbox.path, name: "suite.plist", kind: .movedTo)
    #expect(log.wait { $0.contains(expected) })
    // The temporary file's life comes first, in the kernel's order.
    let kinds = log.events.filter { $0.name == ".suite.plist.tmp" }.map(\.kind)
    #expect(kinds == [.created, .closeWrite, .movedFrom])
  }

  @Test func anAtomicWriteSaysNothingAfterItsRename() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    try FileSystem.writeAtomically(Data("v1".utf8), to: path)
    let log = EventLog()
    let watcher = DirectoryWatcher(handler: log.record)
    defer { watcher.close() }
    let watch = try watcher.watch(directory: sandbox.path)
    defer { watch.cancel() }

    try FileSystem.writeAtomically(Data("v2".utf8), to: path, notBefore: 0)
    try writeFile(sandbox.path + "/sentinel", "s")

    // One queue, in order: what the write reported came before the sentinel. A watcher wakes
    // for the rename and for nothing after it (a file written through a descriptor still open
    // at the rename reports its closing under the new name: a second wake-up for one commit).
    let sentinel = Event(directory: sandbox.path, name: "sentinel", kind: .closeWrite)
    #expect(log.wait { $0.contains(sentinel) })
    let events = log.events.filter { $0.name != "sentinel" }
    let rename = try #require(events.firstIndex { $0.name == "suite.plist" && $0.kind == .movedTo })
    #expect(events[(rename + 1)...].isEmpty, "after the rename: \(events[(rename + 1)...])")
    // The temporary file is written unnamed (`O_TMPFILE`): its writes, its time and the
    // `fsync(2)`'s wait for the disk make no event; it is named just before the rename, so
    // that a watcher wakes once for the commit.
    let temporary = events.filter { $0.name != "suite.plist" }.map(\.kind)
    #expect(temporary == [.created, .movedFrom])
  }

  @Test func aWriteStagedElsewhereIsOneEventInTheTargetsFolder() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    let staging = sandbox.path + "/.staging"
    try FileSystem.writeAtomically(Data("v1".utf8), to: path, staging: staging)
    let log = EventLog()
    let watcher = DirectoryWatcher(handler: log.record)
    defer { watcher.close() }
    let watch = try watcher.watch(directory: sandbox.path)
    defer { watch.cancel() }

    try FileSystem.writeAtomically(Data("v2".utf8), to: path, notBefore: 0, staging: staging)
    try writeFile(sandbox.path + "/sentinel", "s")

    // Made, named and synced in the staging folder, which nobody watches: the target's
    // folder hears the rename into it and nothing else, so a watcher wakes once.
    let sentinel = Event(directory: sandbox.path, name: "sentinel", kind: .closeWrite)
    #expect(log.wait { $0.contains(sentinel) })
    let events = log.events.filter { $0.name != "sentinel" }
    #expect(events == [Event(directory: sandbox.path, name: "suite.plist", kind: .movedTo)])
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "v2")
    #expect(try FileManager.default.contentsOfDirectory(atPath: staging) == [])
  }

  @Test func writingInPlaceIsCloseWrite() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/data"
    try writeFile(path, "old")
    let log = EventLog()
    let watcher = DirectoryWatcher(handler: log.record)
    defer { watcher.close() }
    let watch = try watcher.watch(directory: sandbox.path)
    defer { watch.cancel() }

    try writeFile(path, "new")

    let expected = Event(directory: sandbox.path, name: "data", kind: .closeWrite)
    #expect(log.wait { $0.contains(expected) })
  }

  @Test func handlesShareOneKernelWatch() throws {
    let sandbox = try Sandbox()
    let shared = sandbox.path + "/shared"
    let other = sandbox.path + "/other"
    try makeDirectory(shared)
    try makeDirectory(other)
    let log = EventLog()
    let watcher = DirectoryWatcher(handler: log.record)
    defer { watcher.close() }
    let first = try watcher.watch(directory: shared)
    let second = try watcher.watch(directory: shared)
    let sentinel = try watcher.watch(directory: other)
    defer { sentinel.cancel() }
    let descriptor = try #require(watcher.inotifyDescriptor)
    // Both directories, and their common parent: it tells when one of them is removed.
    #expect(try kernelWatchCount(descriptor) == 3)

    first.cancel()
    first.cancel()  // idempotent: must not drop the second handle's reference
    try writeFile(shared + "/one", "1")
    #expect(log.wait { $0.contains(Event(directory: shared, name: "one", kind: .closeWrite)) })
    #expect(try kernelWatchCount(descriptor) == 3)

    second.cancel()
    #expect(try kernelWatchCount(descriptor) == 2)
    try writeFile(shared + "/two", "2")
    try writeFile(other + "/sentinel", "s")
    // One queue, in order: had the watch survived, "two" would come before the sentinel.
    #expect(log.wait { $0.contains(Event(directory: other, name: "sentinel", kind: .closeWrite)) })
    #expect(!log.events.contains { $0.name == "two" })
  }

  @Test func burstArrivesBatchedAndInOrder() throws {
    let sandbox = try Sandbox()
    let gate = Gate()
    let log = EventLog()
    let watcher = DirectoryWatcher { batch in
      gate.holdFirstCall()
      log.record(batch)
    }
    defer { watcher.close() }
    defer { gate.release() }
    let watch = try watcher.watch(directory: sandbox.path)
    defer { watch.cancel() }

    try writeFile(sandbox.path + "/first", "")
    #expect(gate.waitUntilHeld())
    let names = (0..<100).map { String(format: "item-%03d", $0) }
    for name in names {
      try writeFile(sandbox.path + "/.tmp", name)
      try renameFile(sandbox.path + "/.tmp", sandbox.path + "/" + name)
    }
    gate.release()

    #expect(log.wait { events in events.contains { $0.name == names.last && $0.kind == .movedTo } })
    let moved = log.events.filter { $0.kind == .movedTo }.map(\.name)
    #expect(moved == names)
    // 500 events (~16 KB) fit one read: the held batch, then one or two more calls.
    #expect(log.batchCount <= 3)
  }

  @Test(.enabled(if: maxQueuedEvents() <= 100_000, "max_queued_events is too large to overflow"))
  func queueOverflowIsReported() throws {
    let limit = maxQueuedEvents()
    let sandbox = try Sandbox()
    let gate = Gate()
    let log = EventLog()
    let watcher = DirectoryWatcher { batch in
      gate.holdFirstCall()
      log.record(batch)
    }
    defer { watcher.close() }
    defer { gate.release() }
    let watch = try watcher.watch(directory: sandbox.path)
    defer { watch.cancel() }

    try writeFile(sandbox.path + "/first", "")
    #expect(gate.waitUntilHeld())
    // Each rename queues IN_MOVED_FROM and IN_MOVED_TO with a fresh cookie, so the kernel
    // cannot merge them; renaming back and forth creates no inodes and stays fast.
    let (ping, pong) = (sandbox.path + "/ping", sandbox.path + "/pong")
    try writeFile(ping, "")
    for index in 0..<(limit / 2 + 500) {
      try index.isMultiple(of: 2) ? renameFile(ping, pong) : renameFile(pong, ping)
    }
    gate.release()

    #expect(log.wait { $0.contains(Event(directory: "", name: "", kind: .overflow)) })
  }

  #if DEBUG
  @Test func refusedWatchFallsBackToPolling() throws {
    let sandbox = try Sandbox()
    DirectoryWatcher.injectAddWatchFailure.withLock { $0[sandbox.path] = ENOSPC }
    defer {
      _ = DirectoryWatcher.injectAddWatchFailure.withLock { $0.removeValue(forKey: sandbox.path) }
    }
    try writeFile(sandbox.path + "/suite.plist", "v1")
    let log = EventLog()
    let watcher = DirectoryWatcher(fallbackInterval: .milliseconds(20), handler: log.record)
    defer { watcher.close() }
    let watch = try watcher.watch(directory: sandbox.path)
    #expect(watch.isPolling)
    let again = try watcher.watch(directory: sandbox.path)
    #expect(again.isPolling)
    again.cancel()

    // Same size: the new inode (and modification time) gives the replacement away.
    try writeFile(sandbox.path + "/.tmp", "v2")
    try renameFile(sandbox.path + "/.tmp", sandbox.path + "/suite.plist")
    let replaced = Event(directory: sandbox.path, name: "suite.plist", kind: .movedTo)
    #expect(log.wait { $0.contains(replaced) })

    try FileManager.default.removeItem(atPath: sandbox.path + "/suite.plist")
    let deleted = Event(directory: sandbox.path, name: "suite.plist", kind: .deleted)
    #expect(log.wait { $0.contains(deleted) })
    watch.cancel()
  }

  @Test func missingInotifyFallsBackToPolling() throws {
    let sandbox = try Sandbox()
    let log = EventLog()
    let watcher = DirectoryWatcher(
      fallbackInterval: .milliseconds(20), injectingInitFailure: EMFILE, handler: log.record)
    defer { watcher.close() }
    #expect(watcher.inotifyDescriptor == nil)
    let watch = try watcher.watch(directory: sandbox.path)
    defer { watch.cancel() }
    #expect(watch.isPolling)

    try writeFile(sandbox.path + "/.tmp", "v1")
    try renameFile(sandbox.path + "/.tmp", sandbox.path + "/suite.plist")
    let expected = Event(directory: sandbox.path, name: "suite.plist", kind: .movedTo)
    #expect(log.wait { $0.contains(expected) })

    let missing = sandbox.path + "/missing"
    #expect(throws: AppGroupsError.self) { try watcher.watch(directory: missing) }
  }
  #endif

  @Test func deletedDirectoryIsReportedGone() throws {
    let sandbox = try Sandbox()
    let directory = sandbox.path + "/Preferences"
    try makeDirectory(directory)
    let log = EventLog()
    let watcher = DirectoryWatcher(handler: log.record)
    defer { watcher.close() }
    let watch = try watcher.watch(directory: directory)

    try FileManager.default.removeItem(atPath: directory)

    let gone = Event(directory: directory, name: "", kind: .directoryGone)
    #expect(log.wait { $0.contains(gone) })
    #expect(log.events.filter { $0 == gone }.count == 1)
    watch.cancel()  // the kernel already dropped the watch: harmless
  }

  /// Removes a directory tree the way `rm -rf` does: entries first, depth first.
  private func removeTree(_ path: String) throws {
    try FileManager.default.removeItem(atPath: path)
  }

  @Test(arguments: [false, true])
  func aRemovedDirectoryIsWatchedAgainWhenItComesBack(pinnedByAnOpenFile: Bool) throws {
    let sandbox = try Sandbox()
    let directory = sandbox.path + "/Preferences"
    try makeDirectory(directory)
    // An open file in the directory keeps its inode alive after rmdir: then the kernel sends
    // no IN_DELETE_SELF until the file is closed (a suite's lock file is such a file).
    var pin: CInt = -1
    if pinnedByAnOpenFile {
      pin = open(directory + "/suite.plist.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
      try #require(pin >= 0)
    }
    defer { if pin >= 0 { close(pin) } }
    let log = EventLog()
    let watcher = DirectoryWatcher(handler: log.record)
    defer { watcher.close() }
    let watch = try watcher.watch(directory: directory)
    defer { watch.cancel() }
    #expect(watch.isWatchedByKernel)

    for round in 0..<20 {
      try removeTree(directory)
      let gone = Event(directory: directory, name: "", kind: .directoryGone)
      #expect(log.wait { $0.filter { $0 == gone }.count == round + 1 }, "round \(round)")
      try makeDirectory(directory)
      let back = Event(directory: directory, name: "", kind: .directoryBack)
      #expect(log.wait { $0.filter { $0 == back }.count == round + 1 }, "round \(round)")
      #expect(watch.isWatchedByKernel)
      try writeFile(directory + "/after-\(round)", "x")
      let written = Event(directory: directory, name: "after-\(round)", kind: .closeWrite)
      #expect(log.wait { $0.contains(written) }, "round \(round)")
    }
  }

  @Test func severalLevelsCreatedAgainAreFollowedDownToTheDirectory() throws {
    let sandbox = try Sandbox()
    let container = sandbox.path + "/group"
    let directory = container + "/Library/Preferences"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let log = EventLog()
    let watcher = DirectoryWatcher(handler: log.record)
    defer { watcher.close() }
    let watch = try watcher.watch(directory: directory)
    let descriptor = try #require(watcher.inotifyDescriptor)

    for round in 0..<20 {
      try removeTree(container)
      let gone = Event(directory: directory, name: "", kind: .directoryGone)
      #expect(log.wait { $0.filter { $0 == gone }.count == round + 1 }, "round \(round)")
      #expect(!watch.isWatchedByKernel)
      // One level at a time on odd rounds, all at once (mkdir -p) on even ones.
      if round % 2 == 1 {
        try makeDirectory(container)
        try makeDirectory(container + "/Library")
        try makeDirectory(directory)
      } else {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      }
      try writeFile(directory + "/after-\(round)", "x")
      let back = Event(directory: directory, name: "", kind: .directoryBack)
      #expect(log.wait { $0.filter { $0 == back }.count == round + 1 }, "round \(round)")
      // The file may have been written before the new watch was in place: a reader re-reads
      // the folder on directoryBack. A write after it is always reported.
      try writeFile(directory + "/later-\(round)", "x")
      let written = Event(directory: directory, name: "later-\(round)", kind: .closeWrite)
      #expect(log.wait { $0.contains(written) }, "round \(round)")
    }
    // The directory and its parent, nothing left over from the ancestors waited on.
    #expect(try kernelWatchCount(descriptor) == 2)
    watch.cancel()
    #expect(try kernelWatchCount(descriptor) == 0)
  }

  @Test func aDirectoryMovedAwayIsNotFollowedAndItsPathIsWatchedAgain() throws {
    let sandbox = try Sandbox()
    let directory = sandbox.path + "/Preferences"
    let moved = sandbox.path + "/Preferences.old"
    try makeDirectory(directory)
    let log = EventLog()
    let watcher = DirectoryWatcher(handler: log.record)
    defer { watcher.close() }
    let watch = try watcher.watch(directory: directory)
    defer { watch.cancel() }

    try renameFile(directory, moved)
    let gone = Event(directory: directory, name: "", kind: .directoryGone)
    #expect(log.wait { $0.contains(gone) })
    try makeDirectory(directory)
    let back = Event(directory: directory, name: "", kind: .directoryBack)
    #expect(log.wait { $0.contains(back) })
    try writeFile(moved + "/stale", "x")
    try writeFile(directory + "/fresh", "x")
    #expect(log.wait { $0.contains(Event(directory: directory, name: "fresh", kind: .closeWrite)) })
    // One queue, in order: had the moved directory been followed, "stale" would be first.
    #expect(!log.events.contains { $0.name == "stale" })
  }

  #if DEBUG
  /// A directory removed and made again right after its watch was added, before the watch
  /// was resolved, while a descriptor holds it open (so that its own watch never hears
  /// `IN_DELETE_SELF`): its guard, on the parent, was put in place first and hears the
  /// removal, so the watcher says the directory went and came back (a consumer reads it
  /// again), and watches the new one. A guard added after the removal would not hear it, and
  /// the watch would stay on the removed directory: "fresh" would never be heard.
  @Test func aDirectoryReplacedJustAfterItsWatchIsAddedIsWatchedAgain() throws {
    let sandbox = try Sandbox()
    let directory = sandbox.path + "/Preferences"
    try makeDirectory(directory)
    let pin = Mutex<CInt>(-1)
    DirectoryWatcher.afterAddingWatchForTesting.withLock {
      $0 = { added in
        guard added == directory else { return }
        pin.withLock { $0 = open(directory, O_RDONLY | O_DIRECTORY) }
        _ = rmdir(directory)
        try? makeDirectory(directory)
      }
    }
    defer {
      DirectoryWatcher.afterAddingWatchForTesting.withLock { $0 = nil }
      pin.withLock { if $0 >= 0 { close($0) } }
    }
    let log = EventLog()
    let watcher = DirectoryWatcher(handler: log.record)
    defer { watcher.close() }
    let watch = try watcher.watch(directory: directory)
    defer { watch.cancel() }
    DirectoryWatcher.afterAddingWatchForTesting.withLock { $0 = nil }
    #expect(pin.withLock { $0 } >= 0, "the hook ran")

    let back = Event(directory: directory, name: "", kind: .directoryBack)
    #expect(log.wait { $0.contains(back) }, "\(log.events)")
    try writeFile(directory + "/fresh", "x")
    #expect(log.wait { $0.contains(Event(directory: directory, name: "fresh", kind: .closeWrite)) }, "\(log.events)")
  }
  #endif

  @Test func cancellingWhileGoneRemovesTheAncestorsWatches() throws {
    let sandbox = try Sandbox()
    let directory = sandbox.path + "/a/b"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let log = EventLog()
    let watcher = DirectoryWatcher(handler: log.record)
    defer { watcher.close() }
    let watch = try watcher.watch(directory: directory)
    let descriptor = try #require(watcher.inotifyDescriptor)
    try removeTree(sandbox.path + "/a")
    #expect(log.wait { $0.contains(Event(directory: directory, name: "", kind: .directoryGone)) })
    #expect(try kernelWatchCount(descriptor) >= 1)  // the sandbox, waited on
    watch.cancel()
    #expect(try kernelWatchCount(descriptor) == 0)
  }

  @Test func missingDirectoryThrows() throws {
    let sandbox = try Sandbox()
    let missing = sandbox.path + "/missing"
    let watcher = DirectoryWatcher { _ in }
    defer { watcher.close() }
    let error = #expect(throws: AppGroupsError.self) { try watcher.watch(directory: missing) }
    #expect(error?.code == .io)
    #expect(error?.message.contains(missing) == true)
    #expect(error?.message.contains("No such file or directory") == true)
  }

  @Test func closeIsPromptAndFinal() throws {
    let sandbox = try Sandbox()
    let closed = Flag()
    let lateCalls = Counter()
    let log = EventLog()
    let watcher = DirectoryWatcher { batch in
      if closed.isSet { lateCalls.increment() }
      log.record(batch)
    }
    let watch = try watcher.watch(directory: sandbox.path)

    // Keep events coming while closing.
    let stop = Flag()
    let writerDone = DispatchSemaphore(value: 0)
    let path = sandbox.path
    Thread.detachNewThread {
      var index = 0
      while !stop.isSet {
        try? writeFile(path + "/.tmp", "\(index)")
        try? renameFile(path + "/.tmp", path + "/value")
        index += 1
      }
      writerDone.signal()
    }
    #expect(log.wait { !$0.isEmpty })

    let clock = ContinuousClock()
    let started = clock.now
    watcher.close()
    let elapsed = started.duration(to: clock.now)
    closed.set()
    #expect(elapsed < .seconds(1))
    watcher.close()  // idempotent
    #expect(watcher.inotifyDescriptor == nil)
    #expect(throws: AppGroupsError.self) { try watcher.watch(directory: path) }
    watch.cancel()  // inert after close

    // A second watcher on the same directory proves events kept coming after close().
    let sentinelLog = EventLog()
    let sentinel = DirectoryWatcher(handler: sentinelLog.record)
    defer { sentinel.close() }
    let sentinelWatch = try sentinel.watch(directory: path)
    defer { sentinelWatch.cancel() }
    #expect(sentinelLog.wait { $0.count >= 20 })
    stop.set()
    #expect(writerDone.wait(timeout: .now() + 5) == .success)
    #expect(lateCalls.value == 0)
  }
}

// MARK: - Helpers

/// Collects the handler's batches; waits, up to a deadline, for an expected event.
private final class EventLog: Sendable {
  // The library's Mutex, which the thread sanitizer sees: the standard one locks with futexes
  // in the uninstrumented standard library, and the sanitizer took `record` (the watcher's
  // queue) and `wait` (the test) for a race.
  private let state = AppGroups.Mutex<(events: [DirectoryWatcher.Event], batches: Int)>(([], 0))
  private let arrived = DispatchSemaphore(value: 0)

  @Sendable func record(_ batch: [DirectoryWatcher.Event]) {
    state.withLock {
      $0.events += batch
      $0.batches += 1
    }
    arrived.signal()
  }

  var events: [DirectoryWatcher.Event] { state.withLock { $0.events } }
  var batchCount: Int { state.withLock { $0.batches } }

  /// Returns true as soon as `condition` holds, false if it still does not after `seconds`.
  func wait(seconds: Double = 5, until condition: ([DirectoryWatcher.Event]) -> Bool) -> Bool {
    let deadline = DispatchTime.now() + seconds
    while true {
      if state.withLock({ condition($0.events) }) { return true }
      if arrived.wait(timeout: deadline) == .timedOut {
        return state.withLock { condition($0.events) }
      }
    }
  }
}

/// Holds the handler's first call until released, so that the kernel queue fills up.
private final class Gate: Sendable {
  private let calls = Atomic<Int>(0)
  private let held = DispatchSemaphore(value: 0)
  private let released = DispatchSemaphore(value: 0)
  private let open = Atomic<Bool>(false)

  func holdFirstCall() {
    guard calls.add(1, ordering: .relaxed).newValue == 1 else { return }
    held.signal()
    _ = released.wait(timeout: .now() + 10)
  }

  func waitUntilHeld() -> Bool { held.wait(timeout: .now() + 5) == .success }

  func release() {
    guard !open.exchange(true, ordering: .relaxed) else { return }
    released.signal()
  }
}

private final class Flag: Sendable {
  private let storage = Atomic<Bool>(false)
  var isSet: Bool { storage.load(ordering: .acquiring) }
  func set() { storage.store(true, ordering: .releasing) }
}

private final class Counter: Sendable {
  private let storage = Atomic<Int>(0)
  var value: Int { storage.load(ordering: .acquiring) }
  func increment() { storage.add(1, ordering: .acquiringAndReleasing) }
}

private func maxQueuedEvents() -> Int {
  let text = try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8)
  return text.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? Int.max
}

/// The number of kernel watches on an inotify descriptor, from `/proc/self/fdinfo`.
private func kernelWatchCount(_ descriptor: CInt) throws -> Int {
  let info = try String(contentsOfFile: "/proc/self/fdinfo/\(descriptor)", encoding: .utf8)
  return info.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
}

private struct FileError: Error {
  let call: String
  let path: String
}

/// Writes `text` in place: open (creating or truncating), write, close.
private func writeFile(_ path: String, _ text: String) throws {
  let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
  guard descriptor >= 0 else { throw FileError(call: "open", path: path) }
  defer { close(descriptor) }
  let bytes = Array(text.utf8)
  guard write(descriptor, bytes, bytes.count) == bytes.count else {
    throw FileError(call: "write", path: path)
  }
}

private func renameFile(_ from: String, _ to: String) throws {
  guard rename(from, to) == 0 else { throw FileError(call: "rename", path: to) }
}

private func makeDirectory(_ path: String) throws {
  try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
}

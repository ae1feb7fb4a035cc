import AppGroups
import AppGroupsTesting
import Foundation
import Synchronization
import Testing

/// Written as iOS code is (only the import differs): a presenter with Apple's signatures, and
/// the coordinator's error out-parameter.
final class NotesDocument: NSObject, NSFilePresenter, @unchecked Sendable {
  var presentedItemURL: URL?
  let presentedItemOperationQueue: OperationQueue = {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    return queue
  }()
  let changed = DispatchSemaphore(value: 0)
  let heard = Mutex<[String]>([])

  init(url: URL) {
    presentedItemURL = url
  }

  func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
    heard.withLock { $0.append("relinquish-to-writer") }
    writer { self.heard.withLock { $0.append("reacquire") } }
  }

  func presentedItemDidChange() {
    heard.withLock { $0.append("did-change") }
    changed.signal()
  }
}

@Suite("FileCoordination: the API", .serialized)
struct FileCoordinatorAPITests {
  static let group = "group.com.example.shared"

  func folder() throws -> URL {
    let container = try #require(
      FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: Self.group))
    let folder = container.appendingPathComponent("Library/Documents")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
  }

  @Test(.appGroup("group.com.example.shared"))
  func iOSCodeRunsUnchanged() throws {
    let url = try folder().appendingPathComponent("notes.txt")
    let document = NotesDocument(url: url)
    NSFileCoordinator.addFilePresenter(document)
    defer { NSFileCoordinator.removeFilePresenter(document) }
    #expect(NSFileCoordinator.filePresenters.contains { $0 === document })

    // The document's own write: it is not told.
    var error: NSError?
    NSFileCoordinator(filePresenter: document).coordinate(
      writingItemAt: url, options: .forReplacing, error: &error
    ) { newURL in
      try? Data("own\n".utf8).write(to: newURL)
    }
    #expect(error == nil)
    // Another coordinator's write: it is asked, then told.
    NSFileCoordinator(filePresenter: nil).coordinate(writingItemAt: url, options: [], error: &error) {
      newURL in
      try? Data("other\n".utf8).write(to: newURL)
    }
    #expect(error == nil)
    #expect(document.changed.wait(timeout: .now() + 30) == .success)
    #expect(document.heard.withLock { $0 } == ["relinquish-to-writer", "reacquire", "did-change"])
    var read = ""
    NSFileCoordinator(filePresenter: document).coordinate(readingItemAt: url, options: [], error: &error) {
      read = (try? String(contentsOf: $0, encoding: .utf8)) ?? ""
    }
    #expect(read == "other\n")
  }

  @Test(.appGroup("group.com.example.shared"))
  func errorsCarryCocoaCodesAndMatchableCodes() throws {
    var error: NSError?
    var ran = false
    NSFileCoordinator().coordinate(readingItemAt: URL(fileURLWithPath: "/etc/hostname"), error: &error) { _ in
      ran = true
    }
    #expect(!ran)
    #expect(error?.domain == NSCocoaErrorDomain)
    #expect(error?.code == CocoaError.fileReadUnsupportedScheme.rawValue)
    #expect(error?.localizedDescription.contains("/etc/hostname is not inside a container") == true)
    #expect(throws: AppGroupsError.self) {
      try NSFileCoordinator().coordinate(writingItemAt: URL(string: "https://example.com/x")!) { _ in }
    }
    do {
      try NSFileCoordinator().coordinate(writingItemAt: URL(fileURLWithPath: "/tmp/x")) { _ in }
      Issue.record("an access outside every container began")
    } catch AppGroupsError.Code.outsideContainer {
    } catch {
      Issue.record("unexpected error \(error)")
    }
  }

  /// A waiting access is cancelled; one nested in an access of the same coordinator runs at
  /// once; one of another coordinator waits its bound and fails, naming the holder.
  @Test(.appGroup("group.com.example.shared"))
  func cancelNestingAndBounds() throws {
    let url = try folder().appendingPathComponent("held.txt")
    let holder = NSFileCoordinator()
    let inside = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    let device = TemporaryAppGroup.current
    Thread.detachNewThread {
      inScope(device) {
        try? holder.coordinate(writingItemAt: url) { url in
          // Nested, same coordinator, same thread: at once.
          try? holder.coordinate(writingItemAt: url) { _ in }
          inside.signal()
          release.wait()
        }
      }
      done.signal()
    }
    #expect(inside.wait(timeout: .now() + 30) == .success)

    let waiting = NSFileCoordinator()
    let cancelled = Mutex<NSError?>(nil)
    let started = DispatchSemaphore(value: 0)
    let ended = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      inScope(device) {
        var error: NSError?
        started.signal()
        waiting.coordinate(writingItemAt: url, error: &error) { _ in }
        cancelled.withLock { $0 = error }
      }
      ended.signal()
    }
    #expect(started.wait(timeout: .now() + 30) == .success)
    // Cancel until the access has seen it (it may not have begun waiting yet).
    while ended.wait(timeout: .now() + 0.05) == .timedOut { waiting.cancel() }
    #expect(cancelled.withLock { $0?.code } == CocoaError.userCancelled.rawValue)

    let bounded = NSFileCoordinator()
    bounded.accessTimeout = .milliseconds(200)
    do {
      try bounded.coordinate(readingItemAt: url) { _ in }
      Issue.record("a read began while a writer held the item")
    } catch AppGroupsError.Code.lockTimeout {
    } catch {
      Issue.record("unexpected error \(error)")
    }
    release.signal()
    #expect(done.wait(timeout: .now() + 30) == .success)
    try bounded.coordinate(readingItemAt: url) { _ in }
  }

  @Test(.appGroup("group.com.example.shared"))
  func intentsRunOnTheQueue() throws {
    let url = try folder().appendingPathComponent("intent.txt")
    let queue = OperationQueue()
    let finished = DispatchSemaphore(value: 0)
    let outcome = Mutex<String>("")
    NSFileCoordinator().coordinate(with: [.writingIntent(with: url)], queue: queue) { error in
      if let error {
        outcome.withLock { $0 = "\(error)" }
      } else {
        outcome.withLock { $0 = (try? Data("intent".utf8).write(to: url)) == nil ? "unwritten" : "written" }
      }
      finished.signal()
    }
    #expect(finished.wait(timeout: .now() + 30) == .success)
    #expect(outcome.withLock { $0 } == "written")
  }
}

/// Runs `body` on the calling thread inside the test's root and identity: work on a thread of
/// its own does not inherit the test's task-local scope.
func inScope(_ device: TemporaryAppGroup?, _ body: () -> Void) {
  guard let device else { return body() }
  ScopedEnvironment.$root.withValue(device.root) {
    ScopedEnvironment.$identity.withValue(device.identity) { body() }
  }
}

/// A coordinated access made on a presenter's own queue is said once: a writer elsewhere asks
/// that presenter to relinquish on the queue the access keeps busy while it waits for the
/// writer's claim (what `notes watch` did, until sixteen writers at once failed on it).
@Suite("FileCoordination: an access on a presenter's queue")
struct PresenterQueueAccessTests {
  @Test(.appGroup("group.com.example.shared"))
  func anAccessOnThePresentersQueueIsReportedOnce() throws {
    let container = try #require(
      FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.shared"))
    let folder = container.appendingPathComponent("Library/Documents")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let url = folder.appendingPathComponent("queue-\(UUID().uuidString).txt")
    try Data("one\n".utf8).write(to: url)
    let document = NotesDocument(url: url)
    NSFileCoordinator.addFilePresenter(document)
    defer { NSFileCoordinator.removeFilePresenter(document) }
    let lines = Mutex<[String]>([])
    let device = TemporaryAppGroup.current
    let failures = Mutex<[String]>([])
    Diagnostics.withHandler({ line in lines.withLock { $0.append(line) } }) {
      // Off the queue: nothing said.
      var error: NSError?
      NSFileCoordinator(filePresenter: document).coordinate(readingItemAt: url, options: [], error: &error) { _ in }
      #expect(error == nil)
      // On it, twice: said once.
      for _ in 0..<2 {
        let done = DispatchSemaphore(value: 0)
        document.presentedItemOperationQueue.addOperation {
          inScope(device) {
            var error: NSError?
            NSFileCoordinator(filePresenter: document).coordinate(readingItemAt: url, options: [], error: &error) {
              _ in
            }
            if let error { failures.withLock { $0.append(error.localizedDescription) } }
          }
          done.signal()
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
      }
    }
    #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
    let said = lines.withLock { $0 }.filter { $0.contains(url.lastPathComponent) }
    #expect(said.count == 1, "\(said)")
    #expect(said.first?.contains("was made on the presentedItemOperationQueue of the file presenter of") == true)
  }
}

import AppGroups
import Foundation
import Synchronization

// appgroups-worker present-and-write PATH   registers a presenter of PATH that prints each
//                                           callback as "presenter LINE" (the lines of groupctl
//                                           present), then "ready"; then per line of stdin:
//                                           "own" (a coordinated write of PATH by a coordinator
//                                           acting for that presenter, appending a line) or
//                                           "other" (by a coordinator acting for no presenter):
//                                           "wrote own|other", or "error MESSAGE"; "quit" ends
// appgroups-worker coordinate-loop PATH     starts the app's lifecycle and makes coordinated
//                                           writes of PATH in a loop (each appends a line and
//                                           takes a millisecond or two); "ready" after the
//                                           first; on SIGTERM, "done WRITES FAILURES"

/// A presenter that prints its callbacks.
final class WorkerPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
  let presentedItemURL: URL?
  let presentedItemOperationQueue: OperationQueue

  init(url: URL) {
    presentedItemURL = url
    presentedItemOperationQueue = OperationQueue()
    presentedItemOperationQueue.maxConcurrentOperationCount = 1
  }

  func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
    say("presenter relinquish-to-writer")
    writer { say("presenter reacquire") }
  }

  func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
    say("presenter relinquish-to-reader")
    reader { say("presenter reacquire") }
  }

  func presentedItemDidChange() { say("presenter did-change") }
}

/// `present-and-write`: a presenter and writes of its own item, its own and not.
func runPresentAndWrite(_ path: String) -> Never {
  let url = URL(fileURLWithPath: path)
  let presenter = WorkerPresenter(url: url)
  do {
    try NSFileCoordinator.addFilePresenter(presenter, throwing: ())
  } catch {
    fail("cannot present \(path): \(error)")
  }
  say("ready")
  while let line = readLine() {
    switch line {
    case "own", "other":
      let coordinator = NSFileCoordinator(filePresenter: line == "own" ? presenter : nil)
      do {
        try coordinator.coordinate(writingItemAt: url) { url in
          let handle = try FileHandle(forWritingTo: url)
          defer { try? handle.close() }
          try handle.seekToEnd()
          try handle.write(contentsOf: Data("\(line)\n".utf8))
        }
        say("wrote \(line)")
      } catch {
        say("error \(error)")
      }
    case "quit":
      NSFileCoordinator.removeFilePresenter(presenter)
      exit(0)
    default:
      say("error unknown command \(line)")
    }
  }
  exit(0)
}

/// `coordinate-loop`: coordinated writes until SIGTERM.
func runCoordinateLoop(_ path: String) -> Never {
  AppLifecycle.start(identity: identity, root: .default)
  let url = URL(fileURLWithPath: path)
  let counts = Mutex<(writes: Int, failures: Int)>((0, 0))
  let stop = Atomic<Bool>(false)
  let stopped = DispatchSemaphore(value: 0)
  let sources = Processes.interceptInterruptAndTerminate(on: .global()) {
    stop.store(true, ordering: .relaxed)
  }
  Thread.detachNewThread {
    let coordinator = NSFileCoordinator(filePresenter: nil)
    while !stop.load(ordering: .relaxed) {
      do {
        try coordinator.coordinate(writingItemAt: url) { url in
          let handle = try FileHandle(forWritingTo: url)
          defer { try? handle.close() }
          try handle.seekToEnd()
          try handle.write(contentsOf: Data("write\n".utf8))
          Thread.sleep(forTimeInterval: 0.001)  // an accessor that takes a little time
        }
        let first = counts.withLock { counts in
          counts.writes += 1
          return counts.writes == 1
        }
        if first { say("ready") }
      } catch {
        counts.withLock { $0.failures += 1 }
        say("error \(error)")
      }
    }
    stopped.signal()
  }
  stopped.wait()
  for source in sources { source.cancel() }
  let (writes, failures) = counts.withLock { ($0.writes, $0.failures) }
  say("done \(writes) \(failures)")
  exit(0)
}

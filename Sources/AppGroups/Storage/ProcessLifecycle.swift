import Dispatch
internal import Synchronization

/// Makes pending changes land when the process ends normally (`exit`, the
/// end of `main`) or on SIGTERM / SIGINT, so a value set without
/// `synchronize()` is there for the next process.
///
/// Signal handling is installed only for signals still at their default
/// disposition, and only while `GroupDefaults.handlesTerminationSignals` is
/// true: an app that handles SIGTERM itself keeps its handler (and should
/// call `GroupDefaults.synchronizeAll()` in it).
enum ProcessLifecycle {
  /// Set by the first `installOnce()`: what every `set` reads (a lock each time would cost
  /// a write burst).
  private static let installed = Atomic(false)
  /// Whether `installOnce()` takes over SIGTERM and SIGINT.
  static let handlesSignals = Mutex(true)
  nonisolated(unsafe) private static var signalSources: [any DispatchSourceSignal] = []

  /// Installs the handlers, once: called before a process's first change is pending (a
  /// process that only reads has nothing to land and never takes over its signals).
  @inline(__always)
  static func installOnce() {
    if installed.load(ordering: .acquiring) { return }
    install()
  }

  private static func install() {
    guard installed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    else { return }
    Processes.atExit {
      ProcessLifecycle.flushAll()
    }
    guard handlesSignals.withLock({ $0 }) else { return }
    for signal in [Processes.Signal.terminate, .interrupt] {
      // Only take over a signal nobody else handles or ignores.
      let source = Processes.interceptIfDefault(signal, on: .global()) {
        ProcessLifecycle.flushAll()
        Processes.raiseWithDefaultAction(signal)
      }
      if let source { signalSources.append(source) }
    }
  }

  /// Commits every open store's pending changes on the calling thread.
  @discardableResult
  static func flushAll() -> Bool {
    var allLanded = true
    for store in SuiteStore.openStores() where store.hasPendingChanges {
      if !store.flush() { allLanded = false }
    }
    return allLanded
  }
}

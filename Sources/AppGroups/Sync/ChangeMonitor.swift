import Foundation
internal import Synchronization

/// The process's one change monitor: a ``DirectoryWatcher`` (one inotify
/// instance on a thread of its own) on the Preferences folder of every open
/// suite. When a suite's file is replaced or edited, the store re-reads it
/// (only if its identity moved, so this process's own commits are not
/// echoed back), and the views tell their observers which effective values
/// changed.
///
/// A queue overflow re-reads every watched store. When the kernel refuses a
/// watch, the watcher polls that folder at a stated interval and says so on
/// stderr; it is never silent.
final class ChangeMonitor: Sendable {
  static let shared = ChangeMonitor()

  private struct Watched: Sendable {
    var watch: DirectoryWatcher.Watch
    /// Stores by file name, weakly.
    var stores: [String: WeakStore]
  }

  private struct WeakStore: @unchecked Sendable { weak var store: SuiteStore? }

  private struct State: Sendable {
    var directories: [String: Watched] = [:]
    /// Other listeners by directory (named notifications), by file-name prefix.
    var listeners: [String: [UInt64: (prefix: String, handler: @Sendable (String) -> Void)]] = [:]
    var listenerWatches: [UInt64: DirectoryWatcher.Watch] = [:]
    var nextID: UInt64 = 1
  }

  private let state = Mutex(State())
  private let watcher: DirectoryWatcher

  private init() {
    let box = WeakMonitorBox()
    watcher = DirectoryWatcher { events in box.monitor?.handle(events) }
    box.monitor = self
  }

  private final class WeakMonitorBox: @unchecked Sendable { weak var monitor: ChangeMonitor? }

  /// Watches every store a view reads (suite, global, managed).
  func watch(_ view: SuiteView) {
    for store in [view.suite, view.global, view.managed].compactMap({ $0 }) {
      watch(store)
    }
  }

  func watch(_ store: SuiteStore) {
    let directory = store.directory
    let registered: Bool = state.withLock { st in
      guard st.directories[directory] != nil else { return false }
      st.directories[directory]?.stores[store.fileName] = WeakStore(store: store)
      return true
    }
    if registered { return }
    do {
      let watch = try watcher.watch(directory: directory)
      state.withLock { st in
        if st.directories[directory] == nil {
          st.directories[directory] = Watched(watch: watch, stores: [:])
        }
        st.directories[directory]?.stores[store.fileName] = WeakStore(store: store)
      }
    } catch {
      Diagnostics.report(
        "cannot watch \(directory) for changes (\(error.message)); changes by other processes are seen on synchronize() or refreshIfChanged()")
    }
  }

  /// Calls `handler` with the file name of every change in `directory` whose
  /// name starts with `prefix`. Returns an id for ``removeListener(_:)``.
  func addListener(
    directory: String, prefix: String, _ handler: @escaping @Sendable (String) -> Void
  ) throws(AppGroupsError) -> UInt64 {
    let watch = try watcher.watch(directory: directory)
    return state.withLock { st in
      let id = st.nextID
      st.nextID &+= 1
      st.listeners[directory, default: [:]][id] = (prefix, handler)
      st.listenerWatches[id] = watch
      return id
    }
  }

  func removeListener(_ id: UInt64) {
    let watch: DirectoryWatcher.Watch? = state.withLock { st in
      for directory in st.listeners.keys { st.listeners[directory]?.removeValue(forKey: id) }
      return st.listenerWatches.removeValue(forKey: id)
    }
    watch?.cancel()
  }

  private func handle(_ events: [DirectoryWatcher.Event]) {
    var stores: [ObjectIdentifier: SuiteStore] = [:]
    var notes: [(@Sendable (String) -> Void, String)] = []
    state.withLock { st in
      for event in events {
        switch event.kind {
        case .overflow:
          // Events were lost: re-read everything watched.
          for watched in st.directories.values {
            for entry in watched.stores.values {
              if let store = entry.store { stores[ObjectIdentifier(store)] = store }
            }
          }
          for (_, listeners) in st.listeners {
            for listener in listeners.values { notes.append((listener.handler, "")) }
          }
        case .directoryGone:
          for entry in st.directories[event.directory]?.stores.values ?? [:].values {
            if let store = entry.store { stores[ObjectIdentifier(store)] = store }
          }
        default:
          if let store = st.directories[event.directory]?.stores[event.name]?.store {
            stores[ObjectIdentifier(store)] = store
          }
          for listener in st.listeners[event.directory]?.values ?? [:].values
          where event.name.hasPrefix(listener.prefix) {
            notes.append((listener.handler, event.name))
          }
        }
      }
    }
    for store in stores.values { store.refresh() }
    for (handler, name) in notes { handler(name) }
  }
}

internal import Synchronization

/// Preferences and the device's data protection: a suite's file is of class
/// `completeUntilFirstUserAuthentication`, unreadable from a restart until the first unlock.
///
/// The Defaults layer installs Storage's gate (a store asks it once, when it opens), and keeps
/// the stores that opened before the first unlock until the device says their data is
/// available: then each reads its file under the writes made meanwhile, which land key by
/// key, and the suite's observers hear every key whose effective value changed, before the app
/// hears ``ProtectedData/didBecomeAvailableNotification``.
///
/// Only an app's suites are gated: a suite opened by an administrator's tool (`groupctl`
/// without `--as`) reads the files as the machine's owner does, outside the device.
enum ProtectedSuites {
  private struct Waiting: Sendable {
    var observation: Observation
    var stores: [WeakReference<SuiteStore>]
  }
  private static let waiting = Mutex<[String: Waiting]>([:])
  /// The suites this process said it cannot read yet (once each, until they are read).
  private static let reported = Mutex<Set<String>>([])
  private static let installed = Atomic<Bool>(false)

  /// Installs Storage's gate, once per process.
  static func installGate() {
    guard !installed.load(ordering: .acquiring) else { return }
    SuiteStore.protectionGate.withLock { gate in
      gate = { rootPath in
        DeviceStatePage.read(rootPath: rootPath)
          .unavailabilityReason(for: .completeUntilFirstUserAuthentication)
      }
    }
    installed.store(true, ordering: .releasing)
  }

  /// Says once, for a suite whose file cannot be read yet, why and what happens meanwhile.
  static func reportIfUnavailable(_ suiteName: String, _ store: SuiteStore) {
    guard let reason = store.unavailabilityReason,
      reported.withLock({ $0.insert(store.path).inserted })
    else { return }
    Diagnostics.report(
      "\(suiteName) cannot be read: protected data is unavailable (\(reason)); it reads as"
        + " its registered defaults, and writes stay in memory until then, when they land key"
        + " by key (\(store.path))")
  }

  /// Keeps a store that could not be read until the device's state changes, then tries
  /// again; a store already loaded is left alone.
  static func wait(for store: SuiteStore) {
    if store.unavailabilityReason != nil, let rootPath = store.options.protectionScope {
      waiting.withLock { waiting in
        if waiting[rootPath] != nil {
          waiting[rootPath]?.stores.append(WeakReference(store))
          return
        }
        let monitor = DeviceMonitor.shared(root: ContainerRoot(path: rootPath))
        let observation = monitor.addLibraryHandler { _ in retry(rootPath) }
        waiting[rootPath] = Waiting(observation: observation, stores: [WeakReference(store)])
      }
      // The data may have come back between the store's opening and the watch.
      store.retryProtectedLoad()
    }
  }

  /// Tries every store of `rootPath` that is waiting; stops watching once none is left.
  static func retry(_ rootPath: String) {
    let stores = waiting.withLock { $0[rootPath]?.stores.compactMap(\.object) ?? [] }
    let loaded = stores.filter { $0.retryProtectedLoad() }
    reported.withLock { reported in for store in loaded { reported.remove(store.path) } }
    let done: Observation? = waiting.withLock { waiting in
      guard var entry = waiting[rootPath] else { return nil }
      entry.stores.removeAll { reference in
        guard let store = reference.object else { return true }
        return loaded.contains { $0 === store }
      }
      if entry.stores.isEmpty {
        waiting[rootPath] = nil
        return entry.observation
      }
      waiting[rootPath] = entry
      return nil
    }
    done?.cancel()
  }
}

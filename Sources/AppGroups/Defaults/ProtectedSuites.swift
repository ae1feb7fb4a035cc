internal import Synchronization

/// Preferences and the device's data protection: a suite's file is of class
/// `completeUntilFirstUserAuthentication`, unreadable from a restart until the first unlock.
///
/// The Defaults layer installs Storage's gate (a store asks it once, when it opens) and its
/// probe (a commit asks it under the suite's lock), and keeps every gated store it opened,
/// weakly, while the device's monitor tells it of each change of the state:
///
/// - data available again: each store that could not read its file reads it under the writes
///   made meanwhile, which land key by key, and the suite's observers hear every key whose
///   effective value changed, before the app hears ``ProtectedData/didBecomeAvailableNotification``;
/// - data gone (the device restarted while this process ran on, which no process does on a
///   device): each loaded store becomes one that cannot read its file, as if it had opened
///   before the first unlock. Its values stay in memory; its writes stay there too.
///
/// Only an app's suites are gated: a suite opened by an administrator's tool (`groupctl`
/// without `--as`) reads the files as the machine's owner does, outside the device.
enum ProtectedSuites {
  private struct Watched: Sendable {
    var observation: Observation
    var stores: [WeakReference<SuiteStore>]
  }
  /// The gated stores of each root, while any is open.
  private static let watched = Mutex<[String: Watched]>([:])
  /// The suites this process said it cannot read yet (once each, until they are read).
  private static let reported = Mutex<Set<String>>([])
  private static let installed = Atomic<Bool>(false)

  /// Installs Storage's gate and probe, once per process.
  static func installGate() {
    guard !installed.load(ordering: .acquiring) else { return }
    SuiteStore.protectionGate.withLock { gate in
      gate = { rootPath in
        DeviceStatePage.read(rootPath: rootPath)
          .unavailabilityReason(for: .completeUntilFirstUserAuthentication)
      }
    }
    SuiteStore.protectionProbes.withLock { probes in
      probes = { rootPath in
        // The page this process maps (the root's device monitor, which `wait(for:)` starts
        // before the store's first commit, maps the same one and maps a file that appears):
        // a few loads, no system call. No file mapped: a new device, whose data is available.
        let page = DeviceStatePage.shared(rootPath: rootPath)
        return {
          page.mappedState?.unavailabilityReason(for: .completeUntilFirstUserAuthentication)
        }
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

  /// Keeps `store`, a gated one, while it is open: told of each change of its device's state
  /// from now on. A store that could not be read is tried again at once (the data may have
  /// come back between its opening and the watch), and a loaded one is marked when the device
  /// restarted in that window.
  static func wait(for store: SuiteStore) {
    guard let rootPath = store.options.protectionScope, !store.options.readOnly else { return }
    let released: [Observation] = watched.withLock { watched in
      // The roots whose stores were all released stop being watched.
      var released: [Observation] = []
      for (other, entry) in watched where other != rootPath {
        if entry.stores.allSatisfy({ $0.object == nil }) {
          released.append(entry.observation)
          watched[other] = nil
        }
      }
      if var entry = watched[rootPath] {
        entry.stores.removeAll { $0.object == nil }
        if !entry.stores.contains(where: { $0.object === store }) {
          entry.stores.append(WeakReference(store))
        }
        watched[rootPath] = entry
        return released
      }
      let monitor = DeviceMonitor.shared(root: ContainerRoot(path: rootPath))
      let observation = monitor.addLibraryHandler { _ in retry(rootPath) }
      watched[rootPath] = Watched(observation: observation, stores: [WeakReference(store)])
      return released
    }
    for observation in released { observation.cancel() }
    update(store, rootPath)
  }

  /// Tells `store` what the device says now.
  private static func update(_ store: SuiteStore, _ rootPath: String) {
    let reason = DeviceStatePage.read(rootPath: rootPath)
      .unavailabilityReason(for: .completeUntilFirstUserAuthentication)
    if let reason {
      store.becameUnavailable(reason)
    } else if store.retryProtectedLoad() {
      reported.withLock { _ = $0.remove(store.path) }
    }
  }

  /// Tells every store of `rootPath` what the device says now; stops watching once none is
  /// open.
  static func retry(_ rootPath: String) {
    let stores = watched.withLock { $0[rootPath]?.stores.compactMap(\.object) ?? [] }
    for store in stores { update(store, rootPath) }
    let done: Observation? = watched.withLock { watched in
      guard var entry = watched[rootPath] else { return nil }
      entry.stores.removeAll { $0.object == nil }
      if entry.stores.isEmpty {
        watched[rootPath] = nil
        return entry.observation
      }
      watched[rootPath] = entry
      return nil
    }
    done?.cancel()
  }
}

internal import Synchronization

/// Preferences and the device's data protection: a suite's file is of class
/// `completeUntilFirstUserAuthentication`, unreadable from a restart until the first unlock.
///
/// The Defaults layer installs Storage's gate (a store asks it once, when it opens), its
/// probe (a commit asks it under the suite's lock) and the device monitor's library hook
/// (told of each change of a root's state before the app hears of it). Each gated store it
/// opened keeps its root's device monitor alive (``SuiteStore/protectionWatch``), and at each
/// change of the state the hook looks at the open stores of that root:
///
/// - data available again: each store that could not read its file reads it under the writes
///   made meanwhile, which land key by key, and the suite's observers hear every key whose
///   effective value changed, before the app hears ``ProtectedData/didBecomeAvailableNotification``;
/// - data gone (the device restarted while this process ran on, which no process does on a
///   device): each loaded store becomes one that cannot read its file, as if it had opened
///   before the first unlock. Its values stay in memory; its writes stay there too.
///
/// No table of its own: the stores are the process's open ones (``SuiteStore/openStores()``)
/// whose scope is the root and that this layer has watched; the page is the monitor's.
///
/// Only an app's suites are gated: a suite opened by an administrator's tool (`groupctl`
/// without `--as`) reads the files as the machine's owner does, outside the device.
enum ProtectedSuites {
  /// The suites this process said it cannot read yet (once each, until they are read).
  private static let reported = Mutex<Set<String>>([])
  private static let installed = Atomic<Bool>(false)

  /// Installs Storage's gate and probe and the device monitor's hook, once per process.
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
    DeviceMonitor.libraryHook.withLock { hook in
      hook = { rootPath, page in retry(rootPath, page) }
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

  /// Watches `store`, a gated one, while it is open: it keeps its root's device monitor,
  /// whose hook tells it of each change of the state from now on. A store that could not be
  /// read is tried again at once (the data may have come back between its opening and the
  /// watch), and a loaded one is marked when the device restarted in that window.
  ///
  /// - Parameter monitor: the root's monitor, when the caller has it.
  static func wait(for store: SuiteStore, monitor: DeviceMonitor? = nil) {
    guard let rootPath = store.options.protectionScope, !store.options.readOnly else { return }
    let monitor =
      monitor ?? DeviceMonitor.existing(rootPath: rootPath)
      ?? DeviceMonitor.shared(root: ContainerRoot(path: rootPath))
    store.protectionWatch.withLock { watch in
      if watch == nil { watch = monitor }
    }
    // A monitor that watches the folder maps a state file as soon as it appears and then
    // calls the hook, which finds this store watched (just above): with no file mapped, there
    // was none when the store's gate looked (it maps what it finds, in this same page), and
    // one made since is told through the hook. No `open(2)` of a missing file here.
    guard monitor.isWatching else { return update(store, monitor.page) }
    update(store, monitor.page.mappedState ?? .newDevice)
  }

  /// Tells `store` what the device says now.
  private static func update(_ store: SuiteStore, _ page: DeviceStatePage) {
    update(store, page.state)
  }

  /// Tells `store` that the device's state is `state`.
  private static func update(_ store: SuiteStore, _ state: DeviceState) {
    let reason = state.unavailabilityReason(for: .completeUntilFirstUserAuthentication)
    if let reason {
      store.becameUnavailable(reason)
    } else if store.retryProtectedLoad() {
      reported.withLock { _ = $0.remove(store.path) }
    }
  }

  /// Tells every store of `rootPath` that this layer watches what the device says now (from
  /// `page`, the root's): the monitor's hook, on its queue.
  static func retry(_ rootPath: String, _ page: DeviceStatePage) {
    for store in SuiteStore.openStores()
    where store.options.protectionScope == rootPath && !store.options.readOnly
      && store.protectionWatch.withLock({ $0 != nil })
    {
      update(store, page)
    }
  }
}

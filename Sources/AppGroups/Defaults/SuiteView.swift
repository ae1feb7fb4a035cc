import Foundation
internal import Synchronization

/// The effective values of one suite in this process: the search list over
/// its layers (managed → argument → suite → global → registration), cached
/// per key, and the observers told when an effective value changes.
///
/// One view per suite file per process, shared by every `GroupDefaults`
/// handle on that suite.
@usableFromInline final class SuiteView: Sendable, AfterBatchWork {
  let domain: String
  let suite: SuiteStore
  let managed: SuiteStore?
  /// `managed`'s address (0: none), for ``isForced(_:)``; `managed` holds it as long as this view.
  private let managedAddress: UInt
  /// The global domain's file, opened on first use (see ``global``); `nil` for the global
  /// suite itself.
  private let globalPath: String?
  private let options: SuiteStore.Options
  /// Set once, and held (strongly) until the view goes.
  private let globalStore = Mutex<SuiteStore?>(nil)
  /// The same store's address, for reads without a lock on every `set` and resume check
  /// (`AtomicLazyReference.load()` costs hundreds of instructions, unspecialized).
  private let globalAddress = Atomic<UInt>(0)

  private struct Cache: Sendable {
    var entries = CacheTable<Entry>()
    var epoch: UInt64 = 0
    /// Whether some cached key is not ASCII (see ``CacheKey``).
    var holdsNonASCIIKeys = false
  }

  @usableFromInline enum Entry: Sendable, Equatable {
    case found(PropertyListValue, GroupDefaults.Domain)
    case absent

    var value: PropertyListValue? {
      if case .found(let value, _) = self { return value }
      return nil
    }
  }

  struct Observers: Sendable {
    /// In the order they were added: an array, which a change copies by reference (a copy of a
    /// dictionary's values cost each change an array, and the first change its type).
    var list: [Observer] = []
    var nextID: UInt64 = 1
    /// The handles on this view (a few): an array, not a dictionary keyed by
    /// `ObjectIdentifier`, whose first use costs a process a conformance lookup at launch.
    /// Of a non-generic reference: `WeakReference<GroupDefaults>` would be two more generic
    /// types (the reference and its array's storage) to instantiate at a process's first open.
    var handles: [Handle] = []
    /// The `userInfo` this view's notifications are copied from, made by its first post (see
    /// ``UserInfoTemplate``).
    var userInfoTemplate: UserInfoTemplate?
    /// A copy of the template's table that the last post filled and handed back, to fill
    /// again in place (see ``postNotification(_:)``); `nil` while a post has it.
    var spareUserInfo: UserInfoTemplate.Table?
  }

  struct Observer: Sendable {
    let id: UInt64
    let keys: Set<String>?
    /// The key, when `keys` holds one: compared (as the set compares its keys), not hashed,
    /// for each change heard.
    let onlyKey: String?
    let handler: @Sendable ([GroupDefaults.Change]) -> Void

    init(id: UInt64, keys: Set<String>?, handler: @escaping @Sendable ([GroupDefaults.Change]) -> Void) {
      self.id = id
      self.keys = keys
      onlyKey = keys?.count == 1 ? keys?.first : nil
      self.handler = handler
    }

    /// Whether the observer hears the changes of `key`.
    func observes(_ key: String) -> Bool {
      if let onlyKey { return onlyKey == key }
      return keys?.contains(key) ?? true
    }
  }

  /// A `GroupDefaults` on this view, weakly. `@unchecked`: read and written only under
  /// `observers`' lock. A class: an array of references uses the storage type every such
  /// array shares, where an array of structs is one more generic type to instantiate.
  final class Handle: @unchecked Sendable {
    weak var object: GroupDefaults?

    init(object: GroupDefaults) { self.object = object }
  }

  private let cache = Mutex(Cache())
  /// The cache's scalar entries, read without its lock; changed with the cache, under it.
  private let scalars = CachedScalars()
  /// The seed of the cache's keys (see ``CacheKey``).
  private let keySeed = UInt64.random(in: .min ... .max)
  let observers = Mutex(Observers())
  /// The ids of the change handlers this view added to `managed` and to the global store
  /// (`suite`'s is ``suiteHandlerID``), removed when it goes. Fields, not an array of
  /// (store, id) structs: that array's storage is one more generic type a process
  /// instantiates at its first open (11 k instructions, callgrind).
  private let managedHandlerID = Atomic<UInt64>(0)
  private let globalHandlerID = Atomic<UInt64>(0)
  /// The changes of the notification that is to be posted, and whether the change monitor's
  /// thread posts it (see ``postLater(origin:_:)``); `nil` when none is.
  let notificationPending = Mutex<PendingNotification?>(nil)
  /// Of a struct, not a tuple: a tuple type is one more metadata instantiation at a
  /// process's first open.
  struct PendingNotification: Sendable {
    var changes: [GroupDefaults.Change] = []
    var byMonitor = false
  }
  /// How many changes the last posted notification held (at most
  /// ``notificationRoomLimit``): the room a new batch starts with, so that a burst's batch is
  /// not grown from empty, step by step, each time a worker took the one before.
  let notificationRoom = Atomic<Int>(0)
  static let notificationRoomLimit = 1_024
  /// When a worker last took a batch to post (``FileSystem/monotonicNanoseconds()``; 0: never),
  /// to tell a burst (see ``postLater(origin:_:)``).
  let notificationTaken = Atomic<UInt64>(0)
  /// The least time between two batches taken to be posted, in nanoseconds: a batch
  /// scheduled sooner after the last one taken waits for the rest of it, so a burst posts
  /// one notification per pause, not one per turn of a worker (which takes each batch within
  /// microseconds, hundreds of times in a burst). A lone change is posted at once.
  static let notificationPause: UInt64 = 2_000_000
  /// The id of this view's change handler on `suite`: a `set` made through this view tells
  /// the view itself (see ``setUnlessForced(_:forKey:)``), not through the handler.
  private let suiteHandlerID = Atomic<UInt64>(0)

  private static let registry = WeakRegistry<SuiteView>()

  /// The view for the suite file at `suitePath`, opened on first use.
  static func shared(
    domain: String, suitePath: String, globalPath: String?, managedPath: String?,
    options: SuiteStore.Options
  ) throws(AppGroupsError) -> SuiteView {
    try registry.object(forKey: suitePath) { () throws(AppGroupsError) -> SuiteView in
      let suite = try SuiteStore.shared(path: suitePath, options: options)
      // The global domain is opened on the first read that reaches it when its lock file is
      // there, a page long, readable and writable: opening it later cannot fail then but by a
      // race. Otherwise (or when this process has it open already) now, so that whatever
      // refuses the suite at open (a link, a folder it cannot write) still does.
      let global = try globalPath.flatMap { path throws(AppGroupsError) -> SuiteStore? in
        if let open = SuiteStore.existing(path: path) { return open }
        guard FileSystem.isReadyLockFile(SuiteLockFile.path(of: path), size: LockedFile.pageSize) else {
          return try SuiteStore.shared(path: path, options: options)
        }
        return nil
      }
      var managedOptions = options
      managedOptions.readOnly = true
      let managed = try managedPath.map { path throws(AppGroupsError) in
        try SuiteStore.shared(path: path, options: managedOptions)
      }
      let view = SuiteView(
        domain: domain, suite: suite, managed: managed, globalPath: globalPath, options: options)
      // One call per store, not a `[SuiteStore?]` compacted: one generic type less to
      // instantiate at a process's first open.
      ChangeMonitor.shared.watch(view.suite)
      if let managed = view.managed { ChangeMonitor.shared.watch(managed) }
      if let global { view.adoptGlobal(global) }
      return view
    }
  }

  static func allViews() -> [SuiteView] {
    registry.all
  }

  private init(
    domain: String, suite: SuiteStore, managed: SuiteStore?, globalPath: String?,
    options: SuiteStore.Options
  ) {
    self.domain = domain
    self.suite = suite
    self.managed = managed
    managedAddress = managed.map { UInt(bitPattern: Unmanaged.passUnretained($0).toOpaque()) } ?? 0
    self.globalPath = globalPath
    self.options = options
    // Layer by layer, without an array of (store, layer) pairs (see `managedHandlerID`).
    let suiteID = suite.addChangeHandler { [weak self] changes, origin in
      self?.layerChanged(.application, changes, origin: origin)
    }
    suiteHandlerID.store(suiteID, ordering: .relaxed)
    if let managed {
      let id = managed.addChangeHandler { [weak self] changes, origin in
        self?.layerChanged(.managed, changes, origin: origin)
      }
      managedHandlerID.store(id, ordering: .relaxed)
    }
  }

  /// The global domain's store, opened on first use: most processes read keys their suite
  /// holds and never need it, and opening it costs a lock file, a mapped page, a read and a
  /// kernel watch. `nil` for the global suite itself, and (said once on stderr) when it
  /// cannot be opened: then the layer reads as empty, and the next use tries again.
  var global: SuiteStore? {
    if let opened = openedGlobal { return opened }
    guard let globalPath else { return nil }
    let store: SuiteStore
    do {
      store = try SuiteStore.shared(path: globalPath, options: options)
    } catch {
      Diagnostics.reportOnce("\(error)")
      return nil
    }
    adoptGlobal(store)
    return store
  }

  /// ``GroupDefaults/refreshIfChanged()``: re-reads each open layer whose token or file
  /// moved. Three plain checks, not a loop over an array of the stores, and each store used
  /// without a reference of its own: the stores are weakly registered, so each retain and
  /// release of one takes the runtime's slow path, which cost more than the checks (the
  /// managed layer's, bound to a name, was 170 of a check's 415 instructions, callgrind).
  func refreshIfChanged() -> Bool {
    var changed = false
    if suite.hasChangedOnDisk(), !suite.refresh().isEmpty { changed = true }
    if withOpenedGlobal({ $0.hasChangedOnDisk() && !$0.refresh().isEmpty }) == true {
      changed = true
    }
    if withManaged({ $0.hasChangedOnDisk() && !$0.refresh().isEmpty }) == true {
      changed = true
    }
    return changed
  }

  /// ``GroupDefaults/hasChanged(since:)``: a call of its own, where the suite's store is
  /// used without a reference of its own. Inlined into the caller, the store was retained
  /// and released around the check (the runtime's slow path: 170 of its 371 instructions,
  /// callgrind).
  @inline(never)
  func hasChanged(since token: UInt64) -> Bool {
    suite.hasChanged(since: token)
  }

  /// `body`'s result with the managed layer's store, used without a reference of its own;
  /// `nil` when there is none.
  @inline(__always)
  private func withManaged<Result>(_ body: (SuiteStore) -> Result) -> Result? {
    guard let pointer = UnsafeRawPointer(bitPattern: managedAddress) else { return nil }
    // Alive: `managed` holds it as long as this view.
    return Unmanaged<SuiteStore>.fromOpaque(pointer)._withUnsafeGuaranteedRef(body)
  }

  /// The global layer's value for `key`, the layer opened on first use, the store used
  /// without a reference of its own (a retain of a weakly registered store takes the
  /// runtime's slow path: a few hundred instructions on every `set` of a new key).
  private func globalValue(forKey key: String) -> PropertyListValue? {
    switch withOpenedGlobal({ $0.value(forKey: key) }) {
    case .some(let value): return value
    case .none: return global?.value(forKey: key)
    }
  }

  /// `body`'s result with the global layer's store, if it is open, used without a reference
  /// of its own; `nil` when it was never opened.
  private func withOpenedGlobal<Result>(_ body: (SuiteStore) -> Result) -> Result? {
    let address = globalAddress.load(ordering: .acquiring)
    guard let pointer = UnsafeRawPointer(bitPattern: address) else { return nil }
    // Alive: `globalStore` holds it as long as this view.
    return Unmanaged<SuiteStore>.fromOpaque(pointer)._withUnsafeGuaranteedRef(body)
  }

  /// The global domain's store if it is open; what was never opened has nothing cached.
  var openedGlobal: SuiteStore? { withOpenedGlobal { $0 } }

  /// Makes `store` this view's global layer (once): its changes reach this view, the change
  /// monitor watches it, and the cache forgets what it resolved before.
  private func adoptGlobal(_ store: SuiteStore) {
    let first = globalStore.withLock { slot in
      if slot != nil { return false }
      slot = store
      return true
    }
    guard first else { return }
    let address = UInt(bitPattern: Unmanaged.passUnretained(store).toOpaque())
    globalAddress.store(address, ordering: .releasing)
    let id = store.addChangeHandler { [weak self] changes, origin in
      self?.layerChanged(.global, changes, origin: origin)
    }
    globalHandlerID.store(id, ordering: .relaxed)
    ProtectedSuites.wait(for: store)
    // A change of the store heard between its opening and the handler above (another view
    // shares it) reached no handler of this view: forget every resolved entry.
    cache.withLock { cache in
      cache.epoch &+= 1
      cache.entries.removeAll()
      scalars.removeAll()
      cache.holdsNonASCIIKeys = false
    }
    ChangeMonitor.shared.watch(store)
  }

  deinit {
    suite.removeChangeHandler(suiteHandlerID.load(ordering: .relaxed))
    managed?.removeChangeHandler(managedHandlerID.load(ordering: .relaxed))
    // Set with its handler's id in `adoptGlobal(_:)`, which has returned: nothing runs on a
    // view that is going.
    globalStore.withLock { $0 }?.removeChangeHandler(globalHandlerID.load(ordering: .relaxed))
  }

  func attach(_ defaults: GroupDefaults) {
    observers.withLock { $0.handles.append(Handle(object: defaults)) }
  }

  func detach(_ defaults: GroupDefaults) {
    observers.withLock { obs in
      obs.handles.removeAll { $0.object == nil || $0.object === defaults }
    }
  }

  // MARK: Reading

  /// The effective value of `key` and the domain that supplied it: a cached scalar without
  /// a lock (``CachedScalars``), else under the cache's lock. Inlined into this module's
  /// getters (`integer(forKey:)` is then one call frame, not two).
  @inline(__always)
  @usableFromInline func lookup(_ key: String) -> Entry {
    let probe = CacheKey.probe(of: key, seed: keySeed)
    if let cached = scalars.entry(probe) { return cached }
    return lookUpLocked(key, probe)
  }

  /// ``lookup(_:)`` under the cache's lock: a call of its own, so that the read without it
  /// keeps a small frame.
  @inline(never)
  private func lookUpLocked(_ key: String, _ probe: CacheKey.Probe) -> Entry {
    let (bits, isASCII) = (probe.bits, probe.isASCII)
    let (cached, epoch) = cache.withLock {
      ($0.entries[key, bits: bits, isASCII: isASCII], $0.epoch)
    }
    if let cached { return cached }
    let cacheKey = CacheKey(key, bits: bits, isASCII: isASCII)
    let entry = resolve(key)
    cache.withLock { cache in
      guard cache.epoch == epoch else { return }
      cache.entries.set(entry, for: cacheKey)
      scalars.set(entry, for: probe)
      if !cacheKey.isASCII { cache.holdsNonASCIIKeys = true }
    }
    return entry
  }

  /// Whether a layer above `layer` holds `key` (then a change in `layer` cannot show).
  private func isMasked(_ key: String, above layer: GroupDefaults.Domain) -> Bool {
    switch layer {
    case .managed: return false
    case .argument: return managed?.value(forKey: key) != nil
    case .application, .global, .registration:
      if managed?.value(forKey: key) != nil || ProcessDomains.argument(key) != nil { return true }
      if layer == .application { return false }
      if suite.value(forKey: key) != nil { return true }
      if layer == .global { return false }
      return globalValue(forKey: key) != nil
    }
  }

  /// The first value for `key` in the layers below `layer`.
  private func resolve(_ key: String, below layer: GroupDefaults.Domain) -> PropertyListValue? {
    switch layer {
    case .managed:
      return ProcessDomains.argument(key) ?? suite.value(forKey: key) ?? globalValue(forKey: key)
        ?? ProcessDomains.registered(key)
    case .argument:
      return suite.value(forKey: key) ?? globalValue(forKey: key) ?? ProcessDomains.registered(key)
    case .application: return globalValue(forKey: key) ?? ProcessDomains.registered(key)
    case .global: return ProcessDomains.registered(key)
    case .registration: return nil
    }
  }

  /// The search list for `key`: the first layer that holds it.
  private func resolve(_ key: String) -> Entry {
    if let v = managed?.value(forKey: key) { return .found(v, .managed) }
    if let v = ProcessDomains.argument(key) { return .found(v, .argument) }
    if let v = suite.value(forKey: key) { return .found(v, .application) }
    if let v = globalValue(forKey: key) { return .found(v, .global) }
    if let v = ProcessDomains.registered(key) { return .found(v, .registration) }
    return .absent
  }

  /// Every effective key and value.
  func dictionaryRepresentation() -> [String: PropertyListValue] {
    var result = ProcessDomains.registration
    if let global { result.merge(global.values()) { $1 } }
    result.merge(suite.values()) { $1 }
    result.merge(ProcessDomains.arguments) { $1 }
    if let managed { result.merge(managed.values()) { $1 } }
    return result
  }

  func isForced(_ key: String) -> Bool {
    // The managed layer's store used without a reference of its own (see `globalValue`): it
    // is asked on every `set`.
    guard let pointer = UnsafeRawPointer(bitPattern: managedAddress) else { return false }
    return Unmanaged<SuiteStore>.fromOpaque(pointer)._withUnsafeGuaranteedRef { $0.value(forKey: key) } != nil
  }

  // MARK: Writing

  /// Sets (or, with `nil`, removes) `key` in the suite's own layer, unless an administrator
  /// forces it: the search list's one write, so that the managed layer's look and the write
  /// are made here, side by side.
  /// - Returns: `false` when the key is forced: nothing was changed.
  /// - Throws: what ``SuiteStore/set(_:forKey:)`` throws; nothing was changed then.
  ///
  /// The change is told to this view here, on the caller's thread as before, and to the
  /// suite's other handlers by the store: not through this view's own handler, whose weak
  /// reference to the view would cost each `set` a retain and a release on the runtime's slow
  /// path (a view is weakly registered).
  func setUnlessForced(_ value: PropertyListValue?, forKey key: String) throws(AppGroupsError) -> Bool {
    if isForced(key) { return false }
    let (changed, old) = try suite.set(value, forKey: key, notTelling: suiteHandlerID.load(ordering: .relaxed))
    if changed { ownSetChanged(key, old: old, new: value) }
    return true
  }

  /// ``layerChanged(_:_:origin:)-(_,SuiteStore.Changes,_)`` of a `set` made through this view,
  /// whose managed layer was just found not to hold the key: only the argument domain can
  /// mask it (a managed value that arrives meanwhile is told by the managed layer's own
  /// change, as one that arrives just after).
  private func ownSetChanged(_ key: String, old: PropertyListValue?, new: PropertyListValue?) {
    forgetCached(CollectionOfOne(key), count: 1, origin: .thisProcess)
    if ProcessDomains.argument(key) != nil { return }
    // The change built once and moved into the notification's batch (not copied in and
    // destroyed), and this view not captured by the batch's closure: a view is weakly
    // registered, so retaining it takes the runtime's slow path, and a burst of `set` calls
    // would pay that once per call.
    let change: GroupDefaults.Change
    if old == nil || new == nil {
      let below = resolve(key, below: .application)
      let (old, new) = (old ?? below, new ?? below)
      if old == new { return }
      change = GroupDefaults.Change(suiteName: domain, key: key, oldValue: old, newValue: new, origin: .thisProcess)
    } else {
      if old == new { return }
      change = GroupDefaults.Change(suiteName: domain, key: key, oldValue: old, newValue: new, origin: .thisProcess)
    }
    // ``deliver(_:)-(GroupDefaults.Change)``. No observer (a burst's usual case): the empty
    // list is not retained and released.
    if let targets = observers.withLock({ $0.list.isEmpty ? nil : $0.list }) {
      for target in targets where target.observes(key) { target.handler([change]) }
    }
    var batched = Optional(consume change)
    postLater(origin: .thisProcess) { $0.append(batched.take()!) }
  }

  // MARK: Changes

  /// A layer's store changed: a `set`'s one change takes a way of its own, which builds no
  /// array (a burst of `set` calls pays this once per call).
  func layerChanged(_ layer: GroupDefaults.Domain, _ changes: SuiteStore.Changes, origin: ChangeOrigin) {
    switch changes {
    case .many(let changes):
      layerChanged(layer, changes, origin: origin)
    case .one(let change):
      let effective = effectiveChange(change, in: layer, origin: origin)
      forgetCached(CollectionOfOne(change.key), count: 1, origin: origin)
      if let effective { deliver(effective) }
    }
  }

  /// One layer changed: recompute the effective value of each changed key,
  /// forget cached entries, and tell observers of the keys whose effective
  /// value really changed.
  func layerChanged(_ layer: GroupDefaults.Domain, _ changes: [StoredChange], origin: ChangeOrigin) {
    var effective: [GroupDefaults.Change] = []
    for change in changes {
      if let change = effectiveChange(change, in: layer, origin: origin) { effective.append(change) }
    }
    forgetCached(changes.lazy.map(\.key), count: changes.count, origin: origin)
    if !effective.isEmpty { deliver(effective) }
  }

  /// The change of `change.key`'s effective value that a change in `layer` makes, or `nil`
  /// when it makes none: one pass over the search list, where a layer above the changed one
  /// masks the change and, below it, only a missing value needs the lower layers. Inlined
  /// into both callers, so that the change is built where it goes (a copy of it through the
  /// optional cost a migration's 2,000 changes more than the array saved).
  @inline(__always)
  private func effectiveChange(
    _ change: StoredChange, in layer: GroupDefaults.Domain, origin: ChangeOrigin
  ) -> GroupDefaults.Change? {
    if isMasked(change.key, above: layer) { return nil }
    let below = change.old == nil || change.new == nil ? resolve(change.key, below: layer) : nil
    let old = change.old ?? below
    let new = change.new ?? below
    if old == new { return nil }
    return GroupDefaults.Change(suiteName: domain, key: change.key, oldValue: old, newValue: new, origin: origin)
  }

  /// Forgets the cached entries of `keys` (`count` of them). Another process's changes (a
  /// re-read's, a few keys) forget the whole cache, which costs no key's hash: the values
  /// are looked up again on their next read.
  private func forgetCached(_ keys: some Sequence<String>, count: Int, origin: ChangeOrigin) {
    cache.withLock { cache in
      cache.epoch &+= 1
      // Nothing cached (a burst of `set` calls that reads nothing): no key to hash.
      guard cache.entries.count > 0 else {
        cache.holdsNonASCIIKeys = false
        return
      }
      // A key that is not ASCII may have another spelling the cache holds
      // apart (see CacheKey): then forget everything.
      var clearAll = origin == .otherProcess || count > 64 || cache.holdsNonASCIIKeys
      if !clearAll {
        for key in keys {
          let probe = CacheKey.probe(of: key, seed: keySeed)
          guard probe.isASCII else {
            clearAll = true
            break
          }
          cache.entries.remove(CacheKey(key, bits: probe.bits, isASCII: true))
          scalars.remove(probe)
        }
      }
      if clearAll {
        cache.entries.removeAll()
        scalars.removeAll()
        cache.holdsNonASCIIKeys = false
      }
    }
  }

  private func deliver(_ changes: [GroupDefaults.Change]) {
    let targets = observers.withLock { $0.list }
    for target in targets {
      if target.keys != nil {
        // Every change of a key it observes (another process's one change of one): the
        // batch as it is, not a copy.
        guard let first = changes.firstIndex(where: { !target.observes($0.key) }) else {
          target.handler(changes)
          continue
        }
        var relevant = Array(changes[..<first])
        relevant += changes[(first + 1)...].lazy.filter { target.observes($0.key) }
        if !relevant.isEmpty { target.handler(relevant) }
      } else {
        target.handler(changes)
      }
    }
    postLater(origin: changes.first?.origin, handing: changes)
  }

  /// ``deliver(_:)-([GroupDefaults.Change])`` of one change.
  private func deliver(_ change: GroupDefaults.Change) {
    let targets = observers.withLock { $0.list }
    for target in targets where target.observes(change.key) {
      target.handler([change])
    }
    postLater(origin: change.origin) { $0.append(change) }
  }

  func addObserver(
    keys: Set<String>?, _ handler: @escaping @Sendable ([GroupDefaults.Change]) -> Void
  ) -> UInt64 {
    // An observer hears of the global layer's changes too: that layer must be open.
    _ = global
    // Made now, not by the first change heard (see ``UserInfoTemplate``).
    _ = userInfoTemplate()
    suite.prepareTelling()
    return observers.withLock { obs in
      let id = obs.nextID
      obs.nextID &+= 1
      obs.list.append(Observer(id: id, keys: keys, handler: handler))
      return id
    }
  }

  func removeObserver(_ id: UInt64) {
    observers.withLock { obs in
      if let index = obs.list.firstIndex(where: { $0.id == id }) { obs.list.remove(at: index) }
    }
  }

  /// A process-wide layer (registration, argument) changed.
  static func processLayerChanged(_ layer: GroupDefaults.Domain, _ changes: [StoredChange]) {
    guard !changes.isEmpty else { return }
    for view in allViews() { view.layerChanged(layer, changes, origin: .thisProcess) }
  }
}

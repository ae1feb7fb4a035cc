import Foundation
internal import Synchronization

/// The effective values of one suite in this process: the search list over
/// its layers (managed → argument → suite → global → registration), cached
/// per key, and the observers told when an effective value changes.
///
/// One view per suite file per process, shared by every `GroupDefaults`
/// handle on that suite.
final class SuiteView: Sendable {
  let domain: String
  let suite: SuiteStore
  let global: SuiteStore?
  let managed: SuiteStore?

  enum Layer: Sendable { case managed, argument, suite, global, registration }

  private struct Cache: Sendable {
    var entries: [String: Entry] = [:]
    var epoch: UInt64 = 0
  }

  enum Entry: Sendable, Equatable {
    case found(PropertyListValue, GroupDefaults.Domain)
    case absent

    var value: PropertyListValue? {
      if case .found(let value, _) = self { return value }
      return nil
    }
  }

  private struct Observers: Sendable {
    var byID: [UInt64: (keys: Set<String>?, handler: @Sendable ([GroupDefaults.Change]) -> Void)] = [:]
    var nextID: UInt64 = 1
    var handles: [ObjectIdentifier: WeakHandle] = [:]
  }

  private struct WeakHandle: @unchecked Sendable { weak var defaults: GroupDefaults? }

  private let cache = Mutex(Cache())
  private let observers = Mutex(Observers())
  private let handlerIDs: Mutex<[(SuiteStore, UInt64)]> = Mutex([])
  private let notificationPending = Mutex<[GroupDefaults.Change]?>(nil)

  private static let registry = Mutex<[String: WeakView]>([:])
  private struct WeakView: @unchecked Sendable { weak var view: SuiteView? }

  /// The view for the suite file at `suitePath`, opened on first use.
  static func shared(
    domain: String, suitePath: String, globalPath: String?, managedPath: String?,
    options: SuiteStore.Options
  ) throws(AppGroupsError) -> SuiteView {
    let result: Result<SuiteView, AppGroupsError> = registry.withLock { views in
      if let view = views[suitePath]?.view { return .success(view) }
      let opened = Result { () throws(AppGroupsError) -> SuiteView in
        let suite = try SuiteStore.shared(path: suitePath, options: options)
        let global = try globalPath.map { path throws(AppGroupsError) in
          try SuiteStore.shared(path: path, options: options)
        }
        var managedOptions = options
        managedOptions.readOnly = true
        let managed = try managedPath.map { path throws(AppGroupsError) in
          try SuiteStore.shared(path: path, options: managedOptions)
        }
        return SuiteView(domain: domain, suite: suite, global: global, managed: managed)
      }
      if case .success(let view) = opened {
        views[suitePath] = WeakView(view: view)
        ChangeMonitor.shared.watch(view)
      }
      return opened
    }
    return try result.get()
  }

  static func allViews() -> [SuiteView] {
    registry.withLock { $0.values.compactMap(\.view) }
  }

  private init(domain: String, suite: SuiteStore, global: SuiteStore?, managed: SuiteStore?) {
    self.domain = domain
    self.suite = suite
    self.global = global
    self.managed = managed
    var ids: [(SuiteStore, UInt64)] = []
    let layers: [(SuiteStore?, Layer)] = [(suite, .suite), (global, .global), (managed, .managed)]
    for case let (store?, layer) in layers {
      let id = store.addChangeHandler { [weak self] changes, origin in
        self?.layerChanged(layer, changes, origin: origin)
      }
      ids.append((store, id))
    }
    handlerIDs.withLock { $0 = ids }
  }

  deinit {
    for (store, id) in handlerIDs.withLock({ $0 }) { store.removeChangeHandler(id) }
  }

  func attach(_ defaults: GroupDefaults) {
    observers.withLock { $0.handles[ObjectIdentifier(defaults)] = WeakHandle(defaults: defaults) }
  }

  func detach(_ defaults: GroupDefaults) {
    observers.withLock { _ = $0.handles.removeValue(forKey: ObjectIdentifier(defaults)) }
  }

  // MARK: Reading

  /// The effective value of `key` and the domain that supplied it.
  func lookup(_ key: String) -> Entry {
    let (cached, epoch) = cache.withLock { ($0.entries[key], $0.epoch) }
    if let cached { return cached }
    let entry = resolve(key, replacing: nil)
    cache.withLock { if $0.epoch == epoch { $0.entries[key] = entry } }
    return entry
  }

  /// The search list for `key`; `replacing` substitutes one layer's value,
  /// to compute what the effective value was before a change.
  private func resolve(_ key: String, replacing: (Layer, PropertyListValue?)?) -> Entry {
    func value(_ layer: Layer, _ read: () -> PropertyListValue?) -> PropertyListValue? {
      if let replacing, replacing.0 == layer { return replacing.1 }
      return read()
    }
    if let v = value(.managed, { managed?.value(forKey: key) }) { return .found(v, .managed) }
    if let v = value(.argument, { ProcessDomains.argument(key) }) { return .found(v, .argument) }
    if let v = value(.suite, { suite.value(forKey: key) }) { return .found(v, .application) }
    if let v = value(.global, { global?.value(forKey: key) }) { return .found(v, .global) }
    if let v = value(.registration, { ProcessDomains.registered(key) }) {
      return .found(v, .registration)
    }
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

  func isForced(_ key: String) -> Bool { managed?.value(forKey: key) != nil }

  // MARK: Changes

  /// One layer changed: recompute the effective value of each changed key,
  /// forget cached entries, and tell observers of the keys whose effective
  /// value really changed.
  func layerChanged(_ layer: Layer, _ changes: [StoredChange], origin: ChangeOrigin) {
    var effective: [GroupDefaults.Change] = []
    for change in changes {
      let old = resolve(change.key, replacing: (layer, change.old)).value
      let new = resolve(change.key, replacing: (layer, change.new)).value
      if old != new {
        effective.append(
          GroupDefaults.Change(suiteName: domain, key: change.key, oldValue: old, newValue: new, origin: origin))
      }
    }
    cache.withLock { cache in
      cache.epoch &+= 1
      if changes.count > 64 {
        cache.entries.removeAll(keepingCapacity: true)
      } else {
        for change in changes { cache.entries.removeValue(forKey: change.key) }
      }
    }
    if !effective.isEmpty { deliver(effective) }
  }

  private func deliver(_ changes: [GroupDefaults.Change]) {
    let targets = observers.withLock { Array($0.byID.values) }
    for target in targets {
      if let keys = target.keys {
        let relevant = changes.filter { keys.contains($0.key) }
        if !relevant.isEmpty { target.handler(relevant) }
      } else {
        target.handler(changes)
      }
    }
    // NotificationCenter: one notification per burst, posted off the caller's thread.
    let schedule = notificationPending.withLock { pending in
      if pending == nil {
        pending = changes
        return true
      }
      pending?.append(contentsOf: changes)
      return false
    }
    if schedule {
      DispatchQueue.global().async { [self] in
        let batch = notificationPending.withLock { pending in
          defer { pending = nil }
          return pending ?? []
        }
        postNotification(batch)
      }
    }
  }

  /// Posts ``GroupDefaults/didChangeNotification`` for a burst of changes:
  /// one notification per origin (this process's first), so that the
  /// `origin` in `userInfo` is never a guess for a mixed burst.
  private func postNotification(_ changes: [GroupDefaults.Change]) {
    guard !changes.isEmpty else { return }
    let handles = observers.withLock { $0.handles.values.compactMap(\.defaults) }
    for origin in [ChangeOrigin.thisProcess, .otherProcess] {
      let batch = changes.filter { $0.origin == origin }
      guard !batch.isEmpty else { continue }
      let userInfo: [AnyHashable: Any] = [
        GroupDefaults.suiteNameKey: domain,
        GroupDefaults.changedKeysKey: Array(Set(batch.map(\.key))).sorted(),
        GroupDefaults.originKey: origin == .thisProcess ? "thisProcess" : "otherProcess",
        GroupDefaults.changesKey: batch,
      ]
      for handle in handles {
        NotificationCenter.default.post(
          name: GroupDefaults.didChangeNotification, object: handle, userInfo: userInfo)
      }
    }
  }

  func addObserver(
    keys: Set<String>?, _ handler: @escaping @Sendable ([GroupDefaults.Change]) -> Void
  ) -> UInt64 {
    observers.withLock { obs in
      let id = obs.nextID
      obs.nextID &+= 1
      obs.byID[id] = (keys, handler)
      return id
    }
  }

  func removeObserver(_ id: UInt64) {
    observers.withLock { _ = $0.byID.removeValue(forKey: id) }
  }

  /// A process-wide layer (registration, argument) changed.
  static func processLayerChanged(_ layer: Layer, _ changes: [StoredChange]) {
    guard !changes.isEmpty else { return }
    for view in allViews() { view.layerChanged(layer, changes, origin: .thisProcess) }
  }
}

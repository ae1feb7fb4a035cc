import Foundation
internal import Synchronization

/// The process's one change monitor: a ``DirectoryWatcher`` (one inotify
/// instance on a thread of its own) on the Preferences folder of every open
/// suite, and on the folders that named notifications use.
///
/// When a suite's file is replaced or edited, the store re-reads it (only if
/// its identity moved, so this process's own commits are not echoed back),
/// and the views tell their observers which effective values changed.
///
/// - A queue overflow (`IN_Q_OVERFLOW`) re-reads every watched store and
///   tells every listener to check everything (an empty name).
/// - A watched folder that is deleted or moved re-reads its stores (their
///   files are gone) and is waited for: the watcher watches its nearest
///   existing ancestor and, once a folder is back at its path and watched
///   again, every store in it is re-read and observers hear what changed.
///   Meanwhile `synchronize()` / `refreshIfChanged()` see changes by `stat`.
/// - When the kernel refuses a watch, the watcher checks that folder at a
///   stated interval and says so on stderr; it is never silent.
///
/// The monitor knows stores, not the views over them: a view subscribes to
/// its stores' changes, and whoever opens a store asks the monitor to watch it.
final class ChangeMonitor: Sendable {
  static let shared = ChangeMonitor()

  private struct Watched: Sendable {
    var watch: DirectoryWatcher.Watch?
    /// Stores by file name, weakly (see ``store(_:)``). Not `WeakReference<SuiteStore>`: the
    /// registries' table type, already instantiated when the first store is watched, where a
    /// generic reference, its `Optional` and its dictionary's storage would be instantiated
    /// at every new process's first open.
    var stores: [String: AnyWeakReference]
  }

  /// The store `reference` holds, if it is alive: only stores are put in ``Watched/stores``.
  ///
  /// Under ``state``'s lock, a store found alive is kept (`held`) until the lock is let go: the
  /// store may be released meanwhile by its last other holder, and its release must not run
  /// under the lock, since what it releases in turn (its root's ``DeviceMonitor``) stops its
  /// listener here.
  private static func store(_ reference: AnyWeakReference, held: inout [AnyObject]) -> SuiteStore? {
    guard let object = reference.object else { return nil }
    held.append(object)
    return unsafeDowncast(object, to: SuiteStore.self)
  }

  /// The monitor, weakly, for the watcher's handler (made before the monitor is).
  private final class MonitorReference: @unchecked Sendable {
    weak var object: ChangeMonitor?
  }

  /// A listener, with its id. A class: an array of references uses the storage type every
  /// such array shares, where an array of structs (or of `(id, listener)` pairs) would be a
  /// generic type, and a tuple, that the first suite an app opens instantiates (~28 k
  /// instructions, through DeviceMonitor).
  private final class Listener: Sendable {
    let id: UInt64
    let directory: String
    let prefix: String
    let handler: @Sendable (String) -> Void
    let watch: DirectoryWatcher.Watch

    init(
      id: UInt64, directory: String, prefix: String,
      handler: @escaping @Sendable (String) -> Void, watch: DirectoryWatcher.Watch
    ) {
      self.id = id
      self.directory = directory
      self.prefix = prefix
      self.handler = handler
      self.watch = watch
    }
  }

  private struct State: Sendable {
    var directories: [String: Watched] = [:]
    /// Other listeners (named notifications), in the order they were added. An array, not a
    /// dictionary keyed by id: there are a few, and a process's first dictionary of this type
    /// costs its key's hashing conformance lookup (a scan of every conformance record, about
    /// 0.35 M instructions), which the first suite an app opens paid through DeviceMonitor.
    var listeners: [Listener] = []
    var nextID: UInt64 = 1
  }

  private let state = Mutex(State())
  private let watcher: DirectoryWatcher
  /// What is to run on the monitor's thread once the batch it is handling was told (see
  /// ``afterThisBatch(_:)``). Only the monitor's thread adds to it.
  private let afterBatch = Mutex(AfterBatch())
  private struct AfterBatch: Sendable {
    /// Objects, not closures: a closure kept in an array was wrapped in a context allocated
    /// for it (a re-abstraction), once per change heard.
    var work: [any AfterBatchWork] = []
    /// Empty, with room: what `work` becomes when its work is taken to run, and what that
    /// work's array comes back as once run (so no batch allocates an array for its work).
    var spare: [any AfterBatchWork] = []
    /// Whether ``handle(_:)`` runs.
    var isOpen = false
  }

  #if DEBUG
  /// For tests: called on the watcher thread with each batch of events
  /// before it is handled. A hook that blocks lets the kernel's queue overflow.
  static let beforeHandlingForTesting = Mutex<(@Sendable ([DirectoryWatcher.Event]) -> Void)?>(nil)
  /// For tests: called with a store's path when `watch(_:)` begins, after the store was loaded
  /// and before its folder is watched, so that a test can change the file in that window.
  static let beforeWatchingForTesting = Mutex<(@Sendable (String) -> Void)?>(nil)
  #endif

  private init() {
    let box = MonitorReference()
    watcher = DirectoryWatcher { events in box.object?.handle(events) }
    box.object = self
  }

  /// Whether ``SuiteStore/hearAgain`` is this monitor's: installed when the first observer is
  /// added (``prepareAfterBatch()``), else by the first batch that re-reads a store; not at the
  /// first open (a suite opened by an app that hears no change pays nothing for it).
  private let handsBack = Atomic(false)

  /// A store's event left to this process's commit and handed back (see
  /// ``SuiteStore/refreshHeard()``): heard again as its plist's, on the monitor's thread.
  private func installHandBack() {
    guard !handsBack.exchange(true, ordering: .relaxed) else { return }
    let watcher = self.watcher
    SuiteStore.hearAgain.withLock {
      $0 = { store in
        watcher.redeliver([.init(directory: store.directory, name: store.fileName, kind: .movedTo)], endingPasses: 1)
      }
    }
  }

  /// Whether the caller runs on the monitor's thread, telling of changes it heard.
  var isCurrentThread: Bool { watcher.isCurrentThread }

  /// Runs `work` (``AfterBatchWork/batchTold()``) on the monitor's thread when the batch of
  /// events it is handling has been told: after every store of the batch was re-read and its change handlers called, outside
  /// every lock and every re-read's telling (so `work` may re-read, commit or open a suite).
  /// Work added by `work` runs too, before the batch ends.
  /// - Returns: `false`, and `work` is not kept, when the caller is not the monitor's thread
  ///   handling a batch.
  func afterThisBatch(_ work: any AfterBatchWork) -> Bool {
    guard watcher.isCurrentThread else { return false }
    return afterBatch.withLock { batch in
      guard batch.isOpen else { return false }
      batch.work.append(work)
      return true
    }
  }

  /// Makes the storage of ``afterThisBatch(_:)``'s work now rather than in the first change
  /// heard (its type's first use costs the runtime an instantiation, ~16 k instructions, which
  /// would fall in the window where every watching process is being told of one write),
  /// installs the hand-back of events left to a commit, and has the watcher's thread make
  /// ready what its first events need (``DirectoryWatcher/prepareThread()``): a process calls
  /// it when it adds its first observer.
  func prepareAfterBatch() {
    afterBatch.withLock { batch in
      if batch.work.capacity == 0 { batch.work.reserveCapacity(2) }
      if batch.spare.capacity == 0 { batch.spare.reserveCapacity(2) }
    }
    installHandBack()
    watcher.prepareThread()
  }

  /// Calls `handler` on the monitor's thread after `signal` arrives, instead of its action
  /// (see ``DirectoryWatcher/hear(_:_:)``): the lifecycle's suspension notice needs no thread
  /// of its own. `false` when the thread cannot run.
  func hear(_ signal: Processes.Signal, _ handler: @escaping @Sendable () -> Void) -> Bool {
    watcher.hear(signal.rawValue, handler)
  }

  // MARK: Stores

  /// Watches the folder of `store`, then re-reads the store if its file or its token moved
  /// since it was loaded: a commit (or an outside edit) made between the load and the watch
  /// would otherwise go unnoticed until the next event.
  ///
  /// The store is registered first, with `watchedByKernel` off, and only then looked at:
  /// from the registration on, every change is an event that reaches the store; before it,
  /// a change moved the token (a commit, appended or rewritten) or the file (an outside
  /// edit, a lock file replaced), which `hasChangedOnDisk()` then sees by reading the mapped
  /// token and `stat`ing the files, since no kernel watch is counted on yet. So the usual
  /// open re-reads nothing (no journal read), and a change made at any moment after the load
  /// is still heard.
  func watch(_ store: SuiteStore) {
    #if DEBUG
    if let hook = Self.beforeWatchingForTesting.withLock({ $0 }) { hook(store.path) }
    #endif
    let directory = store.directory
    let registered: Bool = state.withLock { st in
      guard st.directories[directory]?.watch != nil else { return false }
      st.directories[directory]?.stores[store.fileName] = AnyWeakReference(store)
      store.watchedByKernel = false
      return true
    }
    if !registered {
      let watch: DirectoryWatcher.Watch?
      do {
        // Awaited when it is not there: removed since the store was loaded (and made again
        // by the next write), it is watched when it comes back.
        watch = try watcher.watch(directory: directory, awaitingIfMissing: true)
      } catch {
        watch = nil
        Diagnostics.report(
          "cannot watch \(directory) for changes (\(error.message)); changes by other processes "
            + "are seen on synchronize() or refreshIfChanged()")
      }
      // A handle made here and not kept (another thread won) is released
      // when it goes out of scope: the kernel watch is shared and counted.
      var held: [AnyObject] = []
      state.withLock { st in
        pruneDeadStores(&st, held: &held)
        var watched = st.directories[directory] ?? Watched(watch: nil, stores: [:])
        if watched.watch == nil { watched.watch = watch }
        watched.stores[store.fileName] = AnyWeakReference(store)
        st.directories[directory] = watched
        store.watchedByKernel = false
      }
    }
    let changed = store.hasChangedOnDisk()
    state.withLock { st in
      // Under the lock that the handling of a folder's departure and return takes too, so
      // that this cannot overwrite what they set; read from the watch now, not before the look.
      store.watchedByKernel = st.directories[directory]?.watch?.isWatchedByKernel ?? false
    }
    if changed { store.refresh() }
  }

  /// Forgets stores that were released, and the watch of a folder with none left. The stores
  /// found alive are kept in `held` (see ``store(_:held:)``).
  private func pruneDeadStores(_ st: inout State, held: inout [AnyObject]) {
    for (directory, var watched) in st.directories {
      // Most folders have no released store: that is seen through the values alone (the
      // loop over the pairs below instantiates the pair's type and its `Optional`).
      guard watched.stores.values.contains(where: { Self.store($0, held: &held) == nil }) else { continue }
      // Not `filter`: its closure's element type, a tuple, is one more type to instantiate.
      var live = watched.stores
      for (name, reference) in watched.stores where Self.store(reference, held: &held) == nil { live[name] = nil }
      if live.count == watched.stores.count { continue }
      if live.isEmpty {
        st.directories[directory] = nil  // releases the watch
      } else {
        watched.stores = live
        st.directories[directory] = watched
      }
    }
  }

  // MARK: Listeners

  /// Calls `handler` on the watcher thread with the name of every entry of
  /// `directory` that changes and starts with `prefix`, and with an empty
  /// name when events may have been lost (queue overflow, the folder was
  /// replaced): check everything then.
  ///
  /// - Returns: an id for ``removeListener(_:)``.
  /// - Throws: `.io` when the folder cannot be watched at all.
  func addListener(
    directory: String, prefix: String, _ handler: @escaping @Sendable (String) -> Void
  ) throws(AppGroupsError) -> UInt64 {
    let watch = try watcher.watch(directory: directory)
    return state.withLock { st in
      let id = st.nextID
      st.nextID &+= 1
      st.listeners.append(
        Listener(id: id, directory: directory, prefix: prefix, handler: handler, watch: watch))
      return id
    }
  }

  /// Stops a listener. Events already read may still reach it once.
  func removeListener(_ id: UInt64) {
    let listener = state.withLock { st in
      st.listeners.firstIndex { $0.id == id }.map { st.listeners.remove(at: $0) }
    }
    listener?.watch.cancel()
  }

  // MARK: Events

  /// What an entry of a watched folder is to the stores open in it.
  private enum Entry {
    /// A store's plist or journal (see ``SuiteJournal``): the store re-reads.
    case values(SuiteStore)
    /// A store's lock file (see ``SuiteLockFile``): its next re-read looks at the path again.
    case lockFile(SuiteStore)
  }

  /// What the entry `name` of a watched folder is to the stores open in it, if anything.
  /// Names are compared as the file system does, byte for byte, against the folder's few
  /// stores, lengths first: no name is hashed, no weak reference is loaded but the one found,
  /// and a commit's temporary file costs a comparison of lengths.
  ///
  /// The store found is returned with a reference of its own: the caller keeps it until the
  /// state's lock is let go (see ``store(_:held:)``).
  private static func entry(named name: String, in stores: [String: AnyWeakReference]) -> Entry? {
    let length = name.utf8.count
    for index in stores.keys.indices {
      let fileName = stores.keys[index]
      let kind: (suffix: String, isLockFile: Bool)
      switch length - fileName.utf8.count {
      case 0: kind = ("", false)
      case SuiteJournal.suffix.utf8.count: kind = (SuiteJournal.suffix, false)
      case SuiteLockFile.suffix.utf8.count: kind = (SuiteLockFile.suffix, true)
      default: continue
      }
      guard Self.bytes(of: name, are: fileName, kind.suffix), let object = stores.values[index].object else {
        continue
      }
      let store = unsafeDowncast(object, to: SuiteStore.self)
      return kind.isLockFile ? .lockFile(store) : .values(store)
    }
    return nil
  }

  /// Whether the UTF-8 bytes of `name` are those of `prefix` followed by those of `suffix`
  /// (whose lengths add up to its own).
  private static func bytes(of name: String, are prefix: String, _ suffix: String) -> Bool {
    var name = name
    var prefix = prefix
    var suffix = suffix
    return name.withUTF8 { name in
      prefix.withUTF8 { prefix in
        suffix.withUTF8 { suffix in
          name.count == prefix.count + suffix.count
            && same(name, from: 0, as: prefix) && same(name, from: prefix.count, as: suffix)
        }
      }
    }
  }

  /// Whether the bytes of `whole` from `offset` on are those of `part` (which they have room
  /// for): byte by byte, not through a generic sequence comparison of two slices, which cost
  /// each watching process ~0.6 k instructions per change heard.
  private static func same(
    _ whole: UnsafeBufferPointer<UInt8>, from offset: Int, as part: UnsafeBufferPointer<UInt8>
  ) -> Bool {
    var index = 0
    while index < part.count {
      if whole[offset &+ index] != part[index] { return false }
      index &+= 1
    }
    return true
  }

  /// What is watched at `path`: among a few folders, found by comparing paths rather than by
  /// hashing one (an event names a folder by the string this monitor asked to watch, so the
  /// comparison mostly finds the same storage at once); the table is asked beyond that.
  private static func watched(at path: String, in directories: [String: Watched]) -> Watched? {
    guard directories.count <= 8 else { return directories[path] }
    for index in directories.keys.indices where directories.keys[index] == path {
      return directories.values[index]
    }
    return nil
  }

  private func handle(_ events: [DirectoryWatcher.Event]) {
    #if DEBUG
    if let hook = Self.beforeHandlingForTesting.withLock({ $0 }) { hook(events) }
    #endif
    afterBatch.withLock { $0.isOpen = true }
    defer {
      while var work = afterBatch.withLock({ batch -> [any AfterBatchWork]? in
        guard !batch.work.isEmpty else {
          batch.isOpen = false
          return nil
        }
        let work = batch.work
        batch.work = batch.spare
        batch.spare = []
        return work
      }) {
        for item in work { item.batchTold() }
        // One by one, keeping the room (`removeAll(keepingCapacity:)` goes through the
        // generic replacement of a range, which cost more than the few items).
        while work.popLast() != nil {}
        afterBatch.withLock { batch in
          if batch.spare.capacity < work.capacity { batch.spare = work }
        }
      }
    }
    // An array, not a set keyed by `ObjectIdentifier`: a batch names one store or a few, and a
    // process's first use of such a set costs its hashing conformance's lookup (a scan of every
    // conformance record), which the first change heard would pay.
    var stores: [SuiteStore] = []
    /// Of `stores`, those to re-read whatever this process is doing (events may have been
    /// lost, the folder went or came back); the others were named by an event, which a commit
    /// of this process writing the file may take over (``SuiteStore/refreshHeard()``).
    var rereadAll: [SuiteStore] = []
    func add(_ store: SuiteStore, named: Bool = false) {
      if !named && !rereadAll.contains(where: { $0 === store }) { rereadAll.append(store) }
      if !stores.contains(where: { $0 === store }) { stores.append(store) }
    }
    var notes: [(@Sendable (String) -> Void, String)] = []
    // Every store seen alive under the lock, released after it (see ``store(_:held:)``).
    var held: [AnyObject] = []
    state.withLock { st in
      // Events may have been missed: their lock files' paths are looked at again too.
      func addStores(in watched: Watched?) {
        for entry in watched?.stores.values ?? [:].values {
          guard let store = Self.store(entry, held: &held) else { continue }
          store.lockFileMayHaveMoved()
          add(store)
        }
      }
      // The folder of the event before, its stores and its listeners (a batch is mostly one
      // folder's: a commit's temporary file and its rename), so that its path is hashed and
      // compared once per batch, not once per event.
      var folder: (path: String, stores: [String: AnyWeakReference], listeners: [Listener])?
      for event in events {
        switch event.kind {
        case .overflow:
          // Events were lost: re-read everything watched.
          for watched in st.directories.values { addStores(in: watched) }
          for listener in st.listeners { notes.append((listener.handler, "")) }
        case .directoryGone, .directoryBack:
          // Gone: the stores' files are gone with it. Back: anything may
          // have happened before the new watch was in place. Re-read all.
          let watched = st.directories[event.directory]
          addStores(in: watched)
          let kernel = event.kind == .directoryBack && watched?.watch?.isWatchedByKernel == true
          for entry in watched?.stores.values ?? [:].values {
            Self.store(entry, held: &held)?.watchedByKernel = kernel
          }
          for listener in st.listeners where listener.directory == event.directory {
            notes.append((listener.handler, ""))
          }
        default:
          if folder?.path != event.directory {
            let listeners = st.listeners.filter { $0.directory == event.directory }
            folder = (event.directory, Self.watched(at: event.directory, in: st.directories)?.stores ?? [:], listeners)
          }
          switch folder.flatMap({ Self.entry(named: event.name, in: $0.stores) }) {
          case .values(let store)?: add(store, named: true)  // held by `stores`
          case .lockFile(let store)?:
            store.lockFileMayHaveMoved()
            held.append(store)
          case nil: break
          }
          for listener in folder?.listeners ?? [] where event.name.hasPrefix(listener.prefix) {
            notes.append((listener.handler, event.name))
          }
        }
      }
    }
    if !stores.isEmpty && !handsBack.load(ordering: .relaxed) { installHandBack() }
    for store in stores {
      if rereadAll.contains(where: { $0 === store }) { store.refresh() } else { store.refreshHeard() }
    }
    for (handler, name) in notes { handler(name) }
    // A folder that went with no open store left in it is not waited for: its watch would
    // sit on an ancestor (as far up as `/tmp`) for stores nobody uses.
    if events.contains(where: { $0.kind == .directoryGone }) {
      let released: [DirectoryWatcher.Watch] = state.withLock { st in
        var released: [DirectoryWatcher.Watch] = []
        for event in events where event.kind == .directoryGone {
          guard let watched = st.directories[event.directory],
            !watched.stores.values.contains(where: { Self.store($0, held: &held) != nil })
          else { continue }
          st.directories[event.directory] = nil
          if let watch = watched.watch { released.append(watch) }
        }
        return released
      }
      for watch in released { watch.cancel() }
    }
  }
}

/// What runs on the change monitor's thread once the batch of events it is handling was told
/// (see ``ChangeMonitor/afterThisBatch(_:)``).
protocol AfterBatchWork: AnyObject, Sendable {
  /// Called on the monitor's thread, outside every lock, once its batch was told.
  func batchTold()
}

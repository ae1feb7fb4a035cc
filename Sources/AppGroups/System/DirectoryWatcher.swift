internal import CAppGroupsLinux
internal import Glibc
internal import Synchronization

/// Watches directories with inotify and reports what changed in them, on one dedicated thread.
///
/// One watcher owns one inotify instance and one `eventfd`. A single thread, started by the
/// first ``watch(directory:)``, `poll`s both and calls the handler with every event that one
/// `read(2)` returned, in the kernel's order. Nothing runs on a dispatch queue or a run loop,
/// so command-line processes get their events too.
///
/// ```swift
/// let watcher = DirectoryWatcher { events in
///   for event in events where event.kind == .movedTo { reload(event.name) }
/// }
/// let watch = try watcher.watch(directory: preferencesPath)
/// // ...
/// watch.cancel()
/// watcher.close()
/// ```
///
/// A watched directory that is deleted or moved away is reported
/// ``Event/Kind-swift.enum/directoryGone``; the watcher then watches its nearest existing
/// ancestor (up to the root), level by level as the path is created again, and reports
/// ``Event/Kind-swift.enum/directoryBack`` once the directory itself is watched again. No
/// polling: the kernel says when each level appears.
///
/// When the kernel refuses (out of inotify instances, `EMFILE`, or out of watches, `ENOSPC`),
/// the watcher does not go silent: it checks the directory's entries with `stat` every
/// ``fallbackInterval`` instead, reports changed names as ``Event/Kind-swift.enum/movedTo``,
/// and says so once on standard error.
///
/// The watcher is `Sendable`; every method may be called from any thread, including from the
/// handler. The handler must not block for long: while it runs, the kernel queues events, and
/// past `/proc/sys/fs/inotify/max_queued_events` it drops them and reports
/// ``Event/Kind-swift.enum/overflow``.
final class DirectoryWatcher: Sendable {
  /// One change in a watched directory.
  struct Event: Sendable, Hashable, CustomStringConvertible {
    /// What happened.
    enum Kind: Sendable, Hashable {
      /// A file opened for writing was closed (`IN_CLOSE_WRITE`).
      case closeWrite
      /// An entry was renamed into the directory (`IN_MOVED_TO`). The polling fallback reports
      /// every new or changed name this way.
      case movedTo
      /// An entry was created (`IN_CREATE`).
      case created
      /// An entry was deleted (`IN_DELETE`).
      case deleted
      /// An entry was renamed out of the directory (`IN_MOVED_FROM`).
      case movedFrom
      /// An entry's metadata changed (`IN_ATTRIB`); an empty name means the directory itself.
      case attrib
      /// The kernel's event queue overflowed and events were lost (`IN_Q_OVERFLOW`); re-read
      /// everything. `directory` and `name` are empty.
      case overflow
      /// The watched directory itself was deleted, moved or unmounted (`IN_DELETE_SELF`,
      /// `IN_MOVE_SELF`, `IN_IGNORED`). The watcher then watches its nearest existing ancestor
      /// and reports ``directoryBack`` when a directory is at the path again.
      case directoryGone
      /// A directory is at the watched path again after ``directoryGone``, and is watched
      /// again. Entries may have changed while it was gone and before the new watch was in
      /// place: re-read everything in it. `name` is empty.
      case directoryBack
    }

    /// The watched directory, as it was passed to ``DirectoryWatcher/watch(directory:)``.
    var directory: String
    /// The entry's name inside the directory; empty for events about the directory itself.
    var name: String
    /// What happened.
    var kind: Kind

    var description: String { "\(kind) \(directory)/\(name)" }
  }

  /// A handle on one watched directory. Cancel it, or let it go, to stop watching.
  ///
  /// Handles on the same directory share one kernel watch; the watch is removed with the last
  /// handle. A handle keeps its watcher alive. It outlives the directory: when the directory
  /// is deleted and created again, the handle watches the new one.
  final class Watch: Sendable {
    /// The directory, as it was passed to ``DirectoryWatcher/watch(directory:)``.
    let directory: String

    fileprivate let watcher: DirectoryWatcher
    fileprivate let target: WatcherEngine.Target
    private let cancelled = Atomic<Bool>(false)

    fileprivate init(directory: String, watcher: DirectoryWatcher, target: WatcherEngine.Target) {
      self.directory = directory
      self.watcher = watcher
      self.target = target
    }

    /// True when the kernel refused a watch and the directory is checked with `stat` every
    /// ``DirectoryWatcher/fallbackInterval`` instead.
    var isPolling: Bool {
      if case .polled? = watcher.engine.mode(of: target) { return true }
      return false
    }

    /// True while a kernel watch covers the directory itself: every change in it is
    /// reported. False while it is gone (or polled, or cancelled).
    var isWatchedByKernel: Bool {
      if case .kernel? = watcher.engine.mode(of: target) { return true }
      return false
    }

    /// Stops watching through this handle. Removes the kernel watch (`inotify_rm_watch(2)`)
    /// when no other handle shares it. Idempotent.
    ///
    /// Events the watcher thread had already read may still be delivered once.
    func cancel() {
      guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
      watcher.engine.release(target)
    }

    deinit { cancel() }
  }

  /// How often a directory the kernel refused to watch is checked instead.
  let fallbackInterval: Duration

  fileprivate let engine: WatcherEngine
  /// Serialises callers of ``close()`` so that each returns only after the thread has ended.
  private let closing = Mutex<Void>(())

  #if DEBUG
  /// Fault injection for tests: `inotify_add_watch` on a directory listed here fails with the
  /// given errno (for example `ENOSPC`) without calling the kernel.
  static let injectAddWatchFailure = Mutex<[String: CInt]>([:])
  /// For tests: called with the directory right after a new directory's own watch is added,
  /// its guard already in place and its watch not yet resolved (the watcher's lock held).
  static let afterAddingWatchForTesting = Mutex<(@Sendable (String) -> Void)?>(nil)
  #endif

  /// Creates a watcher and its inotify instance. The thread starts with the first watch.
  ///
  /// The corresponding system calls are `inotify_init1(2)` and `eventfd(2)`. If
  /// `inotify_init1` fails, every directory is checked every `fallbackInterval` instead.
  ///
  /// - Parameters:
  ///   - fallbackInterval: How often to check a directory the kernel refused to watch.
  ///   - handler: Called on the watcher thread with the events of one read, in order. Never
  ///     called after ``close()`` returns.
  init(
    fallbackInterval: Duration = .milliseconds(250),
    handler: @escaping @Sendable ([Event]) -> Void
  ) {
    self.fallbackInterval = fallbackInterval
    engine = WatcherEngine(fallbackInterval: fallbackInterval, initFailure: nil, handler: handler)
  }

  #if DEBUG
  /// Fault injection for tests: a watcher whose `inotify_init1` failed with `errno` (for
  /// example `EMFILE`), so that every directory is polled.
  init(
    fallbackInterval: Duration = .milliseconds(250), injectingInitFailure errno: CInt,
    handler: @escaping @Sendable ([Event]) -> Void
  ) {
    self.fallbackInterval = fallbackInterval
    engine = WatcherEngine(fallbackInterval: fallbackInterval, initFailure: errno, handler: handler)
  }
  #endif

  deinit { close() }

  /// Starts watching a directory for changes to its entries.
  ///
  /// Watching a directory that is already watched returns another handle on the same kernel
  /// watch (also while that directory is gone and awaited). When the kernel is out of watches (`ENOSPC`) or inotify is unavailable, the
  /// directory is checked every ``fallbackInterval`` instead (``Watch/isPolling``).
  ///
  /// The corresponding system call is `inotify_add_watch(2)`.
  ///
  /// - Parameters:
  ///   - directory: The directory's path. Events name it exactly as given.
  ///   - awaitingIfMissing: When the directory does not exist, wait for it as for one that
  ///     went (its nearest existing ancestor is watched) and report
  ///     ``Event/Kind-swift.enum/directoryBack`` once it is there and watched, rather than throw.
  /// - Returns: A handle; cancel it or let it go to stop watching.
  /// - Throws: ``AppGroupsError/Code/io`` when the directory does not exist (unless
  ///   `awaitingIfMissing`) or is not a directory, when the watcher thread cannot start, or
  ///   when the watcher is closed.
  func watch(directory: String, awaitingIfMissing: Bool = false) throws(AppGroupsError) -> Watch {
    let target = try engine.add(directory, awaitingIfMissing: awaitingIfMissing)
    return Watch(directory: directory, watcher: self, target: target)
  }

  /// Stops the watcher thread, waits for it to end and closes the descriptors. Idempotent.
  ///
  /// After `close()` returns, the handler is not called again; handles become inert. Called
  /// from inside the handler, it returns at once and the thread ends when the handler returns.
  /// Do not call it while holding anything the handler waits for.
  func close() {
    if engine.isWatcherThread {
      engine.close()
      return
    }
    closing.withLock { _ in engine.close() }
  }

  /// Whether the caller runs on this watcher's thread (inside the handler).
  var isCurrentThread: Bool { engine.isWatcherThread }

  /// Calls `handler` on the watcher thread after `signal` arrives (once for several that
  /// arrive together), instead of the signal's action; starts the thread if needed. The
  /// handler is installed before this returns: no signal sent after it is lost. Like the
  /// event handler, `handler` must not block.
  ///
  /// - Returns: `false` when the thread cannot run (the watcher is closed, or `pthread_create`
  ///   or `sigaction` failed); nothing was changed then.
  func hear(_ signal: CInt, _ handler: @escaping @Sendable () -> Void) -> Bool {
    engine.hear(signal, handler)
  }

  /// Calls the handler with `events` on the watcher thread, as if one read had returned
  /// them, then ends `endingPasses` of the ``Passes`` the caller began (a handling it left
  /// under way until the thread has done this one). The thread is woken for it.
  ///
  /// - Returns: `false`, having changed nothing, when the thread does not run (not started,
  ///   or the watcher is closed).
  func redeliver(_ events: [Event], endingPasses: Int) -> Bool {
    engine.redeliver(events, endingPasses: endingPasses)
  }

  /// Has the thread make ready now what its first events would otherwise pay for when they
  /// arrive: its buffer, and with it the thread's memory arena (an `mmap`, two `munmap`s and an
  /// `mprotect`, then the arena's first pages), and the signal it hears unblocked. For a
  /// process that is about to wait for changes (its first observer was added): the first
  /// change it hears is then not the slowest. Wakes the thread once; nothing when it has run
  /// already or does not run.
  func prepareThread() { engine.prepareThread() }

  /// The inotify descriptor, or `nil` when `inotify_init1` failed or the watcher is closed.
  /// For tests and diagnostics (`/proc/self/fdinfo/<fd>` lists the kernel watches).
  var inotifyDescriptor: CInt? { engine.isClosed ? nil : engine.inotifyFD }
}

// MARK: - Engine

/// The state and the thread behind a ``DirectoryWatcher``. The thread retains the engine, not
/// the watcher, so that letting the watcher go closes it.
///
/// Each watched path is a ``Directory`` in one of three modes: watched by the kernel, waiting
/// (gone: a kernel watch on its nearest existing ancestor tells when the next level of its
/// path appears), or polled. Kernel watches are shared: one descriptor per inode, which may
/// carry the watched directories that are that inode and the gone ones that wait on it.
final class WatcherEngine: Sendable {
  /// What a ``DirectoryWatcher/Watch`` handle holds a reference on.
  struct Target: Sendable {
    let directory: String
    let id: UInt64
  }

  /// A file's identity and content stamp, compared by the polling fallback.
  struct Stamp: Equatable {
    var inode: UInt64
    var size: Int64
    var seconds: Int
    var nanoseconds: Int
  }

  /// One watched path.
  struct Directory {
    enum Mode {
      /// A kernel watch on the directory itself, and one on its parent (none for the root).
      case kernel(wd: CInt, guardWD: CInt?)
      /// The directory is gone; `wd` watches `ancestor`, its nearest existing ancestor, and
      /// `guardWD` that ancestor's parent.
      case waiting(wd: CInt, ancestor: String, guardWD: CInt?)
      /// The kernel refused: checked with `stat` every ``WatcherEngine/fallbackInterval``.
      case polled(stamps: [String: Stamp], gone: Bool)
      /// Gone, and nothing on its way up could be watched (the kernel refused); it is looked
      /// for again after an overflow or by the next ``DirectoryWatcher/watch(directory:)``.
      case lost
    }

    let id: UInt64
    var references: Int
    var mode: Mode

    var isPolled: Bool {
      if case .polled = mode { return true }
      return false
    }
  }

  /// One kernel watch descriptor.
  struct KernelWatch {
    /// Watched directories that are this inode.
    var owners = PathSet()
    /// Gone directories waiting for the next level of their path to appear in this one.
    var waiters = PathSet()
    /// Directories (watched or waiting) whose watched level is a child of this one.
    var guarded = PathSet()

    var isUnused: Bool { owners.isEmpty && waiters.isEmpty && guarded.isEmpty }
  }

  /// The kernel watches by descriptor: a few per process, so a list searched in order (a
  /// `Dictionary` keyed by `CInt` would cost a new process a search of every protocol
  /// conformance it has loaded, to check `CInt`'s `Hashable`, when it opens its first suite).
  /// Of a struct, not of `(wd, watch)` pairs: a tuple type is one more metadata instantiation
  /// at that first open.
  struct KernelWatches {
    /// A class, and never changed once made (a change puts a new one in its place, so that a
    /// copy of the table keeps what it had): an array of references uses the storage type
    /// every such array shares, where an array of structs is one more generic type to
    /// instantiate at that first open.
    private final class Slot {
      let wd: CInt
      let watch: KernelWatch

      init(wd: CInt, watch: KernelWatch) {
        self.wd = wd
        self.watch = watch
      }
    }
    private var entries: [Slot] = []

    subscript(wd: CInt) -> KernelWatch? {
      get { entries.first { $0.wd == wd }?.watch }
      set {
        let index = entries.firstIndex { $0.wd == wd }
        switch (index, newValue) {
        case (let index?, let watch?): entries[index] = Slot(wd: wd, watch: watch)
        case (let index?, nil): entries.remove(at: index)
        case (nil, let watch?): entries.append(Slot(wd: wd, watch: watch))
        case (nil, nil): break
        }
      }
    }

    subscript(wd: CInt, default value: @autoclosure () -> KernelWatch) -> KernelWatch {
      get { self[wd] ?? value() }
      set { self[wd] = newValue }
    }

    mutating func removeValue(forKey wd: CInt) -> KernelWatch? {
      guard let index = entries.firstIndex(where: { $0.wd == wd }) else { return nil }
      return entries.remove(at: index).watch
    }
  }

  struct State {
    var closed = false
    var thread: pthread_t?
    var eventFD: CInt?
    var nextID: UInt64 = 1
    var directories: [String: Directory] = [:]
    var kernel = KernelWatches()
    /// Events handed to the handler again (``DirectoryWatcher/redeliver(_:endingPasses:)``),
    /// and how many ``DirectoryWatcher/Passes`` to end once they were handled.
    var redelivered: [DirectoryWatcher.Event] = []
    var heldPasses = 0
    /// Whether the thread was asked to make ready what its first events need
    /// (``DirectoryWatcher/prepareThread()``).
    var threadPrepared = false
    /// A signal heard on the thread (see ``DirectoryWatcher/hear(_:_:)``), and what to call.
    var signal: (number: CInt, handler: @Sendable () -> Void)?

    var isPolling: Bool { directories.values.contains { $0.isPolled } }
  }

  static let watchMask = UInt32(
    IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB
      | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK)
  /// What a watch held only for a directory below it asks for: entries created, deleted or
  /// moved, and the watched directory's own end. Added with `IN_MASK_ADD`, so that a watch
  /// that is also some directory's own keeps ``watchMask``; never writes or metadata changes,
  /// which a busy ancestor (`/tmp`) is full of.
  static let ancestorMask = UInt32(
    IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
      | IN_ONLYDIR | IN_MASK_ADD)
  static let bufferSize = 64 * 1024
  /// How many times one re-arming climbs and descends before it waits for the next event
  /// (a path created and deleted over and over must not keep the thread busy).
  static let armingSteps = 64

  let fallbackInterval: Duration
  let handler: @Sendable ([DirectoryWatcher.Event]) -> Void
  let inotifyFD: CInt?
  /// Why `inotify_init1` failed, when it did.
  let inotifyError: SystemCallError?
  let state = Mutex(State())

  init(
    fallbackInterval: Duration, initFailure: CInt?,
    handler: @escaping @Sendable ([DirectoryWatcher.Event]) -> Void
  ) {
    self.fallbackInterval = fallbackInterval
    self.handler = handler
    if let initFailure {
      inotifyFD = nil
      inotifyError = SystemCallError(call: "inotify_init1", path: nil, errno: initFailure)
      return
    }
    do {
      // See: man 2 inotify_init1 (EMFILE: the per-user limit on instances is reached).
      inotifyFD = try valueOrErrno("inotify_init1") {
        inotify_init1(CInt(IN_NONBLOCK) | CInt(IN_CLOEXEC))
      }
      inotifyError = nil
    } catch {
      inotifyFD = nil
      inotifyError = error
    }
  }

  var isClosed: Bool { state.withLock { $0.closed } }

  var isWatcherThread: Bool {
    let thread = state.withLock { $0.thread }
    guard let thread else { return false }
    return pthread_equal(thread, pthread_self()) != 0
  }

  func mode(of target: Target) -> Directory.Mode? {
    state.withLock { state in
      guard let directory = state.directories[target.directory], directory.id == target.id else {
        return nil
      }
      return directory.mode
    }
  }

  // MARK: Adding and releasing watches

  func add(_ directory: String, awaitingIfMissing: Bool = false) throws(AppGroupsError) -> Target {
    enum Outcome: Sendable {
      case watching(Target)
      case fallback(SystemCallError)
    }
    let outcome = try state.withLock { state throws(AppGroupsError) -> Outcome in
      try checkOpen(state, directory)
      if var existing = state.directories[directory] {
        existing.references += 1
        state.directories[directory] = existing
        // A directory that could not be watched again after it was removed: try now. Its
        // return is not reported: a caller reads a directory after it starts watching it.
        if case .lost = existing.mode { _ = resolve(directory, &state) }
        return .watching(Target(directory: directory, id: existing.id))
      }
      guard let inotifyFD else {
        let reason = SystemCallError(call: "inotify_init1", path: nil, errno: EMFILE)
        return .fallback(inotifyError ?? reason)
      }
      try startThreadIfNeeded(&state, directory)
      // Its guard first, the watch on its parent (see `resolve`): from then on a removal or a
      // replacement of the directory is reported, so its own watch, put in place next, needs
      // no second look to know it is on the directory the path names. (Not there, or not to be
      // watched: `resolve` climbs as it would.)
      let guardWD = Self.parent(of: directory).flatMap {
        try? addKernelWatch(inotifyFD, $0, mask: Self.ancestorMask)
      }
      let wd: CInt
      do throws(SystemCallError) {
        wd = try addKernelWatch(inotifyFD, directory)
      } catch {
        if let guardWD, state.kernel[guardWD]?.isUnused ?? true {
          // Nothing else watches the parent: its watch goes with the directory's.
          state.kernel[guardWD] = nil
          _ = try? valueOrErrno("inotify_rm_watch") { inotify_rm_watch(inotifyFD, guardWD) }
        }
        // See: man 2 inotify_add_watch (ENOSPC: the per-user limit on watches is reached).
        if error.errno == ENOSPC { return .fallback(error) }
        guard awaitingIfMissing, error.errno == ENOENT else {
          throw AppGroupsError(io: error, "watching \(directory)")
        }
        // Waited for as a directory that went: `resolve` watches its nearest existing
        // ancestor (or the directory, made meanwhile; a caller reads it after it starts
        // watching it, so that return is not reported).
        let id = state.nextID
        state.nextID += 1
        state.directories[directory] = Directory(id: id, references: 1, mode: .lost)
        _ = resolve(directory, &state)
        return .watching(Target(directory: directory, id: id))
      }
      #if DEBUG
      if let hook = DirectoryWatcher.afterAddingWatchForTesting.withLock({ $0 }) { hook(directory) }
      #endif
      let id = state.nextID
      state.nextID += 1
      state.kernel[wd, default: KernelWatch()].owners.insert(directory)
      state.directories[directory] = Directory(
        id: id, references: 1, mode: .kernel(wd: wd, guardWD: nil))
      _ = resolve(directory, &state, justAdded: wd, guardedBy: guardWD)
      return .watching(Target(directory: directory, id: id))
    }
    switch outcome {
    case .watching(let target):
      return target
    case .fallback(let reason):
      return try addPolled(directory, reason: reason)
    }
  }

  func addKernelWatch(
    _ fd: CInt, _ directory: String, mask: UInt32 = watchMask
  ) throws(SystemCallError) -> CInt {
    #if DEBUG
    if let code = DirectoryWatcher.injectAddWatchFailure.withLock({ $0[directory] }) {
      throw SystemCallError(call: "inotify_add_watch", path: directory, errno: code)
    }
    #endif
    return try valueOrErrno("inotify_add_watch", path: directory) {
      inotify_add_watch(fd, directory, mask)
    }
  }

  private func addPolled(
    _ directory: String, reason: SystemCallError
  ) throws(AppGroupsError) -> Target {
    // Take the first snapshot before returning, so that a change made right after `watch`
    // returns is seen. Outside the lock: a directory may be large.
    let stamps: [String: Stamp]
    do {
      stamps = try Self.scan(directory)
    } catch {
      throw AppGroupsError(io: error, "watching \(directory)")
    }
    let (target, created) = try state.withLock {
      state throws(AppGroupsError) -> (Target, Bool) in
      try checkOpen(state, directory)
      if var existing = state.directories[directory] {
        existing.references += 1
        state.directories[directory] = existing
        return (Target(directory: directory, id: existing.id), false)
      }
      try startThreadIfNeeded(&state, directory)
      let id = state.nextID
      state.nextID += 1
      state.directories[directory] = Directory(
        id: id, references: 1, mode: .polled(stamps: stamps, gone: false))
      // Wake the thread so that it starts polling with a timeout.
      if let eventFD = state.eventFD { Self.signal(eventFD) }
      return (Target(directory: directory, id: id), true)
    }
    if created { reportFallback(directory, reason: reason) }
    return target
  }

  private func reportFallback(_ directory: String, reason: SystemCallError) {
    Diagnostics.report(
      "inotify watch on \(directory) failed (\(reason.code)); "
        + "checking every \(Self.milliseconds(fallbackInterval)) ms instead")
  }

  private func checkOpen(_ state: borrowing State, _ directory: String) throws(AppGroupsError) {
    guard state.closed else { return }
    throw AppGroupsError(.io, "watching \(directory): the directory watcher is closed")
  }

  func release(_ target: Target) {
    state.withLock { state in
      guard !state.closed else { return }
      guard var directory = state.directories[target.directory], directory.id == target.id
      else { return }
      directory.references -= 1
      if directory.references > 0 {
        state.directories[target.directory] = directory
        return
      }
      state.directories[target.directory] = nil
      detach(target.directory, from: directory.mode, &state)
    }
  }

  /// Takes `path` off the kernel watches its mode holds, and removes those that nothing else
  /// uses. Call holding `state`.
  private func detach(_ path: String, from mode: Directory.Mode, _ state: inout State) {
    switch mode {
    case .kernel(let wd, let guardWD), .waiting(let wd, _, let guardWD):
      state.kernel[wd]?.owners.remove(path)
      state.kernel[wd]?.waiters.remove(path)
      removeIfUnused(wd, &state)
      if let guardWD {
        state.kernel[guardWD]?.guarded.remove(path)
        removeIfUnused(guardWD, &state)
      }
    case .polled, .lost:
      break
    }
  }

  private func removeIfUnused(_ wd: CInt, _ state: inout State) {
    guard let watch = state.kernel[wd], watch.isUnused else { return }
    state.kernel[wd] = nil
    guard let inotifyFD else { return }
    // EINVAL: the kernel already dropped the watch (its IN_IGNORED is still queued).
    // See: man 2 inotify_rm_watch
    _ = try? valueOrErrno("inotify_rm_watch") { inotify_rm_watch(inotifyFD, wd) }
  }
}

extension DirectoryWatcher {
  /// The passes of every watcher thread of the process, each from its first read of the
  /// kernel's events to its handler's return: for a reader that answers from what the handler
  /// has handled, without a system call, only while no event it read is still unhandled
  /// (``SuiteFile/hasChanged(since:)``).
  ///
  /// ```swift
  /// if let pass = DirectoryWatcher.Passes.idle() {
  ///   // … read what the handler keeps …
  ///   if DirectoryWatcher.Passes.stillIdle(since: pass) { /* no pass ran meanwhile */ }
  /// }
  /// ```
  enum Passes {
    private static let started = Atomic<UInt64>(0)
    private static let finished = Atomic<UInt64>(0)

    static func begin() { started.wrappingAdd(1, ordering: .sequentiallyConsistent) }
    static func end() { finished.wrappingAdd(1, ordering: .sequentiallyConsistent) }

    /// A mark for ``stillIdle(since:)``; `nil` while a pass is under way. When the two
    /// counters agree at the second load, no pass was under way at that instant, and none
    /// starts before ``stillIdle(since:)`` finds `started` unchanged.
    static func idle() -> UInt64? {
      let mark = started.load(ordering: .sequentiallyConsistent)
      return finished.load(ordering: .sequentiallyConsistent) == mark ? mark : nil
    }

    /// Whether no pass started since ``idle()`` gave `mark`.
    static func stillIdle(since mark: UInt64) -> Bool {
      started.load(ordering: .sequentiallyConsistent) == mark
    }
  }
}

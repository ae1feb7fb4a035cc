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
  /// - Parameter directory: The directory's path. Events name it exactly as given.
  /// - Returns: A handle; cancel it or let it go to stop watching.
  /// - Throws: ``AppGroupsError/Code/io`` when the directory does not exist or is not a
  ///   directory, when the watcher thread cannot start, or when the watcher is closed.
  func watch(directory: String) throws(AppGroupsError) -> Watch {
    let target = try engine.add(directory)
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
private final class WatcherEngine: Sendable {
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
    var owners: Set<String> = []
    /// Gone directories waiting for the next level of their path to appear in this one.
    var waiters: Set<String> = []
    /// Directories (watched or waiting) whose watched level is a child of this one.
    var guarded: Set<String> = []

    var isUnused: Bool { owners.isEmpty && waiters.isEmpty && guarded.isEmpty }
  }

  /// The kernel watches by descriptor: a few per process, so a list searched in order (a
  /// `Dictionary` keyed by `CInt` would cost a new process a search of every protocol
  /// conformance it has loaded, to check `CInt`'s `Hashable`, when it opens its first suite).
  struct KernelWatches {
    private var entries: [(wd: CInt, watch: KernelWatch)] = []

    subscript(wd: CInt) -> KernelWatch? {
      get { entries.first { $0.wd == wd }?.watch }
      set {
        let index = entries.firstIndex { $0.wd == wd }
        switch (index, newValue) {
        case (let index?, let watch?): entries[index].watch = watch
        case (let index?, nil): entries.remove(at: index)
        case (nil, let watch?): entries.append((wd, watch))
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

  func add(_ directory: String) throws(AppGroupsError) -> Target {
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
      let wd: CInt
      do throws(SystemCallError) {
        wd = try addKernelWatch(inotifyFD, directory)
      } catch {
        // See: man 2 inotify_add_watch (ENOSPC: the per-user limit on watches is reached).
        if error.errno == ENOSPC { return .fallback(error) }
        throw AppGroupsError(io: error, "watching \(directory)")
      }
      let id = state.nextID
      state.nextID += 1
      state.kernel[wd, default: KernelWatch()].owners.insert(directory)
      state.directories[directory] = Directory(
        id: id, references: 1, mode: .kernel(wd: wd, guardWD: nil))
      // Guard it with a watch on its parent (see `resolve`).
      _ = resolve(directory, &state, justAdded: wd)
      return .watching(Target(directory: directory, id: id))
    }
    switch outcome {
    case .watching(let target):
      return target
    case .fallback(let reason):
      return try addPolled(directory, reason: reason)
    }
  }

  private func addKernelWatch(
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

  // MARK: Directories that come back

  /// Finds what to watch for `path` and watches it: the directory itself when it exists,
  /// else its nearest existing ancestor (up to the root), whose events say when the next level
  /// of the path appears. Either way, the level held is guarded by a watch on its parent, whose
  /// events say when the level is removed or replaced: a removed directory whose inode stays
  /// alive (an open file in it pins it) never gets `IN_DELETE_SELF`. Call holding `state`.
  ///
  /// Climbs from the directory toward the root until a level exists, then descends: each
  /// level is watched (and guarded) before the next one down is tried, so that a level created
  /// meanwhile is reported by the watch above it.
  ///
  /// - Returns: ``DirectoryWatcher/Event/Kind-swift.enum/directoryGone`` when the directory
  ///   was watched and is not (or is another directory now), then
  ///   ``DirectoryWatcher/Event/Kind-swift.enum/directoryBack`` when a directory at the path
  ///   is newly watched.
  private func resolve(
    _ path: String, _ state: inout State, justAdded: CInt? = nil
  ) -> [DirectoryWatcher.Event] {
    guard let inotifyFD, var directory = state.directories[path], !directory.isPolled else {
      return []
    }
    var chain = [path]
    while let last = chain.last, let parent = Self.parent(of: last) { chain.append(parent) }

    var touched: [CInt] = []
    var refusal: SystemCallError?
    /// Adds (or finds) the kernel watch on `chain[level]`; `nil` when the level is not there.
    func add(_ level: Int) -> CInt? {
      do throws(SystemCallError) {
        let mask = level == 0 ? Self.watchMask : Self.ancestorMask
        let wd = try addKernelWatch(inotifyFD, chain[level], mask: mask)
        touched.append(wd)
        return wd
      } catch {
        switch error.errno {
        case ENOENT, ENOTDIR, EACCES: break  // not there, not a directory, or not ours to watch
        default: refusal = error
        }
        return nil
      }
    }

    var found: (level: Int, wd: CInt, guardWD: CInt?)?
    var level = 0
    var steps = 0
    while steps < Self.armingSteps, level < chain.count, refusal == nil {
      steps += 1
      // The watch `add` has just put on the path itself is not asked for a second time.
      guard let wd = steps == 1 && level == 0 && justAdded != nil ? justAdded : add(level) else {
        level += 1
        continue
      }
      var guardWD: CInt?
      if level + 1 < chain.count {
        guard let parentWD = add(level + 1) else {
          level += 1
          continue
        }
        guardWD = parentWD
        // The level may have been removed or replaced before its guard was in place.
        guard add(level) == wd else { continue }
      }
      found = (level, wd, guardWD)
      // A lower level may have appeared before this level's watch was in place.
      guard level > 0, add(level - 1) != nil else { break }
      level -= 1
    }

    let oldMode = directory.mode
    switch oldMode {
    case .kernel(let wd, let guardWD), .waiting(let wd, _, let guardWD):
      state.kernel[wd]?.owners.remove(path)
      state.kernel[wd]?.waiters.remove(path)
      if let guardWD { state.kernel[guardWD]?.guarded.remove(path) }
      touched += [wd] + (guardWD.map { [$0] } ?? [])
    case .polled, .lost:
      break
    }
    if let found {
      if found.level == 0 {
        state.kernel[found.wd, default: KernelWatch()].owners.insert(path)
        directory.mode = .kernel(wd: found.wd, guardWD: found.guardWD)
      } else {
        state.kernel[found.wd, default: KernelWatch()].waiters.insert(path)
        directory.mode = .waiting(wd: found.wd, ancestor: chain[found.level], guardWD: found.guardWD)
      }
      if let guardWD = found.guardWD {
        state.kernel[guardWD, default: KernelWatch()].guarded.insert(path)
      }
    } else {
      directory.mode = .lost
      if let refusal {
        Diagnostics.report(
          "\(path) cannot be watched again after it was removed "
            + "(\(refusal)); changes in it are seen only when it is read")
      }
    }
    state.directories[path] = directory
    // Remove the watches nothing uses any more: the old ones and the temporary ones.
    for wd in Set(touched) {
      if let watch = state.kernel[wd], !watch.isUnused { continue }
      state.kernel[wd] = nil
      // EINVAL: the kernel already dropped the watch (its IN_IGNORED is still queued).
      // See: man 2 inotify_rm_watch
      _ = try? valueOrErrno("inotify_rm_watch") { inotify_rm_watch(inotifyFD, wd) }
    }

    var events: [DirectoryWatcher.Event] = []
    let oldWD: CInt? = if case .kernel(let wd, _) = oldMode { wd } else { nil }
    let newWD: CInt? = if case .kernel(let wd, _) = directory.mode { wd } else { nil }
    if oldWD != nil, oldWD != newWD {
      events.append(.init(directory: path, name: "", kind: .directoryGone))
    }
    if newWD != nil, newWD != oldWD {
      events.append(.init(directory: path, name: "", kind: .directoryBack))
    }
    return events
  }

  /// A kernel watch ended (its directory was deleted, moved or unmounted): what it carried
  /// is looked for again. Call holding `state`.
  private func retire(_ wd: CInt, _ state: inout State) -> [DirectoryWatcher.Event] {
    guard let watch = state.kernel.removeValue(forKey: wd) else { return [] }
    var events: [DirectoryWatcher.Event] = []
    for path in watch.owners.union(watch.waiters).union(watch.guarded).sorted() {
      events += resolve(path, &state)
    }
    return events
  }

  // MARK: The thread

  private func startThreadIfNeeded(
    _ state: inout State, _ directory: String
  ) throws(AppGroupsError) {
    guard state.thread == nil else { return }
    let eventFD: CInt
    do {
      // See: man 2 eventfd
      eventFD = try valueOrErrno("eventfd") { eventfd(0, CInt(EFD_CLOEXEC) | CInt(EFD_NONBLOCK)) }
    } catch {
      throw AppGroupsError(io: error, "watching \(directory)")
    }
    let retained = Unmanaged.passRetained(self).toOpaque()
    var thread = pthread_t()
    // pthread_create returns the error number instead of setting errno.
    // See: man 3 pthread_create
    let code = pthread_create(&thread, nil, { argument in
      guard let argument else { return nil }
      let engine = Unmanaged<WatcherEngine>.fromOpaque(argument).takeRetainedValue()
      engine.run()
      return nil
    }, retained)
    guard code == 0 else {
      Unmanaged<WatcherEngine>.fromOpaque(retained).release()
      _ = try? valueOrErrno("close", retryOnInterrupt: false) { Glibc.close(eventFD) }
      let error = SystemCallError(call: "pthread_create", path: nil, errno: code)
      throw AppGroupsError(io: error, "watching \(directory)")
    }
    state.thread = thread
    state.eventFD = eventFD
  }

  /// Marks the engine closed, wakes the thread, and waits for it unless called on it.
  func close() {
    enum Next { case nothing, join(pthread_t), closeDescriptor }
    let next = state.withLock { state -> Next in
      guard !state.closed else { return .nothing }
      state.closed = true
      guard let thread = state.thread, let eventFD = state.eventFD else { return .closeDescriptor }
      // Under the lock: the thread closes the eventfd only after it has seen `closed`.
      Self.signal(eventFD)
      if pthread_equal(thread, pthread_self()) != 0 {
        // Called from the handler: the thread ends when the handler returns.
        pthread_detach(thread)
        return .nothing
      }
      return .join(thread)
    }
    switch next {
    case .nothing:
      break
    case .join(let thread):
      pthread_join(thread, nil)
    case .closeDescriptor:
      if let inotifyFD {
        _ = try? valueOrErrno("close", retryOnInterrupt: false) { Glibc.close(inotifyFD) }
      }
    }
  }

  private static func signal(_ eventFD: CInt) {
    var one: UInt64 = 1
    _ = try? valueOrErrno("write", path: "eventfd") {
      write(eventFD, &one, MemoryLayout<UInt64>.size)
    }
  }

  /// The watcher thread: poll, read, deliver, until closed. Owns both descriptors at the end.
  private func run() {
    let buffer = UnsafeMutableRawPointer.allocate(
      byteCount: Self.bufferSize, alignment: MemoryLayout<inotify_event>.alignment)
    buffer.bindMemory(
      to: inotify_event.self, capacity: Self.bufferSize / MemoryLayout<inotify_event>.stride)
    defer { buffer.deallocate() }

    let clock = ContinuousClock()
    var nextScan: ContinuousClock.Instant?
    var eventFD: CInt = -1

    while true {
      let (closed, currentEventFD, polling) = state.withLock { state in
        (state.closed, state.eventFD ?? -1, state.isPolling)
      }
      eventFD = currentEventFD
      if closed { break }

      var timeout: CInt = -1
      if polling {
        let now = clock.now
        let due = nextScan ?? now.advanced(by: fallbackInterval)
        nextScan = due
        timeout = due <= now ? 0 : CInt(clamping: Self.milliseconds(now.duration(to: due)))
      } else {
        nextScan = nil
      }

      var descriptors = [pollfd(fd: eventFD, events: Int16(POLLIN), revents: 0)]
      if let inotifyFD {
        descriptors.append(pollfd(fd: inotifyFD, events: Int16(POLLIN), revents: 0))
      }
      let count = nfds_t(descriptors.count)
      // See: man 2 poll
      // EINTR is retried; ENOMEM is transient. Either way, only close() may end the thread:
      // other threads use the descriptors until they see `closed`.
      guard (try? valueOrErrno("poll") { poll(&descriptors, count, timeout) }) != nil else {
        continue
      }

      if descriptors[0].revents != 0 {
        var value: UInt64 = 0
        _ = try? valueOrErrno("read", path: "eventfd") {
          read(eventFD, &value, MemoryLayout<UInt64>.size)
        }
        continue  // Re-read the state: closed, or a polled directory was added.
      }

      var batch: [DirectoryWatcher.Event] = []
      if descriptors.count > 1, descriptors[1].revents != 0, let inotifyFD {
        batch = readEvents(inotifyFD, buffer)
      }
      if let due = nextScan, clock.now >= due {
        batch += scanPolled()
        nextScan = clock.now.advanced(by: fallbackInterval)
      }
      if !batch.isEmpty {
        guard !state.withLock({ $0.closed }) else { break }
        handler(batch)
      }
    }

    // `closed` is set, and close() signalled the eventfd under the same lock: nobody uses the
    // descriptors any more.
    if eventFD >= 0 {
      _ = try? valueOrErrno("close", retryOnInterrupt: false) { Glibc.close(eventFD) }
    }
    if let inotifyFD {
      _ = try? valueOrErrno("close", retryOnInterrupt: false) { Glibc.close(inotifyFD) }
    }
  }

  /// Reads once from the inotify descriptor and turns the records into events, in order.
  private func readEvents(
    _ inotifyFD: CInt, _ buffer: UnsafeMutableRawPointer
  ) -> [DirectoryWatcher.Event] {
    let length: Int
    do {
      length = try valueOrErrno("read", path: "inotify") {
        read(inotifyFD, buffer, Self.bufferSize)
      }
    } catch {
      return []  // EAGAIN: another wake-up got there first.
    }

    var records: [(wd: CInt, mask: UInt32, name: String)] = []
    let headerSize = MemoryLayout<inotify_event>.size
    var offset = 0
    while offset + headerSize <= length {
      let record = (buffer + offset).assumingMemoryBound(to: inotify_event.self)
      let header = record.pointee
      let name = header.len > 0 ? String(cString: cappgroups_inotify_event_name(record)) : ""
      records.append((header.wd, header.mask, name))
      offset += headerSize + Int(header.len)
    }

    return state.withLock { state in
      var events: [DirectoryWatcher.Event] = []
      events.reserveCapacity(records.count)
      for record in records {
        let mask = record.mask
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
          events.append(.init(directory: "", name: "", kind: .overflow))
          // A directory's departure or return may be among the lost events: look again.
          for path in state.directories.keys.sorted() { events += resolve(path, &state) }
          continue
        }
        // Unknown descriptors belong to watches that were cancelled or retired; drop their
        // events.
        guard let watch = state.kernel[record.wd] else { continue }
        if mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
          // Deleted, unmounted or moved away: the path no longer names this inode.
          events += retire(record.wd, &state)
          continue
        }
        guard let kind = Self.kind(of: mask) else { continue }
        for path in watch.owners.sorted() {
          events.append(.init(directory: path, name: record.name, kind: kind))
        }
        if kind == .attrib || kind == .closeWrite { continue }
        // A level a gone directory waits for appeared; a watched level was removed or replaced.
        var affected: [String] = []
        for path in watch.waiters {
          guard kind == .created || kind == .movedTo,
            case .waiting(_, let ancestor, _)? = state.directories[path]?.mode,
            Self.nextComponent(of: path, below: ancestor) == record.name
          else { continue }
          affected.append(path)
        }
        for path in watch.guarded {
          let level: String
          switch state.directories[path]?.mode {
          case .kernel?: level = path
          case .waiting(_, let ancestor, _)?: level = ancestor
          default: continue
          }
          if Self.lastComponent(of: level) == record.name { affected.append(path) }
        }
        for path in affected { events += resolve(path, &state) }
      }
      return events
    }
  }

  private static func kind(of mask: UInt32) -> DirectoryWatcher.Event.Kind? {
    let kinds: [(CInt, DirectoryWatcher.Event.Kind)] = [
      (IN_MOVED_TO, .movedTo), (IN_CLOSE_WRITE, .closeWrite), (IN_CREATE, .created),
      (IN_DELETE, .deleted), (IN_MOVED_FROM, .movedFrom), (IN_ATTRIB, .attrib),
    ]
    return kinds.first { mask & UInt32($0.0) != 0 }?.1
  }

  /// The parent of a path: `/a/b` → `/a`, `/a` → `/`, `/` → `nil`.
  static func parent(of path: String) -> String? {
    // By bytes: `/` is one byte in UTF-8 and never part of another character's.
    let slash = UInt8(ascii: "/")
    var trimmed = Substring(path).utf8
    while trimmed.count > 1, trimmed.last == slash { trimmed = trimmed.dropLast() }
    guard !(trimmed.count == 1 && trimmed.first == slash),
      let index = trimmed.lastIndex(of: slash)
    else { return nil }
    if index == trimmed.startIndex { return "/" }
    return String(Substring(trimmed[..<index]))
  }

  /// The last component of a path: `/a/b/` → `b`.
  static func lastComponent(of path: String) -> String? {
    path.split(separator: "/").last.map(String.init)
  }

  /// The first component of `path` below its ancestor `ancestor`: (`/a/b/c`, `/a`) → `b`.
  static func nextComponent(of path: String, below ancestor: String) -> String? {
    let prefix = ancestor.hasSuffix("/") ? ancestor : ancestor + "/"
    guard path.hasPrefix(prefix) else { return nil }
    return path.dropFirst(prefix.count).split(separator: "/").first.map(String.init)
  }

  // MARK: Polling fallback

  /// Checks every polled directory once and reports what changed since the last check.
  private func scanPolled() -> [DirectoryWatcher.Event] {
    let snapshot = state.withLock { state in
      state.directories.filter(\.value.isPolled).map { (directory: $0.key, id: $0.value.id) }
    }
    var events: [DirectoryWatcher.Event] = []
    for (path, id) in snapshot.sorted(by: { $0.directory < $1.directory }) {
      let current = try? Self.scan(path)
      state.withLock { state in
        guard var directory = state.directories[path], directory.id == id,
          case .polled(let stamps, let gone) = directory.mode
        else { return }
        guard let current else {
          if !gone {
            directory.mode = .polled(stamps: [:], gone: true)
            state.directories[path] = directory
            events.append(.init(directory: path, name: "", kind: .directoryGone))
          }
          return
        }
        if gone { events.append(.init(directory: path, name: "", kind: .directoryBack)) }
        for name in current.keys.sorted() where stamps[name] != current[name] {
          events.append(.init(directory: path, name: name, kind: .movedTo))
        }
        for name in stamps.keys.sorted() where current[name] == nil {
          events.append(.init(directory: path, name: name, kind: .deleted))
        }
        directory.mode = .polled(stamps: current, gone: false)
        state.directories[path] = directory
      }
    }
    return events
  }

  /// Lists a directory's entries with their inode, size and modification time.
  static func scan(_ directory: String) throws(SystemCallError) -> [String: Stamp] {
    var stream: OpaquePointer?
    // See: man 3 opendir
    _ = try valueOrErrno("opendir", path: directory) { () -> CInt in
      stream = opendir(directory)
      return stream == nil ? -1 : 0
    }
    guard let stream else { return [:] }
    defer { _ = try? valueOrErrno("closedir", retryOnInterrupt: false) { closedir(stream) } }
    let descriptor = dirfd(stream)
    var stamps: [String: Stamp] = [:]
    while let entry = readdir(stream) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name == "." || name == ".." { continue }
      var info = stat()
      // The entry may be gone already; then it is simply not there.
      guard
        (try? valueOrErrno("fstatat", path: name) {
          fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW)
        }) != nil
      else { continue }
      stamps[name] = Stamp(
        inode: UInt64(info.st_ino), size: Int64(info.st_size),
        seconds: Int(info.st_mtim.tv_sec), nanoseconds: Int(info.st_mtim.tv_nsec))
    }
    return stamps
  }

  /// A duration in whole milliseconds, rounded up.
  static func milliseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    let perMillisecond: Int64 = 1_000_000_000_000_000
    let (whole, rest) = attoseconds.quotientAndRemainder(dividingBy: perMillisecond)
    return seconds * 1000 + whole + (rest > 0 ? 1 : 0)
  }
}

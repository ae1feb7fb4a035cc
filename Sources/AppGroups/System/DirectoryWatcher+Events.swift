internal import CAppGroupsLinux
internal import Glibc
internal import Synchronization

// The ``DirectoryWatcher``'s engine at work (see `DirectoryWatcher.swift` for its state and
// its watches): directories that go and come back, the thread that reads inotify, and the
// polling fallback.
extension WatcherEngine {
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
  func resolve(
    _ path: String, _ state: inout State, justAdded: CInt? = nil, guardedBy justGuarded: CInt? = nil
  ) -> [DirectoryWatcher.Event] {
    guard let inotifyFD, var directory = state.directories[path], !directory.isPolled else {
      return []
    }
    // The path and its ancestors, each made when first asked for: a directory that is there
    // needs two levels (itself and its guard), not every one up to the root.
    var chain = [path]
    /// Whether `chain` reaches `level` (the root is the last level).
    func has(_ level: Int) -> Bool {
      while chain.count <= level {
        guard let parent = Self.parent(of: chain[chain.count - 1]) else { return false }
        chain.append(parent)
      }
      return true
    }

    // Of `Int`, not `CInt`: `[Int]`'s storage type comes with the runtime, where `[CInt]`'s is
    // instantiated at a process's first watch.
    var touched: [Int] = []
    if let justGuarded { touched.append(Int(justGuarded)) }
    var refusal: SystemCallError?
    /// Adds (or finds) the kernel watch on `chain[level]`; `nil` when the level is not there.
    func add(_ level: Int) -> CInt? {
      do throws(SystemCallError) {
        let mask = level == 0 ? Self.watchMask : Self.ancestorMask
        let wd = try addKernelWatch(inotifyFD, chain[level], mask: mask)
        touched.append(Int(wd))
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
    while steps < Self.armingSteps, has(level), refusal == nil {
      steps += 1
      // The watch `add` has just put on the path itself is not asked for a second time.
      let first = steps == 1 && level == 0 && justAdded != nil
      guard let wd = first ? justAdded : add(level) else {
        level += 1
        continue
      }
      var guardWD: CInt?
      if first, let justGuarded {
        // `add` put the guard in place before the path's own watch: nothing to look at again.
        guardWD = justGuarded
      } else if has(level + 1) {
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
      touched.append(Int(wd))
      if let guardWD { touched.append(Int(guardWD)) }
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
    // Remove the watches nothing uses any more: the old ones and the temporary ones (each
    // looked at once; a few at most, so no `Set` is built for them).
    for i in touched.indices where !touched[..<i].contains(touched[i]) {
      let wd = CInt(truncatingIfNeeded: touched[i])
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

  /// Starts the thread unless it runs. `directory` names what was being watched in the error,
  /// and is made only then: a signal's number printed at each open as an app (``hear(_:_:)``,
  /// from the lifecycle) touched three pages of the standard library's integer printing
  /// that nothing else at an open needs.
  func startThreadIfNeeded(
    _ state: inout State, _ directory: @autoclosure () -> String
  ) throws(AppGroupsError) {
    guard state.thread == nil else { return }
    let eventFD: CInt
    do {
      // See: man 2 eventfd
      eventFD = try valueOrErrno("eventfd") { eventfd(0, CInt(EFD_CLOEXEC) | CInt(EFD_NONBLOCK)) }
    } catch {
      throw AppGroupsError(io: error, "watching \(directory())")
    }
    let retained = Unmanaged.passRetained(self).toOpaque()
    var thread = pthread_t()
    // The thread waits for its first event in C before it runs any of this (see `run`).
    // Returns the error number, as pthread_create. See: man 3 pthread_create
    let code = cappgroups_thread_start_waiting(&thread, { argument in
      guard let argument else { return nil }
      let engine = Unmanaged<WatcherEngine>.fromOpaque(argument).takeRetainedValue()
      engine.run()
      return nil
    }, retained, eventFD, inotifyFD ?? -1)
    guard code == 0 else {
      Unmanaged<WatcherEngine>.fromOpaque(retained).release()
      _ = try? valueOrErrno("close", retryOnInterrupt: false) { Glibc.close(eventFD) }
      let error = SystemCallError(call: "pthread_create", path: nil, errno: code)
      throw AppGroupsError(io: error, "watching \(directory())")
    }
    state.thread = thread
    state.eventFD = eventFD
  }

  /// See ``DirectoryWatcher/hear(_:_:)``. The signal's handler (C, async-signal-safe) counts
  /// it and writes to the eventfd the thread polls.
  func hear(_ signal: CInt, _ handler: @escaping @Sendable () -> Void) -> Bool {
    state.withLock { state in
      guard !state.closed, state.signal == nil,
        (try? startThreadIfNeeded(&state, "signal \(signal)")) != nil, let eventFD = state.eventFD,
        cappgroups_notice_install(signal, eventFD) == 0
      else { return false }
      state.signal = (signal, handler)
      // The thread unblocks the signal in itself when it next looks at the state: now, when
      // the caller blocks it too (every thread may); else at its next wake-up, while the
      // caller takes it meanwhile (a wake-up now would take the CPU from the caller).
      if cappgroups_signal_blocked(signal) != 0 { Self.signal(eventFD) }
      return true
    }
  }

  /// See ``DirectoryWatcher/redeliver(_:endingPasses:)``.
  func redeliver(_ events: [DirectoryWatcher.Event], endingPasses: Int) -> Bool {
    state.withLock { state in
      guard !state.closed, state.thread != nil, let eventFD = state.eventFD else { return false }
      state.redelivered += events
      state.heldPasses += endingPasses
      Self.signal(eventFD)
      return true
    }
  }

  /// See ``DirectoryWatcher/prepareThread()``.
  func prepareThread() {
    state.withLock { state in
      guard !state.closed, !state.threadPrepared, state.thread != nil, let eventFD = state.eventFD else { return }
      state.threadPrepared = true
      Self.signal(eventFD)
    }
  }

  /// Hands the handler what was redelivered, if anything, then ends the passes it held.
  private func deliverAgain() {
    let (events, passes) = state.withLock { state in
      defer { (state.redelivered, state.heldPasses) = ([], 0) }
      return (state.redelivered, state.heldPasses)
    }
    guard !events.isEmpty || passes > 0 else { return }
    DirectoryWatcher.Passes.begin()
    if !events.isEmpty, !state.withLock({ $0.closed }) { handler(events) }
    DirectoryWatcher.Passes.end()
    for _ in 0..<passes { DirectoryWatcher.Passes.end() }
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

  static func signal(_ eventFD: CInt) {
    var one: UInt64 = 1
    _ = try? valueOrErrno("write", path: "eventfd") {
      write(eventFD, &one, MemoryLayout<UInt64>.size)
    }
  }

  /// The watcher thread: poll, read, deliver, until closed. Owns both descriptors at the end.
  private func run() {
    // Runs once the eventfd or inotify is first readable (`cappgroups_thread_start_waiting`):
    // the thread's first allocation (its malloc arena: an mmap, two munmaps, an mprotect) and
    // the types its first steps instantiate come after the open that started it. Everything
    // that changes the state for the thread before then writes to the eventfd (a polled
    // directory, a signal to unblock, `close`); a kernel watch's events wake it themselves.
    // The buffer comes with the first events.
    var buffer: UnsafeMutableRawPointer?
    defer { buffer?.deallocate() }

    // The next scan of polled directories, in nanoseconds of the monotonic clock: plain
    // integers, where an optional `ContinuousClock.Instant` (a type of another module, opaque
    // here) went through the runtime's value witnesses on every wake-up.
    let interval = Self.nanoseconds(fallbackInterval)
    var nextScan: Int64?
    var eventFD: CInt = -1
    var unblocked: CInt?
    // A wake-up's events, in an array kept from one to the next (emptied, with its room), and
    // the name of the last record read (see ``eventName(_:length:last:)``).
    var batch: [DirectoryWatcher.Event] = []
    var lastName = ""

    while true {
      // The signal's number, not its handler: a copy of the handler out of the state
      // allocated its closure's context anew (twice) on every pass.
      let (closed, currentEventFD, polling, signal) = state.withLock { state in
        (state.closed, state.eventFD ?? -1, state.isPolling, state.signal?.number)
      }
      eventFD = currentEventFD
      if closed { break }
      // A signal heard here is taken by this thread even when every other one blocks it.
      if let signal, unblocked != signal {
        _ = cappgroups_unblock_signal(signal)
        unblocked = signal
      }

      var timeout: CInt = -1
      if polling {
        let now = Self.now()
        let due = nextScan ?? Self.adding(interval, to: now)
        nextScan = due
        timeout = due <= now ? 0 : CInt(clamping: Self.milliseconds(nanoseconds: due &- now))
      } else {
        nextScan = nil
      }

      // Two on the stack, not an array (see above).
      var descriptors = (
        pollfd(fd: eventFD, events: Int16(POLLIN), revents: 0),
        pollfd(fd: inotifyFD ?? -1, events: Int16(POLLIN), revents: 0)
      )
      let count = nfds_t(inotifyFD == nil ? 1 : 2)
      // See: man 2 poll
      // EINTR is retried; ENOMEM is transient. Either way, only close() may end the thread:
      // other threads use the descriptors until they see `closed`.
      let polled = withUnsafeMutableBytes(of: &descriptors) { bytes in
        (try? valueOrErrno("poll") {
          poll(bytes.baseAddress!.assumingMemoryBound(to: pollfd.self), count, timeout)
        }) != nil
      }
      guard polled else { continue }

      if descriptors.0.revents != 0 {
        var value: UInt64 = 0
        _ = try? valueOrErrno("read", path: "eventfd") {
          read(eventFD, &value, MemoryLayout<UInt64>.size)
        }
        if signal != nil, cappgroups_notice_take() > 0, let handler = state.withLock({ $0.signal?.handler }) {
          handler()
        }
        deliverAgain()
        if buffer == nil, state.withLock({ $0.threadPrepared }) { buffer = Self.eventBuffer() }
        continue  // Re-read the state: closed, a polled directory was added, a signal, or events again.
      }

      // From the first read of the kernel's events to the handler's return (see
      // ``DirectoryWatcher/Passes``).
      DirectoryWatcher.Passes.begin()
      defer { DirectoryWatcher.Passes.end() }
      if count > 1, descriptors.1.revents != 0, let inotifyFD {
        let events = buffer ?? Self.eventBuffer()
        buffer = events
        readEvents(inotifyFD, events, into: &batch, lastName: &lastName)
      }
      if let due = nextScan, Self.now() >= due {
        batch += scanPolled()
        nextScan = Self.adding(interval, to: Self.now())
      }
      if !batch.isEmpty {
        guard !state.withLock({ $0.closed }) else { break }
        handler(batch)
        // Emptied one by one, keeping the room (see `ChangeMonitor.handle(_:)`).
        if batch.capacity > 64 { batch = [] } else { while batch.popLast() != nil {} }
      }
    }

    // `closed` is set, and close() signalled the eventfd under the same lock: nobody uses the
    // descriptors any more. Passes held for events not handled again end (see `redeliver`).
    let held = state.withLock { state in
      defer { state.heldPasses = 0 }
      return state.heldPasses
    }
    for _ in 0..<held { DirectoryWatcher.Passes.end() }
    if unblocked != nil { cappgroups_notice_detach() }
    if eventFD >= 0 {
      _ = try? valueOrErrno("close", retryOnInterrupt: false) { Glibc.close(eventFD) }
    }
    if let inotifyFD {
      _ = try? valueOrErrno("close", retryOnInterrupt: false) { Glibc.close(inotifyFD) }
    }
  }

  /// The buffer one read of inotify's events goes to.
  private static func eventBuffer() -> UnsafeMutableRawPointer {
    let buffer = UnsafeMutableRawPointer.allocate(
      byteCount: bufferSize, alignment: MemoryLayout<inotify_event>.alignment)
    buffer.bindMemory(to: inotify_event.self, capacity: bufferSize / MemoryLayout<inotify_event>.stride)
    return buffer
  }

  /// Reads once from the inotify descriptor and turns the records into events, in order,
  /// appended to `events`; `lastName`: the name of the last record read before.
  private func readEvents(
    _ inotifyFD: CInt, _ buffer: UnsafeMutableRawPointer,
    into events: inout [DirectoryWatcher.Event], lastName: inout String
  ) {
    let length: Int
    do {
      length = try valueOrErrno("read", path: "inotify") {
        read(inotifyFD, buffer, Self.bufferSize)
      }
    } catch {
      return  // EAGAIN: another wake-up got there first.
    }

    // The records are read from the buffer in place, under the lock (only this thread reads
    // into the buffer): no array of them to build and free on every wake-up (its element, a
    // tuple with a string, is destroyed through the runtime's generic tuple witness), and no
    // name made for a record that is dropped.
    let headerSize = MemoryLayout<inotify_event>.size
    state.withLock { state in
      // Room for every record with a name of up to 16 bytes, as a suite's files have.
      events.reserveCapacity(events.count &+ length / (headerSize + 16))
      var offset = 0
      while offset + headerSize <= length {
        let record = (buffer + offset).assumingMemoryBound(to: inotify_event.self)
        let header = record.pointee
        offset += headerSize + Int(header.len)
        let mask = header.mask
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
          events.append(.init(directory: "", name: "", kind: .overflow))
          // A directory's departure or return may be among the lost events: look again.
          for path in state.directories.keys.sorted() { events += resolve(path, &state) }
          continue
        }
        // Unknown descriptors belong to watches that were cancelled or retired; drop their
        // events.
        guard let watch = state.kernel[header.wd] else { continue }
        if mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
          // Deleted, unmounted or moved away: the path no longer names this inode.
          events += retire(header.wd, &state)
          continue
        }
        guard let kind = Self.kind(of: mask) else { continue }
        // The name (NUL-terminated, padded) follows the fixed header: a flexible array member,
        // which Swift does not import.
        let name = Self.eventName(UnsafeRawPointer(record) + headerSize, length: Int(header.len), last: &lastName)
        // Mostly one directory is this inode: no sorted copy of one path.
        if watch.owners.count == 1, let path = watch.owners.first {
          events.append(.init(directory: path, name: name, kind: kind))
        } else {
          for path in watch.owners.sorted() {
            events.append(.init(directory: path, name: name, kind: kind))
          }
        }
        if kind == .attrib || kind == .closeWrite { continue }
        // A level a gone directory waits for appeared; a watched level was removed or replaced.
        var affected: [String] = []
        for path in watch.waiters {
          guard kind == .created || kind == .movedTo,
            case .waiting(_, let ancestor, _)? = state.directories[path]?.mode,
            Self.nextComponent(of: path, below: ancestor) == name
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
          if Self.lastComponent(of: level) == name { affected.append(path) }
        }
        for path in affected { events += resolve(path, &state) }
      }
    }
  }

  /// What a record's mask reports, the first that applies in this order (no table: this runs
  /// for every record every watching process reads).
  private static func kind(of mask: UInt32) -> DirectoryWatcher.Event.Kind? {
    func has(_ bit: CInt) -> Bool { mask & UInt32(bit) != 0 }
    if has(IN_MOVED_TO) { return .movedTo }
    if has(IN_CLOSE_WRITE) { return .closeWrite }
    if has(IN_CREATE) { return .created }
    if has(IN_DELETE) { return .deleted }
    if has(IN_MOVED_FROM) { return .movedFrom }
    if has(IN_ATTRIB) { return .attrib }
    return nil
  }

  /// The parent of a path: `/a/b` → `/a`, `/a` → `/`, `/` → `nil`.
  static func parent(of path: String) -> String? {
    // By bytes: `/` is one byte in UTF-8 and never part of another character's. Over the
    // string's own bytes (`withCString` lends a native string's storage): a `Substring`'s
    // UTF-8 view would call five functions of the standard library that nothing else at an
    // open calls, each a lazy binding in a new process, for the three levels a watch climbs.
    let slash = CChar(bitPattern: UInt8(ascii: "/"))
    let count = path.utf8.count
    return path.withCString { bytes -> String? in
      var end = count
      while end > 1, bytes[end - 1] == slash { end -= 1 }
      if end == 1, bytes[0] == slash { return nil }
      var index = end
      while index > 0 {
        index -= 1
        guard bytes[index] == slash else { continue }
        if index == 0 { return "/" }
        return UnsafeRawPointer(bytes).withMemoryRebound(to: UInt8.self, capacity: index) {
          String(decoding: UnsafeBufferPointer(start: $0, count: index), as: UTF8.self)
        }
      }
      return nil
    }
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
}

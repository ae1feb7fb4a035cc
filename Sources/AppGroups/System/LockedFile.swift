import CAppGroupsLinux
import Glibc
internal import Synchronization

/// A lock file shared by processes: its exclusive lock, and optionally the shared page at its
/// start. Every read-modify-write of a locked file in the package goes through one.
///
/// The lock is `flock(2)` on an open file description, so the kernel releases it when its
/// holder exits or is killed. Three things make it the *file's* lock, whatever happens to the
/// file system under it:
///
/// - **It locks the file at the path.** A lock file can be removed (or replaced) under a
///   running process; a process that opens the path afterwards creates a new file, and two
///   processes locking two inodes exclude nobody. So after taking the lock, ``lock(until:)``
///   compares the locked descriptor with the file at the path (device and inode, `fstat(2)`
///   against `lstat(2)`); when they differ it opens the file now at the path (creating it, and
///   its folder when ``Options/makeFolder`` allows), maps its page, and locks that one. A
///   writer checks once more with ``stillLocksPath()`` just before its commit point.
/// - **Waits are woken by the kernel and bounded by progress.** A waiter blocks in `flock(2)`
///   until the holder lets go, and a per-thread timer cuts the wait short at the deadline
///   (`cappgroups_flock_until`): no sleep loop that misses a release. With a mapped page, the
///   holder records its thread there, and a waiter past the deadline waits on, up to a
///   ceiling, while that thread makes progress (runs, waits for the disk, or was put on a CPU
///   at all since the last look, as `/proc/PID/task/TID/schedstat` counts it, not clock ticks
///   of CPU time, which miss a thread woken often for microseconds at a time; or sleeps while
///   another thread of its process runs, as when it waits on a lock of its own): a loaded
///   machine that slows a commit of milliseconds down to seconds costs time, never a failed
///   write. A holder that was stopped (SIGSTOP), or sleeps without once being woken, costs
///   others the bound, never a deadlock.
/// - **A replaced page is noticed.** When a holder finds its file replaced, it marks the old
///   page retired, so that every process still reading the old page (the token) knows to
///   look at the path again (``refreshIfReplaced()``).
///
/// One `LockedFile` per lock file per process: two descriptors of one file in one process
/// exclude each other. Locking and unlocking are serialised by the owner; the page may be
/// read from any thread.
package final class LockedFile: @unchecked Sendable {
  package struct Options: Sendable {
    /// Maps the first page of the file, shared, for ``page``.
    package var mapsPage = false
    /// Creates the lock file's folder again when it is gone (it was removed under a running
    /// process), refusing to follow a symbolic link below this folder. `nil`: a missing
    /// folder is an error.
    package var makeFolder: String? {
      get { makesFolder ? folderRoot : nil }
      set {
        makesFolder = newValue != nil
        folderRoot = newValue ?? ""
      }
    }
    // Stored as a string and a flag, not a `String?`: copying an optional string the
    // compiler outlines instantiates `Optional<String>`'s metadata at a process's first open.
    private var folderRoot = ""
    private var makesFolder = false
    /// Told the address of the page a reader should read (the page of the file held locked,
    /// else of the current file) at open and whenever it changes, under the file's own lock:
    /// for an owner that reads the page's words itself, without asking the file each time.
    var publishesPage: (@Sendable (UnsafeMutablePointer<UInt64>?) -> Void)? = nil

    package init(mapsPage: Bool = false, makeFolder: String? = nil) {
      self.mapsPage = mapsPage
      if let makeFolder {
        folderRoot = makeFolder
        makesFolder = true
      }
    }
  }

  /// One opened version of the lock file: its descriptor, identity and mapped page.
  final class Handle: @unchecked Sendable {
    let descriptor: CInt
    let device: UInt64
    let inode: UInt64
    /// The first page, mapped shared; `nil` when the file is not mapped.
    let page: UnsafeMutablePointer<UInt64>?
    /// Set when the file is replaced: the page then stays mapped until the ``LockedFile``
    /// goes, as a reader may have its address (``Options/publishesPage``).
    fileprivate var keepsPageMapped = false

    fileprivate init(descriptor: CInt, device: UInt64, inode: UInt64, page: UnsafeMutablePointer<UInt64>?) {
      self.descriptor = descriptor
      self.device = device
      self.inode = inode
      self.page = page
    }

    deinit {
      if let page, !keepsPageMapped { munmap(page, LockedFile.pageSize) }
      FileSystem.close(descriptor)
    }

    /// Whether a holder found this file replaced at its path (see ``LockedFile``).
    var isRetired: Bool {
      guard let page else { return false }
      return cappgroups_atomic_load_u64(page + LockedFile.retiredWord) == LockedFile.retiredMark
    }

    fileprivate func retire() {
      guard let page else { return }
      cappgroups_atomic_store_u64(page + LockedFile.retiredWord, LockedFile.retiredMark)
    }
  }

  /// What every lock taken through a `LockedFile` passes first, installed from above:
  /// Lifecycle's suspension barrier, so that no lock is held across a suspension. System
  /// knows nothing of suspensions; it only asks.
  struct Admission: Sendable {
    /// Waits until a lock may be taken; `nil` when it still may not at the deadline
    /// (``FileSystem/monotonicNanoseconds()``), else the passage to leave.
    var enter: @Sendable (_ deadline: UInt64) -> Threads.Identity?
    /// Called once for each passage `enter` returned, once the lock is released (or was not
    /// taken after all).
    var leave: @Sendable (_ passage: Threads.Identity) -> Void
  }

  private static let admission = Mutex<Admission?>(nil)

  /// Installs what every lock taken from now on passes first (the latest installed wins).
  static func install(_ admission: Admission) {
    Self.admission.withLock { $0 = admission }
  }

  /// Why the lock could not be taken.
  package enum Failure: Error {
    /// Another process still held it at the deadline.
    case timedOut
    /// A system call failed (the folder is read-only, the disk is full, …).
    case failed(SystemCallError)
  }

  static let pageSize = 4096
  /// The page's last word: set when a holder found the file replaced at its path.
  static let retiredWord = pageSize / 8 - 1
  static let retiredMark: UInt64 = 0x4445_5249_5445_52  // "RETIRED"

  let path: String
  let options: Options

  private struct State {
    var current: Handle {
      didSet {
        if oldValue !== current, let page = oldValue.page {
          oldValue.keepsPageMapped = true
          retiredPages.append(page)
        }
      }
    }
    /// The handle whose lock this process holds, between ``lock(until:)`` and ``unlock()``.
    var held: Handle?
    /// The admission the held lock passed and its passage, to leave when it is released.
    var admitted: (admission: Admission, passage: Threads.Identity)?
    /// The pages of files replaced at the path, unmapped only when this goes.
    var retiredPages: [UnsafeMutablePointer<UInt64>] = []

    /// The page ``page`` reads, as an address for ``LockedFile/pageAddress``.
    var pageAddress: UInt { UInt(bitPattern: (held ?? current).page) }
  }
  private let state: Mutex<State>
  /// The address of the page ``page`` gives, read without the lock (a waiter looks at the
  /// holder's progress; an owner told by ``Options/publishesPage`` reads the token there on
  /// every call): every page this file ever mapped stays mapped while it lives.
  private let pageAddress: Atomic<UInt>

  /// Opens (creating, mode 0600) the lock file at `path`.
  ///
  /// A symbolic link at `path` is never followed (`ELOOP`): creating or growing a file
  /// through it could touch a file anywhere. Anything but a regular file is refused.
  package init(path: String, options: Options = Options()) throws(SystemCallError) {
    self.path = path
    self.options = options
    let handle = try Self.open(path, options)
    pageAddress = Atomic(UInt(bitPattern: handle.page))
    state = Mutex(State(current: handle))
    options.publishesPage?(handle.page)
  }

  deinit {
    for page in state.withLock({ $0.retiredPages }) { munmap(page, Self.pageSize) }
  }

  /// Changes the state under its lock, then publishes the address of the page ``page`` gives
  /// now, for ``holderProgressed(since:)`` and ``Options/publishesPage``.
  private func update(_ body: (inout State) -> Void) {
    state.withLock { state in
      body(&state)
      let address = state.pageAddress
      if pageAddress.exchange(address, ordering: .acquiringAndReleasing) != address {
        options.publishesPage?(UnsafeMutablePointer(bitPattern: address))
      }
    }
  }

  /// The handle of the file this process reads the page of.
  var current: Handle { state.withLock { $0.current } }

  /// One look at the thread that holds this lock, as its page records it.
  struct HolderLook {
    var holder: UInt64 = 0
    /// How much the thread had run (see `cappgroups_lock_holder_progressed`).
    var ran: UInt64 = 0
    var known: CInt = 0

    /// Whether the thread seen holding the lock belongs to another process and was alive and
    /// not stopped: running or runnable, in a disk wait, or asleep (on a lock of its own
    /// process, say). Such a holder goes on by itself, whatever this process does; one of
    /// this process may be waiting on the very thread that looks.
    var livesElsewhere: Bool {
      guard holder != 0, UInt32(truncatingIfNeeded: holder >> 32) != UInt32(bitPattern: getpid()) else {
        return false
      }
      return known == CInt(UInt8(ascii: "R")) || known == CInt(UInt8(ascii: "S"))
        || known == CInt(UInt8(ascii: "D"))
    }
  }

  /// Whether the thread holding this lock (in any process) made progress since `look` (it
  /// runs, waits for the disk, was put on a CPU at all, sleeps while another thread of its
  /// process runs, or the thread of `look` no longer holds it: the lock changed hands, or is
  /// changing them): what a waiter past its bound waits on for (see ``LockedFile``). `false` when neither look saw a holder, or the file is not mapped. `look`
  /// becomes this look.
  func holderProgressed(since look: inout HolderLook) -> Bool {
    guard let page = UnsafeMutablePointer<UInt64>(bitPattern: pageAddress.load(ordering: .acquiring))
    else { return false }
    return cappgroups_lock_holder_progressed(page, &look.holder, &look.ran, &look.known) != 0
  }

  /// The file this process holds locked, or the current file when it holds none. Read its
  /// page through ``Handle/page`` or ``heldPageWords``.
  var page: Handle { state.withLock { $0.held ?? $0.current } }

  /// The page of the file this process holds locked, or of the current file when it holds
  /// none; `nil` when the file is not mapped.
  var heldPageWords: SharedWords? {
    state.withLock { ($0.held ?? $0.current).page.map(SharedWords.init) }
  }

  // MARK: Locking

  /// Takes the lock, waiting until `deadline` (``FileSystem/monotonicNanoseconds()``) at most,
  /// or on until `ceiling` while the holder makes progress (see ``LockedFile``), and makes
  /// sure it is the lock of the file now at the path.
  ///
  /// The corresponding system calls are `flock(2)`, then `fstat(2)` and `lstat(2)`.
  /// - Throws: ``Failure/timedOut`` when another process still holds it at the deadline;
  ///   ``Failure/failed(_:)`` when the file at the path cannot be opened or locked.
  package func lock(
    until deadline: UInt64, whileHolderProgresses ceiling: UInt64? = nil
  ) throws(Failure) {
    // Never held across a suspension: the admission installed from above (Lifecycle/).
    var admitted: (admission: Admission, passage: Threads.Identity)?
    if let admission = Self.admission.withLock({ $0 }) {
      guard let passage = admission.enter(deadline) else { throw .timedOut }
      admitted = (admission, passage)
    }
    var locked = false
    defer { if !locked, let admitted { admitted.admission.leave(admitted.passage) } }
    while true {
      let handle = state.withLock { $0.current }
      var woken: CInt = 0
      let result = cappgroups_flock_until(
        handle.descriptor, deadline, max(ceiling ?? deadline, deadline), handle.page, &woken)
      if result == ETIMEDOUT { throw .timedOut }
      if result != 0 { throw .failed(SystemCallError(call: "flock", path: path, errno: result)) }
      let replacement: Handle?
      do {
        replacement = try replacementIfMoved(handle)
      } catch {
        cappgroups_funlock(handle.descriptor, handle.page)
        throw .failed(error)
      }
      guard let replacement else {
        update {
          $0.held = handle
          $0.admitted = admitted
        }
        locked = true
        return
      }
      // The locked file is no longer the one at the path: tell whoever still reads its page,
      // let it go, and lock the file that is there now.
      handle.retire()
      cappgroups_funlock(handle.descriptor, handle.page)
      update { $0.current = replacement }
    }
  }

  /// Takes the lock if it is free now, with the same check as ``lock(until:)``.
  func tryLock() -> Bool {
    (try? lock(until: 0)) != nil
  }

  /// Whether the lock this process holds is still the lock of the file at the path: checked
  /// just before a commit point, so that a lock file replaced during the commit makes the
  /// writer start over instead of writing beside another holder.
  package func stillLocksPath() -> Bool {
    guard let held = state.withLock({ $0.held }) else { return false }
    var s = stat()
    guard Status.link(path, &s) == 0 else { return false }
    return UInt64(s.st_dev) == held.device && UInt64(s.st_ino) == held.inode
  }

  /// Releases the lock.
  package func unlock() {
    var held: Handle?
    var admitted: (admission: Admission, passage: Threads.Identity)?
    update { state in
      held = state.held
      admitted = state.admitted
      state.held = nil
      state.admitted = nil
    }
    if let held {
      cappgroups_funlock(held.descriptor, held.page)
      if let admitted { admitted.admission.leave(admitted.passage) }
    }
  }

  /// Runs `body` holding a shared lock of the lock file at `path`, taken only if no process
  /// holds its exclusive lock now (no waiting, nothing created): for a tool that looks at a
  /// suite's files between commits (`groupctl doctor`) without ever holding up a writer for
  /// longer than `body`.
  ///
  /// The corresponding system call is `flock(2)` with `LOCK_SH | LOCK_NB`.
  /// - Returns: what `body` returned; `nil` when the file cannot be opened or a commit holds
  ///   the lock.
  static func withSharedLockIfFree<Result>(path: String, _ body: () -> Result) -> Result? {
    guard let fd = try? FileSystem.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) else { return nil }
    defer { FileSystem.close(fd) }
    guard (try? valueOrErrno("flock", path: path) { flock(fd, LOCK_SH | LOCK_NB) }) != nil else { return nil }
    defer { _ = flock(fd, LOCK_UN) }
    return body()
  }

  // MARK: Replacement

  /// Opens the file now at the path when it is not the current one (a holder retired the
  /// current page, or the current file was removed or replaced), without locking.
  /// - Returns: whether the current file changed.
  @discardableResult
  func refreshIfReplaced() -> Bool {
    let handle = state.withLock { $0.current }
    guard let replacement = try? replacementIfMoved(handle, create: false) else { return false }
    update { $0.current = replacement }
    return true
  }

  /// Whether the current file was removed from its folder (no link left to it), by
  /// `fstat(2)`: a file whose page nobody else will write again.
  var currentIsUnlinked: Bool {
    let handle = current
    var s = stat()
    guard Status.open(handle.descriptor, &s) == 0 else { return false }
    return s.st_nlink == 0
  }

  /// A new handle for the file at the path when it is not `handle`'s file; `nil` when it is.
  private func replacementIfMoved(_ handle: Handle, create: Bool = true) throws(SystemCallError) -> Handle? {
    var s = stat()
    if Status.link(path, &s) == 0, UInt64(s.st_dev) == handle.device, UInt64(s.st_ino) == handle.inode {
      return nil
    }
    if !create, Status.link(path, &s) != 0 { return nil }
    return try Self.open(path, options)
  }

  private static func open(_ path: String, _ options: Options) throws(SystemCallError) -> Handle {
    let flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK
    let fd: CInt
    do {
      fd = try FileSystem.open(path, flags, mode: 0o600)
    } catch where error.errno == ENOENT && options.makeFolder != nil {
      // The folder was removed under a running process: make it again, then the file.
      let folder = FileSystem.folder(of: path)
      try FileSystem.makeDirectory(folder, within: options.makeFolder ?? "")
      fd = try FileSystem.open(path, flags, mode: 0o600)
    }
    var s = stat()
    do throws(SystemCallError) {
      _ = try valueOrErrno("fstat", path: path) { Status.open(fd, &s) }
      guard s.fileType == FileMode.regular else {
        throw SystemCallError(
          call: "open", path: path, errno: EINVAL,
          reason: "it is \(FileSystem.kind(of: s)), not a regular file")
      }
      var page: UnsafeMutablePointer<UInt64>?
      if options.mapsPage {
        if Int(s.st_size) < pageSize {
          // Growing the file is idempotent: every process grows it to one page. Allocated, not
          // sparse: a store into a mapped page the disk has no room for would raise SIGBUS,
          // where posix_fallocate(3) says ENOSPC.
          let code = posix_fallocate(fd, 0, off_t(pageSize))
          if code != 0 { throw SystemCallError(call: "posix_fallocate", path: path, errno: code) }
        }
        let base = try pointerOrErrno("mmap", path: path) {
          mmap(nil, pageSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
        }
        page = base.bindMemory(to: UInt64.self, capacity: pageSize / 8)
      }
      return Handle(descriptor: fd, device: UInt64(s.st_dev), inode: UInt64(s.st_ino), page: page)
    } catch {
      FileSystem.close(fd)
      throw error
    }
  }
}

public import Foundation
internal import Synchronization

/// One delivery of a named notification to an observer.
///
/// Posts close together are coalesced, as Darwin's `notify(3)` coalesces
/// them: an observer is told once, with ``coalescedPosts`` saying how many
/// posts the delivery stands for.
public struct GroupNotification: Sendable, Hashable, CustomStringConvertible {
  /// The notification's name, such as `com.example.widget.reload`.
  public let name: String
  /// The application group it was posted in.
  public let groupIdentifier: String
  /// The name's 64-bit state when the notification was read (see
  /// ``GroupNotificationCenter/setState(_:for:)``).
  public let state: UInt64
  /// How many posts since the previous delivery this one stands for; at least 1.
  public let coalescedPosts: UInt64
  /// How many times the name has been posted in the group, in total.
  public let postCount: UInt64
  /// Whether the latest post came from this process or another one.
  public let origin: ChangeOrigin

  /// The name, the group, the post count and the state, for logs.
  public var description: String {
    "\(name) in \(groupIdentifier) (post \(postCount), state \(state))"
  }
}

/// Named notifications between the processes of one application group,
/// like Darwin's `notify_post(3)` / `notify_register_dispatch(3)` with a
/// 64-bit state per name.
///
/// ```swift
/// let center = try GroupNotificationCenter(groupIdentifier: "group.com.example.shared")
/// let observation = try center.observe("com.example.widget.reload") { note in
///   print("reload requested, state \(note.state)")
/// }
/// try center.post("com.example.widget.reload")           // in the app
/// ```
///
/// Only members of the group may post, observe, or read and set states:
/// every call checks the entitlement manifest again (so a revoke applies at
/// once) and throws the reason when the identity is not entitled.
///
/// Each name is a small file in the group container's
/// `Library/Notifications/` folder holding its post counter, its state and
/// the pid of the last poster. A post rewrites it atomically (a temporary
/// file renamed over it) under the folder's lock, and every observer in
/// every process hears the rename through inotify (the process's one
/// change monitor; polled at a stated interval when the kernel refuses a
/// watch). Observers run on the monitor's thread: keep them short.
///
/// Notifications are not durable: the files are not `fsync`ed, so a state
/// survives the processes that set it but not necessarily a crash of the
/// machine, as Darwin's states do not survive a reboot.
public final class GroupNotificationCenter: Sendable {
  /// The application group, such as `group.com.example.shared`.
  public let groupIdentifier: String
  /// Who posts and observes.
  public let identity: AppIdentity
  /// The root whose manifest and containers are used.
  public let root: ContainerRoot
  /// The folder holding one file per name: `<group container>/Library/Notifications`.
  public let directoryURL: URL

  private let folder: NotificationFolder

  /// Opens the named notifications of `groupIdentifier` for `identity`,
  /// creating the group container and its `Library/Notifications` folder
  /// (mode 0700) on first use.
  ///
  /// - Parameters:
  ///   - groupIdentifier: A `group.` identifier the identity is entitled to.
  ///   - identity: Who posts and observes; by default the current process
  ///     (``AppIdentity/current(fallback:)``).
  ///   - root: The root; by default ``ContainerRoot/default``.
  /// - Throws: What ``SuiteResolver/container(forSecurityApplicationGroupIdentifier:)``
  ///   throws: `.notEntitled` (with the manifest's path) when the identity
  ///   is not a member, `.invalidName`, `.executableMismatch`,
  ///   `.invalidManifest`, `.outsideRoot`; `.io` when the folder cannot be
  ///   created.
  public init(
    groupIdentifier: String, identity: AppIdentity? = nil, root: ContainerRoot = .default
  ) throws(AppGroupsError) {
    let identity = try Self.identity(identity)
    let resolver = SuiteResolver(identity: identity, root: root)
    let container = try resolver.container(forSecurityApplicationGroupIdentifier: groupIdentifier)
    let directory = container.appendingPathComponent("Library/Notifications", isDirectory: true)
    do {
      try FileSystem.makeDirectory(directory.path, within: root.path)
    } catch {
      throw AppGroupsError(io: error, "creating \(directory.path)")
    }
    self.groupIdentifier = groupIdentifier
    self.identity = identity
    self.root = root
    self.directoryURL = directory
    self.folder = try NotificationFolder.shared(path: directory.path)
  }

  /// `given`, else the current process's identity.
  private static func identity(_ given: AppIdentity?) throws(AppGroupsError) -> AppIdentity {
    if let given { return given }
    return try AppIdentity.current()
  }

  // MARK: Posting and state

  /// Posts `name` to every observer of it in the group, in every process
  /// (this one included). With `state`, sets the name's state in the same
  /// atomic step, so an observer never sees the post without the state.
  ///
  /// The corresponding Darwin calls are `notify_set_state(3)` and `notify_post(3)`.
  ///
  /// - Throws: `.invalidName` for a name that is not 1–200 bytes of
  ///   `A-Z a-z 0-9 . _ -` (not starting with `.` or `-`, no `..`);
  ///   `.notEntitled` and the other refusals of ``init(groupIdentifier:identity:root:)``;
  ///   `.lockTimeout` when another process held the folder's lock for more
  ///   than a second; `.io`.
  public func post(_ name: String, state: UInt64? = nil) throws(AppGroupsError) {
    try check(name)
    try folder.modify(name, group: groupIdentifier) { record in
      record.postCount &+= 1
      if let state { record.state = state }
      record.poster = UInt64(Processes.currentID)
    }
  }

  /// Sets the 64-bit state of `name` without posting it.
  ///
  /// The corresponding Darwin call is `notify_set_state(3)`.
  ///
  /// - Throws: As ``post(_:state:)``.
  public func setState(_ state: UInt64, for name: String) throws(AppGroupsError) {
    try check(name)
    try folder.modify(name, group: groupIdentifier) { record in record.state = state }
  }

  /// The 64-bit state of `name`: 0 until one is set.
  ///
  /// The corresponding Darwin call is `notify_get_state(3)`.
  ///
  /// - Throws: As ``post(_:state:)``, except `.lockTimeout`: reading takes no lock.
  public func state(for name: String) throws(AppGroupsError) -> UInt64 {
    try check(name)
    return folder.read(name).state
  }

  /// How many times `name` has been posted in the group: 0 until it is.
  ///
  /// - Throws: As ``state(for:)``.
  public func postCount(for name: String) throws(AppGroupsError) -> UInt64 {
    try check(name)
    return folder.read(name).postCount
  }

  // MARK: Observing

  /// Calls `handler` for every post of `name` made after this call returns,
  /// by any process of the group. Posts close together may be coalesced
  /// into one call (``GroupNotification/coalescedPosts``).
  ///
  /// The handler runs on the process's change-monitor thread, one call at
  /// a time; keep it short and do not block it.
  ///
  /// The corresponding Darwin call is `notify_register_dispatch(3)`.
  ///
  /// - Returns: A handle; the handler stops when it is cancelled or released.
  /// - Throws: `.invalidName` and the refusals of ``post(_:state:)``
  ///   (membership is checked when observing starts); `.io` when the folder
  ///   cannot be watched at all.
  public func observe(
    _ name: String, handler: @escaping @Sendable (GroupNotification) -> Void
  ) throws(AppGroupsError) -> Observation {
    try check(name)
    let folder = self.folder
    let group = groupIdentifier
    let cursor = Cursor()
    let id = try ChangeMonitor.shared.addListener(directory: folder.path, prefix: name) { entry in
      // An empty entry: events may have been lost; look anyway.
      guard entry == name || entry.isEmpty else { return }
      let record = folder.read(name)
      let posts: UInt64? = cursor.seen.withLock { seen in
        guard let previous = seen, record.postCount != previous else { return nil }
        seen = record.postCount
        // A smaller count: the file was deleted and posted again.
        return record.postCount > previous ? record.postCount - previous : record.postCount
      }
      guard let posts, posts > 0 else { return }
      handler(
        GroupNotification(
          name: name, groupIdentifier: group, state: record.state, coalescedPosts: posts,
          postCount: record.postCount,
          origin: record.poster == UInt64(Processes.currentID) ? .thisProcess : .otherProcess))
    }
    // The watch is armed: from here on every post is heard.
    let start = folder.read(name).postCount
    cursor.seen.withLock { $0 = start }
    return Observation { ChangeMonitor.shared.removeListener(id) }
  }

  /// The posts of `name` as an asynchronous sequence (see ``observe(_:handler:)``).
  ///
  /// - Throws: As ``observe(_:handler:)``.
  public func notifications(named name: String) throws(AppGroupsError) -> AsyncStream<GroupNotification> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: GroupNotification.self, bufferingPolicy: .unbounded)
    let observation = try observe(name) { continuation.yield($0) }
    continuation.onTermination = { _ in observation.cancel() }
    return stream
  }

  // MARK: Checks

  /// Validates the name and checks, from the manifest as it is now, that
  /// the identity is still a member of the group.
  private func check(_ name: String) throws(AppGroupsError) {
    try Names.validate(name, as: "notification name")
    if name.utf8.count > SuiteResolver.maximumDomainByteCount {
      throw AppGroupsError(
        .invalidName,
        "invalid notification name \(Names.quoted(name)): longer than "
          + "\(SuiteResolver.maximumDomainByteCount) bytes (\(name.utf8.count))")
    }
    let resolver = SuiteResolver(identity: identity, root: root)
    _ = try resolver.container(forSecurityApplicationGroupIdentifier: groupIdentifier)
  }

  private final class Cursor: Sendable {
    /// The post count last delivered; `nil` until observing has started.
    let seen = Mutex<UInt64?>(nil)
  }
}

// MARK: - The folder

/// The `Library/Notifications` folder of one group, shared by every center
/// on it in this process: its lock (`.lock`, `flock(2)`) and its files.
final class NotificationFolder: Sendable {
  /// One name's file: magic, post count, state, last poster's pid; 64-bit
  /// little-endian words.
  struct Record: Sendable, Equatable {
    var postCount: UInt64 = 0
    var state: UInt64 = 0
    var poster: UInt64 = 0
  }

  static let magic: UInt64 = 0x3145_544f_4e47_41  // "AGNOTE1"
  static let recordSize = 32
  static let lockTimeout: Duration = .seconds(1)

  let path: String
  /// `flock` conflicts between two descriptors of one process, so the
  /// process holds one lock per folder and serialises its own use of it.
  private let lock: Mutex<LockedFile>

  private static let registry = WeakRegistry<NotificationFolder>()

  static func shared(path: String) throws(AppGroupsError) -> NotificationFolder {
    let folder = try registry.object(forKey: path) { () throws(AppGroupsError) in
      NotificationFolder(path: path, lock: try LockedFile.opening(path + "/.lock"))
    }
    folder.removeLeftoverTemporaries()
    return folder
  }

  private init(path: String, lock: LockedFile) {
    self.path = path
    self.lock = Mutex(lock)
  }

  /// The record of `name`; an empty one when it does not exist or cannot be read.
  func read(_ name: String) -> Record {
    guard let bytes = FileSystem.readPrefix(Self.recordSize, of: path + "/" + name),
      bytes.count == Self.recordSize
    else { return Record() }
    var words = [UInt64](repeating: 0, count: Self.recordSize / 8)
    words.withUnsafeMutableBytes { $0.copyBytes(from: bytes) }
    guard UInt64(littleEndian: words[0]) == Self.magic else { return Record() }
    return Record(
      postCount: UInt64(littleEndian: words[1]), state: UInt64(littleEndian: words[2]),
      poster: UInt64(littleEndian: words[3]))
  }

  /// Reads, changes and atomically rewrites the record of `name` under the
  /// folder's lock: a temporary file renamed over it (`rename(2)`, which
  /// every watcher hears as `IN_MOVED_TO`).
  func modify(
    _ name: String, group: String, _ body: (inout Record) -> Void
  ) throws(AppGroupsError) {
    try withLock(doing: "posting \(name) in \(group)") { () throws(AppGroupsError) in
      var record = read(name)
      body(&record)
      let words = [Self.magic, record.postCount, record.state, record.poster].map(\.littleEndian)
      let bytes = words.withUnsafeBytes { Array($0) }
      do throws(SystemCallError) {
        try FileSystem.replace(path + "/" + name, with: bytes)
      } catch {
        throw AppGroupsError(io: error, "posting \(name) in \(group)")
      }
    }
  }

  /// Removes temporary files left by posters that were killed mid-post.
  private func removeLeftoverTemporaries() {
    try? withLock(doing: "cleaning \(path)") { () throws(AppGroupsError) in
      let names = FileSystem.entryNames(in: path)
      for name in names where name.hasPrefix(".") && name.contains(".tmp-") {
        try? FileSystem.remove(path + "/" + name)
      }
    }
  }

  private func withLock(
    doing what: String, _ body: () throws(AppGroupsError) -> Void
  ) throws(AppGroupsError) {
    try lock.withLock { (lock: inout LockedFile) throws(AppGroupsError) -> Void in
      try lock.withLock(timeout: Self.lockTimeout, doing: what, body)
    }
  }
}

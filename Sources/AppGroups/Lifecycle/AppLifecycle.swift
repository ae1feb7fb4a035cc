public import Foundation
internal import Synchronization

/// What an app is told before it is suspended.
public struct SuspensionNotice: Sendable {
  /// When the notice arrived.
  public let received: Date
  /// When the suspender inspects the app's locks at the latest: the end of the grace period
  /// `groupctl suspend --grace` gave, or ``received`` plus ``AppLifecycle/gracePeriod`` for a
  /// stop that came from a terminal (Ctrl-Z).
  public let deadline: Date
}

/// An app's side of suspension and resume on the simulated device, in the spirit of UIKit's
/// `beginBackgroundTask(withName:expirationHandler:)` and Foundation's
/// `performExpiringActivity(withReason:using:)`.
///
/// `groupctl suspend` tells an app it is about to be suspended with
/// ``suspensionSignal`` (SIGTSTP) and waits for it to say it is done, for the grace period at
/// most (5 seconds, as iOS gives an app moving to the background). Then it looks at the locks
/// the process holds on files in group containers: a process suspended while it holds one
/// is terminated (SIGKILL), as iOS terminates it with the exception code `0xdead10cc`.
///
/// When the notice arrives, the library, on a queue of its own:
///
/// 1. calls the ``onSuspend(_:)`` handlers: release your own locks here, or begin a
///    background activity to finish something first;
/// 2. waits until every ``beginBackgroundActivity(named:expirationHandler:)`` has ended, and
///    calls the expiration handlers of those still running a second before the deadline;
/// 3. lets every ``GroupDefaults`` commit land (``GroupDefaults/synchronizeAll()``) and
///    keeps the library from taking any file lock until the app is resumed: a commit asked
///    for meanwhile waits, and a commit in flight finishes first;
/// 4. tells the suspender it is done.
///
/// On `groupctl resume` it lets the library take its locks again and calls the
/// ``onResume(_:)`` handlers. A SIGTSTP from a terminal (Ctrl-Z) gets the same preparation,
/// after which the process stops itself, as SIGTSTP would have stopped it; SIGCONT (`fg`)
/// is then the resume. Resume also posts ``didResumeNotification`` in the app's groups,
/// and the process gets SIGCONT as it always does.
///
/// ```swift
/// try AppLifecycle.start(identity: .current())
/// let cache = try CacheFile(in: container)          // keeps an flock(2) while open
/// let suspending = AppLifecycle.onSuspend { _ in cache.unlock() }
/// let resuming = AppLifecycle.onResume { cache.lock() }
///
/// // Finishing a write the app must not abandon:
/// let activity = AppLifecycle.beginBackgroundActivity(named: "save") { cache.cancelSave() }
/// cache.save()
/// activity.end()
/// ```
///
/// Opening a ``GroupDefaults`` for an app identity starts the lifecycle for that identity and
/// root; a process that does not use `GroupDefaults` calls ``start(identity:root:)``. A process
/// that handles SIGTSTP itself keeps its handler; the library then hears no notice, and
/// `groupctl suspend`, which cannot tell that handler from the library's, waits the whole
/// grace period before it looks at the locks.
public enum AppLifecycle {
  /// The signal `groupctl suspend` sends before it suspends an app: SIGTSTP.
  public static let suspensionSignal: Int32 = Processes.Signal.terminalStop.rawValue

  /// The named notification `groupctl suspend` posts in each of the app's groups before it
  /// sends ``suspensionSignal``; its state is the process id.
  public static let willSuspendNotification = "appgroups.lifecycle.will-suspend"

  /// The named notification `groupctl resume` posts in each of the app's groups after
  /// SIGCONT; its state is the process id.
  public static let didResumeNotification = "appgroups.lifecycle.did-resume"

  /// `groupctl suspend`'s default grace period, 5 seconds. An app is told the grace period
  /// its suspender gave (``SuspensionNotice/deadline``); this one applies to a stop that
  /// comes from a terminal (Ctrl-Z), which says none.
  public static let gracePeriod: Duration = .seconds(5)

  /// Starts hearing suspension notices for `identity` in `root`. The first call wins; later
  /// calls do nothing. Opening a ``GroupDefaults`` as an app calls it.
  ///
  /// - Parameters:
  ///   - identity: Who the process is; its data container holds the handshake file.
  ///   - root: The root the app runs in.
  public static func start(identity: AppIdentity, root: ContainerRoot = .default) {
    Lifecycle.shared.start(identity: identity, root: root)
  }

  /// Calls `handler` when the app is about to be suspended, on the library's lifecycle
  /// queue, before the library's own locks are put away. Release the locks the app holds on
  /// files in group containers here, or begin a background activity.
  ///
  /// - Returns: A handle; the handler is removed when it is cancelled or released.
  public static func onSuspend(
    _ handler: @escaping @Sendable (SuspensionNotice) -> Void
  ) -> Observation {
    let id = Lifecycle.shared.add(suspend: handler)
    return Observation { Lifecycle.shared.remove(id) }
  }

  /// Calls `handler` when the app has been resumed, on the library's lifecycle queue.
  ///
  /// - Returns: A handle; the handler is removed when it is cancelled or released.
  public static func onResume(_ handler: @escaping @Sendable () -> Void) -> Observation {
    let id = Lifecycle.shared.add(resume: handler)
    return Observation { Lifecycle.shared.remove(id) }
  }

  /// Asks for time to finish work before a suspension: the library does not tell the
  /// suspender it is done until the activity ends, or the grace period is about to run
  /// out, when `expirationHandler` is called: stop then, and end the activity.
  ///
  /// The corresponding UIKit call is `beginBackgroundTask(withName:expirationHandler:)`.
  ///
  /// - Returns: The activity; call ``BackgroundActivity/end()`` when the work is done.
  public static func beginBackgroundActivity(
    named name: String, expirationHandler: (@Sendable () -> Void)? = nil
  ) -> BackgroundActivity {
    Lifecycle.shared.begin(name: name, expiration: expirationHandler)
  }

  /// Runs `block` on a background queue as a background activity: `block(false)` does the
  /// work; if the app is about to be suspended before it returns, `block(true)` is called
  /// too, on the lifecycle queue: stop the work then.
  ///
  /// The corresponding Foundation call is `ProcessInfo.performExpiringActivity(withReason:using:)`.
  public static func performExpiringActivity(
    reason: String, using block: @escaping @Sendable (_ expired: Bool) -> Void
  ) {
    let activity = beginBackgroundActivity(named: reason) { block(true) }
    DispatchQueue.global().async {
      block(false)
      activity.end()
    }
  }

  /// Whether a suspension notice is being handled, or the app has acknowledged one and not
  /// been resumed yet.
  public static var isSuspending: Bool { Lifecycle.shared.isSuspending }

  /// The environment variable that says the app was launched in the background, as iOS
  /// prewarms an app: `ActivePrewarm`, set to `1` (iOS 15's name; `groupctl run --background`
  /// sets it).
  public static let prewarmEnvironmentVariable = "ActivePrewarm"

  /// Whether the app was launched in the background (``prewarmEnvironmentVariable`` is `1`):
  /// it may run before the device's first unlock, when its suites and most files cannot be
  /// read yet (``ProtectedData``).
  public static var isPrewarmed: Bool {
    ProcessInfo.processInfo.environment[prewarmEnvironmentVariable] == "1"
  }
}

/// Time asked for before a suspension (``AppLifecycle/beginBackgroundActivity(named:expirationHandler:)``).
public final class BackgroundActivity: Sendable {
  /// The name given when it began.
  public let name: String
  let id: Int

  init(name: String, id: Int) {
    self.name = name
    self.id = id
  }

  /// Ends the activity. Safe to call more than once.
  public func end() { Lifecycle.shared.end(id) }

  deinit { Lifecycle.shared.end(id) }
}

/// The suspender and the app meet in `<app container>/Library/Lifecycle/`: the suspender
/// writes `<pid>.request` and sends SIGTSTP; the app, once ready, writes `<pid>.ready`
/// holding the monotonic time (`CLOCK_MONOTONIC`, nanoseconds) at which it got the notice,
/// followed by ` held` when a lock of the library was still held at the end of the grace.
/// The suspender removes the ready file before it sends the notice and again on resume;
/// the app, waiting for that removal, then takes its locks again.
enum SuspensionHandshake {
  static func folder(root: ContainerRoot, bundleIdentifier: String) -> String {
    root.appContainerPath(for: bundleIdentifier) + "/Library/Lifecycle"
  }

  static func readyFile(root: ContainerRoot, bundleIdentifier: String, pid: Int32) -> String {
    folder(root: root, bundleIdentifier: bundleIdentifier) + "/\(pid).ready"
  }

  /// Written by the app when its drain begins while a lock of the library is held, with the
  /// answer it would give if the drain ran out (``ready(notice:drained:)``): read by the
  /// suspender only when no ready file came in time. An answer written after the drain can
  /// come after the suspender stopped waiting, when a loaded machine's scheduler keeps the
  /// app from the CPU for longer than the drain leaves; the lock it held is still said.
  static func heldFile(root: ContainerRoot, bundleIdentifier: String, pid: Int32) -> String {
    folder(root: root, bundleIdentifier: bundleIdentifier) + "/\(pid).held"
  }

  /// Removes the answers `pid` left, ready and held.
  static func removeAnswers(root: ContainerRoot, bundleIdentifier: String, pid: Int32) {
    try? FileSystem.remove(readyFile(root: root, bundleIdentifier: bundleIdentifier, pid: pid))
    try? FileSystem.remove(heldFile(root: root, bundleIdentifier: bundleIdentifier, pid: pid))
  }

  /// Written by the suspender just before its SIGTSTP, with the time it was sent and the
  /// grace period (``request(sent:grace:)``): a SIGTSTP without it comes from a terminal
  /// (Ctrl-Z), and the app then stops itself once it is ready.
  static func requestFile(root: ContainerRoot, bundleIdentifier: String, pid: Int32) -> String {
    folder(root: root, bundleIdentifier: bundleIdentifier) + "/\(pid).request"
  }

  /// Writes `text` to `path` through a temporary file renamed over it, so that the suspender
  /// never reads half of it. Not `fsync`ed: the file means nothing after a crash.
  static func write(_ text: String, to path: String) throws(SystemCallError) {
    try FileSystem.replace(path, with: Array(text.utf8))
  }

  /// A request file's text: when the signal was sent and the grace period, both in
  /// nanoseconds of `CLOCK_MONOTONIC`, which every process of the machine shares.
  static func request(sent: UInt64, grace: UInt64) -> String { "\(sent) \(grace)\n" }

  /// The suspender's deadline written in a request file (`sent` plus `grace`); `nil` when
  /// there is no request or it does not read as one.
  static func requestedDeadline(in path: String) -> UInt64? {
    guard let data = try? FileSystem.read(path)?.0 else { return nil }
    let fields = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
    guard fields.count == 2, let sent = UInt64(fields[0]), let grace = UInt64(fields[1]) else {
      return nil
    }
    return sent &+ grace
  }

  /// A ready file's text: the time the notice was received, and `held` when the library's
  /// locks were not all released by the end of the grace (the drain ran out of time).
  static func ready(notice: UInt64, drained: Bool) -> String {
    drained ? "\(notice)\n" : "\(notice) held\n"
  }

  /// What a ready file says: the notice time, and whether the library's locks were all
  /// released; `nil` when there is none or it does not read as one.
  static func answer(in path: String) -> (notice: UInt64, drained: Bool)? {
    guard let data = try? FileSystem.read(path)?.0 else { return nil }
    let fields = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
    guard let first = fields.first, let notice = UInt64(first), fields.count <= 2,
      fields.count == 1 || fields[1] == "held"
    else { return nil }
    return (notice, fields.count == 1)
  }

}

/// The process's lifecycle state: handlers, activities, and the queue notices are handled on.
final class Lifecycle: @unchecked Sendable {
  static let shared = Lifecycle()
  private init() {}

  private struct Activity {
    var name: String
    var expiration: (@Sendable () -> Void)?
  }

  // Everything below is read and written only while `condition` is locked.
  private let condition = NSCondition()
  private var identity: AppIdentity?
  private var root: ContainerRoot?
  private var nextID = 1
  private var suspendHandlers: [(Int, @Sendable (SuspensionNotice) -> Void)] = []
  private var resumeHandlers: [(Int, @Sendable () -> Void)] = []
  private var activities: [Int: Activity] = [:]
  private var suspending = false
  /// Whether a SIGTSTP that groupctl did not send stops the process (it was not ignored).
  private var stopsOnTerminalNotice = true

  /// Made at the first notice (or when signals need a source): an app that is never
  /// suspended never needs it.
  private let lifecycleQueue = LazyQueue(label: "appgroups.lifecycle")
  private var queue: DispatchQueue { lifecycleQueue.queue }
  private var source: (any DispatchSourceSignal)?
  /// The app's device: its state changes are told to the app (ProtectedData).
  private var deviceMonitor: DeviceMonitor?

  /// The identity ``start(identity:root:)`` was given, once it was.
  var startedIdentity: AppIdentity? {
    condition.lock()
    defer { condition.unlock() }
    return identity
  }

  var isSuspending: Bool {
    condition.lock()
    defer { condition.unlock() }
    return suspending
  }

  func start(identity: AppIdentity, root: ContainerRoot) {
    condition.lock()
    defer { condition.unlock() }
    guard self.identity == nil else { return }
    self.identity = identity
    self.root = root
    SuspensionBarrier.install()
    deviceMonitor = DeviceMonitor.shared(root: root)
    // Not a signal the app handles itself. An ignored one may be inherited through execve(2)
    // from a parent that ignored it: the notice is taken, but job control still cannot stop
    // the process.
    guard let wasDefault = Processes.isDefaultUnlessHandled(.terminalStop) else { return }
    stopsOnTerminalNotice = wasDefault
    // Heard on the change monitor's thread, which the device monitor has started: no thread
    // of its own, and the handler is in place when this returns (no notice is lost after).
    // The handlers name the one instance, which lives as long as the process: they capture
    // nothing (an `unowned` capture is three calls into the runtime, each a lazy binding at
    // an app's first open).
    if ChangeMonitor.shared.hear(.terminalStop, { Lifecycle.shared.noticeArrived() }) { return }
    source = Processes.interceptUnlessHandled(.terminalStop, on: queue) {
      Lifecycle.shared.handleNotice()
    }?.source
  }

  /// Whether a notice is queued and not begun: notices that arrive meanwhile are one.
  private let noticeQueued = Atomic<Bool>(false)

  /// On the change monitor's thread: hands the notice to the lifecycle queue, as a signal
  /// source would (one handling at a time; notices that arrive during one make one more).
  private func noticeArrived() {
    guard !noticeQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
    queue.async { [self] in
      noticeQueued.store(false, ordering: .releasing)
      handleNotice()
    }
  }

  func add(suspend handler: @escaping @Sendable (SuspensionNotice) -> Void) -> Int {
    condition.lock()
    defer { condition.unlock() }
    nextID += 1
    suspendHandlers.append((nextID, handler))
    return nextID
  }

  func add(resume handler: @escaping @Sendable () -> Void) -> Int {
    condition.lock()
    defer { condition.unlock() }
    nextID += 1
    resumeHandlers.append((nextID, handler))
    return nextID
  }

  func remove(_ id: Int) {
    condition.lock()
    defer { condition.unlock() }
    suspendHandlers.removeAll { $0.0 == id }
    resumeHandlers.removeAll { $0.0 == id }
  }

  func begin(name: String, expiration: (@Sendable () -> Void)?) -> BackgroundActivity {
    condition.lock()
    defer { condition.unlock() }
    nextID += 1
    activities[nextID] = Activity(name: name, expiration: expiration)
    return BackgroundActivity(name: name, id: nextID)
  }

  func end(_ id: Int) {
    condition.lock()
    activities[id] = nil
    condition.broadcast()
    condition.unlock()
  }

  /// Waits until no activity is running, or `deadline`; `true` when none is.
  private func waitForActivities(until deadline: UInt64) -> Bool {
    condition.lock()
    defer { condition.unlock() }
    while !activities.isEmpty {
      let now = FileSystem.monotonicNanoseconds()
      if now >= deadline { return false }
      _ = condition.wait(until: Date(timeIntervalSinceNow: Double(deadline - now) / 1e9))
    }
    return true
  }

  /// Handles one suspension notice, on `queue`, and then waits for the resume.
  private func handleNotice() {
    let received = FileSystem.monotonicNanoseconds()
    condition.lock()
    suspending = true
    let handlers = suspendHandlers.map(\.1)
    let identity = self.identity
    let root = self.root
    let stops = stopsOnTerminalNotice
    condition.unlock()
    let files = identity.flatMap { identity in
      root.map { root in
        (
          folder: SuspensionHandshake.folder(
            root: root, bundleIdentifier: identity.bundleIdentifier),
          request: SuspensionHandshake.requestFile(
            root: root, bundleIdentifier: identity.bundleIdentifier, pid: Processes.currentID),
          ready: SuspensionHandshake.readyFile(
            root: root, bundleIdentifier: identity.bundleIdentifier, pid: Processes.currentID),
          held: SuspensionHandshake.heldFile(
            root: root, bundleIdentifier: identity.bundleIdentifier, pid: Processes.currentID),
          root: root.path
        )
      }
    }
    // groupctl's request carries its deadline (`--grace`); a terminal's stop has none, and
    // gets the default grace period.
    let requestedDeadline = files.flatMap { SuspensionHandshake.requestedDeadline(in: $0.request) }
    let requested = requestedDeadline != nil
    let deadline =
      requestedDeadline
      ?? received &+ UInt64(AppLifecycle.gracePeriod.components.seconds) * 1_000_000_000
    let grace = deadline > received ? deadline - received : 0
    let notice = SuspensionNotice(
      received: Date(), deadline: Date(timeIntervalSinceNow: Double(grace) / 1e9))

    for handler in handlers { handler(notice) }

    // Background activities first, with a fifth of the grace (a second at most) left to
    // expire the late ones and half of that to let them end.
    let margin = min(grace / 5, 1_000_000_000)
    let expiry = deadline &- margin
    if !waitForActivities(until: expiry) {
      condition.lock()
      let expirations = activities.values.compactMap(\.expiration)
      condition.unlock()
      for expire in expirations { expire() }
      _ = waitForActivities(until: expiry &+ margin / 2)
    }

    // GroupDefaults: what is pending lands now, and no commit takes the lock until resume.
    SuiteStore.flushAll()
    // A lock still held is said at once (see `SuspensionHandshake.heldFile`), and again in the
    // ready file if the drain runs out.
    if SuspensionBarrier.close(), requested, let held = files?.held {
      try? SuspensionHandshake.write(SuspensionHandshake.ready(notice: received, drained: false), to: held)
    }
    let drained = SuspensionBarrier.drain(until: deadline &- margin / 5)
    if !drained {
      Diagnostics.report(
        "suspension: a lock of the library was still held at the end of the grace period")
    }

    // Whose notice: groupctl's, when it left a request (looked at first: the suspender
    // removes it when it stops waiting).
    guard let (folder, request, ready, _, root) = files, requested else {
      // The terminal's (Ctrl-Z) or another job control's. The app is ready: stop as SIGTSTP
      // would have stopped it; the call returns on SIGCONT.
      if stops { try? Processes.send(.stop, to: Processes.currentID) }
      return finishResume()
    }
    try? FileSystem.remove(request)
    TestHooks.beforeAnswer?(ready)
    do throws(SystemCallError) {
      try FileSystem.makeDirectory(folder, within: root)
      try SuspensionHandshake.write(SuspensionHandshake.ready(notice: received, drained: drained), to: ready)
    } catch {
      Diagnostics.report("suspension: cannot say the app is ready (\(error))")
      return finishResume()
    }
    // Suspended (or about to be): wait for the suspender to take the file away on resume.
    _ = FileSystem.wait(
      for: ready, toAppear: false,
      until: FileSystem.monotonicNanoseconds() &+ SuspensionBarrier.closedBound, recheck: 1000)
    finishResume()
  }

  private func finishResume() {
    SuspensionBarrier.open()
    condition.lock()
    suspending = false
    let handlers = resumeHandlers.map(\.1)
    condition.unlock()
    for handler in handlers { handler() }
  }
}

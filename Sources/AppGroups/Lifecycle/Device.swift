public import Foundation

/// What `groupctl run` launched: `<root>/Run/<pid>.plist`.
///
/// A pid alone does not name a process for long: the kernel hands it out again. The record
/// keeps the process's start time (field 22 of `/proc/PID/stat`, clock ticks after boot) too;
/// a record whose pid is gone, or now names a process started at another time, is stale.
public struct RunRecord: Sendable, Hashable {
  /// The app's bundle identifier.
  public var bundleIdentifier: String
  /// The process id.
  public var pid: Int32
  /// The process's start time in clock ticks after boot (`/proc/PID/stat` field 22).
  public var startTime: UInt64
  /// The executable launched.
  public var executable: String
  /// When it was launched.
  public var launchDate: Date
  /// Whether `groupctl suspend` suspended it (and no resume came since).
  public var isSuspended: Bool

  /// A record; see ``Device/record(_:)`` to write it.
  public init(
    bundleIdentifier: String, pid: Int32, startTime: UInt64, executable: String,
    launchDate: Date = Date(), isSuspended: Bool = false
  ) {
    self.bundleIdentifier = bundleIdentifier
    self.pid = pid
    self.startTime = startTime
    self.executable = executable
    self.launchDate = launchDate
    self.isSuspended = isSuspended
  }

  var propertyList: [String: Any] {
    [
      "bundleIdentifier": bundleIdentifier, "pid": Int(pid), "startTime": Int(startTime),
      "executable": executable, "launchDate": launchDate,
      "state": isSuspended ? "suspended" : "running",
    ]
  }

  init?(propertyList: Any) {
    guard let values = propertyList as? [String: Any],
      let bundleIdentifier = values["bundleIdentifier"] as? String,
      let pid = values["pid"] as? Int, let startTime = values["startTime"] as? Int,
      let executable = values["executable"] as? String,
      let launchDate = values["launchDate"] as? Date,
      // A record whose bundle id is not one was not written by `groupctl run`.
      (try? Names.validateBundleIdentifier(bundleIdentifier)) != nil
    else { return nil }
    self.init(
      bundleIdentifier: bundleIdentifier, pid: Int32(truncatingIfNeeded: pid),
      startTime: UInt64(max(startTime, 0)), executable: executable, launchDate: launchDate,
      isSuspended: values["state"] as? String == "suspended")
  }
}

/// An app of the device as `groupctl ps` shows it.
public struct RunningApp: Sendable {
  /// What the app's process is doing.
  public enum State: String, Sendable {
    /// Running (or sleeping, waiting: not stopped).
    case running
    /// Stopped by `groupctl suspend`.
    case suspended
    /// Stopped by something else (SIGSTOP, a debugger, job control).
    case stopped
  }

  /// The run record.
  public let record: RunRecord
  /// The process's state now.
  public let state: State
  /// The locks its processes hold on files in group containers (each with the process that
  /// holds it, ``HeldLock/pid``): a lock held by two processes is here twice.
  public let locks: [HeldLock]
  /// Each of ``locks`` once, with every process of the app that holds it: an `flock` or OFD
  /// lock passed on through `fork` is one lock, held by each process that has the file open.
  public var distinctLocks: [(lock: HeldLock, holders: [AppProcess])] {
    Device.merge(locks, processes: processes)
  }
  /// Its processes: the one `groupctl run` started, then its descendants
  /// (``Device/processes(ofApp:)``).
  public let processes: [AppProcess]
}

/// How a suspension ended (``Device/suspend(pid:grace:reportOnly:)``).
public struct SuspensionOutcome: Sendable {
  /// Whether the process ended up suspended, terminated, or gone.
  public enum Result: String, Sendable {
    /// The process is stopped.
    case suspended
    /// The process held a lock in a group container and was killed (0xdead10cc).
    case terminated
    /// The process exited before it could be suspended.
    case gone
  }

  /// The process.
  public let pid: Int32
  /// The app's bundle identifier.
  public let bundleIdentifier: String
  /// What happened.
  public let result: Result
  /// Whether the app's first process was stopped already (suspended before, or stopped by a
  /// signal): it was not told again, and no notification was posted; its locks were looked at
  /// as they were.
  public let wasStopped: Bool
  /// Whether the process handles ``AppLifecycle/suspensionSignal`` (SIGTSTP): one that does
  /// not was not sent it, and was not waited for. `false` when it ``wasStopped``.
  public let listening: Bool
  /// Whether the app said it was done before the grace period ran out, every lock of the
  /// library released.
  public let acknowledged: Bool
  /// Whether one of the app's processes answered while a lock of the library was still held
  /// (a commit or a keychain write that did not end within the grace): it said so, and that
  /// is not counted as done (``acknowledged`` is false).
  public let heldLibraryLock: Bool
  /// How long the suspender waited for the app.
  public let waited: Duration
  /// The locks its processes held in group containers and on the keychain's lock files when
  /// they were inspected, each once.
  public let locks: [HeldLock]
  /// One line per lock: `terminated: BUNDLE-ID (PID) held a lock on PATH in group GROUP-ID
  /// while being suspended (0xdead10cc), held by process PID (COMMAND)`, or with
  /// `--report-only`, `reported: …`; a keychain lock's line always begins `reported:`.
  public let reports: [String]
  /// The app's processes that were stopped, and then killed when it was terminated: the
  /// first one, then its descendants.
  public let processes: [AppProcess]
}

/// The simulated device's running apps: run records, suspension and resume, and the locks
/// apps hold in group containers.
///
/// ```swift
/// let device = Device(root: root)
/// let outcome = try device.suspend(pid: pid)
/// if outcome.result == .terminated { print(outcome.reports.joined(separator: "\n")) }
/// try device.resume(pid: pid)
/// ```
///
/// The app's side of the handshake is ``AppLifecycle``.
public struct Device: Sendable {
  /// The root: the device.
  public let root: ContainerRoot

  /// The device at `root`.
  public init(root: ContainerRoot) {
    self.root = root
  }

  /// The run records' folder: `<root>/Run`.
  public var runFolderURL: URL { root.url.appendingPathComponent("Run", isDirectory: true) }

  /// The log of terminations and reports: `<root>/Run/lifecycle.log`, one line each,
  /// prefixed with the time (ISO 8601, UTC).
  public var logURL: URL { runFolderURL.appendingPathComponent("lifecycle.log") }

  private func recordPath(_ pid: Int32) -> String { runFolderURL.path + "/\(pid).plist" }

  // MARK: Records

  /// The record of the calling process, or of `pid`, with its start time read from `/proc`.
  ///
  /// - Throws: `.invalidName` for a bad bundle id; `.io` when the process is gone.
  public static func currentRecord(
    bundleIdentifier: String, executable: String,
    pid: Int32 = ProcessInfo.processInfo.processIdentifier
  ) throws(AppGroupsError) -> RunRecord {
    try Names.validateBundleIdentifier(bundleIdentifier)
    guard let status = ProcessStatus(pid: pid) else {
      throw AppGroupsError(
        io: SystemCallError(call: "open", path: "/proc/\(pid)/stat", .noSuchProcess),
        "reading the start time of process \(pid)")
    }
    return RunRecord(
      bundleIdentifier: bundleIdentifier, pid: pid, startTime: status.startTime,
      executable: executable)
  }

  /// Writes `record` to `<root>/Run/<pid>.plist` (atomically, replacing a stale one).
  ///
  /// - Throws: `.io` naming the file when it cannot be written.
  public func record(_ record: RunRecord) throws(AppGroupsError) {
    let path = recordPath(record.pid)
    do {
      try FileSystem.makeDirectory(runFolderURL.path, within: root.path)
      let data = try PropertyListSerialization.data(
        fromPropertyList: record.propertyList, format: .binary, options: 0)
      try FileSystem.writeAtomically(data, to: path)
    } catch let error as SystemCallError {
      throw AppGroupsError(io: error, "writing the run record \(path)")
    } catch {
      throw AppGroupsError(.io, "writing the run record \(path): \(error)")
    }
  }

  /// Removes the record of `pid`, if there is one.
  public func removeRecord(pid: Int32) {
    try? FileSystem.remove(recordPath(pid))
  }

  /// Every record in `<root>/Run`, live or stale, sorted by pid.
  public func allRecords() -> [RunRecord] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: runFolderURL.path)) ?? []
    return names.compactMap { name -> RunRecord? in
      guard name.hasSuffix(".plist"), let pid = Int32(name.dropLast(6)),
        // A record is a few hundred bytes: one of more than 64 KiB is not one, and not read.
        let data = try? FileSystem.readWhole(recordPath(pid), atMost: 1 << 16)?.data,
        let list = try? PropertyListSerialization.propertyList(from: data, format: nil),
        let record = RunRecord(propertyList: list), record.pid == pid
      else { return nil }
      return record
    }.sorted { $0.pid < $1.pid }
  }

  /// Whether `record` still names a running process: its pid exists and started when the
  /// record says.
  public static func isLive(_ record: RunRecord) -> Bool {
    ProcessStatus(pid: record.pid)?.startTime == record.startTime
  }

  /// Removes the stale records (pid gone, or reused by a process started at another time).
  ///
  /// - Returns: The records removed.
  @discardableResult
  public func pruneStaleRecords() -> [RunRecord] {
    let stale = allRecords().filter { !Self.isLive($0) }
    for record in stale { removeRecord(pid: record.pid) }
    return stale
  }

  /// The live apps, after pruning stale records, with their state and locks.
  public func runningApps() -> [RunningApp] {
    pruneStaleRecords()
    return allRecords().compactMap { record in
      guard let status = ProcessStatus(pid: record.pid), status.startTime == record.startTime
      else { return nil }
      let state: RunningApp.State =
        status.isStopped ? (record.isSuspended ? .suspended : .stopped) : .running
      let processes = Self.processes(ofApp: record.pid)
      return RunningApp(
        record: record, state: state,
        locks: processes.flatMap { HeldLock.locks(heldBy: $0.pid, root: root) },
        processes: processes)
    }
  }

  /// The live record of `pid`, if it has one.
  public func liveRecord(pid: Int32) -> RunRecord? {
    allRecords().first { $0.pid == pid && Self.isLive($0) }
  }

  /// Every process of the machine that is stopped (state `T` in `/proc/PID/stat`, however it
  /// was stopped) while it holds a lock on a file in one of the root's group containers:
  /// the process every other one that needs the file waits for.
  public func stoppedProcessesHoldingLocks() -> [(pid: Int32, name: String, locks: [HeldLock])] {
    ProcessStatus.allPIDs().compactMap { pid in
      guard pid != Processes.currentID, let status = ProcessStatus(pid: pid), status.isStopped
      else { return nil }
      let locks = HeldLock.locks(heldBy: pid, root: root)
      return locks.isEmpty ? nil : (pid, status.name, locks)
    }
  }

  /// The bundle identifier of `pid`: its live record's, else its `APPGROUPS_BUNDLE_ID`.
  public func bundleIdentifier(of pid: Int32) -> String? {
    if let record = liveRecord(pid: pid) { return record.bundleIdentifier }
    return ProcessStatus.environmentValue(AppIdentity.environmentVariable, pid: pid)
  }

  /// The bundle identifier of `pid` as an app of this device: its live record's, else its
  /// `APPGROUPS_BUNDLE_ID` when its `APPGROUPS_ROOT` names this root.
  ///
  /// - Throws: `.invalidName` when it has neither, when it is an app of another root (its
  ///   locks and groups are that root's, which this device does not look at), or when the
  ///   bundle identifier is not a valid one.
  func appBundleIdentifier(of pid: Int32) throws(AppGroupsError) -> String {
    if let record = liveRecord(pid: pid) { return record.bundleIdentifier }
    guard let bundle = ProcessStatus.environmentValue(AppIdentity.environmentVariable, pid: pid),
      !bundle.isEmpty
    else {
      throw AppGroupsError(
        .invalidName,
        "process \(pid) was not launched with groupctl run and has no"
          + " \(AppIdentity.environmentVariable): which app it is is unknown")
    }
    let itsRoot = ProcessStatus.environmentValue(ContainerRoot.environmentVariable, pid: pid)
    guard itsRoot == root.path || itsRoot.flatMap({ Paths.realPath($0) }) == root.path else {
      throw AppGroupsError(
        .invalidName,
        "process \(pid) is not an app of the device at \(root.path): its"
          + " \(ContainerRoot.environmentVariable) is "
          + (itsRoot.map { "\($0), another root's; give that root (--root)" } ?? "not set"))
    }
    try Names.validateBundleIdentifier(bundle)
    return bundle
  }

  // MARK: Suspend and resume

  /// Suspends the app `pid` is a process of as iOS suspends an app: tells it, waits
  /// for it, stops it, looks at its locks, and leaves it stopped, or terminates it when it
  /// holds a lock in a group container. The app is its first process and that process's
  /// descendants (``processes(ofApp:)``): on iOS an app is one process, and here every process
  /// it started is part of it. The first process is `pid` when `groupctl run` started it, else
  /// `pid`'s highest ancestor that is the same app of this root. An app stopped already is not
  /// told again (``SuspensionOutcome/wasStopped``).
  ///
  /// 1. Posts ``AppLifecycle/willSuspendNotification`` in each of the app's groups (state:
  ///    the pid) and sends ``AppLifecycle/suspensionSignal`` (SIGTSTP) to each of its
  ///    processes that handles it (`SigCgt` in `/proc/PID/status`); one that does not is not
  ///    waited for.
  /// 2. Waits `grace` at most for each of those to say it is done (``AppLifecycle``), or to
  ///    stop or exit.
  /// 3. Stops every process of the app (SIGSTOP, the first one first, then those it started
  ///    meanwhile), so that none takes a lock or starts another process while it is looked at.
  /// 4. Reads the locks they hold on files in the root's group containers and on its
  ///    keychain's lock files (``HeldLock/locks(heldBy:root:)``). None: the app stays
  ///    stopped, and the record says suspended. A lock in a group container: a line per
  ///    lock, `terminated: BUNDLE-ID (PID) held a lock on PATH in group GROUP-ID while being
  ///    suspended (0xdead10cc), held by process PID (COMMAND)`, appended to ``logURL``, and
  ///    SIGKILL to every process of the app; with `reportOnly`, the lines (`reported: …`) and
  ///    the app stays stopped. A keychain lock (``HeldLock/isKeychain``) is reported
  ///    (`reported: … held the keychain's lock …`) and never terminates the app: on a device
  ///    the keychain daemon holds it, not the app.
  ///
  /// - Throws: `.io` when there is no such process, or it cannot be signalled (the errno
  ///   text); `.invalidName` when its bundle id is unknown (no record and no
  ///   `APPGROUPS_BUNDLE_ID`).
  public func suspend(
    pid: Int32, grace: Duration = AppLifecycle.gracePeriod, reportOnly: Bool = false
  ) throws(AppGroupsError) -> SuspensionOutcome {
    guard ProcessStatus(pid: pid) != nil else { throw noSuchProcess(pid, "suspending") }
    let bundle = try appBundleIdentifier(of: pid)
    let pid = firstProcess(ofApp: pid, bundleIdentifier: bundle)
    // An app stopped already (suspended before, or stopped otherwise) is not told again: a
    // stopped process cannot handle a SIGTSTP (it stays pending until a SIGCONT discards it),
    // so the grace would be waited out for no answer. Its locks are looked at as they are.
    let wasStopped = ProcessStatus(pid: pid)?.isStopped == true
    let handshakeFolder = SuspensionHandshake.folder(root: root, bundleIdentifier: bundle)
    do {
      try FileSystem.makeDirectory(handshakeFolder, within: root.path)
    } catch {
      throw AppGroupsError(io: error, "preparing the suspension of \(bundle) (\(pid))")
    }
    func ready(_ member: Int32) -> String {
      SuspensionHandshake.readyFile(root: root, bundleIdentifier: bundle, pid: member)
    }
    func removeAnswers(_ members: [AppProcess]) {
      for member in members {
        SuspensionHandshake.removeAnswers(root: root, bundleIdentifier: bundle, pid: member.pid)
      }
    }
    let members = Self.processes(ofApp: pid)
    removeAnswers(members)
    if !wasStopped { post(AppLifecycle.willSuspendNotification, bundle: bundle, pid: pid) }

    let sent = FileSystem.monotonicNanoseconds()
    // A process with no SIGTSTP handler has no library listening: the signal would only stop
    // it (or be dropped, in an orphaned process group), and no answer would come.
    let listeners =
      wasStopped ? [] : members.filter { ProcessStatus.catches(.terminalStop, pid: $0.pid) }
    var acknowledged = false
    var heldLibraryLock = false
    if !listeners.isEmpty {
      let (seconds, attoseconds) = grace.components
      let span =
        UInt64(max(seconds, 0)) * 1_000_000_000 + UInt64(max(attoseconds, 0) / 1_000_000_000)
      let text = SuspensionHandshake.request(sent: sent, grace: span)
      var told: [Int32] = []
      for listener in listeners {
        let request = SuspensionHandshake.requestFile(
          root: root, bundleIdentifier: bundle, pid: listener.pid)
        do {
          try SuspensionHandshake.write(text, to: request)
        } catch {
          throw AppGroupsError(io: error, "asking \(bundle) (\(listener.pid)) to get ready")
        }
        if listener.pid == pid {
          try signal(pid, .terminalStop, "suspending \(bundle)")
        } else if (try? Processes.send(.terminalStop, to: listener.pid)) == nil {
          continue  // gone meanwhile
        }
        told.append(listener.pid)
      }
      acknowledged = true
      for member in told {
        _ = FileSystem.wait(for: ready(member), toAppear: true, until: sent &+ span, recheck: 20) {
          guard let status = ProcessStatus(pid: member) else { return true }
          return status.isStopped
        }
        // No ready file in time: what the app said when its drain began, a lock held.
        let held = SuspensionHandshake.heldFile(root: root, bundleIdentifier: bundle, pid: member)
        let answer = [ready(member), held].lazy.compactMap {
          SuspensionHandshake.answer(in: $0).flatMap { $0.notice >= sent ? $0 : nil }
        }.first
        if answer?.drained == false { heldLibraryLock = true }
        if answer?.drained != true && ProcessStatus(pid: member) != nil { acknowledged = false }
        try? FileSystem.remove(
          SuspensionHandshake.requestFile(root: root, bundleIdentifier: bundle, pid: member))
      }
    }
    let waited = Duration.nanoseconds(Int64(FileSystem.monotonicNanoseconds() &- sent))

    func outcome(
      _ result: SuspensionOutcome.Result, _ locks: [HeldLock] = [], _ reports: [String] = [],
      _ processes: [AppProcess] = []
    ) -> SuspensionOutcome {
      SuspensionOutcome(
        pid: pid, bundleIdentifier: bundle, result: result, wasStopped: wasStopped,
        listening: !listeners.isEmpty, acknowledged: acknowledged,
        heldLibraryLock: heldLibraryLock, waited: waited, locks: locks, reports: reports,
        processes: processes)
    }
    guard ProcessStatus(pid: pid) != nil else {
      removeAnswers(members)
      removeRecord(pid: pid)
      return outcome(.gone)
    }
    // The whole app stops before its locks are read: none is taken, and no process started,
    // while they are looked at.
    let stopped = signalApp(pid, .stop)
    for member in stopped { _ = ProcessStatus.waitUntilStopped(pid: member.pid) }
    let held = Self.locks(heldBy: Self.processes(ofApp: pid), root: root)
    let verb = reportOnly ? "reported" : "terminated"
    // A keychain lock is the library's, which a device's keychain daemon would hold: it is
    // reported, and the app is not terminated for it.
    let fatal = held.contains { !$0.lock.isKeychain }
    let reports = held.map { lock, holders in
      lock.isKeychain
        ? "reported: \(bundle) (\(pid)) held \(lock.subject) while being suspended, held by"
          + " \(Self.describe(holders)):"
          + " not 0xdead10cc (a device's keychain daemon holds this lock, not the app), but every"
          + " write to the access group waits for it until the app resumes"
        : "\(verb): \(bundle) (\(pid)) held \(lock.subject) in group \(lock.groupIdentifier)"
          + " while being suspended (0xdead10cc), held by \(Self.describe(holders))"
    }
    appendToLog(reports)
    if fatal && !reportOnly {
      let killed = signalApp(pid, .kill)
      removeAnswers(members + killed)
      removeRecord(pid: pid)
      return outcome(.terminated, held.map(\.lock), reports, killed)
    }
    if var record = liveRecord(pid: pid) {
      record.isSuspended = true
      try self.record(record)
    }
    return outcome(.suspended, held.map(\.lock), reports, stopped)
  }

  /// Resumes the app `pid` is a process of (its first process, found as
  /// ``suspend(pid:grace:reportOnly:)`` finds it): lets the library of each of its processes
  /// take its locks again (the handshake files are removed), sends SIGCONT to every one of
  /// them, the first one first, and posts ``AppLifecycle/didResumeNotification`` in each of
  /// its groups.
  ///
  /// - Returns: The app's bundle identifier and its processes, as they were before the
  ///   resume (one may exit as soon as it runs again).
  /// - Throws: `.io` when there is no such process or it cannot be signalled; `.invalidName`
  ///   when it is not an app of this device (as ``suspend(pid:grace:reportOnly:)``).
  @discardableResult
  public func resume(pid: Int32) throws(AppGroupsError) -> (
    bundleIdentifier: String, processes: [AppProcess]
  ) {
    guard ProcessStatus(pid: pid) != nil else { throw noSuchProcess(pid, "resuming") }
    let bundle = try appBundleIdentifier(of: pid)
    let pid = firstProcess(ofApp: pid, bundleIdentifier: bundle)
    let members = Self.processes(ofApp: pid)
    for member in members {
      SuspensionHandshake.removeAnswers(root: root, bundleIdentifier: bundle, pid: member.pid)
    }
    try signal(pid, .continue, "resuming \(bundle)")
    _ = signalApp(pid, .continue)
    if var record = liveRecord(pid: pid), record.isSuspended {
      record.isSuspended = false
      try self.record(record)
    }
    post(AppLifecycle.didResumeNotification, bundle: bundle, pid: pid)
    return (bundle, members)
  }

  /// The log's lines, oldest first; empty when there is none. A log grown past 4 MiB is read
  /// for its newest lines.
  public func logLines() -> [String] {
    FileSystem.logLines(logURL.path).map(String.init)
  }

  // MARK: Helpers

  /// Posts `name` in every group of `bundle` (best effort: an app outside the manifest, or a
  /// group that cannot be written, is told by the signal alone).
  private func post(_ name: String, bundle: String, pid: Int32) {
    guard let manifest = try? EntitlementManifest.load(root: root),
      let identity = try? AppIdentity(bundleIdentifier: bundle)
    else { return }
    for group in manifest.groups(for: bundle) {
      let center = try? GroupNotificationCenter(
        groupIdentifier: group, identity: identity, root: root)
      try? center?.post(name, state: UInt64(pid))
    }
  }

  private func appendToLog(_ lines: [String]) {
    guard !lines.isEmpty else { return }
    let stamp = ISO8601DateFormatter().string(from: Date())
    let text = lines.map { "\(stamp) \($0)\n" }.joined()
    try? FileSystem.makeDirectory(runFolderURL.path, within: root.path)
    FileSystem.append(text, to: logURL.path)
  }

  private func signal(
    _ pid: Int32, _ signal: Processes.Signal, _ what: String
  ) throws(AppGroupsError) {
    do {
      try Processes.send(signal, to: pid)
    } catch {
      throw AppGroupsError(io: error, "\(what) (\(pid))")
    }
  }

  /// Said in the user's words, not the probe's (`kill(/proc/N): No such process`).
  private func noSuchProcess(_ pid: Int32, _ what: String) -> AppGroupsError {
    AppGroupsError(.io, "\(what) \(pid): there is no process \(pid): it has ended, or never ran")
  }
}

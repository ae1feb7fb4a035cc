import Foundation

/// How one app ended when the device restarted (``Device/reboot(grace:)``).
public struct RebootTermination: Sendable, Hashable {
  /// How the app's process ended.
  public enum Ending: String, Sendable, Hashable {
    /// It exited after SIGTERM, within the grace period.
    case exited
    /// It was still running at the end of the grace period: SIGKILL.
    case killed
    /// It could not be signalled (it belongs to another user); it still runs.
    case survived
  }

  /// The app's run record.
  public let record: RunRecord
  /// How it ended.
  public let ending: Ending
}

extension Device {
  /// The device's lock state and passcode now (see ``DeviceState``).
  public var state: DeviceState { DeviceState.current(root: root) }

  /// Locks the device, as pressing the side button does.
  ///
  /// With a passcode, protected data of class `complete` stays available for `grace`, then
  /// goes: its key, in the kernel's keyring, expires then (the kernel frees it), and the
  /// library refuses the class from that moment. Every running app hears
  /// ``ProtectedData/willBecomeUnavailableNotification`` at once. Without a passcode the
  /// device is locked but nothing becomes unavailable, as on a device without one.
  ///
  /// A device locked already keeps its lock; a grace of that lock still running that would
  /// end later than `grace` from now is cut short to end then (`.zero`: class `complete`
  /// goes at once). A longer `grace` never lengthens it.
  ///
  /// - Parameter grace: How long class `complete` stays available (iOS: 10 s).
  /// - Returns: Whether the device was unlocked (`false`: it was already locked, or had not
  ///   been unlocked since it started; nothing changed but a grace cut short).
  /// - Throws: `.lockTimeout` when another process held the device's lock for 5 s; `.io`
  ///   when the device state cannot be written.
  @discardableResult
  public func lock(grace: Duration = DeviceState.defaultGrace) throws(AppGroupsError) -> Bool {
    try lockTelling(grace: grace) == .locked
  }

  /// What ``lock(grace:)`` did.
  package enum LockChange: Sendable, Equatable {
    /// The device was unlocked, and is locked now.
    case locked
    /// The device was locked already, with a grace that ran longer: it ends `grace` from now.
    case graceShortened
    /// The device was locked already, with a grace still running that ends no later than
    /// the one asked for: it is kept, and `left` of it remained when the lock was asked.
    case graceKept(left: Duration)
    /// The device was locked already (or before its first unlock): nothing changed.
    case unchanged
  }

  /// ``lock(grace:)``, saying what it did.
  package func lockTelling(grace: Duration) throws(AppGroupsError) -> LockChange {
    let file = try DeviceStateFile(root: root)
    var failure: DeviceKeyring.Failure?
    let change = try file.transition { record throws(AppGroupsError) -> LockChange in
      let now = DeviceState.now()
      let nanoseconds = DeviceState.nanoseconds(grace)
      let change: LockChange
      switch record.lockState {
      case .beforeFirstUnlock:
        return .unchanged
      case .locked:
        // A grace still running that ends after the one asked for is cut short; one that
        // ends as soon or sooner is kept.
        let end = record.lockedAt &+ record.grace
        guard record.hasPasscode, now >= record.lockedAt, now < end else { return .unchanged }
        guard now &+ nanoseconds < end else {
          return .graceKept(left: .nanoseconds(Int64(clamping: end &- now)))
        }
        record.grace = now &+ nanoseconds &- record.lockedAt
        change = .graceShortened
      case .unlocked:
        record.lockState = .locked
        record.lockedAt = now
        record.grace = nanoseconds
        guard record.hasPasscode else { return .locked }
        record.lockCount &+= 1
        change = .locked
      }
      let keyring = DeviceKeyring(deviceIdentifier: record.deviceIdentifier, rootPath: root.path)
      do throws(DeviceKeyring.Failure) {
        try keyring.expire(
          DeviceKeyring.unlockedOnlyNames, session: record.bootSession, after: grace)
      } catch {
        if !error.isUnavailable { failure = error }
      }
      return change
    }
    if let failure {
      // The device is locked and the library refuses the class after the grace; only the
      // kernel's own expiry of the key could not be set.
      Diagnostics.report("locking \(root.path): \(failure.message)")
    }
    return change
  }

  /// Restarts the device, as a shutdown and a start do.
  ///
  /// 1. Every app `groupctl run` started and that still runs is told: SIGTERM to each of its
  ///    processes (a suspended app is resumed first), on which the library lands its pending
  ///    changes and the process exits. A process still running after `grace` is killed
  ///    (SIGKILL). Their run records go. An app launched meanwhile is told in turn.
  /// 2. Every key of the device leaves the kernel's keyring.
  /// 3. The device starts again: `before-first-unlock` with a passcode, `unlocked` without;
  ///    ``DeviceState/bootSession`` moves.
  ///
  /// A process that `groupctl run` did not start keeps running, and hears the new state; on
  /// a device every process ends at a shutdown. Such a process is treated as one started in
  /// the new boot: each suite it holds open as an app becomes one opened before the first
  /// unlock (``GroupDefaults/unavailableReason``) as soon as it hears the reboot, and a commit
  /// already under way asks the device again under the suite's lock just before it writes,
  /// so its writes stay in its memory and land at the first unlock; its keychain calls and
  /// ``FileProtection`` reads are refused from the reboot on. What it had already read (the
  /// suites' values, a secret, an open file handle) stays in its memory.
  ///
  /// - Parameter grace: How long the apps have to exit after SIGTERM (default 5 s).
  /// - Returns: How each app ended.
  /// - Throws: `.lockTimeout` or `.io` when the device state cannot be written (the apps were
  ///   terminated by then).
  @discardableResult
  public func reboot(grace: Duration = .seconds(5)) throws(AppGroupsError) -> [RebootTermination] {
    let terminations = terminateApps(grace: grace)
    let file = try DeviceStateFile(root: root)
    var failure: DeviceKeyring.Failure?
    try file.transition { record throws(AppGroupsError) in
      let keyring = DeviceKeyring(deviceIdentifier: record.deviceIdentifier, rootPath: root.path)
      do throws(DeviceKeyring.Failure) {
        try keyring.removeAll()
      } catch {
        if !error.isUnavailable { failure = error }
      }
      record.restart()
    }
    if let failure {
      // The keys of the last session are unreachable all the same: their descriptions name it.
      Diagnostics.report("rebooting \(root.path): \(failure.message)")
    }
    return terminations
  }

  /// Tells every running app of the device to end, each of its processes (the one `groupctl
  /// run` started and its descendants, as ``suspend(pid:grace:reportOnly:)`` stops them all),
  /// waits `grace` for them, kills the rest. An app launched meanwhile is told in turn (a few
  /// rounds at most): none is left running into the new boot.
  private func terminateApps(grace: Duration) -> [RebootTermination] {
    var terminations: [RebootTermination] = []
    var told: Set<Int32> = []
    for _ in 0..<3 {
      let apps = runningApps().filter { !told.contains($0.record.pid) }
      if apps.isEmpty { break }
      told.formUnion(apps.map(\.record.pid))
      terminations += terminate(apps, grace: grace)
    }
    return terminations
  }

  private func terminate(_ apps: [RunningApp], grace: Duration) -> [RebootTermination] {
    // Each process of each app, with a descriptor of it: a pid handed out again is never
    // waited for. The first process of an app first.
    var watched: [(app: Int, handle: ProcessHandle)] = []
    var survivors: [RunRecord] = []
    var records: [RunRecord] = []
    for app in apps {
      let record = app.record
      guard Self.isLive(record), (try? ProcessHandle(pid: record.pid)) != nil else { continue }
      if app.state != .running { _ = try? resume(pid: record.pid) }
      let members = Self.processes(ofApp: record.pid)
      let handles = members.compactMap { try? ProcessHandle(pid: $0.pid) }
      do {
        try Processes.send(.terminate, to: record.pid)
      } catch {
        survivors.append(record)
        continue
      }
      records.append(record)
      for handle in handles {
        if handle.pid != record.pid { try? Processes.send(.terminate, to: handle.pid) }
        watched.append((records.count - 1, handle))
      }
    }
    var ended = ProcessHandle.waitForExit(
      watched.map(\.handle), until: FileSystem.deadline(after: grace))
    var killed: Set<Int> = []
    for (index, entry) in watched.enumerated() where !ended.contains(index) {
      try? Processes.send(.kill, to: entry.handle.pid)
      killed.insert(entry.app)
    }
    if !killed.isEmpty {
      ended.formUnion(
        ProcessHandle.waitForExit(
          watched.map(\.handle), until: FileSystem.deadline(after: .seconds(2))))
    }
    var terminations: [RebootTermination] = []
    for (index, record) in records.enumerated() {
      removeRecord(pid: record.pid)
      terminations.append(
        RebootTermination(record: record, ending: killed.contains(index) ? .killed : .exited))
    }
    terminations += survivors.map { RebootTermination(record: $0, ending: .survived) }
    return terminations
  }
}

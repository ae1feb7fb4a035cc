import Foundation

/// One process of an app: the one `groupctl run` started, or one of its descendants.
///
/// On iOS an app is one process. Here a program may start others (a helper, a shell
/// pipeline, a database tool), and they are the app as much as it is: `groupctl suspend`
/// stops them all, a lock any of them holds in a group container terminates them all
/// (0xdead10cc), and `groupctl resume` continues them all.
public struct AppProcess: Sendable, Hashable, CustomStringConvertible {
  /// The process id.
  public let pid: Int32
  /// Its parent's process id.
  public let parentID: Int32
  /// Its command name, as the kernel keeps it (`/proc/PID/comm`: 15 bytes at most).
  public let command: String
  /// Whether it is stopped, however it was stopped.
  public let isStopped: Bool

  /// `PID (COMMAND)`.
  public var description: String { "\(pid) (\(command))" }

  init(_ status: ProcessStatus) {
    pid = status.pid
    parentID = status.parentID
    command = status.name
    isStopped = status.isStopped
  }
}

extension Device {
  /// The processes of the app whose first process is `pid`: it, then its descendants,
  /// breadth first, found through the parent of each process in `/proc/PID/stat`. Empty when
  /// `pid` is gone.
  ///
  /// A descendant that leaves its session or process group (`setsid`) stays a descendant.
  /// One that double-forks, whose parent then exits, is handed by the kernel to the nearest
  /// ancestor that is a child subreaper: `groupctl run` makes the app's first process one
  /// (`PR_SET_CHILD_SUBREAPER`), so such a process stays in the app while the app runs. A
  /// process that turns that off, or a process started otherwise, can still leave the tree
  /// with a double fork; `groupctl doctor --locks` looks for such processes that carry the
  /// app's identity.
  ///
  /// See: man 5 proc (`/proc/pid/stat`), man 2 prctl (`PR_SET_CHILD_SUBREAPER`).
  public static func processes(ofApp pid: Int32) -> [AppProcess] {
    guard let first = ProcessStatus(pid: pid) else { return [] }
    var children: [Int32: [ProcessStatus]] = [:]
    for other in ProcessStatus.allPIDs() where other != pid {
      guard let status = ProcessStatus(pid: other) else { continue }
      children[status.parentID, default: []].append(status)
    }
    var found = [first]
    var seen: Set<Int32> = [pid]
    var index = 0
    while index < found.count {
      for child in children[found[index].pid] ?? [] where seen.insert(child.pid).inserted {
        found.append(child)
      }
      index += 1
    }
    return found.map(AppProcess.init)
  }

  /// The first process of the app `pid` is a process of: `pid` when it has a live record
  /// (`groupctl run` started it), else its highest ancestor that is the same app of this root
  /// (the same bundle identifier, through a record or `APPGROUPS_BUNDLE_ID` and
  /// `APPGROUPS_ROOT`), stopping at one with a live record. A child of an app given by its
  /// pid is so the whole app, as on iOS, where an app is one process.
  func firstProcess(ofApp pid: Int32, bundleIdentifier bundle: String) -> Int32 {
    var first = pid
    var seen: Set<Int32> = [pid]
    while liveRecord(pid: first) == nil, let parent = ProcessStatus(pid: first)?.parentID,
      parent > 1, parent != Processes.currentID, seen.insert(parent).inserted,
      (try? appBundleIdentifier(of: parent)) == bundle
    {
      first = parent
    }
    return first
  }

  /// Sends `signal` to every process of the app whose first process is `pid`, the first one
  /// first, and again to those that appeared meanwhile (a process that was forking), until
  /// no new one appears (100 rounds at most). Returns the processes signalled.
  func signalApp(_ pid: Int32, _ signal: Processes.Signal) -> [AppProcess] {
    var signalled: [AppProcess] = []
    var seen: Set<Int32> = []
    for _ in 0..<100 {
      let fresh = Self.processes(ofApp: pid).filter { !seen.contains($0.pid) }
      if fresh.isEmpty { break }
      for process in fresh {
        seen.insert(process.pid)
        // One that exited meanwhile is not an error.
        if (try? Processes.send(signal, to: process.pid)) != nil { signalled.append(process) }
      }
    }
    return signalled
  }

  /// Every lock the processes hold on files in the root's group containers, each lock once,
  /// with every process that holds it (an `flock` lock inherited through `fork` is held by
  /// each process that has the file open).
  static func locks(
    heldBy processes: [AppProcess], root: ContainerRoot
  ) -> [(lock: HeldLock, holders: [AppProcess])] {
    merge(processes.flatMap { HeldLock.locks(heldBy: $0.pid, root: root) }, processes: processes)
  }

  /// `locks` with each lock once (the same kind, mode and first byte of the same file), with
  /// the processes of `processes` that hold it, in the order `locks` first names each.
  static func merge(
    _ locks: [HeldLock], processes: [AppProcess]
  ) -> [(lock: HeldLock, holders: [AppProcess])] {
    var result: [(lock: HeldLock, holders: [AppProcess])] = []
    for lock in locks {
      let holder = processes.first { $0.pid == lock.pid }
      if let index = result.firstIndex(where: {
        $0.lock.path == lock.path && $0.lock.kind == lock.kind && $0.lock.start == lock.start
          && $0.lock.isExclusive == lock.isExclusive
      }) {
        if let holder { result[index].holders.append(holder) }
      } else {
        result.append((lock, holder.map { [$0] } ?? []))
      }
    }
    return result
  }

  /// How a report names the processes holding a lock: `process 4054 (sqlite3)`, or
  /// `processes 4053 (sh) and 4054 (sqlite3)`.
  public static func describe(_ holders: [AppProcess]) -> String {
    let names = holders.map(\.description)
    guard names.count > 1 else { return "process " + (names.first ?? "?") }
    return "processes " + names.dropLast().joined(separator: ", ") + " and " + (names.last ?? "")
  }
}

extension Device {
  /// The live app each process of the device belongs to: every process of every live app
  /// (``processes(ofApp:)``), by pid, with the app's record.
  public func appsByProcess() -> [Int32: RunRecord] {
    var apps: [Int32: RunRecord] = [:]
    for record in allRecords() where Self.isLive(record) {
      for process in Self.processes(ofApp: record.pid) where apps[process.pid] == nil {
        apps[process.pid] = record
      }
    }
    return apps
  }

  /// The processes that escaped a suspended app: each carries the app's identity
  /// (`APPGROUPS_BUNDLE_ID`, and `APPGROUPS_ROOT` naming this root, in `/proc/PID/environ`),
  /// is in no live app's process tree, is not stopped, and holds a lock on a file in a group
  /// container, while an app of that identity is suspended. Every other member of the group
  /// waits for such a lock for as long as the app stays suspended.
  public func escapedProcessesHoldingLocks() -> [(
    bundleIdentifier: String, process: AppProcess, locks: [HeldLock]
  )] {
    let suspended = Set(
      allRecords().filter { $0.isSuspended && Self.isLive($0) }.map(\.bundleIdentifier))
    guard !suspended.isEmpty else { return [] }
    let members = appsByProcess()
    return ProcessStatus.allPIDs().compactMap { pid in
      guard pid != Processes.currentID, members[pid] == nil,
        let bundle = ProcessStatus.environmentValue(AppIdentity.environmentVariable, pid: pid),
        suspended.contains(bundle),
        ProcessStatus.environmentValue(ContainerRoot.environmentVariable, pid: pid) == root.path,
        let status = ProcessStatus(pid: pid), !status.isStopped
      else { return nil }
      let locks = HeldLock.locks(heldBy: pid, root: root)
      return locks.isEmpty ? nil : (bundle, AppProcess(status), locks)
    }
  }
}

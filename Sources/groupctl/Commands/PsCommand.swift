import AppGroups
import Foundation

/// `groupctl ps`
struct PsCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "ps",
    abstract: "List the apps running on the device, their state and the locks they hold.",
    arguments: [],
    discussion: """
      Lists the processes 'groupctl run' launched (their records in <root>/Run), one \
      line each: PID, STATE, BUNDLE-ID and executable, then one indented line per lock \
      the process holds on a file in a group container (flock, POSIX or OFD; read from \
      /proc/PID/fdinfo). The app is the process 'groupctl run' started and every process \
      it started in turn: each of those follows as a 'process:' line (PID, running or \
      stopped, command), and a lock one of them holds says which. STATE is running, \
      suspended (by 'groupctl suspend') or stopped \
      (by anything else: such a process holding a lock is the hazard 'groupctl doctor \
      --locks' reports).

      Records whose process is gone, or whose pid now names another process (its start \
      time differs), are removed. The apps terminated for holding a lock while being \
      suspended (0xdead10cc) follow, from <root>/Run/lifecycle.log.
      """
  )

  let arguments: Arguments

  func validate() throws {
    try globals.requireAdministrator("ps")
  }

  /// The presenters and coordinated accesses of processes `groupctl run` did not launch,
  /// and the presenters reported for not answering.
  private func printCoordination(
    presenters: [CoordinationStatus.Presenter], apps: Set<Int32>, root: ContainerRoot
  ) {
    let others = presenters.filter { !apps.contains($0.pid) }
    let accesses = CoordinationStatus.accesses(root: root).filter { !apps.contains($0.pid) }
    if !others.isEmpty || !accesses.isEmpty {
      printOut("")
      printOut("Other processes (file coordination):")
      for presenter in others { printOut("  \(presenter)") }
      for access in accesses { printOut("  \(access)") }
    }
    let unanswered = CoordinationStatus.reports(root: root)
    if !unanswered.isEmpty {
      printOut("")
      printOut("Unanswered presenters (\(Device(root: root).logURL.path) and the containers' Library/Coordination/log):")
      for line in unanswered.suffix(10) { printOut("  \(line)") }
    }
  }

  func run() throws {
    let root = globals.containerRoot
    warnIfMissing(root)
    let device = Device(root: root)
    let apps = device.runningApps()
    let presenters = CoordinationStatus.presenters(root: root).filter(\.isLive)
    printOut("PID\tSTATE\tBUNDLE-ID\tEXECUTABLE")
    for app in apps {
      let record = app.record
      // The executable's path and a process's name are the app's to choose: shown so that
      // a newline or a tab in them cannot forge a line or a column.
      printOut(
        "\(record.pid)\t\(app.state.rawValue)\t\(record.bundleIdentifier)\t\(PrintedText.shown(record.executable))")
      for process in app.processes.dropFirst() {
        let state = process.isStopped ? "stopped" : "running"
        printOut("  process: \(process.pid)\t\(state)\t\(PrintedText.shown(process.command))")
      }
      for (lock, holders) in app.distinctLocks {
        guard holders.map(\.pid) != [record.pid] else {
          printOut("  lock: \(lock)")
          continue
        }
        printOut("  lock: \(lock), held by \(holders.isEmpty ? "process \(lock.pid)" : Device.describe(holders))")
      }
      let pids = Set(app.processes.map(\.pid) + [record.pid])
      for presenter in presenters where pids.contains(presenter.pid) {
        printOut("  presents: \(presenter.shownPath)\(presenter.isFolder ? " (folder)" : "")")
      }
    }
    let appPIDs = Set(apps.flatMap { $0.processes.map(\.pid) + [$0.record.pid] })
    printCoordination(presenters: presenters, apps: appPIDs, root: root)
    let terminations = device.logLines().filter { $0.contains(" terminated: ") }
    if !terminations.isEmpty {
      printOut("")
      printOut("Terminated (\(device.logURL.path)):")
      for line in terminations.suffix(10) { printOut("  \(line)") }
    }
  }
}

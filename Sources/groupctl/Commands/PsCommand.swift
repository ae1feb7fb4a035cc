import AppGroups
import Foundation

/// `groupctl ps`
struct PsCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "ps",
    abstract: "List the apps running on the device, their state and the locks they hold.",
    usage: "ps",
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

  let globals: GlobalOptions

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
  }

  func validate() throws {
    try globals.requireAdministrator("ps")
  }

  func run() throws {
    let root = globals.containerRoot
    warnIfMissing(root)
    let device = Device(root: root)
    let apps = device.runningApps()
    printOut("PID\tSTATE\tBUNDLE-ID\tEXECUTABLE")
    for app in apps {
      let record = app.record
      printOut("\(record.pid)\t\(app.state.rawValue)\t\(record.bundleIdentifier)\t\(record.executable)")
      for process in app.processes.dropFirst() {
        let state = process.isStopped ? "stopped" : "running"
        printOut("  process: \(process.pid)\t\(state)\t\(process.command)")
      }
      for lock in app.locks {
        guard lock.pid != record.pid else {
          printOut("  lock: \(lock)")
          continue
        }
        let holder = app.processes.first { $0.pid == lock.pid }.map(\.description) ?? "\(lock.pid)"
        printOut("  lock: \(lock), held by process \(holder)")
      }
    }
    let terminations = device.logLines().filter { $0.contains(" terminated: ") }
    if !terminations.isEmpty {
      printOut("")
      printOut("Terminated (\(device.logURL.path)):")
      for line in terminations.suffix(10) { printOut("  \(line)") }
    }
  }
}

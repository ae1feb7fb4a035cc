import AppGroups
import Foundation

/// `groupctl suspend BUNDLE-ID|PID [--grace SECONDS] [--report-only]`
struct SuspendCommand: ParsableCommand {
  static let target = Argument.positional("BUNDLE-ID|PID")
  static let grace = Argument.option(
    "--grace", value: "SECONDS", help: "How long the app has to get ready (default 5; 0 to 60).")
  static let reportOnly = Argument.flag(
    "--report-only", help: "Report the locks held, and suspend instead of terminating.")

  static let configuration = CommandConfiguration(
    commandName: "suspend",
    abstract: "Suspend an app as iOS does, terminating it if it holds a lock (0xdead10cc).",
    arguments: [target, grace, reportOnly],
    discussion: """
      Tells the app it is about to be suspended: posts \
      \(AppLifecycle.willSuspendNotification) in each of its groups and sends it SIGTSTP, \
      which the library turns into its suspension callbacks (AppLifecycle); a process \
      that does not handle SIGTSTP is not sent it, nor waited for. Waits the \
      grace period, or until the app says it is done (its GroupDefaults commits landed, \
      its background activities ended), or stops itself, then looks at the locks it \
      holds on files in group containers:

        none      SIGSTOP: the app is suspended ('groupctl ps' says so)
        a lock    SIGKILL: the app is terminated, as iOS terminates it

      The app is the process 'groupctl run' started and every process it started in \
      turn (found through their parents in /proc; 'run' makes the first one a child \
      subreaper, so a process that double-forks stays in it): each process that handles \
      SIGTSTP is told and waited for, all are stopped (SIGSTOP) before their locks are \
      read, and a lock held by any of them terminates them all (SIGKILL).

      A termination is said on stderr and in <root>/Run/lifecycle.log, one line per \
      lock: "terminated: BUNDLE-ID (PID) held a lock on PATH in group GROUP-ID while \
      being suspended (0xdead10cc), held by process PID (COMMAND)".

      With --report-only, the lines say 'reported:' and the app is suspended instead. \
      stdout says what happened, how long the app took to answer, and whether it \
      answered. BUNDLE-ID names the app's one running process ('groupctl ps'); a PID \
      without a record is accepted when its environment has APPGROUPS_BUNDLE_ID and \
      APPGROUPS_ROOT names this root (an app of another root is refused: its locks are \
      that root's).

      Exits with 0 when the app is suspended, 1 when it is not (terminated, gone, or it \
      could not be signalled).
      """
  )

  let arguments: Arguments
  let target: AppTarget
  let grace: Duration

  init(arguments: Arguments) throws {
    self.arguments = arguments
    grace = try arguments[Self.grace].map { text throws(ValidationError) in
      try .seconds(text, of: "--grace", from: 0, upTo: 60)
    } ?? AppLifecycle.gracePeriod
    target = try AppTarget(parsing: arguments[Self.target])
  }

  func validate() throws {
    try globals.requireAdministrator("suspend")
  }

  func run() throws {
    let device = Device(root: globals.containerRoot)
    let pid = try target.resolve(on: device)
    let outcome = try device.suspend(pid: pid, grace: grace, reportOnly: arguments[Self.reportOnly])
    for line in outcome.reports { printError(line) }
    let others = outcome.processes.filter { $0.pid != outcome.pid }.count
    let app =
      "\(outcome.bundleIdentifier) (\(outcome.pid))"
      + (others == 0 ? "" : " and \(others) other process\(others == 1 ? "" : "es")")
    let milliseconds = Double(outcome.waited.components.attoseconds) / 1e15
      + Double(outcome.waited.components.seconds) * 1000
    let answer =
      outcome.wasStopped
      ? "stopped already"
      : !outcome.listening
      ? "not listening (it does not handle SIGTSTP)"
      : outcome.acknowledged
        ? String(format: "ready after %.1f ms", milliseconds)
        : outcome.heldLibraryLock
          ? String(format: "answered in %.1f ms with a lock of the library still held", milliseconds)
          : String(format: "no answer in %.1f ms", milliseconds)
    switch outcome.result {
    case .suspended:
      ChangeMade.record("the app is suspended")
      printOut("suspended: \(app), \(answer)")
    case .terminated:
      ChangeMade.record("the app is terminated")
      printOut("terminated: \(app), \(answer)")
      throw ExitCode.failure
    case .gone:
      throw CommandFailure("\(app) exited before it could be suspended")
    }
  }
}

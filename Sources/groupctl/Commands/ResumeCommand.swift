import AppGroups
import Foundation

/// `groupctl resume BUNDLE-ID|PID`
struct ResumeCommand: ParsableCommand {
  static let target = Argument.positional("BUNDLE-ID|PID")

  static let configuration = CommandConfiguration(
    commandName: "resume",
    abstract: "Resume a suspended app.",
    arguments: [target],
    discussion: """
      Lets the app's library take its locks again, sends SIGCONT to each of the app's \
      processes (the one 'groupctl run' started, then its descendants), and posts \
      \(AppLifecycle.didResumeNotification) in each of the app's groups. An app that \
      watches its suites sees what changed while it was suspended (the example widget \
      re-renders once, through refreshIfChanged()). Exits with 1 when there is no such \
      process, it is not an app of this root (as for 'groupctl suspend'), or it cannot be \
      signalled.
      """
  )

  let arguments: Arguments
  let target: AppTarget

  init(arguments: Arguments) throws {
    self.arguments = arguments
    target = try AppTarget(parsing: arguments[Self.target])
  }

  func validate() throws {
    try globals.requireAdministrator("resume")
  }

  func run() throws {
    let device = Device(root: globals.containerRoot)
    let pid = try target.resolve(on: device)
    let (bundle, processes) = try device.resume(pid: pid)
    ChangeMade.record("the app is resumed")
    let others = max(processes.count - 1, 0)
    let more = others == 0 ? "" : " and \(others) other process\(others == 1 ? "" : "es")"
    printOut("resumed: \(bundle) (\(processes.first?.pid ?? pid))\(more)")
  }
}

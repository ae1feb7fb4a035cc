/// `groupctl doctor`
struct DoctorCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "doctor",
    abstract: "Check the root, manifest, containers and preferences files for problems.",
    usage: "doctor",
    discussion: """
      Reports unreadable or quarantined preferences files, stale locks, folders with \
      the wrong permissions, symbolic links that leave the root, and manifest entries \
      that name missing executables. Exits with 1 when it finds a problem.
      """
  )

  let globals: GlobalOptions

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
  }

  func run() throws {
    try notImplemented()
  }
}

/// `groupctl container BUNDLE-ID [app | groups | GROUP-ID]`
struct ContainerCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "container",
    abstract: "Print the path of an app's data container or of its group containers.",
    usage: "container BUNDLE-ID [app | groups | GROUP-ID]",
    discussion: """
      app (the default) prints the app's own data container; groups prints one line \
      per group the app holds: GROUP-ID, a tab, and the path; GROUP-ID prints that \
      group's container, if the app is entitled to it.
      """
  )

  /// Which container to print.
  enum Selection: Hashable, Sendable {
    case app
    case groups
    case group(String)
  }

  let globals: GlobalOptions
  let bundleID: String
  let selection: Selection

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    bundleID = try arguments.positional("BUNDLE-ID")
    switch try arguments.optionalPositional("app | groups | GROUP-ID") {
    case nil, "app": selection = .app
    case "groups": selection = .groups
    case let word? where word.hasPrefix("group."): selection = .group(word)
    case let word?:
      throw ValidationError("'\(word)' is not app, groups or a group id (group.…)")
    }
  }

  func run() throws {
    try notImplemented()
  }
}

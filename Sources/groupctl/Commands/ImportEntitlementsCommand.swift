/// `groupctl import-entitlements BUNDLE-ID FILE.entitlements`
struct ImportEntitlementsCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "import-entitlements",
    abstract: "Entitle an app to the groups listed in an Xcode .entitlements file.",
    usage: "import-entitlements BUNDLE-ID FILE.entitlements",
    discussion: """
      Reads com.apple.security.application-groups from the property list and grants \
      each group to BUNDLE-ID, as grant does. Other entitlements are ignored.
      """
  )

  let globals: GlobalOptions
  let bundleID: String
  let path: String

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
    bundleID = try arguments.positional("BUNDLE-ID")
    path = try arguments.positional("FILE.entitlements")
  }

  func run() throws {
    try notImplemented()
  }
}

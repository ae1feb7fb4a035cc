import AppGroups
import Foundation

/// `groupctl _sandboxed --as BUNDLE-ID [--best-effort] -- ARGS...`: a hidden
/// command that runs `groupctl --as BUNDLE-ID ARGS...` inside BUNDLE-ID's
/// sandbox. `doctor --sharing` makes its round trip through it, so that each
/// app's write and read meet the kernel's rules as the app's own process would.
///
/// `run` cannot do this: it refuses a program other than the one the manifest
/// binds the app to, and `groupctl` is not it. Here `groupctl --as` acts for
/// the app as the administrator does, with the app's entitlements and sandbox.
struct SandboxedCommand: ParsableCommand {
  static let bestEffort = Argument.flag(
    "--best-effort", help: "Without Landlock, run unconfined instead of failing.")
  static let words = Argument.passthrough("ARGS")

  static let configuration = CommandConfiguration(
    commandName: "_sandboxed",
    abstract: "Run groupctl --as BUNDLE-ID ARGS inside BUNDLE-ID's sandbox.",
    arguments: [bestEffort, words],
    usage: "_sandboxed --as BUNDLE-ID [--best-effort] -- ARGS...",
    isHidden: true
  )

  let arguments: Arguments

  init(arguments: Arguments) throws {
    self.arguments = arguments
    guard !arguments[Self.words].isEmpty else { throw ValidationError("missing ARGS after '--'") }
  }

  func validate() throws {
    guard globals.identity != nil else { throw ValidationError("_sandboxed needs --as BUNDLE-ID") }
  }

  func run() throws {
    guard let identity = try globals.appIdentity() else { return }
    guard let groupctl = Paths.realPath("/proc/self/exe") else {
      throw CommandFailure("cannot find groupctl's own executable (/proc/self/exe)")
    }
    let root = globals.containerRoot
    try RunCommand.confineAndExec(
      identity: identity, root: root, path: groupctl,
      arguments: ["groupctl", "--root", root.path, "--as", identity.bundleIdentifier]
        + arguments[Self.words],
      readOnly: [], readWrite: [], bestEffort: arguments[Self.bestEffort], verbose: false)
  }
}

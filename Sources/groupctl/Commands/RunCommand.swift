import AppGroups
import AppGroupsKeybag
import Foundation

/// `groupctl run --as BUNDLE-ID [--ro PATH]… [--rw PATH]… [--best-effort] [--background] [-v]
/// -- COMMAND …`
struct RunCommand: ParsableCommand {
  static let readOnly = Argument.repeatableOption(
    "--ro", value: "PATH",
    help: "Also allow reading PATH (a file or folder), and running the programs in it when it is"
      + " outside the root; repeatable.")
  static let readWrite = Argument.repeatableOption(
    "--rw", value: "PATH", help: "Also allow reading and writing PATH; repeatable.")
  static let bestEffort = Argument.flag(
    "--best-effort", help: "Without Landlock, run COMMAND unconfined (and say so) instead of failing.")
  static let background = Argument.flag(
    "--background", help: "Launch COMMAND in the background, as iOS prewarms an app (ActivePrewarm=1).")
  static let verbose = Argument.flag(
    "-v", "--verbose", help: "Print the Landlock ABI and the ruleset on stderr.")
  static let command = Argument.passthrough("COMMAND")

  static let configuration = CommandConfiguration(
    commandName: "run",
    abstract: "Run a command as an app, confined by the kernel to the app's containers.",
    arguments: [readOnly, readWrite, bestEffort, background, verbose, command],
    usage:
      "run --as BUNDLE-ID [--ro PATH]... [--rw PATH]... [--best-effort] [--background] [-v]"
      + " -- COMMAND [ARGS...]",
    discussion: """
      Runs COMMAND with APPGROUPS_BUNDLE_ID, APPGROUPS_ROOT and TMPDIR set, inside a \
      Landlock sandbox, as an app runs inside Apple's App Sandbox: the kernel then \
      refuses (EACCES, to root too) every file outside what the sandbox allows.

        read-write    the app's own container, with TMPDIR (its tmp folder) inside
                      it; every group container the manifest entitles the app to;
                      each --rw PATH
        read-only     the manifest; the global and managed preferences; the device
                      state (<root>/Device); /proc; a few files of /etc; /dev/random
                      and /dev/urandom; each --ro PATH
        read-execute  /usr, /lib*, /bin, /sbin; the Swift runtime's folder; COMMAND's
                      folder, unless it is inside the root (or holds it: then COMMAND
                      alone); each file COMMAND needs to start: its #! interpreters,
                      ELF interpreter and libraries (DT_NEEDED through DT_RPATH,
                      LD_LIBRARY_PATH, DT_RUNPATH, ld.so.cache); an interpreter's
                      PREFIX/lib when it lives outside the system folders
        write         the global preferences' lock file (alone); /dev/null,
                      /dev/zero, /dev/full, /dev/tty

      Everything else is denied: another app's container, a group the app is not \
      entitled to, the rest of the root, the manifest for writing. No rule ever names \
      a folder that holds the root: such a system folder is allowed entry by entry \
      around it, and --ro or --rw of one is refused. COMMAND gets standard input, \
      output and error as they are, and no other descriptor of the caller. From Landlock ABI \
      6 on, COMMAND also cannot signal processes outside the sandbox or connect to \
      their abstract Unix sockets (EPERM). Containers that \
      do not exist yet are created first. When the manifest binds the app to an \
      executable, COMMAND must be that executable. COMMAND without a / is looked up \
      in PATH. The sandbox is kept by every process COMMAND starts, and cannot be lifted.

      The highest Landlock ABI the kernel offers is used; -v prints it and the rules \
      on stderr. Without Landlock, run fails with status 1, unless --best-effort, which \
      runs COMMAND unconfined and says so on stderr. APPGROUPS_LANDLOCK_UNAVAILABLE=1 \
      makes groupctl behave as if the kernel had no Landlock.

      The launch is recorded in <root>/Run/PID.plist (bundle id, pid, start time, \
      executable) for 'groupctl ps', 'suspend' and 'resume'; COMMAND runs as this very \
      process (execve), so the record stays when it exits and is removed by the next \
      command that finds its process gone or its pid reused.

      With --background, COMMAND is launched as iOS launches an app in the background \
      (prewarming, a push, a widget's refresh): ActivePrewarm=1 in its environment \
      (AppLifecycle.isPrewarmed), whatever the device state, before the first unlock too, \
      when the app's suites and most of its files cannot be read yet (see 'groupctl \
      device'). Without it, ActivePrewarm is removed from COMMAND's environment. The \
      device's keys that need no passcode are loaded into the kernel's keyring first, \
      for an app whose sandbox keeps it from the keybag.

      The exit status is COMMAND's; 1 when it cannot be started or confined.
      """
  )

  let arguments: Arguments

  init(arguments: Arguments) throws {
    self.arguments = arguments
    guard arguments.hasTerminator else {
      throw ValidationError("missing '--' before COMMAND")
    }
    guard !arguments[Self.command].isEmpty else {
      throw ValidationError("missing COMMAND after '--'")
    }
  }

  func validate() throws {
    guard globals.identity != nil else {
      throw ValidationError("run needs --as BUNDLE-ID: the app whose sandbox COMMAND runs in")
    }
  }

  func run() throws {
    guard let identity = try globals.appIdentity(), let name = arguments[Self.command].first else { return }
    let root = globals.containerRoot
    let path = try Self.locate(name)

    // The binding is checked against the program that will run, as the
    // library checks it in the confined process.
    let claimed = try AppIdentity(
      bundleIdentifier: identity.bundleIdentifier,
      executablePath: Paths.realPath(path) ?? path)
    let manifest: EntitlementManifest
    let present: Bool
    do {
      (manifest, present) = try SuiteResolver(identity: claimed, root: root).checkedManifest()
      try SuiteResolver.requireFileNameLength(identity.bundleIdentifier, as: "bundle identifier")
    } catch {
      throw CommandFailure("cannot run \(name) as \(identity.bundleIdentifier): \(error.message)")
    }
    // An identity the manifest does not name is an app with no group (as on a device), and
    // as often a misspelt one: say so, since its sandbox then holds no group container.
    if present, manifest.entries[identity.bundleIdentifier] == nil {
      printError(
        "groupctl: note: \(identity.bundleIdentifier) has no entry in \(root.manifestURL.path):"
          + " it runs with its own container and no group container"
          + " ('groupctl grant \(identity.bundleIdentifier) GROUP-ID' entitles it)")
    }

    // The process that runs COMMAND is this one after execve(2): same pid, same start time.
    let device = Device(root: root)
    device.pruneStaleRecords()
    let record = try Device.currentRecord(
      bundleIdentifier: identity.bundleIdentifier, executable: Paths.realPath(path) ?? path)
    try device.record(record)
    Self.prepareDevice(root: root, background: arguments[Self.background])
    do {
      try Self.confineAndExec(
        identity: identity, root: root, path: path, arguments: arguments[Self.command],
        readOnly: arguments[Self.readOnly], readWrite: arguments[Self.readWrite],
        bestEffort: arguments[Self.bestEffort], verbose: arguments[Self.verbose])
    } catch {
      device.removeRecord(pid: record.pid)
      throw error
    }
  }

  /// What the device gives an app at launch: the keys it may use without the passcode, in
  /// the kernel's keyring (the app's sandbox keeps it from the keybag), and whether it is
  /// launched in the background (`ActivePrewarm`, as iOS 15 sets it).
  static func prepareDevice(root: ContainerRoot, background: Bool) {
    let prepared = Result { () throws(KeybagError) in try Keybag(root: root).prepare() }
    if case .failure(let error) = prepared, error.code != .keyringUnavailable {
      printError("groupctl: note: the device's keys were not loaded: \(error.message)")
    }
    if background {
      setenv(AppLifecycle.prewarmEnvironmentVariable, "1", 1)
    } else {
      unsetenv(AppLifecycle.prewarmEnvironmentVariable)
    }
  }

  /// Builds `identity`'s sandbox, restricts this thread to it and replaces
  /// the process with `path`. Returns only by throwing.
  ///
  /// Restricting, then `execve(2)`: the exec ends every other thread of
  /// `groupctl`, so the program starts with the confined thread alone.
  static func confineAndExec(
    identity: AppIdentity, root: ContainerRoot, path: String, arguments: [String],
    readOnly: [String], readWrite: [String], bestEffort: Bool, verbose: Bool
  ) throws {
    let name = arguments.first ?? path
    var abi: Int?
    do {
      abi = try AppSandbox.landlockABI()
    } catch {
      guard bestEffort else {
        throw CommandFailure(
          "cannot confine \(name) as \(identity.bundleIdentifier): \(error.message);"
            + " --best-effort runs it unconfined")
      }
      printError(
        "groupctl: \(error.message); running \(name) as \(identity.bundleIdentifier)"
          + " UNCONFINED (--best-effort)")
    }
    let ruleset = try SandboxRuleset.app(
      identity, root: root, executable: path, readOnly: readOnly, readWrite: readWrite)
    if verbose, let abi { printRuleset(ruleset, abi: abi) }

    var environment = ProcessInfo.processInfo.environment
    environment[AppIdentity.environmentVariable] = identity.bundleIdentifier
    environment[ContainerRoot.environmentVariable] = root.path
    if let temporary = ruleset.temporaryDirectory { environment["TMPDIR"] = temporary }

    for note in ruleset.notes { printError("groupctl: note: \(note)") }
    if let abi {
      do {
        try ruleset.restrictCurrentThread(abi: abi)
      } catch {
        throw CommandFailure(
          "cannot confine \(name) as \(identity.bundleIdentifier): \(error.message)")
      }
      if let refused = ruleset.refusedProgramFiles().first {
        let inside = refused.path.hasPrefix(root.path + "/")
        throw CommandFailure(
          "cannot run \(name) as \(identity.bundleIdentifier): the sandbox refuses"
            + " \(refused.path) (\(refused.purpose)), which it needs to start; "
            + (inside
              ? "it lies inside the root, where the sandbox opens only the app's containers:"
                + " move it out of the root"
              : "--ro PATH allows a file or folder outside the root"))
      }
    }
    // The app is this process and every process it starts: one that double-forks stays in
    // its tree (groupctl suspend, resume, ps), as a child of the app's first process.
    do {
      try Processes.becomeChildSubreaper()
    } catch {
      throw CommandFailure("cannot run \(name) as \(identity.bundleIdentifier): \(error.message)")
    }
    let failure = Processes.replaceCurrent(
      with: path, arguments: arguments, environment: environment)
    guard abi != nil, failure.systemErrno.map(Errno.init(rawValue:)) == .permissionDenied else {
      throw CommandFailure(failure.message)
    }
    // It could be run before the sandbox was applied (locate checked): the sandbox refused
    // the program or an interpreter it names.
    let real = Paths.realPath(path) ?? path
    if real == root.path || real.hasPrefix(root.path + "/") {
      throw CommandFailure(
        failure.message + ": the sandbox runs no program inside the root \(root.path)")
    }
    throw CommandFailure(
      failure.message + ": the sandbox refused it or its interpreter;"
        + " --ro PATH allows a file or folder outside the root")
  }

  static func printRuleset(_ ruleset: SandboxRuleset, abi: Int) {
    printError("groupctl: Landlock ABI \(abi); denied unless a rule allows it:")
    printError("  " + SandboxRuleset.handledRightNames(abi: abi).joined(separator: " "))
    let scopes = SandboxRuleset.scopeNames(abi: abi)
    if !scopes.isEmpty {
      printError("groupctl: scoped to the sandbox: " + scopes.joined(separator: " "))
    }
    let used = SandboxRuleset.Access.allCasesInOrder.filter { access in
      ruleset.rules.contains { $0.access == access }
    }
    for access in used {
      printError(
        "groupctl: \(access) = "
          + SandboxRuleset.rightNames(of: access, abi: abi).joined(separator: " "))
    }
    for rule in ruleset.rules { printError("groupctl: \(rule)") }
  }

  /// The program `name` names: itself when it has a `/`, else the first
  /// executable file of that name in `PATH`, as `execvp(3)` looks.
  static func locate(_ name: String) throws -> String {
    let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    do {
      return try Paths.executable(named: name, searchPath: searchPath)
    } catch {
      throw CommandFailure(error.message)
    }
  }
}

extension SandboxRuleset.Access {
  /// The accesses in the order `run -v` explains them.
  static let allCasesInOrder: [SandboxRuleset.Access] = [
    .readWrite, .readOnly, .readExecute, .readWriteFile,
  ]
}

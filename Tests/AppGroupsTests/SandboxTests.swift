import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// Whether the kernel offers Landlock to this process (a query: the test
/// runner itself is never restricted).
let landlockAvailable = (try? AppSandbox.landlockABI()) != nil

/// A root with the example app and widget in the shared group, and a third
/// app alone in another group; each container holds a preferences file.
struct SandboxRoot {
  static let other = "com.example.other"
  static let otherGroup = "group.com.example.other"
  let g: GroupctlRoot

  init(_ name: String = #function) throws {
    g = try GroupctlRoot(name)
    try EntitlementManifest.grant(Self.other, groups: [Self.otherGroup], root: g.root)
    try g.ok(["write", TestRoot.app, "secret", "app"])
    try g.ok(["write", TestRoot.widget, "mine", "widget"])
    try g.ok(["write", TestRoot.group, "shared", "yes"])
    try g.ok(["write", Self.otherGroup, "secret", "other"])
  }

  var root: ContainerRoot { g.root }
  var path: String { g.path }
  static var worker: String { Product.url("appgroups-worker").path }

  func preferences(_ bundleID: String) -> String {
    root.appContainerURL(for: bundleID).path + "/Library/Preferences"
  }

  func groupPreferences(_ group: String) -> String {
    root.groupContainerURL(for: group).path + "/Library/Preferences"
  }

  /// The worker's `repl` on `suite`, running in `bundleID`'s sandbox.
  func repl(as bundleID: String, _ suite: String) throws -> ChildProcess {
    try ChildProcess(
      "groupctl",
      ["--root", path, "run", "--as", bundleID, "--", Self.worker, "repl", suite])
  }

  /// `groupctl run --as bundleID [options] -- COMMAND…`
  func run(
    as bundleID: String, _ options: [String] = [], _ command: [String],
    environment: [String: String] = [:]
  ) throws -> (status: Int32, stdout: String, stderr: String) {
    try Product.run(
      "groupctl", ["--root", path, "run", "--as", bundleID] + options + ["--"] + command,
      environment: ["APPGROUPS_ROOT": path].merging(environment) { $1 })
  }

  /// The worker's fs-check under `groupctl run --as bundleID`: each operation's result by
  /// "OP PATH".
  func check(
    as bundleID: String, _ operations: [(String, String)], options: [String] = [],
    environment: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation
  ) throws -> [String: String] {
    let result = try run(
      as: bundleID, options, [Self.worker, "fs-check"] + operations.flatMap { [$0.0, $0.1] },
      environment: environment)
    #expect(result.status == 0, "\(result.stderr)", sourceLocation: sourceLocation)
    return Self.results(result.stdout)
  }

  static func results(_ output: String) -> [String: String] {
    var results: [String: String] = [:]
    for line in output.split(separator: "\n") {
      // "OP PATH RESULT": the path of a shell operation has spaces.
      guard let last = line.lastIndex(of: " ") else { continue }
      results[String(line[..<last])] = String(line[line.index(after: last)...])
    }
    return results
  }
}

@Suite(
  "Sandbox: groupctl run", .processBound,
  .enabled(if: landlockAvailable, "the kernel offers no Landlock"))
struct SandboxRunTests {
  @Test func theAppsContainersAreOpenAndEverythingElseIsRefusedByTheKernel() throws {
    let s = try SandboxRoot()
    let outside = try Sandbox()
    let outsideFile = outside.url.appendingPathComponent("file")
    try Data("x".utf8).write(to: outsideFile)
    let own = s.preferences(TestRoot.widget)
    let shared = s.groupPreferences(TestRoot.group)
    let checks: [(String, String, String)] = [
      // Its own container and its group: read, write, create, rename, folders.
      ("read", own + "/\(TestRoot.widget).plist", "ok"),
      ("create", own + "/new.plist", "ok"),
      ("rename", own + "/\(TestRoot.widget).plist", "ok"),
      ("mkdir", own + "/folder", "ok"),
      ("read", shared + "/\(TestRoot.group).plist", "ok"),
      ("write", shared + "/\(TestRoot.group).plist.lock", "ok"),
      ("create", shared + "/new", "ok"),
      ("list", shared, "ok"),
      // The manifest and the global and managed preferences: read only.
      ("read", s.root.manifestURL.path, "ok"),
      ("write", s.root.manifestURL.path, "EACCES"),
      ("create", s.root.managedPreferencesDirectoryURL.path + "/x.plist", "EACCES"),
      ("create", s.root.globalPreferencesURL.deletingLastPathComponent().path + "/x", "EACCES"),
      // Another app's container, a group it is not entitled to, the rest of the root, outside.
      ("read", s.preferences(TestRoot.app) + "/\(TestRoot.app).plist", "EACCES"),
      ("create", s.preferences(TestRoot.app) + "/planted.plist", "EACCES"),
      ("list", s.root.appContainerURL(for: TestRoot.app).path, "EACCES"),
      (
        "read", s.groupPreferences(SandboxRoot.otherGroup) + "/\(SandboxRoot.otherGroup).plist",
        "EACCES"
      ),
      ("list", s.path, "EACCES"),
      ("create", s.path + "/Entitlements.plist.new", "EACCES"),
      ("read", outsideFile.path, "EACCES"),
      ("create", outside.path + "/new", "EACCES"),
      ("create", "/etc/appgroups-sandbox-test", "EACCES"),
    ]
    let results = try s.check(as: TestRoot.widget, checks.map { ($0.0, $0.1) })
    for (operation, path, expected) in checks {
      #expect(results["\(operation) \(path)"] == expected, "\(operation) \(path)")
    }
    #expect(!FileManager.default.fileExists(atPath: s.preferences(TestRoot.app) + "/planted.plist"))
  }

  @Test func theCommandGetsTheIdentityTheRootAndAPrivateTemporaryFolder() throws {
    let s = try SandboxRoot()
    let result = try s.run(
      as: TestRoot.widget, [],
      [
        "/bin/sh", "-c",
        "echo $APPGROUPS_BUNDLE_ID; echo $APPGROUPS_ROOT; echo $TMPDIR;"
          + " echo x > $TMPDIR/file && chmod 644 $TMPDIR/file && echo written",
      ])
    let temporary = s.root.appContainerURL(for: TestRoot.widget).path + "/tmp"
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout == "\(TestRoot.widget)\n\(s.path)\n\(temporary)\nwritten\n")
    // The app's scratch files, whatever their mode, are not doctor's business.
    #expect(FileManager.default.fileExists(atPath: temporary + "/file"))
    let doctor = try s.g.run(["doctor"])
    #expect(doctor.status == 0, "\(doctor.stdout)")
  }

  @Test func anIdentityTheManifestDoesNotNameRunsWithANote() throws {
    let s = try SandboxRoot()
    let stranger = try s.run(as: "com.example.stranger", [], ["/bin/sh", "-c", "echo ran"])
    #expect(stranger.status == 0, "\(stranger.stderr)")
    #expect(stranger.stdout == "ran\n")
    #expect(
      stranger.stderr
        == "groupctl: note: com.example.stranger has no entry in \(s.root.manifestURL.path):"
        + " it runs with its own container and no group container"
        + " ('groupctl grant com.example.stranger GROUP-ID' entitles it)\n")

    let widget = try s.run(as: TestRoot.widget, [], ["/bin/sh", "-c", "echo ran"])
    #expect(widget.status == 0)
    #expect(widget.stderr.isEmpty, "\(widget.stderr)")
  }

  @Test func aGroupDefaultsCycleWorksBetweenTwoSandboxedProcesses() throws {
    let s = try SandboxRoot()
    let widget = try s.repl(as: TestRoot.widget, TestRoot.group)
    defer { widget.signal(SIGKILL) }
    widget.send("get shared")
    #expect(widget.waitFor("value yes"))

    // The app writes in its own sandbox: temporary file, rename, fsyncs, lock, token page.
    let app = try s.run(
      as: TestRoot.app, [], [SandboxRoot.worker, "set", TestRoot.group, "greeting", "hello"],
      environment: ["APPGROUPS_WORKER_NO_WAIT": "1"])
    #expect(app.status == 0, "\(app.stderr)")
    #expect(app.stdout.contains("set"))

    // The widget, in its own, learns of it through inotify and writes back.
    widget.send("wait greeting hello 20")
    #expect(widget.waitFor("seen greeting"))
    widget.send("set reply thanks")
    #expect(widget.waitFor("ok"))
    widget.send("sync")
    #expect(widget.waitForLine { $0.hasPrefix("sync true") } != nil)
    widget.send("quit")
    #expect(widget.wait() == 0)
    #expect(try s.g.ok(["read", TestRoot.group, "reply"]) == "thanks\n")
  }

  @Test func aContainerCreatedAgainOutsideTheSandboxIsSaidOnce() throws {
    let s = try SandboxRoot()
    let widget = try s.repl(as: TestRoot.widget, TestRoot.group)
    defer { widget.signal(SIGKILL) }
    widget.send("get shared")
    #expect(widget.waitFor("value yes"))

    // Landlock's rule holds the container the sandbox was built with; the folder made again
    // by the next write is another one, which the widget may no longer read.
    try FileManager.default.removeItem(at: s.root.groupContainerURL(for: TestRoot.group))
    try s.g.ok(["write", TestRoot.group, "greeting", "again"])
    let said = widget.waitForErrorLine { line in
      line.contains("cannot be read again") && line.contains("Permission denied")
        && line.contains("created again after the process started")
    }
    #expect(said != nil, "\(widget.standardError)")
    try s.g.ok(["write", TestRoot.group, "greeting", "once more"])
    widget.send("sync")
    #expect(widget.waitForLine { $0.hasPrefix("sync") } != nil)
    widget.send("quit")
    #expect(widget.wait() == 0)
    let times = widget.standardError.components(separatedBy: "cannot be read again").count - 1
    #expect(times == 1, "\(widget.standardError)")
  }

  @Test func anUnentitledSuiteIsRefusedByTheLibraryFirst() throws {
    let s = try SandboxRoot()
    let result = try Product.run(
      "groupctl",
      ["--root", s.path, "run", "--as", TestRoot.widget, "--", SandboxRoot.worker, "probe"],
      stdin: Data("open \(SandboxRoot.otherGroup)\nopen \(TestRoot.group)\nquit\n".utf8))
    #expect(result.status == 0, "\(result.stderr)")
    let lines = result.stdout.split(separator: "\n").filter {
      !$0.hasPrefix("diag") && $0 != "ready"
    }
    #expect(lines.count == 2, "\(result.stdout)")
    #expect(lines.first?.hasPrefix("refused notEntitled") == true, "\(result.stdout)")
    #expect(lines.last?.hasPrefix("values ") == true, "\(result.stdout)")
  }

  @Test func aSymbolicLinkInAnAllowedFolderDoesNotLeadOut() throws {
    let s = try SandboxRoot()
    let outside = try Sandbox()
    try Data("x".utf8).write(to: outside.url.appendingPathComponent("file"))
    let caches = s.root.appContainerURL(for: TestRoot.widget).path + "/Library/Caches"
    let links = [
      ("to-app", s.root.appContainerURL(for: TestRoot.app).path),
      ("to-other-group", s.root.groupContainerURL(for: SandboxRoot.otherGroup).path),
      ("to-outside", outside.path),
      ("to-manifest", s.root.manifestURL.path),
    ]
    for (name, target) in links {
      try FileManager.default.createSymbolicLink(
        atPath: caches + "/" + name, withDestinationPath: target)
    }
    let checks: [(String, String, String)] = [
      ("list", caches + "/to-app", "EACCES"),
      ("read", caches + "/to-app/Library/Preferences/\(TestRoot.app).plist", "EACCES"),
      ("create", caches + "/to-app/Library/planted", "EACCES"),
      ("list", caches + "/to-other-group", "EACCES"),
      ("read", caches + "/to-outside/file", "EACCES"),
      ("create", caches + "/to-outside/planted", "EACCES"),
      // A link to what is allowed read-only stays read-only.
      ("read", caches + "/to-manifest", "ok"),
      ("write", caches + "/to-manifest", "EACCES"),
    ]
    let results = try s.check(as: TestRoot.widget, checks.map { ($0.0, $0.1) })
    for (operation, path, expected) in checks {
      #expect(results["\(operation) \(path)"] == expected, "\(operation) \(path)")
    }
    #expect(!FileManager.default.fileExists(atPath: outside.path + "/planted"))
  }

  @Test func otherProcessesAndHardLinksDoNotLeadOut() throws {
    let s = try SandboxRoot()
    let abi = try AppSandbox.landlockABI()
    let me = String(getpid())
    let checks: [(String, String, String)] = [
      // A hard link to another app's file would carry it into the sandbox.
      ("link", s.preferences(TestRoot.app) + "/\(TestRoot.app).plist", "EXDEV"),
      ("link", s.preferences(TestRoot.widget) + "/\(TestRoot.widget).plist", "ok"),
      // Another process's memory stays closed (Landlock's ptrace rule).
      ("read", "/proc/\(me)/mem", "EACCES"),
      ("read", "/proc/self/status", "ok"),
      // A Swift program started inside the sandbox gets its arguments and its own /proc/self.
      ("shell", "\(SandboxRoot.worker) get \(TestRoot.group) shared >/dev/null", "ok"),
      ("shell", "\(SandboxRoot.worker) get \(SandboxRoot.otherGroup) secret 2>/dev/null", "exit-1"),
      // Signals to processes outside the sandbox, from ABI 6.
      ("signal", me, abi >= 6 ? "EPERM" : "ok"),
    ]
    let results = try s.check(
      as: TestRoot.widget, checks.map { ($0.0, $0.1) },
      environment: ["APPGROUPS_WORKER_NO_WAIT": "1"])
    for (operation, path, expected) in checks {
      #expect(results["\(operation) \(path)"] == expected, "\(operation) \(path)")
    }
  }

  @Test func theExecutableBindingIsEnforced() throws {
    let s = try SandboxRoot()
    // Given as a bare name, the binding is the one file PATH finds.
    let widget = Product.url("widget").path
    let bound = try Product.run(
      "groupctl", ["--root", s.path, "grant", TestRoot.widget, "--executable", "widget"],
      environment: ["PATH": Product.directory.path + ":/usr/bin:/bin"])
    #expect(bound.status == 0, "\(bound.stderr)")
    #expect(bound.stderr == "groupctl: --executable widget binds \(widget)\n")
    #expect(try EntitlementManifest.load(root: s.root).entries[TestRoot.widget]?.executable == widget)
    let refused = try s.run(as: TestRoot.widget, [], [SandboxRoot.worker, "fs-check"])
    #expect(refused.status == 1)
    #expect(
      refused.stderr
        == "groupctl: cannot run \(SandboxRoot.worker) as \(TestRoot.widget):"
        + " \(TestRoot.widget) is bound to executable '\(widget)' in \(s.root.manifestURL.path)"
        + " but this process runs \(SandboxRoot.worker)\n")
    #expect(refused.stdout.isEmpty)
    // The impostor: another program renamed to the bound name.
    let elsewhere = try Sandbox()
    let renamed = elsewhere.path + "/widget"
    try FileManager.default.copyItem(atPath: SandboxRoot.worker, toPath: renamed)
    let impostor = try s.run(
      as: TestRoot.widget, [], [renamed, "fs-check", "list", s.groupPreferences(TestRoot.group)])
    #expect(impostor.status == 1)
    #expect(impostor.stdout.isEmpty)
    #expect(impostor.stderr.contains("but this process runs \(renamed)"), "\(impostor.stderr)")

    // The bound executable, by path or found in PATH, runs.
    try s.g.ok(["grant", TestRoot.widget, TestRoot.group, "--executable", SandboxRoot.worker])
    let allowed = try s.run(
      as: TestRoot.widget, [],
      [SandboxRoot.worker, "fs-check", "list", s.groupPreferences(TestRoot.group)])
    #expect(allowed.status == 0, "\(allowed.stderr)")
    #expect(allowed.stdout == "list \(s.groupPreferences(TestRoot.group)) ok\n")
    let viaPath = try s.run(
      as: TestRoot.widget, [], ["appgroups-worker", "fs-check"],
      environment: ["PATH": Product.directory.path + ":/usr/bin:/bin"])
    #expect(viaPath.status == 0, "\(viaPath.stderr)")

    // Rebuilt at the same path (a new file, as a linker writes it), it keeps its binding.
    let tool = elsewhere.path + "/tool"
    try FileManager.default.copyItem(atPath: SandboxRoot.worker, toPath: tool)
    try s.g.ok(["grant", TestRoot.widget, "--executable", tool])
    try FileManager.default.removeItem(atPath: tool)
    try FileManager.default.copyItem(atPath: SandboxRoot.worker, toPath: tool)
    let rebuilt = try s.run(
      as: TestRoot.widget, [], [tool, "fs-check", "list", s.groupPreferences(TestRoot.group)])
    #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
  }

  @Test func aProgramInsideTheRootDoesNotOpenItsFolderAndDoesNotRun() throws {
    let s = try SandboxRoot()
    for bundleID in [TestRoot.app, TestRoot.widget] {
      let program = s.root.appContainerURL(for: bundleID).path + "/Library/Caches/cat"
      try FileManager.default.copyItem(atPath: "/bin/cat", toPath: program)
      let secret = s.preferences(TestRoot.app) + "/\(TestRoot.app).plist"
      let result = try s.run(as: TestRoot.widget, ["-v"], [program, secret])
      #expect(result.status == 1)
      #expect(result.stdout.isEmpty)
      #expect(
        result.stderr.hasSuffix(
          "groupctl: cannot run \(program): execve: Permission denied: the sandbox runs no"
            + " program inside the root \(s.path)\n"), "\(result.stderr)")
      #expect(!result.stderr.contains("the executable's folder"), "\(result.stderr)")
    }
  }

  @Test func verboseSaysTheABIAndTheRules() throws {
    let s = try SandboxRoot()
    let abi = try AppSandbox.landlockABI()
    let result = try s.run(as: TestRoot.widget, ["-v"], ["/bin/true"])
    #expect(result.status == 0, "\(result.stderr)")
    let lines = result.stderr.split(separator: "\n").map(String.init)
    #expect(lines.first == "groupctl: Landlock ABI \(abi); denied unless a rule allows it:")
    let container = s.root.appContainerURL(for: TestRoot.widget).path
    #expect(
      lines.contains("groupctl: read-write \(container) (\(TestRoot.widget)'s own container)"))
    #expect(
      lines.contains(
        "groupctl: read-write \(s.root.groupContainerURL(for: TestRoot.group).path)"
          + " (group container of \(TestRoot.group))"))
    #expect(lines.contains("groupctl: read-only \(s.root.manifestURL.path) (the manifest)"))
    #expect(!result.stderr.contains(SandboxRoot.otherGroup))
    #expect(!result.stderr.contains(s.root.appContainerURL(for: TestRoot.app).path))
  }

  @Test func extraPathsAreAllowedAsAsked() throws {
    let s = try SandboxRoot()
    let extra = try Sandbox()
    let readable = extra.url.appendingPathComponent("readable")
    let writable = extra.url.appendingPathComponent("writable")
    for folder in [readable, writable] {
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      try Data("x".utf8).write(to: folder.appendingPathComponent("file"))
    }
    let checks: [(String, String, String)] = [
      ("read", readable.path + "/file", "ok"),
      ("create", readable.path + "/new", "EACCES"),
      ("read", writable.path + "/file", "ok"),
      ("create", writable.path + "/new", "ok"),
    ]
    let results = try s.check(
      as: TestRoot.widget, checks.map { ($0.0, $0.1) },
      options: ["--ro", readable.path, "--rw", writable.path])
    for (operation, path, expected) in checks {
      #expect(results["\(operation) \(path)"] == expected, "\(operation) \(path)")
    }
    let missing = try s.run(as: TestRoot.widget, ["--ro", extra.path + "/missing"], ["/bin/true"])
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("\(extra.path)/missing does not exist"), "\(missing.stderr)")
  }
}

@Suite("Sandbox: groupctl run, refusals", .processBound)
struct SandboxRefusalTests {
  @Test func withoutLandlockRunFailsUnlessBestEffort() throws {
    let s = try SandboxRoot()
    let switchOff = [AppSandbox.unavailableVariable: "1"]
    let target = s.preferences(TestRoot.app) + "/\(TestRoot.app).plist"
    let refused = try s.run(
      as: TestRoot.widget, [], [SandboxRoot.worker, "fs-check", "read", target],
      environment: switchOff)
    #expect(refused.status == 1)
    #expect(refused.stdout.isEmpty)
    #expect(
      refused.stderr
        == "groupctl: cannot confine \(SandboxRoot.worker) as \(TestRoot.widget): Landlock is"
        + " unavailable: \(AppSandbox.unavailableVariable)=1 makes this process behave as if"
        + " the kernel had none; --best-effort runs it unconfined\n")

    let unconfined = try s.run(
      as: TestRoot.widget, ["--best-effort"], [SandboxRoot.worker, "fs-check", "read", target],
      environment: switchOff)
    #expect(unconfined.status == 0, "\(unconfined.stderr)")
    #expect(
      unconfined.stderr.contains(
        "running \(SandboxRoot.worker) as \(TestRoot.widget) UNCONFINED (--best-effort)"))
    // Unconfined: another app's container is open to plain file calls.
    #expect(unconfined.stdout == "read \(target) ok\n")
  }

  @Test(arguments: [
    (["run", "--", "/bin/true"], "run needs --as BUNDLE-ID"),
    (["run", "--as", TestRoot.widget, "/bin/true"], "missing '--' before COMMAND"),
    (["run", "--as", TestRoot.widget, "--"], "missing COMMAND after '--'"),
    (["run", "--as", "bad/name", "--", "/bin/true"], "bundle identifier"),
  ])
  func badCommandLinesAreUsageErrors(arguments: [String], message: String) throws {
    let s = try SandboxRoot()
    let result = try Product.run("groupctl", ["--root", s.path] + arguments)
    let expectedStatus: Int32 = message == "bundle identifier" ? 1 : 64
    #expect(result.status == expectedStatus, "\(result.stderr)")
    #expect(result.stderr.contains(message), "\(result.stderr)")
  }

  @Test func aCommandThatCannotBeFoundFails() throws {
    let s = try SandboxRoot()
    let result = try s.run(as: TestRoot.widget, [], ["no-such-program-here"])
    #expect(result.status == 1)
    #expect(result.stderr == "groupctl: cannot run no-such-program-here: not found in PATH\n")
  }
}

@Suite(
  "Sandbox: a process confines itself", .processBound,
  .enabled(if: landlockAvailable, "the kernel offers no Landlock"))
struct SandboxSelfRestrictionTests {
  @Test func restrictingAtTheTopOfMainConfinesTheProcess() throws {
    let s = try SandboxRoot()
    let abi = try AppSandbox.landlockABI()
    let own = s.preferences(TestRoot.widget) + "/\(TestRoot.widget).plist"
    let other = s.preferences(TestRoot.app) + "/\(TestRoot.app).plist"
    let result = try Product.run(
      "appgroups-worker",
      [
        "restrict-self", "read", own, "read", other, "write", s.root.manifestURL.path,
        "create", s.groupPreferences(TestRoot.group) + "/new",
      ],
      environment: s.g.t.environment(as: TestRoot.widget))
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stdout
        == """
        restricted abi \(abi)
        read \(own) ok
        read \(other) EACCES
        write \(s.root.manifestURL.path) EACCES
        create \(s.groupPreferences(TestRoot.group))/new ok

        """)
  }

  @Test func restrictingAfterAThreadStartedIsRefusedBeforeABI8() throws {
    let s = try SandboxRoot()
    let abi = try AppSandbox.landlockABI()
    let other = s.preferences(TestRoot.app) + "/\(TestRoot.app).plist"
    let result = try Product.run(
      "appgroups-worker", ["restrict-self-late", "read", other],
      environment: s.g.t.environment(as: TestRoot.widget))
    if abi >= 8 {
      #expect(result.stdout == "restricted abi \(abi)\nread \(other) EACCES\n")
    } else {
      #expect(result.status == 1)
      #expect(
        result.stdout.hasPrefix(
          "refused sandboxUnavailable cannot confine this process: 1 other thread already runs,"
            + " and Landlock ABI \(abi) restricts only the calling thread"),
        "\(result.stdout)")
    }
  }

  @Test func aProcessBoundToAnotherExecutableIsRefused() throws {
    let s = try SandboxRoot()
    try s.g.ok(["grant", TestRoot.widget, TestRoot.group, "--executable", Product.url("widget").path])
    let result = try Product.run(
      "appgroups-worker", ["restrict-self"], environment: s.g.t.environment(as: TestRoot.widget))
    #expect(result.status == 1)
    #expect(result.stdout.hasPrefix("refused executableMismatch"), "\(result.stdout)")
  }
}

@Suite("Sandbox: the ruleset")
struct SandboxRulesetTests {
  @Test func anAppsRulesetNamesItsContainersAndNoOtherPathInTheRoot() throws {
    let s = try SandboxRoot()
    let identity = try AppIdentity(bundleIdentifier: TestRoot.widget)
    let ruleset = try SandboxRuleset.app(identity, root: s.root, executable: SandboxRoot.worker)
    let inRoot = ruleset.rules.filter { $0.path == s.path || $0.path.hasPrefix(s.path + "/") }
    #expect(
      inRoot.map { "\($0.access) \($0.path)" } == [
        "read-write \(s.root.appContainerURL(for: TestRoot.widget).path)",
        "read-write \(s.root.groupContainerURL(for: TestRoot.group).path)",
        // Its application group is a keychain access group too.
        "read-write \(s.root.keychainFolderURL(forAccessGroup: TestRoot.group).path)",
        "read-only \(s.root.manifestURL.path)",
        "read-only \(s.root.globalContainerURL.path)",
        "read-write-file \(s.root.globalPreferencesURL.path).lock",
        "read-only \(s.root.managedPreferencesDirectoryURL.path)",
        "read-only \(s.path)/Device",
      ])
    #expect(
      ruleset.temporaryDirectory == s.root.appContainerURL(for: TestRoot.widget).path + "/tmp")
    #expect(!ruleset.rules.contains { $0.path == "/" || $0.path == "/tmp" || $0.path == "/etc" })
    #expect(!ruleset.rules.contains { $0.access == .readWrite && !$0.path.hasPrefix(s.path) })
  }

  @Test func entitledContainersThatDoNotExistYetAreCreatedFirst() throws {
    let t = try TestRoot(grant: false)
    try EntitlementManifest.grant(
      "com.example.new", groups: ["group.com.example.new"], root: t.root)
    let identity = try AppIdentity(bundleIdentifier: "com.example.new")
    _ = try SandboxRuleset.app(identity, root: t.root)
    for container in [
      t.root.appContainerURL(for: "com.example.new"),
      t.root.groupContainerURL(for: "group.com.example.new"),
    ] {
      var isFolder: ObjCBool = false
      #expect(
        FileManager.default.fileExists(
          atPath: container.path + "/Library/Preferences", isDirectory: &isFolder))
      #expect(isFolder.boolValue)
    }
  }

  @Test func aGroupContainerThatIsALinkOutOfTheRootIsRefused() throws {
    let s = try SandboxRoot()
    let outside = try Sandbox()
    let container = s.root.groupContainerURL(for: TestRoot.group).path
    try FileManager.default.removeItem(atPath: container)
    try FileManager.default.createSymbolicLink(atPath: container, withDestinationPath: outside.path)
    let identity = try AppIdentity(bundleIdentifier: TestRoot.widget)
    #expect(throws: AppGroupsError.self) {
      try SandboxRuleset.app(identity, root: s.root)
    }
    let result = try s.run(as: TestRoot.widget, [], ["/bin/true"])
    #expect(result.status == 1)
    #expect(result.stderr.contains("symbolic link"), "\(result.stderr)")
  }
}

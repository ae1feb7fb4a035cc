import AppGroups
import AppGroupsKeychain
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// The keychain across real processes (`appgroups-keychain-worker`), beside two CPU-bound
/// processes.
@Suite("Keychain: processes", .processBound)
struct KeychainProcessTests {
  /// A worker that answers one call per line.
  func repl(_ k: KeychainRoot, as bundleID: String, sandbox: Bool = false) throws -> ChildProcess {
    let child = try ChildProcess(
      "appgroups-keychain-worker", (sandbox ? ["--sandbox"] : []) + ["repl"],
      environment: k.environment(as: bundleID))
    #expect(child.waitForLine { $0 == "ready" } != nil)
    return child
  }

  /// One call in a repl: its lines up to "end".
  func ask(_ child: ChildProcess, _ line: String) -> [String] {
    child.send(line)
    var lines: [String] = []
    while let answer = child.waitForLine(timeout: 30), answer != "end" { lines.append(answer) }
    return lines
  }

  @Test func accessGroupRulesWithRealProcesses() throws {
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    let k = try KeychainRoot()
    try EntitlementManifest.grant(
      "com.example.plain", groups: ["group.b", "group.a"], root: k.root)

    // An add without a group goes to the app's first keychain access group.
    #expect(
      try k.status(["add", "class=genp", "svce=auth", "acct=token", "v_Data=secret"])
        == errSecSuccess)
    let attributes = try k.worker(["copy", "class=genp", "svce=auth", "r_Attributes=true"])
    #expect(attributes.stdout.contains("agrp=\(KeychainRoot.shared)"), "\(attributes.stdout)")
    // Without keychain-access-groups or an App ID, the first application group.
    #expect(
      try k.status(["add", "class=genp", "svce=plain"], as: "com.example.plain") == errSecSuccess)
    #expect(
      try k.worker(
        ["copy", "class=genp", "svce=plain", "r_Attributes=true"], as: "com.example.plain"
      ).stdout.contains("agrp=group.b"))

    // A group the app is not entitled to: -34018 for every call.
    let other = "agrp=\(KeychainRoot.intruderTeam).com.example.intruder"
    for call in [
      ["add", "class=genp", "svce=x"], ["copy", "class=genp", "svce=x"],
      ["delete", "class=genp", "svce=x"], ["update", "class=genp", "svce=x", "--", "labl=l"],
    ] {
      #expect(try k.status(call + [other]) == errSecMissingEntitlement, "\(call)")
    }
    // An app with no group at all: -34018.
    #expect(
      try k.status(["copy", "class=genp", "svce=auth"], as: "com.example.stranger")
        == errSecMissingEntitlement)
    #expect(
      try k.status(["add", "class=genp", "svce=auth"], as: "com.example.stranger")
        == errSecMissingEntitlement)

    // Two apps of one group see each other's items.
    let widget = try k.worker(
      ["copy", "class=genp", "svce=auth", "r_Data=true"], as: KeychainRoot.widget)
    #expect(widget.stdout == "status 0\ndata secret\n")
    // An app of another team sees nothing: -25300 without naming the group, -34018 naming it.
    #expect(
      try k.status(["copy", "class=genp", "svce=auth", "r_Data=true"], as: KeychainRoot.intruder)
        == errSecItemNotFound)
    #expect(
      try k.status(
        ["copy", "class=genp", "svce=auth", "agrp=\(KeychainRoot.shared)"],
        as: KeychainRoot.intruder) == errSecMissingEntitlement)

    // A query without a group searches all of the app's groups.
    #expect(
      try k.status([
        "add", "class=genp", "svce=auth", "acct=token", "agrp=\(KeychainRoot.appGroup)",
      ]) == errSecSuccess)
    let all = try k.worker([
      "copy", "class=genp", "svce=auth", "m_Limit=m_LimitAll", "r_Attributes=true",
    ])
    #expect(all.stdout.hasPrefix("status 0\ncount 2\n"), "\(all.stdout)")
  }

  @Test func exactlyOneOfManyConcurrentAddsWins() throws {
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    let k = try KeychainRoot()
    for round in 0..<3 {
      let workers = try (0..<8).map { index in
        try ChildProcess(
          "appgroups-keychain-worker",
          [
            "race", "add", "class=genp", "svce=race", "acct=round-\(round)", "v_Data=from-\(index)",
          ],
          environment: k.environment(
            as: index.isMultiple(of: 2) ? KeychainRoot.app : KeychainRoot.widget))
      }
      for worker in workers { #expect(worker.waitFor("ready")) }
      for worker in workers { worker.send("go") }
      let statuses = workers.compactMap { $0.waitForLine(timeout: 60) { $0.hasPrefix("status ") } }
      for worker in workers { worker.wait(timeout: 30) }
      #expect(statuses.count == 8)
      #expect(statuses.filter { $0 == "status 0" }.count == 1, "round \(round): \(statuses)")
      #expect(
        statuses.filter { $0 == "status \(errSecDuplicateItem)" }.count == 7,
        "round \(round): \(statuses)")
    }
  }

  @Test func anUpdateIsAtomicAndSeenByTheNextQueryOfAnotherProcess() throws {
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    let k = try KeychainRoot()
    #expect(
      try k.status([
        "add", "class=genp", "svce=s", "acct=a", "v_Data=value-0", "agrp=\(KeychainRoot.shared)",
      ]) == errSecSuccess)
    let reader = try repl(k, as: KeychainRoot.widget)
    // No stale cache: a change by another process is seen by the very next query.
    #expect(ask(reader, "copy class=genp svce=s r_Data=true") == ["status 0", "data value-0"])
    #expect(
      try k.status(["update", "class=genp", "svce=s", "--", "v_Data=value-x"]) == errSecSuccess)
    #expect(ask(reader, "copy class=genp svce=s r_Data=true") == ["status 0", "data value-x"])

    // A writer updating as fast as it can; every read sees one whole value, never going back.
    let writer = try ChildProcess(
      "appgroups-keychain-worker", ["update-loop", "s", "a"], environment: k.environment())
    #expect(writer.waitForLine { $0 == "updated 20" } != nil)
    var last = 0
    var reads = 0
    for _ in 0..<60 {
      let answer = ask(reader, "copy class=genp svce=s r_Data=true")
      guard answer.count == 2, answer[0] == "status 0", answer[1].hasPrefix("data value-"),
        let n = Int(answer[1].dropFirst("data value-".count))
      else {
        Issue.record("read \(answer)")
        break
      }
      #expect(n >= last, "went back from \(last) to \(n)")
      last = n
      reads += 1
    }
    #expect(reads == 60)
    // Killed mid-loop: the group stays readable and its lock free.
    writer.signal(SIGKILL)
    writer.wait(timeout: 30)
    #expect(ask(reader, "copy class=genp svce=s r_Data=true").first == "status 0")
    #expect(ask(reader, "add class=genp svce=s acct=b") == ["status 0"])
    let folder = k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared).path
    #expect(
      entries(of: URL(fileURLWithPath: folder)).sorted() == [
        "keychain.plist", "keychain.plist.lock",
      ])
    reader.send("quit")
    reader.wait()
  }

  @Test func aSuspendedAppHoldsNoKeychainLockAndIsNeverTerminatedForIt() throws {
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    let k = try KeychainRoot()
    #expect(
      try k.status(["add", "class=genp", "svce=s", "acct=a", "v_Data=value-0"]) == errSecSuccess)
    let writer = try ChildProcess(
      "appgroups-keychain-worker", ["update-loop", "s", "a"], environment: k.environment())
    #expect(writer.waitForLine { $0 == "updated 50" } != nil)
    let device = Device(root: k.root)
    let pid = writer.process.processIdentifier
    for _ in 0..<3 {
      let outcome = try device.suspend(pid: pid, grace: .seconds(5))
      #expect(outcome.result == .suspended)
      #expect(outcome.listening && outcome.acknowledged)
      // While it is stopped, another app of the group changes the item at once: no lock of the
      // group is held by the stopped process.
      let start = ContinuousClock.now
      #expect(
        try k.status(
          ["update", "class=genp", "svce=s", "--", "labl=changed"], as: KeychainRoot.widget)
          == errSecSuccess)
      #expect(ContinuousClock.now - start < .seconds(4))
      try device.resume(pid: pid)
      // It goes on updating after the resume.
      let next = writer.waitForLine { $0.hasPrefix("updated ") }
      #expect(next != nil)
    }
    #expect(device.logLines().isEmpty)
    writer.signal(SIGKILL)
    writer.wait(timeout: 30)
  }

  /// A thread that holds a lock when a suspension closes the barrier, and asks for a second
  /// one, gets it: it lets both go, and the app is stopped holding neither. Held back, it kept
  /// the drain waiting to the end of the grace period, and the app was stopped holding the
  /// first (a keychain update locks the access groups it searches one after the other: the
  /// widget then waited the lock's whole bound for the suspended app).
  @Test func aLockHolderGetsItsSecondLockWhileTheSuspensionDrains() throws {
    let k = try KeychainRoot()
    let paths = ["outer", "inner", "probe"].map { k.root.path + "/nested-\($0).lock" }
    let worker = try ChildProcess(
      "appgroups-keychain-worker", ["nested-locks"] + paths, environment: k.environment())
    #expect(worker.waitForLine { $0 == "holding" } != nil)
    let device = Device(root: k.root)
    let pid = worker.process.processIdentifier
    let outcome = try device.suspend(pid: pid, grace: .seconds(5))
    #expect(outcome.result == .suspended)
    #expect(outcome.listening && outcome.acknowledged)
    // Stopped: the lock it held first is free.
    let fd = open(paths[0], O_RDWR | O_CLOEXEC)
    #expect(fd >= 0)
    #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
    close(fd)
    try device.resume(pid: pid)
    #expect(worker.waitForLine { $0.hasPrefix("inner ") } == "inner locked")
    #expect(worker.waitForLine { $0 == "released" } != nil)
    #expect(device.logLines().isEmpty)
    worker.signal(SIGKILL)
    worker.wait(timeout: 30)
  }

  /// Adds an item, then starts an app (`hold-lock`) that takes its access group's lock
  /// through the library and keeps it: its process, once it says so, and the group.
  private func startHoldingAnAccessGroupsLock(
    _ k: KeychainRoot, environment extra: [String: String] = [:]
  ) throws -> (ChildProcess, String) {
    #expect(
      try k.status(["add", "class=genp", "svce=s", "acct=a", "v_Data=value-0"]) == errSecSuccess)
    let group = try #require(
      try FileManager.default.contentsOfDirectory(atPath: k.root.keychainsURL.path).first)
    let lockPath = k.root.keychainsURL.path + "/\(group)/keychain.plist.lock"
    let holder = try ChildProcess(
      "appgroups-keychain-worker", ["hold-lock", lockPath],
      environment: k.environment().merging(extra) { $1 })
    #expect(holder.waitForLine { $0 == "holding" } != nil)
    return (holder, group)
  }

  /// An app stopped holding an access group's lock (its drain ran out of time) is reported,
  /// not terminated: on a device the keychain daemon holds that lock, not the app. Its answer
  /// says the lock was still held, and is not counted as ready.
  @Test func anAppStoppedHoldingAKeychainLockIsReportedNotTerminated() throws {
    let k = try KeychainRoot()
    let (holder, group) = try startHoldingAnAccessGroupsLock(k)
    let device = Device(root: k.root)
    let pid = holder.process.processIdentifier
    let outcome = try device.suspend(pid: pid, grace: .milliseconds(500))
    #expect(outcome.result == .suspended)
    #expect(outcome.listening && !outcome.acknowledged && outcome.heldLibraryLock)
    let lock = try #require(outcome.locks.first)
    #expect(outcome.locks.count == 1 && lock.isKeychain && lock.groupIdentifier == group)
    #expect(lock.path.hasSuffix("/Keychains/\(group)/keychain.plist.lock"))
    #expect(outcome.reports.count == 1)
    let report = outcome.reports.first ?? ""
    #expect(
      report.hasPrefix(
        "reported: \(KeychainRoot.app) (\(pid)) held the keychain's lock of access group \(group)"))
    #expect(report.contains("not 0xdead10cc") && !report.contains("terminated"))
    #expect(device.logLines().count == 1 && device.logLines().first?.hasSuffix(report) == true)
    #expect(device.stoppedProcessesHoldingLocks().map(\.pid) == [pid])
    try device.resume(pid: pid)
    holder.signal(SIGKILL)
    holder.wait(timeout: 30)
  }

  /// An app whose ready file comes after the suspender stopped waiting (here: it stops itself
  /// just before writing it, as a loaded machine's scheduler may keep it from the CPU) still
  /// said, when its drain began, that it held a lock of the library.
  @Test func aLockHeldIsSaidEvenWhenTheReadyFileComesTooLate() throws {
    let k = try KeychainRoot()
    let marker = k.path + "/before-answer"
    let (holder, _) = try startHoldingAnAccessGroupsLock(
      k, environment: ["APPGROUPS_TEST_PAUSE_BEFORE_ANSWER": marker])
    let device = Device(root: k.root)
    let pid = holder.process.processIdentifier
    let outcome = try device.suspend(pid: pid, grace: .milliseconds(500))
    #expect(FileManager.default.fileExists(atPath: marker))
    #expect(outcome.result == .suspended)
    #expect(outcome.listening && !outcome.acknowledged && outcome.heldLibraryLock)
    #expect(outcome.locks.count == 1 && outcome.locks.first?.isKeychain == true)
    try device.resume(pid: pid)
    holder.signal(SIGKILL)
    holder.wait(timeout: 30)
  }

  @Test func theReferenceKeychainStoreWorksAcrossTheAppAndTheWidget() throws {
    let k = try KeychainRoot()
    let token = "refresh-\(UUID().uuidString)"
    #expect(
      try k.worker(["store", "save", "com.company.app.auth", "refreshToken", token]).stdout
        == "saved\n")
    #expect(
      try k.worker(
        ["store", "load", "com.company.app.auth", "refreshToken"], as: KeychainRoot.widget
      ).stdout == "loaded \(token)\n")
    #expect(
      try k.worker(
        ["store", "load", "com.company.app.auth", "refreshToken"], as: KeychainRoot.intruder
      ).stdout == "none\n")
    let stranger = try k.worker(
      ["store", "load", "com.company.app.auth", "refreshToken"], as: "com.example.stranger")
    #expect(stranger.stdout == "error \(errSecMissingEntitlement)\n")
  }

  @Test func theKernelAdmitsASandboxedAppToItsOwnGroupsOnly() throws {
    guard (try? AppSandbox.landlockABI()) != nil else { return }
    let k = try KeychainRoot()
    #expect(try k.status(["add", "class=genp", "svce=s", "v_Data=x"]) == errSecSuccess)
    let file =
      k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared).path + "/keychain.plist"
    // The widget, sandboxed, reads and writes its groups' items through the keychain.
    let widget = try k.worker(
      ["--sandbox", "copy", "class=genp", "svce=s", "r_Data=true"], as: KeychainRoot.widget)
    #expect(widget.stdout.hasSuffix("status 0\ndata x\n"), "\(widget.stdout) \(widget.stderr)")
    #expect(
      try k.worker(["--sandbox", "add", "class=genp", "svce=w"], as: KeychainRoot.widget).stdout
        .hasSuffix("status 0\n"))
    // The intruder, sandboxed, is refused the shared group's file by the kernel itself.
    let intruder = try Product.run(
      "appgroups-worker", ["restrict-self", "read", file, "list", k.root.keychainsURL.path],
      environment: k.environment(as: KeychainRoot.intruder))
    #expect(
      intruder.stdout.contains("read \(file) EACCES"), "\(intruder.stdout) \(intruder.stderr)")
    #expect(intruder.stdout.contains("list \(k.root.keychainsURL.path) EACCES"))
    let reader = try Product.run(
      "appgroups-worker", ["restrict-self", "read", file],
      environment: k.environment(as: KeychainRoot.widget))
    #expect(reader.stdout.contains("read \(file) ok"), "\(reader.stdout) \(reader.stderr)")
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// Where `groupctl` puts what it prints, and what its exit status says of it: output that did
/// not all arrive fails the command, `export` writes through a fifo, a device or a link
/// without putting a file in its place, and a read that cannot see the whole suite says so.
@Suite("groupctl output", .processBound)
struct GroupctlOutputTests {
  static let isRoot = getuid() == 0
  static let group = TestRoot.group

  /// A root whose group suite holds `greeting = hello`.
  private func rootWithAValue(_ name: String = #function) throws -> GroupctlRoot {
    let g = try GroupctlRoot(name)
    try g.ok(["write", Self.group, "greeting", "hello"])
    return g
  }

  /// Runs groupctl against `g`'s root with its standard output sent to `output`.
  private func run(_ g: GroupctlRoot, _ args: [String], stdoutTo output: String) throws -> (
    status: Int32, stderr: String
  ) {
    let groupctl = Product.url("groupctl").path
    let result = try Product.run(
      "/bin/sh", ["-c", "out=$1; shift; exec \"$@\" >\"$out\"", "sh", output, groupctl, "--root", g.path] + args,
      environment: ["APPGROUPS_ROOT": g.path])
    return (result.status, result.stderr)
  }

  @Test func outputThatDoesNotReachStandardOutputFailsTheCommand() throws {
    let g = try rootWithAValue()
    for args in [["read", Self.group], ["read", Self.group, "greeting"], ["export", Self.group, "-"]] {
      let result = try run(g, args, stdoutTo: "/dev/full")
      #expect(result.status == 1, "groupctl \(args) > /dev/full: \(result.stderr)")
      #expect(result.stderr.contains("No space left on device"), "groupctl \(args): \(result.stderr)")
    }
    // The same commands with somewhere to write succeed.
    let file = g.path + "/out"
    #expect(try run(g, ["read", Self.group, "greeting"], stdoutTo: file).status == 0)
    #expect(try String(contentsOfFile: file, encoding: .utf8) == "hello\n")
  }

  /// A command whose product is a change prints only a confirmation of it: when that cannot
  /// be written (`> /dev/full`), the change is made all the same, the exit is 0 and stderr says
  /// both; it was 1 ("what was printed is incomplete"), with the change on disk. A command
  /// whose output is its product (`device` showing the state) still fails.
  @Test func aChangeWhoseConfirmationCannotBeWrittenIsMadeAndSucceeds() throws {
    let g = try GroupctlRoot()
    let incomplete = "groupctl: writing to standard output:"
    func change(
      _ args: [String], said: String = "the change is made and on disk", shows state: String,
      sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
      let result = try run(g, ["device"] + args, stdoutTo: "/dev/full")
      #expect(result.status == 0, "device \(args): \(result.stderr)", sourceLocation: sourceLocation)
      #expect(
        result.stderr.contains(incomplete) && result.stderr.contains("No space left on device")
          && result.stderr.contains("; what was printed is incomplete (\(said))"),
        "device \(args): \(result.stderr)", sourceLocation: sourceLocation)
      // No passcode in any message.
      #expect(
        !["5555", "6666"].contains { result.stderr.contains($0) }, "\(result.stderr)",
        sourceLocation: sourceLocation)
      let shown = try g.ok(["device"])
      #expect(shown.contains(state), "after device \(args): \(shown)", sourceLocation: sourceLocation)
    }
    try change(["passcode", "set", "5555"], shows: "passcode: set")
    try change(["passcode", "set", "6666", "--passcode", "5555"], shows: "passcode: set")
    // The new passcode is the one that unlocks: the change was made whole.
    try change(["lock", "--grace", "0"], shows: "state: locked")
    try change(
      ["lock", "--grace", "0"], said: "the device was already locked; nothing was changed",
      shows: "state: locked")
    #expect(try g.run(["device", "unlock", "--passcode", "5555"]).status == 1)
    try change(["unlock", "--passcode", "6666"], shows: "state: unlocked")
    try change(
      ["unlock", "--passcode", "6666"], said: "the device was already unlocked; nothing was changed",
      shows: "state: unlocked")
    try change(["reboot", "--grace", "0"], shows: "state: before-first-unlock")
    try change(["unlock", "--passcode", "6666"], shows: "state: unlocked")
    try change(["passcode", "clear", "--passcode", "6666"], shows: "passcode: none")

    // Showing the state is the product: its output cut short fails it.
    let shown = try run(g, ["device"], stdoutTo: "/dev/full")
    #expect(shown.status == 1, "\(shown.stderr)")
    #expect(shown.stderr.contains("; what was printed is incomplete\n"), "\(shown.stderr)")
    #expect(!shown.stderr.contains("the change is made"), "\(shown.stderr)")
    // A change refused (a wrong passcode) is not made, and says no such thing.
    try g.ok(["device", "passcode", "set", "7777"])
    let refused = try run(
      g, ["device", "passcode", "clear", "--passcode", "8888"], stdoutTo: "/dev/full")
    #expect(refused.status == 1, "\(refused.stderr)")
    #expect(!refused.stderr.contains("the change is made"), "\(refused.stderr)")
    #expect(!refused.stderr.contains("7777") && !refused.stderr.contains("8888"))
    #expect(try g.ok(["device"]).contains("passcode: set"))
  }

  /// An import of entitlements the manifest already grants changes nothing (the manifest is
  /// not written), and says so when its lines cannot be printed; the first import said the
  /// change is made.
  @Test func anImportThatChangesNothingDoesNotSayItMadeAChange() throws {
    let g = try GroupctlRoot(grant: false)
    let file = g.t.sandbox.url.appendingPathComponent("App.entitlements")
    let entitlements: [String: Any] = ["com.apple.security.application-groups": ["group.com.example.more"]]
    try PropertyListSerialization.data(fromPropertyList: entitlements, format: .xml, options: 0)
      .write(to: file)
    let args = ["import-entitlements", "com.example.app", file.path]
    let first = try run(g, args, stdoutTo: "/dev/full")
    #expect(first.status == 0, "\(first.stderr)")
    #expect(first.stderr.contains("(the change is made and on disk)"), "\(first.stderr)")
    let again = try run(g, args, stdoutTo: "/dev/full")
    #expect(again.status == 0, "\(again.stderr)")
    #expect(again.stderr.contains("(the manifest already granted it; nothing was changed)"), "\(again.stderr)")
    #expect(!again.stderr.contains("the change is made"), "\(again.stderr)")
  }

  @Test func aWatchWhoseOutputCannotBeWrittenStopsWithAFailure() throws {
    let g = try rootWithAValue()
    let child = try ChildProcess(
      executable: URL(fileURLWithPath: "/bin/sh"),
      ["-c", "exec \"$@\" >/dev/full", "sh", Product.url("groupctl").path, "--root", g.path, "watch", Self.group],
      environment: ["APPGROUPS_ROOT": g.path])
    #expect(child.waitForError("watching \(Self.group) (Ctrl-C to stop)"), "\(child.standardError)")
    try g.ok(["write", Self.group, "greeting", "bonjour"])
    #expect(child.wait(timeout: 20) == 1, "\(child.standardError)")
    #expect(child.standardError.contains("No space left on device"), "\(child.standardError)")
  }

  @Test func exportWritesThroughAFifoAndALinkAndKeepsThem() throws {
    let g = try rootWithAValue()
    let fifo = g.path + "/export.fifo"
    #expect(mkfifo(fifo, 0o600) == 0)
    // A reader opened first (without waiting for a writer), so that the export's open finds
    // it and nothing waits.
    let reader = open(fifo, O_RDONLY | O_NONBLOCK)
    #expect(reader >= 0)
    defer { close(reader) }
    let exported = try g.run(["export", Self.group, fifo])
    #expect(exported.status == 0, "\(exported.stderr)")
    #expect(FileStatus(atPath: fifo)?.kind == .fifo, "the fifo is still a fifo")
    var received = Data()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = read(reader, &buffer, buffer.count)
      if count <= 0 { break }
      received.append(contentsOf: buffer[0..<count])
    }
    let values = try PropertyListSerialization.propertyList(from: received, format: nil) as? [String: Any]
    #expect(values?["greeting"] as? String == "hello", "what came through the fifo: \(received.count) bytes")

    let target = g.path + "/target.plist"
    let link = g.path + "/link.plist"
    try Data("old".utf8).write(to: URL(fileURLWithPath: target))
    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
    let throughLink = try g.run(["export", Self.group, link])
    #expect(throughLink.status == 0, "\(throughLink.stderr)")
    #expect(FileStatus(atPath: link)?.kind == .symbolicLink, "the link is still a link")
    #expect(try TestRoot.readPlist(URL(fileURLWithPath: target))["greeting"] as? String == "hello")

    let folder = g.path + "/folder"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
    let intoFolder = try g.run(["export", Self.group, folder])
    #expect(intoFolder.status == 1)
    #expect(intoFolder.stderr.contains("cannot write \(folder): it is a folder"), "\(intoFolder.stderr)")
  }

  @Test(.enabled(if: isRoot, "needs root to make a device node"))
  func anExportThatADeviceRefusesFailsAndLeavesTheDevice() throws {
    let g = try rootWithAValue()
    // A node of /dev/full's device in the test's root, never /dev/full itself.
    let full = g.path + "/full"
    let made = try Product.run("/usr/bin/mknod", [full, "c", "1", "7"])
    #expect(made.status == 0, "\(made.stderr)")
    let exported = try g.run(["export", Self.group, full])
    #expect(exported.status == 1, "\(exported.stderr)")
    #expect(exported.stderr.contains("cannot write \(full): No space left on device"), "\(exported.stderr)")
    #expect(FileStatus(atPath: full)?.kind == .device, "the device is still a device")
  }

  @Test func aReadOfASuiteWhoseJournalIsDamagedSaysSo() throws {
    let g = try GroupctlRoot()
    try g.ok(["import", Self.group, "-"], stdin: try TestRoot.largeSuitePlist())
    // Small commits to a suite this large go to its journal.
    try g.ok(["write", Self.group, "first", "1"])
    try g.ok(["write", Self.group, "second", "2"])
    let journal = g.t.groupSuiteFile.path + ".journal"
    let bytes = try #require(FileManager.default.contents(atPath: journal))
    // The last record cut short: "second" is gone from disk, "first" is still read.
    try bytes.prefix(bytes.count - 5).write(to: URL(fileURLWithPath: journal))

    let first = try g.run(["read", Self.group, "first"])
    #expect(first.status == 0)
    #expect(first.stdout == "1\n")
    let second = try g.run(["read", Self.group, "second"])
    #expect(second.status == 1)
    for result in [first, second] {
      #expect(result.stderr.contains("\(journal), the suite's last small commits, cannot be read whole"), "\(result.stderr)")
    }
    // The file is left as it is for an app (or the next write) to fold and keep aside.
    #expect(FileManager.default.contents(atPath: journal) == bytes.prefix(bytes.count - 5))
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// Passcodes read from stdin (`-`) are text, as on the command line: bytes that are not UTF-8
/// are refused, not made into U+FFFD, which made different passcodes one.
@Suite("groupctl device: passcodes read from stdin", .processBound)
struct GroupctlPasscodeInputTests {
  /// The stderr of `groupctl ARGUMENTS` in `g` with standard input from `path`, which is to
  /// end at once with 1.
  func refusal(_ g: GroupctlRoot, stdinFrom path: String, _ arguments: [String]) throws -> String {
    let child = try ChildProcess.withStandardInput(
      from: path, "groupctl", ["--root", g.path] + arguments,
      environment: ["APPGROUPS_ROOT": g.path])
    #expect(child.wait(timeout: 20) == 1, "\(arguments)")
    return child.standardError
  }

  @Test func aPasscodeThatIsNotUTF8IsRefusedAndNothingChanges() throws {
    let g = try GroupctlRoot()
    let refused = try g.run(["device", "passcode", "set", "-"], stdin: Data([0x70, 0x69, 0x6E, 0xFF, 0x0A]))
    #expect(refused.status == 1)
    #expect(
      refused.stderr.contains("the new passcode read from stdin is not valid UTF-8 text; nothing was changed"),
      "\(refused.stderr)")
    #expect(try g.ok(["device"]).contains("passcode: none"))
  }

  /// A UTF-8 passcode from stdin is kept as typed; one that differs in a byte does not unlock,
  /// nor does U+FFFD in its place; two lines give the current and the new passcode.
  @Test func aUTF8PasscodeIsKeptByteForByte() throws {
    let g = try GroupctlRoot()
    try g.ok(["device", "passcode", "set", "-"], stdin: Data("pïn✓\r\n".utf8))
    try g.ok(["device", "lock", "--grace", "0"])
    for wrong in [Data("pïn✗\n".utf8), Data("p\u{FFFD}n✓\n".utf8), Data([0x70, 0xFF, 0x6E, 0x0A])] {
      let attempt = try g.run(["device", "unlock", "--passcode", "-"], stdin: wrong)
      #expect(attempt.status == 1, "\(attempt.stderr)")
    }
    try g.ok(["device", "unlock", "--passcode", "-"], stdin: Data("pïn✓".utf8))
    try g.ok(["device", "passcode", "set", "-", "--passcode", "-"], stdin: Data("pïn✓\n1234\n".utf8))
    try g.ok(["device", "lock", "--grace", "0"])
    try g.ok(["device", "unlock", "--passcode", "1234"])
  }

  /// A stdin that never ends a line (here `/dev/zero`) is read no further than the longest
  /// passcode: the command ends at once, says why, and nothing changes. It read for ever.
  @Test func aStdinWithNoEndIsRefusedWithoutReadingItAll() throws {
    let g = try GroupctlRoot()
    try g.ok(["device", "passcode", "set", "1234"])
    try g.ok(["device", "lock", "--grace", "0"])
    let stderr = try refusal(g, stdinFrom: "/dev/zero", ["device", "unlock", "--passcode", "-"])
    #expect(
      stderr.contains("the passcode read from stdin is longer than 128 bytes, the most a passcode"
        + " holds; nothing was changed"), "\(stderr)")
    let shown = try g.ok(["device"])
    #expect(shown.contains("state: locked"), "\(shown)")
    #expect(!shown.contains("wrong passcodes"), "\(shown)")
  }

  /// A standard input that cannot be read (a folder) is an error that says so, and nothing
  /// changes. groupctl crashed (Foundation's `try!`, SIGILL).
  @Test func aStdinThatCannotBeReadIsAnError() throws {
    let g = try GroupctlRoot()
    let stderr = try refusal(g, stdinFrom: "/", ["device", "passcode", "set", "-"])
    #expect(
      stderr.contains("standard input could not be read (Is a directory); nothing was changed"),
      "\(stderr)")
    #expect(try g.ok(["device"]).contains("passcode: none"))
  }
}

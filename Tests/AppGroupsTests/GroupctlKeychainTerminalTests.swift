import AppGroups
import AppGroupsKeychain
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// `groupctl keychain add-generic-password ... -w` with no value, on a terminal: the real
/// groupctl on a pseudo-terminal this test holds the other end of.
@Suite("groupctl keychain on a terminal", .processBound)
struct GroupctlKeychainTerminalTests {
  /// A pseudo-terminal: the test's end (`master`) and the child's (`slave`).
  final class Terminal {
    let master: CInt
    let slave: CInt
    /// Everything the child wrote to the terminal so far.
    private(set) var seen = ""

    /// `posix_openpt(3)`, `unlockpt(3)` and `ptsname(3)` as the kernel serves them (glibc
    /// declares them only for `_XOPEN_SOURCE`): `/dev/ptmx`, then `TIOCSPTLCK` and `TIOCGPTN`,
    /// whose numbers (`_IOW('T', 0x31, int)`, `_IOR('T', 0x30, unsigned int)`) are the
    /// generic ones of x86-64 and arm64.
    init() throws {
      master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
      try #require(master >= 0, "\(String(cString: strerror(errno)))")
      var unlock: CInt = 0
      var number: CUnsignedInt = 0
      try #require(ioctl(master, 0x4004_5431, &unlock) == 0 && ioctl(master, 0x8004_5430, &number) == 0)
      slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
      try #require(slave >= 0, "\(String(cString: strerror(errno)))")
    }

    deinit {
      close(slave)
      close(master)
    }

    /// Reads what the child writes until `text` has appeared past the first `offset` bytes,
    /// or the deadline.
    func waitFor(_ text: String, after offset: Int = 0, timeout: Double = 30) -> Bool {
      let deadline = Date().addingTimeInterval(timeout)
      while !String(decoding: seen.utf8.dropFirst(offset), as: UTF8.self).contains(text) {
        let left = deadline.timeIntervalSinceNow
        guard left > 0, readSome(waiting: Int32(left * 1000) + 1) else { return false }
      }
      return true
    }

    /// Reads what is there already, without waiting: all a child that has ended wrote.
    func drain() {
      while readSome(waiting: 0) {}
    }

    /// One read of what the child wrote, waiting up to `milliseconds` for it to come.
    private func readSome(waiting milliseconds: Int32) -> Bool {
      var entry = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
      guard poll(&entry, 1, milliseconds) > 0 else { return milliseconds > 0 }
      var buffer = [UInt8](repeating: 0, count: 4096)
      let n = read(master, &buffer, buffer.count)
      guard n > 0 else { return false }
      seen += String(decoding: buffer[..<n], as: UTF8.self)
      return true
    }

    /// Whether the terminal echoes what is typed now.
    var echoes: Bool {
      var settings = termios()
      tcgetattr(slave, &settings)
      return settings.c_lflag & tcflag_t(ECHO) != 0
    }

    /// Starts `groupctl` with `arguments` on this terminal (its standard input, output and
    /// error), with `environment` added to the test's; and a semaphore signalled at its exit.
    func run(_ arguments: [String], environment: [String: String] = [:]) throws
      -> (Process, DispatchSemaphore)
    {
      let process = Process()
      process.executableURL = Product.url("groupctl")
      process.arguments = arguments
      process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
      let handle = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
      process.standardInput = handle
      process.standardOutput = handle
      process.standardError = handle
      let exited = DispatchSemaphore(value: 0)
      process.terminationHandler = { _ in exited.signal() }
      try process.run()
      return (process, exited)
    }

    /// Types `text` as a person would.
    func type(_ text: String) {
      let bytes = Array(text.utf8)
      #expect(write(master, bytes, bytes.count) == bytes.count)
    }
  }

  /// The password is asked for twice on the terminal, with echo off from before each prompt
  /// shows; what is typed is stored, and never appears on the terminal. The prompt was
  /// written before echo was turned off, and what was typed at once after it could be echoed
  /// or flushed away (`TCSAFLUSH`).
  @Test func thePasswordPromptStoresWhatIsTypedWithoutEcho() throws {
    let k = try KeychainRoot()
    let terminal = try Terminal()
    #expect(terminal.echoes)
    let secret = "typed-\(UUID().uuidString.prefix(8))"
    let (process, exited) = try terminal.run(
      [
        "--root", k.path, "--as", KeychainRoot.app, "keychain", "add-generic-password", "-a", "tty",
        "-s", "term", "-w",
      ], environment: k.environment())
    defer {
      if process.isRunning { process.terminate() }
    }

    let first = "password data for new item: "
    try #require(terminal.waitFor(first), "\(terminal.seen)")
    // Echo is off by the time the prompt shows: the password is typed at once.
    #expect(!terminal.echoes)
    let mark = terminal.seen.utf8.count
    terminal.type(secret + "\n")
    try #require(
      terminal.waitFor("retype password for new item: ", after: mark), "\(terminal.seen)")
    #expect(!terminal.echoes)
    terminal.type(secret + "\n")
    try #require(exited.wait(timeout: .now() + 60) == .success, "\(terminal.seen)")
    #expect(process.terminationStatus == 0, "\(terminal.seen)")
    // Echo is back as it was, and nothing typed was shown.
    #expect(terminal.echoes)
    terminal.drain()
    #expect(!terminal.seen.contains(secret), "\(terminal.seen)")

    let found = try Product.run(
      "groupctl",
      [
        "--root", k.path, "--as", KeychainRoot.app, "keychain", "find-generic-password", "-a",
        "tty", "-s", "term", "-w",
      ],
      environment: k.environment())
    #expect(found.status == 0 && found.stdout == secret + "\n", "\(found)")
  }

  /// `device passcode set -` on a terminal prompts on stderr with echo off, twice, as `-w`
  /// does: the code typed is set and never appears on the terminal. From a pipe, `-` still
  /// reads a plain line.
  @Test func theDevicePasscodeIsTypedWithoutEcho() throws {
    let g = try GroupctlRoot()
    let terminal = try Terminal()
    #expect(terminal.echoes)
    let code = "Pc-\(UUID().uuidString.prefix(8))"
    let (process, exited) = try terminal.run(["--root", g.path, "device", "passcode", "set", "-"])
    defer {
      if process.isRunning { process.terminate() }
    }
    try #require(terminal.waitFor("the new passcode: "), "\(terminal.seen)")
    #expect(!terminal.echoes)
    let mark = terminal.seen.utf8.count
    terminal.type(code + "\n")
    // Typed unseen, a new passcode is typed twice.
    try #require(terminal.waitFor("retype the new passcode: ", after: mark), "\(terminal.seen)")
    #expect(!terminal.echoes)
    terminal.type(code + "\n")
    try #require(exited.wait(timeout: .now() + 60) == .success, "\(terminal.seen)")
    #expect(process.terminationStatus == 0, "\(terminal.seen)")
    #expect(terminal.echoes)
    terminal.drain()
    #expect(terminal.seen.contains("passcode set"), "\(terminal.seen)")
    #expect(!terminal.seen.contains(code), "\(terminal.seen)")

    try g.ok(["device", "lock", "--grace", "0"])
    let unlocked = try g.run(
      ["device", "unlock", "--passcode", "-"], stdin: Data((code + "\n").utf8))
    #expect(unlocked.status == 0 && unlocked.stdout == "unlocked\n", "\(unlocked)")
    #expect(!unlocked.stderr.contains("passcode:"), "no prompt for a pipe: \(unlocked)")
  }
}

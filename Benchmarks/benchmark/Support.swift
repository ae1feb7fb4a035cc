// Plumbing shared by the coordinator and its child processes: a monotonic
// clock every process on the machine shares, unbuffered line output, child
// processes with stdin/stdout handshakes, and the statistics of the table.
// The peers (dconf-peer, keyring-peer: packages of their own) compile this same file through
// a symbolic link, so it imports nothing of the project.
import Foundation
import Glibc

// MARK: Clock

/// Nanoseconds of CLOCK_MONOTONIC: one clock for every process on this
/// machine, so a child's receive time and the parent's send time compare.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Nanoseconds of CPU time this thread has used (user and system). The
/// micro-measures (P1, P6) use it: on a machine shared with other work, a
/// batch's wall time also counts the time the thread was not running.
@inline(__always)
func threadCPUNanoseconds() -> UInt64 {
  var ts = timespec()
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
  return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Keeps a computed value alive so the optimiser cannot delete the loop that made it.
@inline(never)
func blackHole<T>(_ value: T) {
  withExtendedLifetime(value) {}
}

// MARK: Output

/// Writes one line to standard output at once (no stdio buffering: the
/// parent reads it through a pipe and may be waiting for it).
func emit(_ line: String) {
  writeAll(1, line + "\n")
}

/// Writes a diagnostic line to standard error.
func warn(_ line: String) {
  writeAll(2, "benchmark: " + line + "\n")
}

func fail(_ message: String) -> Never {
  warn(message)
  exit(1)
}

private func writeAll(_ fd: Int32, _ text: String) {
  var bytes = Array(text.utf8)
  bytes.withUnsafeMutableBytes { buffer in
    var offset = 0
    while offset < buffer.count {
      let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
      if n < 0 {
        if errno == EINTR { continue }
        return
      }
      offset += n
    }
  }
}

/// Reads lines from a file descriptor, with a deadline.
final class LineReader {
  let fd: Int32
  private var buffer: [UInt8] = []

  init(fd: Int32) { self.fd = fd }

  /// The next line without its newline; `nil` at end of input or after
  /// `timeout` seconds without one.
  func readLine(timeout: Double = 60) -> String? {
    let deadline = monotonicNanoseconds() + UInt64(timeout * 1e9)
    while true {
      if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
        let line = String(decoding: buffer[..<newline], as: UTF8.self)
        buffer.removeSubrange(...newline)
        return line
      }
      let now = monotonicNanoseconds()
      guard now < deadline else { return nil }
      var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      let waitMs = Int32(min((deadline - now) / 1_000_000 + 1, 1_000))
      let ready = poll(&pfd, 1, waitMs)
      if ready < 0 && errno != EINTR { return nil }
      if ready <= 0 { continue }
      var chunk = [UInt8](repeating: 0, count: 4096)
      let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
      if n < 0 {
        if errno == EINTR || errno == EAGAIN { continue }
        return nil
      }
      if n == 0 {
        if buffer.isEmpty { return nil }
        let line = String(decoding: buffer, as: UTF8.self)
        buffer.removeAll()
        return line
      }
      buffer.append(contentsOf: chunk[..<n])
    }
  }
}

// MARK: Child processes

/// This benchmark binary, re-executed in a hidden child mode with its stdin
/// and stdout connected to pipes.
final class ChildProcess {
  let pid: pid_t
  private let stdinFD: Int32
  let output: LineReader
  private var exitStatus: Int32?

  /// The running executable, resolved once.
  static let executable: String = {
    guard let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
      fail("cannot resolve /proc/self/exe")
    }
    return path
  }()

  /// Starts `benchmark __child <arguments...>` with `environment` laid over this process's.
  convenience init(_ arguments: [String], environment: [String: String]) {
    self.init(executable: Self.executable, ["__child"] + arguments, environment: environment)
  }

  /// Starts `executable <arguments...>` with `environment` laid over this process's.
  init(executable: String, _ arguments: [String], environment: [String: String]) {
    var toChild: [Int32] = [0, 0]
    var fromChild: [Int32] = [0, 0]
    guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else {
      fail("pipe: \(String(cString: strerror(errno)))")
    }
    // Close-on-exec, so a child does not inherit its siblings' pipes (and
    // each sees the end of its stdin when its own driver closes it).
    for fd in toChild + fromChild { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
    posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)

    let argv = [executable] + arguments
    var merged = ProcessInfo.processInfo.environment
    for (key, value) in environment { merged[key] = value }
    let envp = merged.map { "\($0.key)=\($0.value)" }
    var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
    var cEnv: [UnsafeMutablePointer<CChar>?] = envp.map { strdup($0) } + [nil]
    defer {
      for p in cArgs { free(p) }
      for p in cEnv { free(p) }
    }
    var child: pid_t = 0
    let rc = posix_spawn(&child, executable, &actions, nil, &cArgs, &cEnv)
    close(toChild[0])
    close(fromChild[1])
    guard rc == 0 else { fail("posix_spawn: \(String(cString: strerror(rc)))") }
    pid = child
    stdinFD = toChild[1]
    output = LineReader(fd: fromChild[0])
  }

  /// Sends one line to the child's stdin.
  func send(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeMutableBytes { write(stdinFD, $0.baseAddress!, $0.count) }
  }

  /// The next line the child printed, or a failure naming `what` was awaited.
  func expectLine(_ what: String, timeout: Double = 120) -> String {
    guard let line = output.readLine(timeout: timeout) else {
      fail("child \(pid) gave no \(what) within \(Int(timeout)) s")
    }
    return line
  }

  /// Closes the child's stdin (its signal to finish) and waits for it.
  @discardableResult
  func finish() -> Int32 {
    if let exitStatus { return exitStatus }
    close(stdinFD)
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    close(output.fd)
    // WIFEXITED / WEXITSTATUS, spelled out (macros do not import).
    let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    exitStatus = code
    return code
  }
}

/// Runs one child to completion and returns its result lines (`sample`,
/// `value`, `note`); fails when it exits non-zero.
func runChild(_ arguments: [String], environment: [String: String], timeout: Double = 600) -> [String] {
  let child = ChildProcess(arguments, environment: environment)
  var lines: [String] = []
  while let line = child.output.readLine(timeout: timeout) {
    if line == "done" { break }
    lines.append(line)
  }
  let code = child.finish()
  guard code == 0 else { fail("child \(arguments.joined(separator: " ")) exited with \(code)") }
  return lines
}

/// P8 and its fan-out floor: one `got <write> <nanoseconds>` line from each of `watchers` (each
/// told of write number `write`), and the latest of their times; a failure naming `what` on any
/// other line.
func lastTold(_ watchers: [ChildProcess], write: Int, what: String) -> UInt64 {
  var last: UInt64 = 0
  for watcher in watchers {
    let line = watcher.expectLine("\(what): a change callback for write \(write)", timeout: 30)
    let parts = line.split(separator: " ")
    guard parts.count == 3, parts[0] == "got", Int(parts[1]) == write, let at = UInt64(parts[2]) else {
      fail("\(what): unexpected watcher line \(line.debugDescription) for write \(write)")
    }
    last = max(last, at)
  }
  return last
}

// MARK: Statistics

enum Stats {
  /// The q-quantile (0…1) by the nearest-rank method.
  static func quantile(_ xs: [Double], _ q: Double) -> Double {
    let s = xs.sorted()
    guard !s.isEmpty else { return .nan }
    let rank = Int((q * Double(s.count)).rounded(.up))
    return s[min(max(rank - 1, 0), s.count - 1)]
  }

  static func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    guard !s.isEmpty else { return .nan }
    let mid = s.count / 2
    return s.count % 2 == 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2
  }
}

/// A duration in nanoseconds, in the unit that reads best.
func formatDuration(_ ns: Double) -> String {
  guard ns.isFinite else { return "—" }
  if ns < 1_000 { return String(format: "%.0f ns", ns) }
  if ns < 10_000 { return String(format: "%.2f µs", ns / 1e3) }
  if ns < 1_000_000 { return String(format: "%.1f µs", ns / 1e3) }
  if ns < 10_000_000 { return String(format: "%.2f ms", ns / 1e6) }
  if ns < 1_000_000_000 { return String(format: "%.1f ms", ns / 1e6) }
  return String(format: "%.2f s", ns / 1e9)
}

func formatCount(_ n: Int) -> String {
  let digits = String(n)
  var out = ""
  for (i, c) in digits.enumerated() {
    if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
    out.append(c)
  }
  return out
}

/// Peak resident memory of this process (VmHWM), in KiB.
func peakResidentKiB() -> Int {
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
  for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
    let digits = line.filter(\.isNumber)
    return Int(digits) ?? -1
  }
  return -1
}

// MARK: Parameters

/// `name=value` arguments of a child mode.
struct Parameters {
  var values: [String: String]

  init<Arguments: Sequence<String>>(_ arguments: Arguments) {
    values = [:]
    for argument in arguments {
      guard let eq = argument.firstIndex(of: "=") else { fail("bad parameter \(argument)") }
      values[String(argument[..<eq])] = String(argument[argument.index(after: eq)...])
    }
  }

  subscript(name: String) -> String? { values[name] }

  var suite: String {
    guard let suite = values["suite"] else { fail("missing suite=") }
    return suite
  }

  func int(_ name: String) -> Int {
    guard let text = values[name], let n = Int(text) else { fail("missing or bad \(name)=") }
    return n
  }

  func double(_ name: String) -> Double {
    guard let text = values[name], let n = Double(text) else { fail("missing or bad \(name)=") }
    return n
  }
}

public import Foundation
import Glibc

/// A small, fast, seeded random number generator (SplitMix64), so that a
/// failing fault or fuzz run can be replayed from the seed it printed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
  private var state: UInt64

  public init(seed: UInt64) { state = seed }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// Settings for the heavier variants of the fault, stress and fuzz tests.
public enum FaultSettings {
  /// `APPGROUPS_STRESS=1` turns on the heavy variants.
  public static var stressEnabled: Bool {
    ProcessInfo.processInfo.environment["APPGROUPS_STRESS"] == "1"
  }

  /// The seed for a test: `APPGROUPS_SEED` when set (to replay a failure), else a fresh one.
  /// Printed by the caller so that every run can be replayed.
  public static func seed() -> UInt64 {
    if let text = ProcessInfo.processInfo.environment["APPGROUPS_SEED"], let seed = UInt64(text) {
      return seed
    }
    return UInt64.random(in: 0 ... .max)
  }

  /// An integer from the environment, or `fallback`.
  public static func integer(_ name: String, default fallback: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap { Int($0) } ?? fallback
  }
}

/// Waits until `path` exists, woken by inotify on its folder; `false` at the deadline.
/// No fixed sleep: the wait ends as soon as the file appears.
public func waitForFile(_ path: String, timeout: TimeInterval) -> Bool {
  let directory = (path as NSString).deletingLastPathComponent
  let fd = inotify_init1(CInt(IN_CLOEXEC) | CInt(IN_NONBLOCK))
  guard fd >= 0 else { return false }
  defer { close(fd) }
  let mask = UInt32(IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO)
  guard inotify_add_watch(fd, directory, mask) >= 0 else { return false }
  let deadline = Date().addingTimeInterval(timeout)
  var buffer = [UInt8](repeating: 0, count: 4096)
  while true {
    // Checked after the watch is in place, so a file created in between is not missed.
    if access(path, F_OK) == 0 { return true }
    let remaining = deadline.timeIntervalSinceNow
    if remaining <= 0 { return false }
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    _ = poll(&descriptor, 1, CInt(min(remaining * 1000 + 1, 60_000)))
    _ = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
  }
}

/// The state letter of a process from `/proc/<pid>/stat` (`T` when stopped), or `nil`.
public func processState(_ pid: Int32) -> Character? {
  guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
    let close = text.lastIndex(of: ")")
  else { return nil }
  return text[text.index(after: close)...].first { $0 != " " }
}

/// Waits until the process is stopped (state `T`): a child that stops itself announces it by a
/// file first, and a SIGCONT sent before it has actually stopped would be lost. `false` at the
/// deadline.
public func waitUntilStopped(_ pid: Int32, timeout: TimeInterval) -> Bool {
  let deadline = Date().addingTimeInterval(timeout)
  while processState(pid) != "T" {
    if Date() >= deadline { return false }
    sched_yield()
  }
  return true
}

/// Every entry below `url` with its type, mode, size, modification time and (for files) bytes
/// or (for links) target: two equal snapshots mean nothing there was touched.
public func snapshot(of url: URL) -> [String: String] {
  var result: [String: String] = [:]
  func visit(_ path: String, _ relative: String) {
    var s = stat()
    guard lstat(path, &s) == 0 else { return }
    let kind = s.st_mode & S_IFMT
    var description =
      "mode=\(String(s.st_mode, radix: 8)) size=\(s.st_size) "
      + "mtime=\(s.st_mtim.tv_sec).\(s.st_mtim.tv_nsec)"
    if kind == S_IFREG, let data = FileManager.default.contents(atPath: path) {
      description += " bytes=\(data.base64EncodedString())"
    } else if kind == S_IFLNK,
      let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path)
    {
      description += " link=\(target)"
    }
    result[relative] = description
    if kind == S_IFDIR, let names = try? FileManager.default.contentsOfDirectory(atPath: path) {
      for name in names { visit(path + "/" + name, relative + "/" + name) }
    }
  }
  visit(url.path, ".")
  return result
}

/// The names in `directory` (empty when it does not exist).
public func entries(of directory: URL) -> [String] {
  (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
}

/// Two CPU-bound processes (`yes > /dev/null`) for as long as the value lives: tests of
/// contention run beside them, as on a loaded machine.
public final class CPULoad: Sendable {
  private let processes: [(Process, ExitSignal)]

  public init(count: Int = 2) throws {
    var started: [(Process, ExitSignal)] = []
    for _ in 0..<count {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: "/usr/bin/yes")
      process.standardOutput = FileHandle.nullDevice
      process.standardError = FileHandle.nullDevice
      started.append((process, try process.startWatchingExit()))
    }
    processes = started
  }

  deinit {
    for (process, exited) in processes {
      kill(process.processIdentifier, SIGKILL)
      _ = exited.wait(timeout: 60)
    }
  }
}

import Foundation

/// What `/proc/PID/stat` says of a process.
///
/// See: man 5 proc (`/proc/pid/stat`): field 2 the command name in parentheses, field 3 the
/// state, field 4 the parent's process id, field 22 the start time in clock ticks after boot.
struct ProcessStatus: Sendable, Equatable {
  var pid: Int32
  /// The command name (`comm`), at most 15 bytes.
  var name: String
  /// The state letter: `R`, `S`, `D`, `T` (stopped), `t` (stopped by a tracer), `Z`, …
  var state: Character
  /// The parent's process id (0 for the first process).
  var parentID: Int32
  /// The start time in clock ticks after boot: with the pid, it names one process.
  var startTime: UInt64

  /// Whether the process is stopped, however it was stopped.
  var isStopped: Bool { state == "T" || state == "t" }

  /// The status of `pid`; `nil` when there is no such process (or it is a zombie).
  init?(pid: Int32) {
    guard pid > 0, let data = try? FileSystem.read("/proc/\(pid)/stat")?.0 else { return nil }
    let text = String(decoding: data, as: UTF8.self)
    // The name may hold spaces and parentheses: it ends at the last ')'.
    guard let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")") else {
      return nil
    }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 19, let state = fields[0].first, let parent = Int32(fields[1]),
      let start = UInt64(fields[19])
    else {
      return nil
    }
    if state == "Z" || state == "X" { return nil }
    self.pid = pid
    self.name = String(text[text.index(after: open)..<close])
    self.state = state
    self.parentID = parent
    self.startTime = start
  }

  /// Every process id in `/proc`.
  static func allPIDs() -> [Int32] {
    FileSystem.entryNames(in: "/proc").compactMap { Int32($0) }.sorted()
  }

  /// One variable of the process's environment (`/proc/PID/environ`), when readable.
  static func environmentValue(_ name: String, pid: Int32) -> String? {
    guard let data = try? FileSystem.read("/proc/\(pid)/environ")?.0 else { return nil }
    let prefix = Array((name + "=").utf8)
    for entry in data.split(separator: 0) where entry.starts(with: prefix) {
      return String(decoding: entry.dropFirst(prefix.count), as: UTF8.self)
    }
    return nil
  }

  /// Whether the process has a handler for `signal` (the `SigCgt` mask of
  /// `/proc/PID/status`, man 5 proc).
  static func catches(_ signal: Processes.Signal, pid: Int32) -> Bool {
    guard let data = try? FileSystem.read("/proc/\(pid)/status")?.0 else { return false }
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n")
    where line.hasPrefix("SigCgt:") {
      let hex = line.dropFirst(7).trimmingCharacters(in: .whitespaces)
      guard let mask = UInt64(hex, radix: 16) else { return false }
      return mask & (UInt64(1) << UInt64(signal.rawValue - 1)) != 0
    }
    return false
  }

  /// Waits, a bounded time, until the process is stopped or gone; `true` when it is stopped.
  /// The kernel gives no event for another process's stop, so this looks every half millisecond.
  static func waitUntilStopped(pid: Int32, timeout: UInt64 = 2_000_000_000) -> Bool {
    let deadline = FileSystem.monotonicNanoseconds() &+ timeout
    while true {
      guard let status = ProcessStatus(pid: pid) else { return false }
      if status.isStopped { return true }
      if FileSystem.monotonicNanoseconds() >= deadline { return false }
      Thread.sleep(forTimeInterval: 0.000_5)
    }
  }
}

// The watcher thread's clock: the monotonic clock's nanoseconds, as plain integers.

extension WatcherEngine {
  /// The monotonic clock, in nanoseconds.
  static func now() -> Int64 {
    Int64(truncatingIfNeeded: FileSystem.monotonicNanoseconds())
  }

  /// A duration in whole nanoseconds (rounded down, at least 0, at most `Int64.max`).
  static func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else { return 0 }
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    return overflow ? .max : adding(attoseconds / 1_000_000_000, to: whole)
  }

  /// `time` plus `nanoseconds` (at least 0), at most `Int64.max`.
  static func adding(_ nanoseconds: Int64, to time: Int64) -> Int64 {
    let (sum, overflow) = time.addingReportingOverflow(nanoseconds)
    return overflow ? .max : sum
  }

  /// Nanoseconds (more than 0) in whole milliseconds, rounded up.
  static func milliseconds(nanoseconds: Int64) -> Int64 {
    let (whole, rest) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000)
    return whole + (rest > 0 ? 1 : 0)
  }

  /// A duration in whole milliseconds, rounded up.
  static func milliseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    let perMillisecond: Int64 = 1_000_000_000_000_000
    let (whole, rest) = attoseconds.quotientAndRemainder(dividingBy: perMillisecond)
    return seconds * 1000 + whole + (rest > 0 ? 1 : 0)
  }
}

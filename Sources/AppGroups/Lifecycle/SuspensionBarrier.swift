import Foundation

/// Keeps the library's file locks out of a suspension: every `flock(2)` the library takes goes
/// through ``LockedFile``, which, once the app's lifecycle has started (``install()``), enters
/// the barrier before it locks and leaves it after it unlocks. While a suspension is being prepared the barrier is closed: the locks held are
/// waited for (``closeAndDrain(until:)``), and a lock asked for meanwhile waits until the
/// barrier opens again or its own deadline passes, as it would wait for another process.
///
/// A closed barrier opens again on resume, or by itself after ``closedBound``: a process
/// continued by something other than `groupctl resume` is not kept from its files for long.
enum SuspensionBarrier {
  private static let condition = NSCondition()
  // Read and written only while `condition` is locked.
  nonisolated(unsafe) private static var holders = 0
  nonisolated(unsafe) private static var closedUntil: UInt64?

  /// How long a closed barrier stays closed at most, in nanoseconds of the monotonic clock.
  /// The clock runs on while the process is stopped, so after a long suspension it opens at
  /// once.
  static let closedBound: UInt64 = 10_000_000_000

  /// Makes every lock taken through a ``LockedFile`` from now on pass the barrier: called when
  /// the app's lifecycle starts, before any suspension can be prepared.
  static func install() {
    LockedFile.install(LockedFile.Admission(enter: { enter(until: $0) }, leave: { leave() }))
  }

  /// Waits until the barrier is open and counts the caller as a holder; `false` when it was
  /// still closed at `deadline` (``FileSystem/monotonicNanoseconds()``).
  static func enter(until deadline: UInt64) -> Bool {
    condition.lock()
    defer { condition.unlock() }
    while let until = closedUntil {
      let now = FileSystem.monotonicNanoseconds()
      if now >= until {
        closedUntil = nil
        break
      }
      if now >= deadline { return false }
      let wake = min(until, deadline) - now
      _ = condition.wait(until: Date(timeIntervalSinceNow: Double(wake) / 1e9))
    }
    holders += 1
    return true
  }

  /// Counts one holder less.
  static func leave() {
    condition.lock()
    holders = max(holders - 1, 0)
    condition.broadcast()
    condition.unlock()
  }

  /// Closes the barrier and waits until no lock is held; `false` when one still was at
  /// `deadline`.
  static func closeAndDrain(until deadline: UInt64) -> Bool {
    condition.lock()
    defer { condition.unlock() }
    closedUntil = FileSystem.monotonicNanoseconds() &+ closedBound
    while holders > 0 {
      let now = FileSystem.monotonicNanoseconds()
      if now >= deadline { return false }
      _ = condition.wait(until: Date(timeIntervalSinceNow: Double(deadline - now) / 1e9))
    }
    return true
  }

  /// Opens the barrier: the locks waiting for it are taken.
  static func open() {
    condition.lock()
    closedUntil = nil
    condition.broadcast()
    condition.unlock()
  }

  /// Whether the barrier is closed now.
  static var isClosed: Bool {
    condition.lock()
    defer { condition.unlock() }
    guard let until = closedUntil else { return false }
    return FileSystem.monotonicNanoseconds() < until
  }
}

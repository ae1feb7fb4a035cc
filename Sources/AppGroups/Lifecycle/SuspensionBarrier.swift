import Foundation

/// Keeps the library's file locks out of a suspension: every `flock(2)` the library takes goes
/// through ``LockedFile``, which, once the app's lifecycle has started (``install()``), enters
/// the barrier before it locks and leaves it after it unlocks. While a suspension is being
/// prepared the barrier is closed: the locks held are waited for (``close()``, ``drain(until:)``),
/// and a lock asked for meanwhile by a thread that holds none waits until the barrier opens
/// again or its own deadline passes, as it would wait for another process.
///
/// A thread that already holds a lock of the library passes a closed barrier: the drain waits
/// for that thread to let go, and it may need another lock to get there (a keychain update
/// locks every access group it searches, one after the other, before it writes). Held back,
/// it would keep the drain from ending before the grace period did, and the app would be
/// stopped holding the locks it had.
///
/// A closed barrier opens again on resume, or by itself after ``closedBound``: a process
/// continued by something other than `groupctl resume` is not kept from its files for long.
enum SuspensionBarrier {
  /// One passage of the barrier, to leave once (from any thread): the thread that entered.
  typealias Entry = Threads.Identity

  private static let condition = NSCondition()
  // Read and written only while `condition` is locked.
  nonisolated(unsafe) private static var holders = 0
  /// How many passages each thread holds now.
  nonisolated(unsafe) private static var entries: [Entry: Int] = [:]
  nonisolated(unsafe) private static var closedUntil: UInt64?

  /// How long a closed barrier stays closed at most, in nanoseconds of the monotonic clock.
  /// The clock runs on while the process is stopped, so after a long suspension it opens at
  /// once.
  static let closedBound: UInt64 = 10_000_000_000

  /// Makes every lock taken through a ``LockedFile`` from now on pass the barrier: called when
  /// the app's lifecycle starts, before any suspension can be prepared.
  static func install() {
    LockedFile.install(LockedFile.Admission(enter: { enter(until: $0) }, leave: { leave($0) }))
  }

  /// Waits until the barrier is open, unless the calling thread already holds a passage, and
  /// counts the caller as a holder; `nil` when it was still closed at `deadline`
  /// (``FileSystem/monotonicNanoseconds()``).
  /// - Returns: The passage, for ``leave(_:)``.
  static func enter(until deadline: UInt64) -> Entry? {
    let thread = Entry.current
    condition.lock()
    defer { condition.unlock() }
    while entries[thread] == nil, let until = closedUntil {
      let now = FileSystem.monotonicNanoseconds()
      if now >= until {
        closedUntil = nil
        break
      }
      if now >= deadline { return nil }
      let wake = min(until, deadline) - now
      _ = condition.wait(until: Date(timeIntervalSinceNow: Double(wake) / 1e9))
    }
    holders += 1
    entries[thread, default: 0] += 1
    return thread
  }

  /// Counts one holder less: the passage `entry` ends.
  static func leave(_ entry: Entry) {
    condition.lock()
    holders = max(holders - 1, 0)
    if let count = entries[entry] { entries[entry] = count > 1 ? count - 1 : nil }
    condition.broadcast()
    condition.unlock()
  }

  /// Closes the barrier; `true` when a lock of the library is held now, and ``drain(until:)``
  /// has something to wait for.
  static func close() -> Bool {
    condition.lock()
    defer { condition.unlock() }
    closedUntil = FileSystem.monotonicNanoseconds() &+ closedBound
    return holders > 0
  }

  /// Waits until no lock is held; `false` when one still was at `deadline`. Called after
  /// ``close()``.
  static func drain(until deadline: UInt64) -> Bool {
    condition.lock()
    defer { condition.unlock() }
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

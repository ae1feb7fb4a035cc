import Foundation

/// Lets one thread of this process commit a suite at a time, with a bounded wait.
///
/// The suite's file lock (`flock(2)`) belongs to an open file description, which every thread
/// of the process shares, so it cannot keep this process's own committers apart: the gate
/// does. A committer enters the gate, then takes the file lock with what is left of the same
/// deadline, so that the whole wait (for another thread's commit, then for another process)
/// stays within one bound.
///
/// The bound is on waiting for *another process*: once the committer holding the gate has
/// the file lock (``holdsFileLock()``), it is writing, which takes milliseconds, and waiters
/// wait for it to finish whatever their deadline, so that a commit in flight is never
/// reported as a timeout.
///
/// The gate remembers which thread holds it: a thread that asks again (an atomic update's
/// closure calling back into the store) is told so at once instead of deadlocking.
final class CommitGate: @unchecked Sendable {
  // `owner` and `ownerHoldsFileLock` are read and written only while `condition` is locked.
  private let condition = NSCondition()
  private var owner: Threads.Identity?
  private var ownerHoldsFileLock = false

  enum Entry {
    /// The gate is this thread's until ``leave()``.
    case entered
    /// Another thread of this process still held it at the deadline.
    case timedOut
    /// This thread already holds it.
    case reentered
  }

  /// Enters the gate, waiting until `deadline` at most: a ``FileSystem/monotonicNanoseconds()``
  /// instant, the clock the file lock's wait uses too, so that a change of the wall clock
  /// neither stretches nor cuts the bound.
  func enter(before deadline: UInt64) -> Entry {
    let me = Threads.Identity.current
    condition.lock()
    defer { condition.unlock() }
    while let owner {
      if owner == me { return .reentered }
      if ownerHoldsFileLock {
        condition.wait()
        continue
      }
      // NSCondition waits until a wall-clock date: wait for what is left of the monotonic
      // bound, and measure again on waking.
      let now = FileSystem.monotonicNanoseconds()
      let left = deadline > now ? deadline - now : 0
      if left == 0 || !condition.wait(until: Date(timeIntervalSinceNow: Double(left) / 1e9)) {
        if self.owner != nil, !ownerHoldsFileLock, FileSystem.monotonicNanoseconds() >= deadline {
          return .timedOut
        }
      }
    }
    owner = me
    return .entered
  }

  /// Called by the holder once it has the file lock: from now on it is writing, not waiting.
  func holdsFileLock() {
    condition.lock()
    ownerHoldsFileLock = true
    condition.unlock()
  }

  /// Enters the gate if no thread holds it now.
  func tryEnter() -> Bool {
    condition.lock()
    defer { condition.unlock() }
    guard owner == nil else { return false }
    owner = .current
    return true
  }

  /// Whether the calling thread holds the gate.
  var isHeldByCurrentThread: Bool {
    condition.lock()
    defer { condition.unlock() }
    guard let owner else { return false }
    return owner == .current
  }

  func leave() {
    condition.lock()
    owner = nil
    ownerHoldsFileLock = false
    // Every waiter: one may have given up at its deadline, and another must not miss the turn.
    condition.broadcast()
    condition.unlock()
  }
}

import Foundation

// The gate of a suite's committers in this process (see ``SuiteFile``): one thread commits at
// a time, because the file lock is the whole process's.
extension SuiteFile {
  // MARK: The gate

  /// How ``enterGate(before:)`` ended.
  enum GateEntry {
    /// The gate is this thread's until ``leaveGate()``.
    case entered
    /// Another thread of this process still held it at the deadline.
    case timedOut
    /// This thread already holds it.
    case reentered
  }

  /// Lets one thread of this process commit at a time, waiting until `deadline` at most (a
  /// ``FileSystem/monotonicNanoseconds()`` instant, the file lock's clock).
  ///
  /// The file lock (`flock(2)`) belongs to an open file description, which every thread of the
  /// process shares, so it cannot keep this process's own committers apart: the gate does. A
  /// committer enters it, then takes the file lock with what is left of the same deadline. The
  /// bound is on waiting for another process: once the holder has the file lock it is writing,
  /// and waiters wait for it whatever their deadline, so that a commit in flight is never
  /// reported as a timeout. A thread that asks again (an atomic update's closure calling back
  /// into the store) is told so at once instead of deadlocking.
  ///
  /// The holder may be asked again on its own thread by anything it calls out to while in the
  /// gate: an atomic update's closure, or a diagnostics handler (``Diagnostics/setHandler(_:)``).
  func enterGate(before deadline: UInt64) -> GateEntry {
    let me = Threads.Identity.current
    gate.lock()
    defer { gate.unlock() }
    while let owner = gateOwner {
      if owner == me { return .reentered }
      if gateOwnerHasFileLock {
        gate.wait()
        continue
      }
      // NSCondition waits until a wall-clock date: wait for what is left of the monotonic
      // bound, and measure again on waking.
      let now = FileSystem.monotonicNanoseconds()
      let left = deadline > now ? deadline - now : 0
      if left == 0 || !gate.wait(until: Date(timeIntervalSinceNow: Double(left) / 1e9)) {
        if gateOwner != nil, !gateOwnerHasFileLock, FileSystem.monotonicNanoseconds() >= deadline {
          return .timedOut
        }
      }
    }
    gateOwner = me
    return .entered
  }

  /// Enters the gate if no thread holds it now.
  func tryEnterGate() -> Bool {
    inGate {
      guard gateOwner == nil else { return false }
      gateOwner = .current
      return true
    }
  }

  func leaveGate() {
    inGate {
      (gateOwner, gateOwnerHasFileLock) = (nil, false)
      // Every waiter: one may have given up at its deadline, and another must not miss the turn.
      gate.broadcast()
    }
  }

  func inGate<T>(_ body: () -> T) -> T {
    gate.lock()
    defer { gate.unlock() }
    return body()
  }
}

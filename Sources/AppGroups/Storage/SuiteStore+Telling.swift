internal import Foundation

/// The re-reads of one store whose changes are in memory and not yet told to its handlers.
///
/// A re-read puts what it read into the store's memory under the file's state lock, and
/// tells the handlers (the view forgets its cached values, observers hear) after it, outside
/// every lock. A re-read on another thread in that window finds nothing new: without this
/// gate, a `synchronize()` that returned then let the view answer from its cache with the
/// value before the change, which the change monitor's thread had read but not yet told
/// (seen under load: a managed value written in place, read as the user's value after
/// `synchronize()`). A re-read now waits for the others' telling before it returns, bounded
/// (``bound``) so that two threads' observers that each wait for the other cannot hang: at
/// the bound it returns as it did before. A thread never waits for its own telling (an
/// observer that calls `synchronize()` on the suite it is told about).
final class SuiteTelling: @unchecked Sendable {
  private let condition = NSCondition()
  /// The threads telling now (a thread once per re-read it is telling about).
  private var telling: [Threads.Identity] = []

  /// How long a re-read waits for other threads' telling at most.
  static let bound: TimeInterval = 2

  /// The calling thread has put a re-read's changes in memory (under the file's lock, so
  /// that a re-read that comes after finds it here).
  func begin() {
    condition.lock()
    telling.append(.current)
    condition.unlock()
  }

  /// The calling thread has told the handlers of the re-read it began.
  func end() {
    let me = Threads.Identity.current
    condition.lock()
    if let index = telling.firstIndex(of: me) { telling.remove(at: index) }
    condition.broadcast()
    condition.unlock()
  }

  /// Waits until no other thread is telling, for ``bound`` at most.
  func waitForOthers() {
    let me = Threads.Identity.current
    condition.lock()
    defer { condition.unlock() }
    guard telling.contains(where: { $0 != me }) else { return }
    let deadline = Date(timeIntervalSinceNow: Self.bound)
    while telling.contains(where: { $0 != me }) {
      if !condition.wait(until: deadline) { return }
    }
  }
}

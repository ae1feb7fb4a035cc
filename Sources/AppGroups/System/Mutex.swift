internal import CAppGroupsLinux
internal import Synchronization

/// `Synchronization.Mutex`, made visible to the thread sanitizer.
///
/// On Linux the standard library's `Mutex` locks with futexes inside the
/// (uninstrumented) standard library, so `swift test --sanitize=thread`
/// reports every access made under it as a data race, and real races drown
/// in the noise. This type has the same name and surface, so it takes the
/// place of the standard one in this module with no change at the call
/// sites, and tells the sanitizer about each acquisition and release
/// (`__tsan_acquire`/`__tsan_release`). In a normal build that is one
/// branch on a null function pointer.
struct Mutex<Value: ~Copyable>: ~Copyable {
  private let base: Synchronization.Mutex<Value>
  /// The address the sanitizer knows this lock by.
  private let token = SanitizerToken()

  init(_ initialValue: consuming sending Value) {
    base = Synchronization.Mutex(initialValue)
  }

  /// Runs `body` with the value while holding the lock.
  borrowing func withLock<Result: ~Copyable, E: Error>(
    _ body: (inout sending Value) throws(E) -> sending Result
  ) throws(E) -> sending Result {
    let token = self.token
    return try base.withLock { (value: inout sending Value) throws(E) -> sending Result in
      token.acquired()
      defer { token.releasing() }
      return try body(&value)
    }
  }

  /// Runs `body` with the value if the lock is free now; `nil` otherwise.
  borrowing func withLockIfAvailable<Result: ~Copyable, E: Error>(
    _ body: (inout sending Value) throws(E) -> sending Result
  ) throws(E) -> sending Result? {
    let token = self.token
    return try base.withLockIfAvailable { (value: inout sending Value) throws(E) -> sending Result in
      token.acquired()
      defer { token.releasing() }
      return try body(&value)
    }
  }
}

extension Mutex: @unchecked Sendable where Value: ~Copyable {}

/// A heap address standing for one lock, for the sanitizer's bookkeeping.
private final class SanitizerToken: Sendable {
  func acquired() { cappgroups_sanitizer_acquire(Unmanaged.passUnretained(self).toOpaque()) }
  func releasing() { cappgroups_sanitizer_release(Unmanaged.passUnretained(self).toOpaque()) }
}

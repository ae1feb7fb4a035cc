import Foundation

/// A value behind a lock, for collecting results from callbacks in tests.
public final class Locked<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Value
  public init(_ value: Value) { self.value = value }
  public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}

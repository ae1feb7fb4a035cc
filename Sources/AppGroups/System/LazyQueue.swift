import Dispatch
internal import Synchronization

/// A serial queue made at its first use, not when its owner is.
///
/// An app's first suite starts its device's monitor and its lifecycle, and each has a queue
/// that only events use (a change of the device's state, a suspension notice). Made with
/// its owner, the queues cost every new process's first open two `dispatch_queue_create`s,
/// and the binding of the Dispatch calls behind them, which a widget that only reads never
/// needed. Work given to it runs in order, on one queue, from the first use on.
final class LazyQueue: Sendable {
  private let label: String
  private let made = Mutex<DispatchQueue?>(nil)

  init(label: String) { self.label = label }

  /// The queue, made now if this is its first use.
  var queue: DispatchQueue {
    made.withLock { made in
      if let made { return made }
      let queue = DispatchQueue(label: label)
      made = queue
      return queue
    }
  }
}

import Dispatch
internal import Synchronization

/// A serial queue made at its first use, not when its owner is.
///
/// An app's first suite starts its device's monitor and its lifecycle, and opens the suite's
/// store (and its managed layer's), and each has a queue that only events or writes use (a
/// change of the device's state, a suspension notice, a commit). Made with their owners, the
/// queues cost every new process's first open four `dispatch_queue_create`s, and the binding
/// of the Dispatch calls behind them, which a widget that only reads never needed. Work given
/// to it runs in order, on one queue, from the first use on.
final class LazyQueue: Sendable {
  private let label: String
  private let suffix: String
  private let made = Mutex<DispatchQueue?>(nil)

  /// A queue labelled `label` followed by `suffix` (joined at the first use).
  init(label: String, _ suffix: String = "") {
    self.label = label
    self.suffix = suffix
  }

  /// The queue, made now if this is its first use.
  var queue: DispatchQueue {
    made.withLock { made in
      if let made { return made }
      let queue = DispatchQueue(label: suffix.isEmpty ? label : label + suffix)
      made = queue
      return queue
    }
  }
}

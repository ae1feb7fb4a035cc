internal import CAppGroupsLinux
import Glibc

/// The thread calls the package makes: who the calling thread is, and a short pause.
enum Threads {
  /// A thread of this process, as `pthread_self(3)` names it; equal when it is the same
  /// thread (`pthread_equal(3)`). A thread that ended may leave its identity to a new one.
  struct Identity: Hashable, @unchecked Sendable {
    private let thread: pthread_t

    static func == (a: Identity, b: Identity) -> Bool { pthread_equal(a.thread, b.thread) != 0 }

    func hash(into hasher: inout Hasher) { hasher.combine(thread) }

    /// The calling thread.
    static var current: Identity { Identity(thread: pthread_self()) }
  }

  /// Whether the calling thread blocks `signal` (also `true` when its mask cannot be looked
  /// at; `false` when `signal` is no signal number).
  ///
  /// The corresponding system call is `rt_sigprocmask(2)`, asking only.
  static func blocks(_ signal: CInt) -> Bool { cappgroups_signal_blocked(signal) != 0 }

  /// Pauses the calling thread for `nanoseconds` (less than a second), or less when a signal
  /// handler runs meanwhile.
  ///
  /// The corresponding system call is `nanosleep(2)`.
  static func pause(nanoseconds: Int) {
    var request = timespec(tv_sec: 0, tv_nsec: nanoseconds)
    _ = nanosleep(&request, nil)
  }
}

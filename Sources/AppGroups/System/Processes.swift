import CAppGroupsLinux
package import Dispatch
import Glibc
internal import Synchronization

/// The process calls the package and `groupctl` make: who this process is, whether another
/// one exists, its environment, its signals, and replacing it with another program.
package enum Processes {
  /// A signal by name.
  package struct Signal: RawRepresentable, Hashable, Sendable {
    package let rawValue: Int32

    package init(rawValue: Int32) { self.rawValue = rawValue }

    /// `SIGINT`: Ctrl-C.
    package static let interrupt = Signal(rawValue: SIGINT)
    /// `SIGTERM`: a request to end.
    package static let terminate = Signal(rawValue: SIGTERM)
    /// `SIGKILL`: the end, which no process can refuse.
    package static let kill = Signal(rawValue: SIGKILL)
    /// `SIGSTOP`: a stop, which no process can refuse.
    package static let stop = Signal(rawValue: SIGSTOP)
    /// `SIGTSTP`: a stop asked for (Ctrl-Z), which a process may take or ignore.
    package static let terminalStop = Signal(rawValue: SIGTSTP)
    /// `SIGCONT`: go on after a stop.
    package static let `continue` = Signal(rawValue: SIGCONT)
  }

  /// Unblocks every signal in the calling thread. A program inherits its parent's signal
  /// mask through `fork(2)` and `execve(2)`; started from a thread that blocks signals (a
  /// Dispatch worker blocks all of them, and Foundation's `Process` passes the mask on), it
  /// would not end on SIGTERM or SIGINT, whose default actions `groupctl` relies on: the
  /// signal would stay pending. Called first thing in `main`, before any other thread exists,
  /// so that every thread starts from it. The mask it replaces is kept: a program run in this
  /// process's place (``replaceCurrent(with:arguments:environment:)``) starts with it, as
  /// `env(1)` or `nice(1)` pass theirs on.
  ///
  /// The corresponding C function is `pthread_sigmask(3)` with `SIG_SETMASK`.
  package static func unblockAllSignals() {
    var none = sigset_t()
    sigemptyset(&none)
    var given = sigset_t()
    pthread_sigmask(SIG_SETMASK, &none, &given)
    inheritedMask.withLock { $0 = given }
  }

  /// Makes a write past the process's file size limit (`RLIMIT_FSIZE`, `ulimit -f`) fail with
  /// `EFBIG`, which every write of the library reports ("File too large") and leaves the old
  /// file in place for, instead of SIGXFSZ ending the process before it can say anything. A
  /// handler that does nothing, not `SIG_IGN`: a handled signal goes back to its default at
  /// `execve(2)`, so a program the process starts is not changed. A program's choice; the
  /// library never makes it by itself.
  ///
  /// The corresponding C function is `signal(2)`.
  package static func reportFileSizeLimitAsAnError() {
    _ = signal(SIGXFSZ) { _ in }
  }

  /// The signal mask ``unblockAllSignals()`` replaced, if it ran.
  private static let inheritedMask = Mutex<sigset_t?>(nil)

  /// This process's id.
  ///
  /// The corresponding system call is `getpid(2)`.
  package static var currentID: Int32 { getpid() }

  /// Whether a process with id `pid` exists, whoever owns it (a zombie counts).
  ///
  /// The corresponding system call is `kill(2)` with signal 0: `EPERM` means it exists and
  /// belongs to another user; any other failure, that there is none.
  package static func exists(_ pid: Int32) -> Bool {
    do {
      _ = try valueOrErrno("kill") { kill(pid, 0) }
      return true
    } catch {
      return error.code == .notPermitted
    }
  }

  /// Sends `signal` to the process `pid`.
  ///
  /// The corresponding system call is `kill(2)` (`ESRCH`: no such process; `EPERM`: another
  /// user's).
  static func send(_ signal: Signal, to pid: Int32) throws(SystemCallError) {
    _ = try valueOrErrno("kill") { kill(pid, signal.rawValue) }
  }

  /// Calls `handler` on `queue` for each `signal` instead of its default action (or of its
  /// being ignored), unless the process has a handler of its own for it, which is left alone.
  ///
  /// The corresponding C functions are `sigaction(2)` (to look), then `signal(3)` with
  /// `SIG_IGN` and a Dispatch signal source.
  ///
  /// - Returns: the source (cancel it to stop) and whether the signal was at its default
  ///   action, rather than ignored (a process may inherit an ignored one through `execve(2)`);
  ///   `nil` when the process handles the signal itself or it cannot be looked at.
  static func interceptUnlessHandled(
    _ signal: Signal, on queue: DispatchQueue,
    _ handler: @escaping @Sendable () -> Void
  ) -> (source: any DispatchSourceSignal, wasDefault: Bool)? {
    guard let wasDefault = isDefaultUnlessHandled(signal) else { return nil }
    return (take(signal, on: queue, handler), wasDefault)
  }

  /// Whether `signal` is at its default action (`true`) or ignored (`false`); `nil` when the
  /// process handles it itself or it cannot be looked at (see ``interceptUnlessHandled(_:on:_:)``).
  static func isDefaultUnlessHandled(_ signal: Signal) -> Bool? {
    guard let action = action(of: signal) else { return nil }
    let ignored = unsafeBitCast(SIG_IGN, to: Int.self)
    guard action == 0 || action == ignored else { return nil }
    return action == 0
  }

  /// Like ``interceptUnlessHandled(_:on:_:)``, but only for a signal at its default action:
  /// one the process ignores stays ignored.
  static func interceptIfDefault(
    _ signal: Signal, on queue: DispatchQueue,
    _ handler: @escaping @Sendable () -> Void
  ) -> (any DispatchSourceSignal)? {
    guard action(of: signal) == 0 else { return nil }
    return take(signal, on: queue, handler)
  }

  /// The signal's disposition as a number (0: the default action); `nil` when it cannot be
  /// looked at. The corresponding system call is `sigaction(2)`.
  private static func action(of signal: Signal) -> Int? {
    var current = sigaction()
    guard sigaction(signal.rawValue, nil, &current) == 0 else { return nil }
    return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
  }

  /// Ends this process as `signal`'s default action does: the disposition is set back to the
  /// default, the signal is unblocked in the calling thread, then raised there. Returns only
  /// for a signal whose default does not end the process.
  ///
  /// The caller is a Dispatch worker thread, which blocks every signal: raised there without
  /// the unblocking, the signal would stay pending and the process would go on (and a process
  /// started with every signal blocked, as a child spawned from such a thread is, would not
  /// take it in any thread either).
  ///
  /// The corresponding C functions are `signal(3)` with `SIG_DFL`, `pthread_sigmask(3)` and
  /// `raise(3)`.
  static func raiseWithDefaultAction(_ signal: Signal) {
    Glibc.signal(signal.rawValue, SIG_DFL)
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, signal.rawValue)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
    raise(signal.rawValue)
  }

  /// Calls `body` when the process exits normally (`exit(3)`, the end of `main`), after the
  /// functions registered later.
  ///
  /// The corresponding C function is `atexit(3)`.
  static func atExit(_ body: @escaping @convention(c) () -> Void) {
    atexit(body)
  }

  /// Ignores `signal`'s default action and hears it through a Dispatch source instead.
  private static func take(
    _ signal: Signal, on queue: DispatchQueue, _ handler: @escaping @Sendable () -> Void
  ) -> any DispatchSourceSignal {
    Glibc.signal(signal.rawValue, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: signal.rawValue, queue: queue)
    source.setEventHandler(handler: handler)
    source.resume()
    return source
  }

  /// Sets the environment variable `name` of this process to `value`.
  ///
  /// The corresponding C function is `setenv(3)`.
  static func setEnvironmentVariable(_ name: String, to value: String) {
    setenv(name, value, 1)
  }

  /// Calls `handler` on `queue` for each SIGINT and SIGTERM instead of letting them end the
  /// process, until the returned sources are cancelled. Taken before the library opens a
  /// suite, they are left to the caller (the library installs its own handlers only for
  /// signals at their default action).
  ///
  /// The corresponding C function is `signal(3)` with `SIG_IGN`, then a Dispatch signal
  /// source for each.
  package static func interceptInterruptAndTerminate(
    on queue: DispatchQueue, _ handler: @escaping @Sendable () -> Void
  ) -> [any DispatchSourceSignal] {
    [Signal.interrupt, .terminate].map { take($0, on: queue, handler) }
  }

  /// Records SIGINT and SIGTERM instead of letting them end the process, until it exits:
  /// for work that must end before the process does (a write whose status must say whether it
  /// is on disk). The handler only records the signal; ``wasInterrupted`` says, at once, on any
  /// thread, whether one came. Taken before the library opens a suite, they are left to the
  /// caller (the library installs its own handlers only for signals at their default action).
  /// A handled signal goes back to its default at `execve(2)`.
  ///
  /// The corresponding C function is `sigaction(2)`, with a handler that stores a flag.
  package static func recordInterruptAndTerminate() {
    for signal in [Signal.interrupt, .terminate] { _ = cappgroups_interruption_install(signal.rawValue) }
  }

  /// Whether SIGINT or SIGTERM came since ``recordInterruptAndTerminate()``.
  package static var wasInterrupted: Bool { cappgroups_interrupted() == 1 }

  /// Makes this process a child subreaper, for good and across `execve(2)`: a descendant
  /// whose parent exits (a double fork) becomes its child instead of init's, so that the
  /// process tree of an app keeps every process the app started.
  ///
  /// The corresponding system call is `prctl(2)` with `PR_SET_CHILD_SUBREAPER`.
  package static func becomeChildSubreaper() throws(AppGroupsError) {
    do {
      _ = try valueOrErrno("prctl", path: "PR_SET_CHILD_SUBREAPER") {
        cappgroups_become_child_subreaper()
      }
    } catch {
      throw AppGroupsError(io: error, "cannot keep the app's processes in one tree")
    }
  }

  /// Runs the program at `path` with `arguments` (the first one is its name), exactly
  /// `environment`, this process's standard streams and no other descriptor, and waits for it to exit. The
  /// program is tied to this process, with every process it starts: when this process ends
  /// first, by any signal, SIGKILL included, and when the program exits, every process left
  /// of the program's tree is killed (SIGKILL), a grandchild that called `setsid(2)` or was
  /// double-forked included, so that nothing it does outlives what this process holds for it
  /// (a coordinated access, whose lock is kept until then). Its signals start at their
  /// defaults. A keeper process between this one and the program does it
  /// (`cappgroups_spawn_tied`); not covered: work the tree hands to a process outside it (a
  /// daemon), and the tree's descendants when the keeper itself is killed with SIGKILL.
  ///
  /// The corresponding system calls are `fork(2)`, `prctl(2)` with `PR_SET_PDEATHSIG` and
  /// `PR_SET_CHILD_SUBREAPER`, `execve(2)`, `sigwaitinfo(2)`, `kill(2)` and `waitpid(2)`.
  ///
  /// - Returns: the program's exit status (127 when it could not be run), or 128 + the
  ///   signal that ended it.
  /// - Throws: `.io` when no process could be started or waited for.
  package static func runTied(
    _ path: String, arguments: [String], environment: [String: String]
  ) throws(AppGroupsError) -> Int32 {
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for pointer in argv + envp { free(pointer) }
    }
    fflush(nil)
    let pid: Int32
    do {
      // Descriptors this process opened stay here, whatever flags they were opened with.
      _ = try valueOrErrno("close_range", path: "descriptors above 2", retryOnInterrupt: false) {
        cappgroups_close_on_exec_from(3, 0)
      }
      pid = try valueOrErrno("fork", path: path, retryOnInterrupt: false) {
        cappgroups_spawn_tied(path, argv, envp)
      }
    } catch {
      throw AppGroupsError(io: error, "cannot run \(path)")
    }
    var status: Int32 = 0
    do {
      _ = try valueOrErrno("waitpid", path: path) { waitpid(pid, &status, 0) }
    } catch {
      throw AppGroupsError(io: error, "waiting for \(path) (\(pid))")
    }
    // See: man 2 waitpid (WIFEXITED, WEXITSTATUS, WTERMSIG).
    let signal = status & 0x7f
    return signal == 0 ? (status >> 8) & 0xff : 128 + signal
  }

  /// Replaces this process with the program at `path`, run with `arguments` (the first one
  /// is its name) and exactly `environment`, with standard input, output and error as they
  /// are and no other descriptor: every descriptor above 2 is closed by the exec, except a
  /// connected Unix socket the parent process made (Foundation's `Process` learns of its
  /// child's exit when the child's end of one closes; only the parent can pass anything
  /// through it). A listening socket of the parent's is closed: other clients reach it.
  /// The program starts with the signal mask this process was given, before
  /// ``unblockAllSignals()`` cleared it. Standard streams are flushed first. Returns only when
  /// the program cannot be run.
  ///
  /// The corresponding system calls are `close_range(2)` with `CLOSE_RANGE_CLOEXEC` (or
  /// `fcntl(2)` with `FD_CLOEXEC` on each descriptor of `/proc/self/fd`), then `execve(2)`.
  ///
  /// - Returns: `.io` saying "cannot run PATH: execve: " and the errno text, or that the
  ///   descriptors could not be marked (nothing is run then).
  package static func replaceCurrent(
    with path: String, arguments: [String], environment: [String: String]
  ) -> AppGroupsError {
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for pointer in argv + envp { free(pointer) }
    }
    fflush(nil)
    do {
      // A descriptor the caller opened on a file outside the sandbox would carry it in.
      _ = try valueOrErrno("close_range", path: "descriptors above 2", retryOnInterrupt: false) {
        cappgroups_close_on_exec_from(3, 1)
      }
    } catch {
      return AppGroupsError(
        .io, "cannot run \(path): cannot close the descriptors above 2: \(error.code)",
        cause: error)
    }
    // The program starts with the mask this process was given, not the one it cleared for
    // itself (see ``unblockAllSignals()``); execve(2) keeps the calling thread's mask.
    var restored = false
    var cleared = sigset_t()
    if var given = inheritedMask.withLock({ $0 }) {
      pthread_sigmask(SIG_SETMASK, &given, &cleared)
      restored = true
    }
    defer { if restored { pthread_sigmask(SIG_SETMASK, &cleared, nil) } }
    do {
      // See: man 2 execve (it returns only on failure; EINTR cannot happen).
      _ = try valueOrErrno("execve", path: path, retryOnInterrupt: false) {
        execve(path, argv, envp)
      }
    } catch {
      return AppGroupsError(.io, "cannot run \(path): execve: \(error.code)", cause: error)
    }
    return AppGroupsError(.io, "cannot run \(path): execve returned")
  }
}

extension Processes {
  /// Runs `body` with `SIGPIPE` blocked on the calling thread, so that a write to a pipe or
  /// fifo whose reader is gone fails with `EPIPE` instead of ending the process. A `SIGPIPE`
  /// that `body`'s writes raised is pending on this thread: it is taken before the mask is
  /// restored, so it never arrives later.
  static func withPipeSignalHeldOff<Value, Failure: Error>(
    _ body: () throws(Failure) -> Value
  ) throws(Failure) -> Value {
    var pipeOnly = sigset_t()
    var previous = sigset_t()
    sigemptyset(&pipeOnly)
    sigaddset(&pipeOnly, SIGPIPE)
    pthread_sigmask(SIG_BLOCK, &pipeOnly, &previous)
    defer {
      var zero = timespec()
      while sigtimedwait(&pipeOnly, nil, &zero) > 0 {}
      pthread_sigmask(SIG_SETMASK, &previous, nil)
    }
    return try body()
  }
}

/// This process's standard output, written to directly (not through `stdout`'s buffer).
package enum StandardOutput {
  /// Writes `text` whole, retrying after a signal and after a partial write.
  ///
  /// The corresponding system call is `write(2)` on descriptor 1.
  ///
  /// - Throws: `.io` naming the call and the errno text (`EPIPE` when the reader is gone).
  package static func write(_ text: String) throws(AppGroupsError) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let result: Result<Int, SystemCallError> = bytes.withUnsafeBytes { buffer in
        Result { () throws(SystemCallError) in
          // A closed standard output (EBADF) is the caller's to report, not a bug here.
          try valueOrErrno("write", path: "standard output", closedDescriptorIsBug: false) {
            Glibc.write(
              STDOUT_FILENO, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
          }
        }
      }
      do {
        offset += try result.get()
      } catch {
        throw AppGroupsError(io: error, "writing to standard output")
      }
    }
  }

  /// Writes `text` whole, as ``write(_:)`` does, with `SIGPIPE` held off the calling thread: a
  /// reader gone makes the write fail with `EPIPE` instead of ending the process, which can
  /// then still say on stderr what it has to say.
  ///
  /// - Throws: as ``write(_:)``.
  package static func writeHoldingOffPipeSignal(_ text: String) throws(AppGroupsError) {
    try Processes.withPipeSignalHeldOff { () throws(AppGroupsError) in try write(text) }
  }

  /// Flushes what `print` buffered, and says whether everything printed since the process
  /// started reached standard output: `nil` when it did, else why not (`EPIPE` when the
  /// reader is gone; `EIO` when an earlier flush failed and its reason is gone).
  ///
  /// The corresponding C functions are `fflush(3)` and `ferror(3)` of `stdout`.
  package static func flushPrinted() -> Errno? {
    let failure = cappgroups_flush_stdout()
    return failure == 0 ? nil : Errno(rawValue: failure)
  }
}

/// This process's standard input.
package enum StandardInput {
  /// Up to `count` bytes of standard input, as one `read(2)` returns them: fewer when fewer
  /// are there, none at its end. Unlike `FileHandle`'s reads, a failure is an error to report,
  /// not a crash of the process.
  ///
  /// The corresponding system call is `read(2)`.
  /// - Throws: the failed call: `EISDIR` when standard input is a folder, `EBADF` when it is
  ///   closed, `EIO`.
  package static func read(upTo count: Int) throws(SystemCallError) -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: count)
    let result: Result<Int, SystemCallError> = buffer.withUnsafeMutableBytes { space in
      Result { () throws(SystemCallError) in
        // A closed standard input (EBADF) is the caller's to report, not a bug here.
        try valueOrErrno("read", path: "standard input", closedDescriptorIsBug: false) {
          Glibc.read(STDIN_FILENO, space.baseAddress, count)
        }
      }
    }
    buffer.removeSubrange(try result.get()...)
    return buffer
  }


  /// Whether standard input is a terminal. The corresponding C function is `isatty(3)`.
  package static var isTerminal: Bool { isatty(STDIN_FILENO) == 1 }

  /// Runs `body` with the terminal's echo turned off (for a password typed at a prompt), and
  /// turns it back as it was, whatever `body` does. On a standard input that is not a
  /// terminal, `body` runs as it is. The corresponding calls are `tcgetattr(3)` and
  /// `tcsetattr(3)`.
  package static func withoutEcho<T>(_ body: () throws -> T) rethrows -> T {
    var saved = termios()
    tcgetattr(STDIN_FILENO, &saved)
    var quiet = saved
    quiet.c_lflag &= ~tcflag_t(ECHO)
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
    defer { tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved) }
    return try body()
  }
}

/// A descriptor of a process itself (a pidfd): a pid handed out again after the process ended
/// is never mistaken for it, and its end wakes a waiter. Closed when this goes.
final class ProcessHandle {
  /// The process.
  let pid: Int32
  private let descriptor: CInt

  /// A handle on the running process `pid`. The corresponding system call is `pidfd_open(2)`.
  /// - Throws: the failed call: `ESRCH` when the process is gone already.
  init(pid: Int32) throws(SystemCallError) {
    self.pid = pid
    descriptor = try valueOrErrno("pidfd_open") { cappgroups_pidfd_open(pid) }
  }

  deinit { FileSystem.close(descriptor) }

  /// Waits until the processes of `handles` have ended, or `deadline` (`CLOCK_MONOTONIC`,
  /// nanoseconds); returns the indices of those that ended. Woken by the kernel at each exit.
  /// The corresponding system call is `poll(2)`.
  static func waitForExit(_ handles: [ProcessHandle], until deadline: UInt64) -> Set<Int> {
    var ended: Set<Int> = []
    while ended.count < handles.count {
      let waiting = handles.indices.filter { !ended.contains($0) }
      var entries = waiting.map {
        pollfd(fd: handles[$0].descriptor, events: Int16(POLLIN), revents: 0)
      }
      let now = FileSystem.monotonicNanoseconds()
      let left = deadline > now ? Int32(clamping: (deadline - now + 999_999) / 1_000_000) : 0
      _ = poll(&entries, nfds_t(entries.count), left)
      for (position, entry) in entries.enumerated() where entry.revents != 0 {
        ended.insert(waiting[position])
      }
      if FileSystem.monotonicNanoseconds() >= deadline { break }
    }
    return ended
  }
}

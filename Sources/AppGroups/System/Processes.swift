package import Dispatch
import Glibc

/// The process calls the package and `groupctl` make: who this process is, whether another
/// one exists, its environment, its signals, and replacing it with another program.
package enum Processes {
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
    [SIGINT, SIGTERM].map { number in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
      source.setEventHandler(handler: handler)
      source.resume()
      return source
    }
  }

  /// Replaces this process with the program at `path`, run with `arguments` (the first one
  /// is its name) and exactly `environment`. Standard streams are flushed first. Returns
  /// only when the program cannot be run.
  ///
  /// The corresponding system call is `execve(2)`.
  ///
  /// - Returns: `.io` saying "cannot run PATH: execve: " and the errno text.
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
            Glibc.write(STDOUT_FILENO, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
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
}

import Foundation
import Glibc

// appgroups-worker listen-and-run PROGRAM ARGS…
//     a caller that hands its descendants two Unix sockets it made: descriptor 9 listening
//     (on an address of its own, autobound in the abstract namespace), descriptor 8 one end of
//     a socket pair, both without FD_CLOEXEC; runs PROGRAM ARGS with its standard streams
//     (posix_spawn) and exits with its status (128 + the signal that ended it).

/// `listen-and-run`: runs `command` with a listening socket at 9 and a socket pair's end at 8.
func runListenAndRun(_ command: [String]) -> Never {
  guard let program = command.first else { fail("listen-and-run needs a PROGRAM") }
  let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
  guard listener >= 0 else { fail("listen-and-run: socket: errno \(errno)") }
  // See: man 7 unix (autobind: an address length of sizeof(sa_family_t)).
  var address = sockaddr_un()
  address.sun_family = sa_family_t(AF_UNIX)
  let bound = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      bind(listener, $0, socklen_t(MemoryLayout<sa_family_t>.size))
    }
  }
  guard bound == 0, listen(listener, 4) == 0 else { fail("listen-and-run: bind or listen: errno \(errno)") }
  var pair: [Int32] = [-1, -1]
  guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else {
    fail("listen-and-run: socketpair: errno \(errno)")
  }
  // dup2 clears FD_CLOEXEC on the copy.
  guard dup2(listener, 9) == 9, dup2(pair[0], 8) == 8 else { fail("listen-and-run: dup2: errno \(errno)") }
  for fd in [listener, pair[0], pair[1]] where fd != 8 && fd != 9 {
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
  }
  var pid: pid_t = 0
  let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
  defer { for pointer in argv { free(pointer) } }
  let result = posix_spawn(&pid, program, nil, nil, argv, environ)
  guard result == 0 else { fail("listen-and-run: posix_spawn \(program): errno \(result)") }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
  exit(status & 0x7f != 0 ? 128 + (status & 0x7f) : (status >> 8) & 0xff)
}

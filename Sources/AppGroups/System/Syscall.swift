import CAppGroupsLinux
import Glibc

/// A failed system call: which call, on what, and the `errno` it set.
///
/// Internal: the public face of every failure is ``AppGroupsError``.
package struct SystemCallError: Error, Sendable, CustomStringConvertible {
  package let call: String
  package let path: String?
  package let errno: CInt
  /// Said instead of `strerror(errno)` when the call succeeded but its result was refused
  /// (a fifo where a regular file must be).
  var reason: String? = nil

  package init(call: String, path: String?, errno: CInt, reason: String? = nil) {
    self.call = call
    self.path = path
    self.errno = errno
    self.reason = reason
  }

  package var description: String {
    let reason = self.reason ?? code.description
    if let path { return "\(call)(\(path)): \(reason)" }
    return "\(call): \(reason)"
  }

  var isNotFound: Bool { errno == ENOENT }
  /// A read refused for the file's size (``FileSystem/readWhole(_:followLinks:atMost:)``).
  var isTooLarge: Bool { errno == EFBIG }
}

/// Runs a system call that returns -1 and sets `errno` on failure, retrying
/// when it was interrupted by a signal (EINTR).
///
/// EBADF and EFAULT can only mean a bug in this package (a closed descriptor,
/// a bad pointer), so they stop the process instead of being thrown; except EBADF with
/// `closedDescriptorIsBug: false`, for a descriptor the package did not open (standard output).
@inline(__always)
func valueOrErrno<T: FixedWidthInteger>(
  _ call: String, path: String? = nil, retryOnInterrupt: Bool = true,
  closedDescriptorIsBug: Bool = true, _ body: () -> T
) throws(SystemCallError) -> T {
  // With no miss to tell (0 is never an errno), the call answers a value or throws.
  try systemCall(
    call, path: path, retryOnInterrupt: retryOnInterrupt, closedDescriptorIsBug: closedDescriptorIsBug,
    missing: 0, orAlso: 0, body)!
}

/// ``valueOrErrno(_:path:retryOnInterrupt:closedDescriptorIsBug:_:)`` for a call on a path that
/// may name nothing: `nil` when it failed with `ENOENT` (or `orAlso`, such as `ENOTDIR`), told
/// by the errno alone. A miss the caller expects makes no error to throw and catch.
@inline(__always)
func valueOrErrnoUnlessMissing<T: FixedWidthInteger>(
  _ call: String, path: String, orAlso other: CInt = ENOENT, _ body: () -> T
) throws(SystemCallError) -> T? {
  try systemCall(
    call, path: path, retryOnInterrupt: true, closedDescriptorIsBug: true, missing: ENOENT, orAlso: other, body)
}

/// The loop of both: the only place that reads `errno` after a call that returns -1. `nil`
/// when the call failed with `missing` or `other` (0 for none).
@inline(__always)
private func systemCall<T: FixedWidthInteger>(
  _ call: String, path: String?, retryOnInterrupt: Bool, closedDescriptorIsBug: Bool,
  missing: CInt, orAlso other: CInt, _ body: () -> T
) throws(SystemCallError) -> T? {
  while true {
    let result = body()
    if result != -1 { return result }
    let code = currentErrno()
    if code == missing || code == other { return nil }
    if code == EINTR && retryOnInterrupt { continue }
    precondition(
      (code != EBADF || !closedDescriptorIsBug) && code != EFAULT,
      "\(call): \(Errno(rawValue: code))")
    throw SystemCallError(call: call, path: path, errno: code)
  }
}

/// The calling thread's `errno`, from the C library's own accessor: the overlay's `errno` is a
/// function of another library that calls it (two lazy bindings at a process's first failed
/// call, where this is one).
@inline(__always)
private func currentErrno() -> CInt { __errno_location().pointee }

/// Runs a system call that returns a pointer, `MAP_FAILED` and `errno` on failure (`mmap(2)`).
@inline(__always)
func pointerOrErrno(
  _ call: String, path: String? = nil, _ body: () -> UnsafeMutableRawPointer?
) throws(SystemCallError) -> UnsafeMutableRawPointer {
  let result = body()
  // `MAP_FAILED` is `(void *) -1`; the overlay's `MAP_FAILED` is a computed property of another
  // library, a lazy binding at its first use.
  guard let result, result != UnsafeMutableRawPointer(bitPattern: -1) else {
    let code = currentErrno()
    precondition(code != EBADF && code != EFAULT, "\(call): \(Errno(rawValue: code))")
    throw SystemCallError(call: call, path: path, errno: code)
  }
  return result
}

extension AppGroupsError {
  /// Wraps a failed system call as an `.io` error that says what was being done.
  init(io error: SystemCallError, _ doing: String) {
    self.init(.io, "\(doing): \(error)", cause: error)
  }
}

extension AppGroupsError {
  /// The `errno` of the system call that caused this error, when one did.
  package var systemErrno: CInt? { (cause as? SystemCallError)?.errno }
}

import Glibc

/// An `errno` value by name, so that code outside `System/` tells one failure from another
/// without the C library's constants, and says it in the C library's words. The names are
/// swift-system's.
///
/// ```swift
/// catch where error.code == .tooManySymbolicLinkLevels { … }
/// ```
package struct Errno: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  package let rawValue: CInt

  package init(rawValue: CInt) { self.rawValue = rawValue }

  /// `EPERM`: the caller may not do this (another user's process, for `kill(2)`).
  package static let notPermitted = Errno(rawValue: EPERM)
  /// `ENOENT`: nothing is at the path.
  package static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
  /// `EACCES`: the caller may not open or search this path (its modes, or a sandbox).
  package static let permissionDenied = Errno(rawValue: EACCES)
  /// `EAGAIN`: try again (here: a race that the caller starts over).
  package static let resourceTemporarilyUnavailable = Errno(rawValue: EAGAIN)
  /// `ESRCH`: no such process.
  package static let noSuchProcess = Errno(rawValue: ESRCH)
  /// `EIO`: an input/output error (also said of a write that stored fewer bytes than asked).
  package static let ioError = Errno(rawValue: EIO)
  /// `ENOTDIR`: a component of the path is not a folder.
  package static let notDirectory = Errno(rawValue: ENOTDIR)
  /// `ENOSYS`: the kernel has no such system call.
  package static let noFunction = Errno(rawValue: ENOSYS)
  /// `ELOOP`: a symbolic link where none may be followed, or too many of them.
  package static let tooManySymbolicLinkLevels = Errno(rawValue: ELOOP)
  /// `ENXIO`: no such device or address (`open(2)` of a socket).
  package static let noSuchDeviceOrAddress = Errno(rawValue: ENXIO)
  /// `EOPNOTSUPP`: the kernel has the call but does not support it here.
  package static let notSupported = Errno(rawValue: EOPNOTSUPP)
  /// `ENOSPC`: no space left on the device.
  package static let noSpace = Errno(rawValue: ENOSPC)
  /// `EDQUOT`: the user's quota (of disk, or of the kernel's keys) is full.
  package static let diskQuotaExceeded = Errno(rawValue: EDQUOT)
  /// `EROFS`: the file system is read-only.
  package static let readOnlyFileSystem = Errno(rawValue: EROFS)
  /// `EPIPE`: the reading end of a pipe is closed.
  package static let brokenPipe = Errno(rawValue: EPIPE)

  /// The C library's text for the value (`strerror(3)`), as messages say it.
  package var description: String { String(cString: strerror(rawValue)) }
}

extension SystemCallError {
  /// A failure of `call` on `path` with `code`.
  package init(call: String, path: String?, _ code: Errno) {
    self.init(call: call, path: path, errno: code.rawValue)
  }

  /// The `errno` the call set, by name.
  package var code: Errno { Errno(rawValue: errno) }
}

package import Foundation
import Glibc

/// The file calls of the package's other modules (the keychain): a whole file read, and a
/// durable atomic replacement, as the stores make them.
extension FileSystem {
  /// ``read(_:followLinks:)``, never following a symbolic link.
  package static func readFile(_ path: String) throws(SystemCallError) -> (Data, FileIdentity)? {
    try read(path, followLinks: false)
  }

  /// What is at `path` when it is there and not a regular file ("a symbolic link", "a fifo",
  /// "a folder", …), without following a link there; `nil` for a regular file or nothing.
  /// The corresponding system call is `lstat(2)`.
  package static func kindUnlessRegularFile(atPath path: String) throws(SystemCallError) -> String? {
    var s = stat()
    let found = try valueOrErrnoUnlessMissing("lstat", path: path, orAlso: ENOTDIR) { Status.link(path, &s) }
    guard found != nil, s.fileType != FileMode.regular else { return nil }
    return kind(of: s)
  }

  /// ``writeAtomically(_:to:mode:notBefore:beforeRename:afterRename:)`` with mode 0600.
  @discardableResult
  package static func replaceDurably(
    _ path: String, with data: Data, notBefore: Int64?,
    beforeRename: () throws(SystemCallError) -> Void
  ) throws(SystemCallError) -> FileIdentity {
    try writeAtomically(data, to: path, mode: 0o600, notBefore: notBefore) {
      _ throws(SystemCallError) in try beforeRename()
    }
  }
}

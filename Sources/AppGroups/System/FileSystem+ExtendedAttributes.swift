import CAppGroupsLinux
import Glibc

extension FileSystem {
  /// A named attribute of a file (`user.…`): its name and its text.
  struct ExtendedAttribute {
    var name: String
    var value: String
  }

  /// Records `attribute` on what `path` names (following a link).
  /// The corresponding system call is `setxattr(2)`.
  /// - Throws: the failed call: `ENOTSUP` on a file system without extended attributes.
  static func setExtendedAttribute(_ attribute: ExtendedAttribute, ofPath path: String)
    throws(SystemCallError)
  {
    _ = try valueOrErrno("setxattr", path: path) {
      attribute.value.withCString { setxattr(path, attribute.name, $0, strlen($0), 0) }
    }
  }

  /// Records `attribute` on the open file `fd` (at `path`, for messages).
  /// The corresponding system call is `fsetxattr(2)`.
  static func setExtendedAttribute(_ attribute: ExtendedAttribute, descriptor fd: CInt, path: String)
    throws(SystemCallError)
  {
    _ = try valueOrErrno("fsetxattr", path: path) {
      attribute.value.withCString { fsetxattr(fd, attribute.name, $0, strlen($0), 0) }
    }
  }

  /// The text of the attribute `name` of what `path` names, up to `maximumLength` bytes;
  /// `nil` when there is none, it is empty, or it cannot be read.
  /// The corresponding system call is `getxattr(2)`.
  static func extendedAttribute(_ name: String, ofPath path: String, maximumLength: Int) -> String? {
    var buffer = [CChar](repeating: 0, count: maximumLength + 1)
    let length = getxattr(path, name, &buffer, maximumLength)
    guard length > 0 else { return nil }
    return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}

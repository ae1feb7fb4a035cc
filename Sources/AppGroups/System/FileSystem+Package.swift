package import Foundation

/// The file calls of the package's other modules (the keychain): a whole file read, and a
/// durable atomic replacement, as the stores make them.
extension FileSystem {
  /// ``read(_:followLinks:)``, never following a symbolic link.
  package static func readFile(_ path: String) throws(SystemCallError) -> (Data, FileIdentity)? {
    try read(path, followLinks: false)
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

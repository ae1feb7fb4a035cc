package import Foundation

/// The file calls of the package's other modules (the keychain): a whole file read, and a
/// durable atomic replacement, as the stores make them.
extension FileSystem {
  /// ``read(_:followLinks:)``, never following a symbolic link, and refusing a file of more
  /// than `atMost` bytes (`EFBIG`, the size it has in the reason) before a byte is read: its
  /// size is taken from the descriptor opened (`fstat(2)`), and one that grows while it is
  /// read is refused as soon as it passes the bound.
  package static func readFile(_ path: String, atMost: Int) throws(SystemCallError) -> (
    Data, FileIdentity
  )? {
    try readWhole(path, followLinks: false, atMost: atMost).map { ($0.data, $0.identity) }
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

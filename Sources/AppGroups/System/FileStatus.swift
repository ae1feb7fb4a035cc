import Glibc

/// What a path names, as `lstat(2)` (or `stat(2)`, following links) says: its kind and its
/// permission bits.
package struct FileStatus: Sendable, Equatable {
  /// The kind of file-system entry.
  package enum Kind: Sendable, Equatable {
    case regularFile, folder, symbolicLink, fifo, socket, device
  }

  /// The kind of entry.
  package var kind: Kind
  /// The permission bits: `st_mode & 0o7777`.
  package var permissions: UInt32
  /// The device the file is on (`st_dev`).
  package var device: UInt64
  /// The file's inode number (`st_ino`).
  package var inode: UInt64

  /// The status of what `path` names: of a symbolic link itself (`lstat(2)`), or with
  /// `followingLinks`, of what the link leads to (`stat(2)`). `nil` when nothing is there or
  /// it cannot be looked at (a folder on the way that may not be searched).
  package init?(atPath path: String, followingLinks: Bool = false) {
    var status = stat()
    let call = followingLinks ? "stat" : "lstat"
    do {
      _ = try valueOrErrno(call, path: path) {
        followingLinks ? stat(path, &status) : lstat(path, &status)
      }
    } catch {
      return nil
    }
    switch status.st_mode & S_IFMT {
    case S_IFREG: kind = .regularFile
    case S_IFDIR: kind = .folder
    case S_IFLNK: kind = .symbolicLink
    case S_IFIFO: kind = .fifo
    case S_IFSOCK: kind = .socket
    default: kind = .device
    }
    permissions = UInt32(status.st_mode & 0o7777)
    device = UInt64(status.st_dev)
    inode = UInt64(status.st_ino)
  }
}

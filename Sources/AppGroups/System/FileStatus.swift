import Glibc

/// The file-type bits of `st_mode` (see `man 7 inode`), as literals the compiler folds. The
/// Glibc overlay's `S_IFMT`, `S_IFREG`, … are computed properties of another library: each one
/// costs a lazy binding at its first use in a process, and an open used four of them.
enum FileMode {
  static let typeMask: mode_t = 0o170000
  static let regular: mode_t = 0o100000
  static let folder: mode_t = 0o040000
  static let symbolicLink: mode_t = 0o120000
  static let fifo: mode_t = 0o010000
  static let socket: mode_t = 0o140000
}

extension stat {
  /// `st_mode`'s file-type bits: one of ``FileMode``'s kinds, or a device's.
  var fileType: mode_t { st_mode & FileMode.typeMask }
}

/// `lstat(2)`, `stat(2)` and `fstat(2)`, each made as `fstatat(2)` (as the C library makes
/// them): one C function, one lazy binding at a process's first open, where the three were three.
enum Status {
  /// `fstatat(2)`'s `AT_EMPTY_PATH`: the status of the descriptor itself.
  static let emptyPath: CInt = 0x1000

  /// `lstat(2)`: of a symbolic link itself.
  @inline(__always)
  static func link(_ path: UnsafePointer<CChar>, _ s: inout stat) -> CInt {
    fstatat(AT_FDCWD, path, &s, AT_SYMLINK_NOFOLLOW)
  }

  /// `stat(2)`: of what a symbolic link leads to.
  @inline(__always)
  static func following(_ path: UnsafePointer<CChar>, _ s: inout stat) -> CInt {
    fstatat(AT_FDCWD, path, &s, 0)
  }

  /// `fstat(2)`: of an open descriptor.
  @inline(__always)
  static func open(_ descriptor: CInt, _ s: inout stat) -> CInt {
    fstatat(descriptor, "", &s, emptyPath)
  }
}

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
  /// The user who owns the file (`st_uid`).
  package var owner: UInt32

  /// The status of what `path` names: of a symbolic link itself (`lstat(2)`), or with
  /// `followingLinks`, of what the link leads to (`stat(2)`). `nil` when nothing is there or
  /// it cannot be looked at (a folder on the way that may not be searched).
  package init?(atPath path: String, followingLinks: Bool = false) {
    var status = stat()
    let call = followingLinks ? "stat" : "lstat"
    do {
      _ = try valueOrErrno(call, path: path) {
        followingLinks ? Status.following(path, &status) : Status.link(path, &status)
      }
    } catch {
      return nil
    }
    switch status.fileType {
    case FileMode.regular: kind = .regularFile
    case FileMode.folder: kind = .folder
    case FileMode.symbolicLink: kind = .symbolicLink
    case FileMode.fifo: kind = .fifo
    case FileMode.socket: kind = .socket
    default: kind = .device
    }
    permissions = UInt32(status.st_mode & 0o7777)
    device = UInt64(status.st_dev)
    inode = UInt64(status.st_ino)
    owner = UInt32(status.st_uid)
  }
}

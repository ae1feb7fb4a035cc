import CAppGroupsLinux
import Glibc

/// The 64-bit words of a page mapped shared between processes (a lock file's first page),
/// each read and written as one sequentially consistent atomic: `Synchronization.Atomic`
/// cannot be placed at an address of a mapped file.
struct SharedWords {
  let base: UnsafeMutablePointer<UInt64>

  @inline(__always)
  func load(_ index: Int) -> UInt64 { cappgroups_atomic_load_u64(base + index) }

  @inline(__always)
  func store(_ index: Int, _ value: UInt64) { cappgroups_atomic_store_u64(base + index, value) }

  /// Decodes little-endian words from bytes read from the file (`pread(2)`), for a reader that
  /// does not map it: word `index` of `bytes`, 0 past their end.
  static func word(_ index: Int, of bytes: [UInt8]) -> UInt64 {
    var value: UInt64 = 0
    for i in (0..<8).reversed() where index * 8 + i < bytes.count {
      value = value << 8 | UInt64(bytes[index * 8 + i])
    }
    return value
  }
}

/// A 64-bit counter in the first word of a small file, mapped shared: every process that maps
/// the file sees each increment at once, without a system call (a folder's generation).
/// Unmapped when this goes.
final class SharedCounter: @unchecked Sendable {
  /// The file's inode when it was mapped: a file made again at the path has another.
  let inode: UInt64
  private let word: UnsafeMutablePointer<UInt64>

  /// Maps the counter of the file at `path`, creating it (0600, never through a symbolic link)
  /// and making it 8 bytes long when it is shorter. The corresponding calls are `open(2)`,
  /// `fstat(2)`, `posix_fallocate(3)` and `mmap(2)`.
  /// - Returns: `nil` when it is not a regular file, or cannot be made or mapped.
  init?(path: String) {
    guard
      let fd = try? FileSystem.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode: 0o600)
    else { return nil }
    defer { FileSystem.close(fd) }
    var s = stat()
    guard Status.open(fd, &s) == 0, s.fileType == FileMode.regular else { return nil }
    if s.st_size < 8, posix_fallocate(fd, 0, 8) != 0 { return nil }
    guard let base = mmap(nil, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), base != MAP_FAILED
    else { return nil }
    inode = UInt64(s.st_ino)
    word = base.bindMemory(to: UInt64.self, capacity: 1)
  }

  deinit { munmap(word, 8) }

  /// The counter now.
  var value: UInt64 { cappgroups_atomic_load_u64(word) }

  /// Moves the counter on by one.
  func increment() { cappgroups_atomic_add_u64(word, 1) }
}

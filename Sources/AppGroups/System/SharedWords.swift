import CAppGroupsLinux

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

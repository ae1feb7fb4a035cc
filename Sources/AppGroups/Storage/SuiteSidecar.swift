import CAppGroupsLinux
import Glibc

/// A suite's sidecar file, `<suite>.plist.lock`: the commit lock, and the
/// last-update token readable by every process without parsing the plist.
///
/// The token lives in the first page of the file, mapped shared into every
/// process that has the suite open, and is guarded by a sequence lock: a
/// writer (holding the file lock) makes the sequence odd, writes, and makes
/// it even again; a reader retries while it is odd or moved. Nothing
/// private is ever written into the property list itself.
///
/// Layout (64-bit words): magic, sequence, generation, has-identity,
/// device, inode, size, modified-ns, changed-ns.
final class SuiteSidecar: @unchecked Sendable {
  // The mapping and descriptor are immutable after init; writes to the
  // mapping happen only while holding `lock`, serialised by the owner.
  let lock: FileLock
  private let words: UnsafeMutablePointer<UInt64>
  private static let pageSize = 4096
  private static let magic: UInt64 = 0x3154_4e45_4b4f_5447  // "GTOKENT1"

  /// The record a committer leaves: the token, and which version of the
  /// plist it describes.
  struct Record: Equatable, Sendable {
    var generation: UInt64
    var identity: FileIdentity?
  }

  init(path: String) throws(SystemCallError) {
    lock = try FileLock(path: path)
    let fd = lock.descriptor
    var s = stat()
    _ = try valueOrErrno("fstat", path: path) { fstat(fd, &s) }
    if Int(s.st_size) < Self.pageSize {
      // Growing the file is idempotent: every process grows it to one page.
      _ = try valueOrErrno("ftruncate", path: path) { ftruncate(fd, off_t(Self.pageSize)) }
    }
    guard
      let base = mmap(nil, Self.pageSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
      base != MAP_FAILED
    else {
      throw SystemCallError(call: "mmap", path: path, errno: errno)
    }
    words = base.bindMemory(to: UInt64.self, capacity: Self.pageSize / 8)
  }

  deinit { munmap(words, Self.pageSize) }

  private func load(_ index: Int) -> UInt64 { cappgroups_atomic_load_u64(words + index) }
  private func store(_ index: Int, _ value: UInt64) { cappgroups_atomic_store_u64(words + index, value) }

  /// The current record, read without the lock. `nil` only if a writer is
  /// in the middle of an update for the whole bounded retry (it was stopped
  /// or killed there); callers then treat the suite as changed.
  func read() -> Record? {
    for _ in 0..<10_000 {
      let before = load(1)
      if before & 1 == 1 { continue }
      let record = Record(
        generation: load(2),
        identity: load(3) == 0
          ? nil
          : FileIdentity(
            device: load(4), inode: load(5), size: Int64(bitPattern: load(6)),
            modified: Int64(bitPattern: load(7)), changed: Int64(bitPattern: load(8))))
      if load(1) == before { return record }
    }
    return nil
  }

  /// The token alone: one sequence-checked read.
  var generation: UInt64? { read()?.generation }

  /// Moves the token forward and records which version of the plist it
  /// describes. Call only while holding ``lock``.
  @discardableResult
  func advance(to identity: FileIdentity?) -> UInt64 {
    var sequence = load(1)
    if sequence & 1 == 0 { sequence &+= 1 }  // odd: update in progress
    store(1, sequence)
    var generation = load(2)
    if load(0) != Self.magic {
      // A new sidecar (or one deleted by hand) starts from the clock, so the
      // token never goes backwards across its re-creation.
      generation = UInt64(max(FileSystem.nowNanoseconds(), 0))
      store(0, Self.magic)
    }
    generation &+= 1
    store(2, generation)
    store(3, identity == nil ? 0 : 1)
    store(4, identity?.device ?? 0)
    store(5, identity?.inode ?? 0)
    store(6, UInt64(bitPattern: identity?.size ?? 0))
    store(7, UInt64(bitPattern: identity?.modified ?? 0))
    store(8, UInt64(bitPattern: identity?.changed ?? 0))
    store(1, sequence &+ 1)
    return generation
  }
}

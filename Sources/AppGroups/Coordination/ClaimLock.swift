import CAppGroupsLinux
import Foundation
import Glibc

/// What one coordinated access claims of one item.
struct Claim: Sendable, Hashable {
  var item: CoordinatedItem
  /// A writer's claim excludes every other claim of the item; readers' claims share it.
  var exclusive: Bool
  /// Also claims everything inside the item (a folder moved or deleted): waits for the
  /// accesses already running inside it, and keeps new ones out until it is done.
  var subtree: Bool

  /// Whether this claim already grants `other`.
  func covers(_ other: Claim) -> Bool {
    guard item.space == other.item.space else { return false }
    if item == other.item {
      return (exclusive || !other.exclusive) && (subtree || !other.subtree)
    }
    return subtree && other.item.isInside(item) && (exclusive || !other.exclusive)
  }
}

/// The locks of a coordinated access, held on its container's claims file until ``release()``.
///
/// Every access takes, on one open file description of `Library/Coordination/claims`
/// (`F_OFD_SETLK`, see `cappgroups_ofd_lock_steps_until`), for each item it claims:
///
/// - the item's byte, shared for a reader, exclusive for a writer: readers share an item,
///   a writer excludes everyone;
/// - its turnstile byte the same way, let go as soon as the item's byte is held: a writer
///   waiting for readers holds it, so that readers who come later wait behind the writer;
/// - the subtree byte of every folder above it, shared, and, for a whole folder moved or
///   deleted, its own subtree byte exclusively: such a claim waits for the accesses running
///   inside the folder and keeps new ones out.
///
/// Bytes are taken in increasing order, so that two accesses never wait for each other in a
/// circle. The kernel releases them all when the description's last descriptor closes, the
/// holder's crash included; a lock of this process's own other access conflicts as another
/// process's does. After locking, the access checks that the file at the path is still the
/// file it locked (a claims file removed under a running process is made again, and two
/// processes locking two files would exclude nobody), and starts again when it is not.
final class ClaimLock: @unchecked Sendable {
  private let descriptor: CInt
  private var released = false
  let claims: [Claim]

  private init(descriptor: CInt, claims: [Claim]) {
    self.descriptor = descriptor
    self.claims = claims
  }

  deinit { release() }

  /// Lets every lock go (closing the description), and the suspension barrier with them.
  func release() {
    guard !released else { return }
    released = true
    FileSystem.close(descriptor)
    SuspensionBarrier.leave()
  }

  /// The lock steps for `claims`, in byte order.
  static func steps(for claims: [Claim]) -> [cappgroups_lock_step] {
    // Each byte once, with the strongest type asked for it.
    var types: [Int64: Int16] = [:]
    func want(_ offset: Int64, exclusive: Bool) {
      let type = Int16(exclusive ? F_WRLCK : F_RDLCK)
      if let existing = types[offset], existing == Int16(F_WRLCK) { return }
      types[offset] = type
    }
    let stride = CoordinationLayout.stride
    for claim in claims {
      for ancestor in claim.item.ancestors {
        want(CoordinationLayout.slot(of: ancestor) * stride + CoordinationLayout.subtreeByte, exclusive: false)
      }
      let base = claim.item.slot * stride
      want(base + CoordinationLayout.turnstileByte, exclusive: claim.exclusive)
      want(base + CoordinationLayout.itemByte, exclusive: claim.exclusive)
      if claim.subtree { want(base + CoordinationLayout.subtreeByte, exclusive: true) }
    }
    var steps: [cappgroups_lock_step] = []
    for offset in types.keys.sorted() {
      guard let type = types[offset] else { continue }
      steps.append(cappgroups_lock_step(type: type, start: offset, length: 1))
      // A turnstile is let go once the item's byte right after it is held.
      if offset % stride == CoordinationLayout.itemByte,
        types[offset - 1] != nil
      {
        steps.append(cappgroups_lock_step(type: Int16(F_UNLCK), start: offset - 1, length: 1))
      }
    }
    return steps
  }

  /// Takes the locks of `claims` (all in one container), waiting until `deadline`
  /// (``FileSystem/monotonicNanoseconds()``) at most, looking at `cancelled` every tenth of a
  /// second. Waits first, like every lock of the library, for a suspension being prepared to
  /// end (``SuspensionBarrier``): no coordinated access begins while the app is being
  /// suspended.
  ///
  /// - Throws: ``Failure``.
  static func acquire(
    _ claims: [Claim], deadline: UInt64, cancelled: () -> Bool
  ) throws(Failure) -> ClaimLock {
    guard let space = claims.first?.item.space else { preconditionFailure("no claim") }
    let steps = Self.steps(for: claims)
    guard SuspensionBarrier.enter(until: deadline) else { throw .suspending }
    var entered = true
    defer { if entered { SuspensionBarrier.leave() } }
    while true {
      let fd: CInt
      do {
        fd = try openClaims(space)
      } catch {
        throw .failed(error)
      }
      var done: CInt = 0
      var result: CInt = ETIMEDOUT
      while true {
        let slice = min(deadline, FileSystem.monotonicNanoseconds() &+ 100_000_000)
        let remaining = Array(steps[Int(done)...])
        var taken: CInt = 0
        result = remaining.withUnsafeBufferPointer { buffer in
          cappgroups_ofd_lock_steps_until(fd, buffer.baseAddress, CInt(buffer.count), slice, &taken)
        }
        done += taken
        if result != ETIMEDOUT { break }
        if cancelled() {
          FileSystem.close(fd)
          throw .cancelled
        }
        if FileSystem.monotonicNanoseconds() >= deadline { break }
      }
      if result == ETIMEDOUT {
        FileSystem.close(fd)
        throw .timedOut
      }
      if result != 0 {
        FileSystem.close(fd)
        throw .failed(SystemCallError(call: "fcntl(F_OFD_SETLKW)", path: space.claimsPath, errno: result))
      }
      // The file locked must still be the file at the path.
      var held = stat()
      var now = stat()
      if fstat(fd, &held) == 0, lstat(space.claimsPath, &now) == 0, held.st_ino == now.st_ino,
        held.st_dev == now.st_dev
      {
        entered = false
        return ClaimLock(descriptor: fd, claims: claims)
      }
      FileSystem.close(fd)
    }
  }

  enum Failure: Error {
    case timedOut
    case cancelled
    /// A suspension of this app was being prepared until the deadline.
    case suspending
    case failed(SystemCallError)
  }

  /// Opens the claims file (creating it and its folder when missing; never through a link).
  private static func openClaims(_ space: CoordinationSpace) throws(SystemCallError) -> CInt {
    let flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC
    do {
      return try FileSystem.open(space.claimsPath, flags, mode: 0o600)
    } catch where error.errno == ENOENT {
      try FileSystem.makeDirectory(space.folder, within: space.container)
      return try FileSystem.open(space.claimsPath, flags, mode: 0o600)
    }
  }

  /// Records the name of each claimed item's slot (once per process), for `groupctl ps` and
  /// a suspension's report: the claims file's bytes say only a slot.
  static func recordNames(_ claims: [Claim]) {
    for claim in claims {
      let key = claim.item.space.folder + "|" + String(claim.item.slot)
      guard namedSlots.withLock({ $0.insert(key).inserted }) else { continue }
      let path = CoordinationLayout.nameFile(slot: claim.item.slot, in: claim.item.space.folder)
      guard let fd = try? FileSystem.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)
      else { continue }
      let bytes = Array(claim.item.relativePath.utf8)
      _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
      FileSystem.close(fd)
    }
  }

  private static let namedSlots = Mutex<Set<String>>([])
}

import Foundation

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
  private var file: ByteLockFile?
  let claims: [Claim]
  /// The suspension barrier's passage, left on release.
  private let passage: SuspensionBarrier.Entry

  private init(file: ByteLockFile, claims: [Claim], passage: SuspensionBarrier.Entry) {
    self.file = file
    self.claims = claims
    self.passage = passage
  }

  deinit { release() }

  /// Lets every lock go (closing the description), and then the suspension barrier.
  ///
  /// The description is closed before the passage is left, explicitly: a suspension's drain
  /// that ends when the passage is left has the app answer, and the suspender stop it and read
  /// its locks, at once. Left to the last reference (the local binding here may live until the
  /// end of the scope, and does in a debug build), the close came after the passage, and a
  /// thread kept from the CPU between the two was stopped holding the claims (0xdead10cc).
  ///
  /// A claims file removed while the access held it (its folder removed under a running
  /// process) was made again by the next access, which locked that file and was let in:
  /// the two may have overlapped, which no process could see before. It is said, naming the
  /// file, so that nobody takes the access for one that excluded the others.
  func release() {
    guard let file else { return }
    if !file.isStillAtPath {
      let path = claims.first?.item.space.claimsPath ?? "the claims file"
      Diagnostics.report(
        "\(path) was removed during a coordinated access (its folder was removed under a"
          + " running process): an access that began meanwhile was not kept out of it")
    }
    self.file = nil
    file.close()
    SuspensionBarrier.leave(passage)
    TestHooks.afterClaimRelease?()
  }

  /// The lock steps for `claims`, in byte order.
  static func steps(for claims: [Claim]) -> [ByteLockFile.Step] {
    // Each byte once, with the strongest type asked for it.
    var types: [Int64: ByteLockFile.LockType] = [:]
    func want(_ offset: Int64, exclusive: Bool) {
      if types[offset] == .exclusive { return }
      types[offset] = exclusive ? .exclusive : .shared
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
    var steps: [ByteLockFile.Step] = []
    for offset in types.keys.sorted() {
      guard let type = types[offset] else { continue }
      steps.append(ByteLockFile.Step(type: type, offset: offset))
      // A turnstile is let go once the item's byte right after it is held.
      if offset % stride == CoordinationLayout.itemByte,
        types[offset - 1] != nil
      {
        steps.append(ByteLockFile.Step(type: .unlocked, offset: offset - 1))
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
    guard let passage = SuspensionBarrier.enter(until: deadline) else { throw .suspending }
    var entered = true
    defer { if entered { SuspensionBarrier.leave(passage) } }
    while true {
      let file: ByteLockFile
      do {
        file = try ByteLockFile(
          creating: space.claimsPath, folder: space.folder, within: space.container)
      } catch {
        throw .failed(error)
      }
      // The locks taken so far go before the passage does (see `release()`): a file given up
      // (a failure, or one no longer at the path) is closed on the way out of this scope.
      var kept = false
      defer { if !kept { file.close() } }
      var done = 0
      var outcome = ByteLockFile.Outcome.timedOut
      while true {
        let slice = min(deadline, FileSystem.monotonicNanoseconds() &+ 100_000_000)
        outcome = file.lock(steps[done...], until: slice, taken: &done)
        guard case .timedOut = outcome else { break }
        if cancelled() { throw .cancelled }
        if FileSystem.monotonicNanoseconds() >= deadline { break }
      }
      switch outcome {
      case .timedOut: throw .timedOut
      case .failed(let error): throw .failed(error)
      case .locked: break
      }
      // The file locked must still be the file at the path.
      if file.isStillAtPath {
        entered = false
        kept = true
        return ClaimLock(file: file, claims: claims, passage: passage)
      }
    }
  }

  enum Failure: Error {
    case timedOut
    case cancelled
    /// A suspension of this app was being prepared until the deadline.
    case suspending
    case failed(SystemCallError)
  }

  /// Records the name of each claimed item's slot (once per process), for `groupctl ps` and
  /// a suspension's report: the claims file's bytes say only a slot. The container itself
  /// needs no name (its slot says it); a name file found empty (cut short by a full disk)
  /// is written again whole.
  static func recordNames(_ claims: [Claim]) {
    for claim in claims where !claim.item.relativePath.isEmpty {
      let key = claim.item.space.folder + "|" + String(claim.item.slot)
      guard namedSlots.withLock({ $0.insert(key).inserted }) else { continue }
      let path = CoordinationLayout.nameFile(slot: claim.item.slot, in: claim.item.space.folder)
      let name = Array(claim.item.relativePath.utf8)
      if !FileSystem.createOnce(path, with: name), FileSystem.readPrefix(1, of: path)?.isEmpty == true {
        try? FileSystem.replace(path, with: name)
      }
    }
  }

  private static let namedSlots = Mutex<Set<String>>([])
}

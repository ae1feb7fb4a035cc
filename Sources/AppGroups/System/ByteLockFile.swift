import CAppGroupsLinux
import Glibc

/// A file whose bytes are locked one by one with open file description locks (`fcntl(2)`
/// `F_OFD_SETLKW`): each byte shared or exclusive, every lock released at once when this goes
/// (its descriptor closes), the holder's crash included. A lock of another open description of
/// the same file, in this process or another, conflicts as another process's does.
final class ByteLockFile {
  /// How one byte is locked.
  enum LockType: Sendable, Hashable {
    case shared, exclusive, unlocked

    fileprivate var raw: Int16 {
      switch self {
      case .shared: Int16(F_RDLCK)
      case .exclusive: Int16(F_WRLCK)
      case .unlocked: Int16(F_UNLCK)
      }
    }
  }

  /// One byte to lock (or to let go of), in the order taken.
  struct Step: Sendable, Hashable {
    var type: LockType
    var offset: Int64
  }

  /// How a ``lock(_:until:taken:)`` ended.
  enum Outcome {
    /// Every step was taken.
    case locked
    /// The deadline passed first.
    case timedOut
    /// A step failed.
    case failed(SystemCallError)
  }

  let path: String
  /// -1 once ``close()`` closed it.
  private var descriptor: CInt

  /// Opens the file at `path` for locking, creating it (0600, never through a symbolic link);
  /// when its folder is missing, makes `folder` first (inside `root`, as
  /// ``FileSystem/makeDirectory(_:within:)`` does). The corresponding system call is `open(2)`.
  init(creating path: String, folder: String, within root: String) throws(SystemCallError) {
    let flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC
    self.path = path
    do {
      descriptor = try FileSystem.open(path, flags, mode: 0o600)
    } catch where error.code == .noSuchFileOrDirectory {
      try FileSystem.makeDirectory(folder, within: root)
      descriptor = try FileSystem.open(path, flags, mode: 0o600)
    }
  }

  deinit { close() }

  /// Closes the descriptor now, and every lock with it, whoever else still holds this object
  /// (a binding may live until the end of its scope). Safe to call more
  /// than once; nothing else may be called after.
  func close() {
    guard descriptor >= 0 else { return }
    FileSystem.close(descriptor)
    descriptor = -1
  }

  /// Takes `steps` in order, each waiting in the kernel until its byte is free or `deadline`
  /// (``FileSystem/monotonicNanoseconds()``) passes; `taken` counts the steps taken.
  func lock(_ steps: ArraySlice<Step>, until deadline: UInt64, taken: inout Int) -> Outcome {
    let raw = steps.map { cappgroups_lock_step(type: $0.type.raw, start: $0.offset, length: 1) }
    var done: CInt = 0
    let result = raw.withUnsafeBufferPointer { buffer in
      cappgroups_ofd_lock_steps_until(
        descriptor, buffer.baseAddress, CInt(buffer.count), deadline, &done)
    }
    taken += Int(done)
    switch result {
    case 0: return .locked
    case ETIMEDOUT: return .timedOut
    default: return .failed(SystemCallError(call: "fcntl(F_OFD_SETLKW)", path: path, errno: result))
    }
  }

  /// Whether the file open here is still the one at the path (a file removed and made again
  /// at the path is another, and its locks exclude nobody). The corresponding system calls are
  /// `fstat(2)` and `lstat(2)`.
  var isStillAtPath: Bool {
    var held = stat()
    var now = stat()
    return Status.open(descriptor, &held) == 0 && Status.link(path, &now) == 0 && held.st_ino == now.st_ino
      && held.st_dev == now.st_dev
  }
}

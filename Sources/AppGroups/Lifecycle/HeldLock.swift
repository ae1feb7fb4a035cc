import Foundation

/// A lock a process holds on a file inside a group container, or on an access group's lock
/// file in the root's keychain (`<root>/Keychains/<group>/`).
public struct HeldLock: Sendable, Hashable, CustomStringConvertible {
  /// How the lock was taken.
  public enum Kind: String, Sendable, Hashable {
    /// `flock(2)`: belongs to an open file description, shared by the processes that
    /// inherited it.
    case flock
    /// A classic POSIX record lock (`fcntl(2)` `F_SETLK`): belongs to the process.
    case posix
    /// An open file description lock (`fcntl(2)` `F_OFD_SETLK`).
    case ofd
  }

  /// The process holding it.
  public let pid: Int32
  /// How it was taken.
  public let kind: Kind
  /// Whether it is exclusive (a write lock) rather than shared.
  public let isExclusive: Bool
  /// The locked file's path, as the kernel names the process's descriptor.
  public let path: String
  /// The group whose container holds the file; for a keychain lock, the access group.
  public let groupIdentifier: String
  /// Whether the file is an access group's lock file in the root's keychain
  /// (`<root>/Keychains/<group>/keychain.plist.lock`), not a file in a group container.
  ///
  /// On a device the keychain's files belong to its daemon: an app never holds their lock, and
  /// a suspended app is not terminated for one. Here the keychain is a library in the app's
  /// process, which the suspension barrier keeps from holding that lock across a suspension;
  /// a keychain lock found on a stopped app means the app's drain ran out of time, and every
  /// other app's write to that access group waits for it.
  public let isKeychain: Bool
  /// The first byte locked (0 for a whole-file lock).
  public let start: UInt64

  /// Whether the file is a container's claims file (`Library/Coordination/claims`, see
  /// ``NSFileCoordinator``): the lock is a coordinated access's claim, whether or not the
  /// claimed item's name can be read.
  public var isCoordinated: Bool {
    !isKeychain && CoordinationLayout.claim(at: start, claimsPath: path) != nil
  }

  /// The container whose claims file this is, when ``isCoordinated``.
  var coordinationContainer: String? {
    guard isCoordinated else { return nil }
    return String(path.dropLast(CoordinationLayout.folder.count + CoordinationLayout.claimsFile.count + 2))
  }

  /// The item a coordinated access holds this lock for, when the file is a container's
  /// claims file and the item's name is known: its path (the container's own path for the
  /// container itself).
  public var coordinatedItem: String? {
    guard !isKeychain, let container = coordinationContainer,
      let item = CoordinationLayout.claim(at: start, claimsPath: path)?.item
    else { return nil }
    return item.isEmpty ? container : container + "/" + item
  }

  /// The coordinated item as a report names it: its path, or, when its name cannot be read
  /// (its slot's name file missing or empty), `an item of CONTAINER whose name is unknown`;
  /// `nil` when the lock is not a coordinated access's. Paths as a line shows them
  /// (as it is, or quoted with its control characters and backslashes escaped).
  var coordinatedItemDescription: String? {
    guard let container = coordinationContainer else { return nil }
    return coordinatedItem.map(PrintedText.shown)
      ?? "an item of \(PrintedText.shown(container)) whose name is unknown"
  }

  /// The locked file's path as a line shows it (as it is, or quoted with its control
  /// characters and backslashes escaped): a file name with a newline in it does not split a
  /// report.
  public var shownPath: String { PrintedText.shown(path) }

  /// What the lock stands for in a report: `a lock on PATH`, for a coordinated access
  /// `a coordinated write of ITEM (a lock on PATH)` (ITEM `an item of CONTAINER whose name
  /// is unknown` when its name cannot be read), and for the keychain
  /// `the keychain's lock of access group GROUP (a lock on PATH)`.
  public var subject: String {
    if isKeychain { return "the keychain's lock of access group \(groupIdentifier) (a lock on \(shownPath))" }
    guard let item = coordinatedItemDescription else { return "a lock on \(shownPath)" }
    return "a coordinated \(isExclusive ? "write" : "read") of \(item) (a lock on \(shownPath))"
  }

  /// `flock WRITE /path (group.x)`, `flock WRITE /path (keychain group.x)`, and for a
  /// coordinated access `: coordinated write of ITEM`.
  public var description: String {
    let base =
      "\(kind.rawValue) \(isExclusive ? "WRITE" : "READ") \(shownPath)"
      + " (\(isKeychain ? "keychain " : "")\(groupIdentifier))"
    guard let item = coordinatedItemDescription else { return base }
    return base + ": coordinated \(isExclusive ? "write" : "read") of \(item)"
  }

  /// Every lock `pid` holds on a file inside one of `root`'s group containers
  /// (`<root>/Shared/AppGroup/<group>/`) or its keychain's access groups
  /// (`<root>/Keychains/<group>/`, ``isKeychain``), flock, POSIX and OFD alike.
  ///
  /// Read from `/proc/PID/fdinfo/FD`, whose `lock:` lines list the locks on the file of each
  /// of the process's descriptors (man 5 proc), each matched by device and inode with the
  /// file the descriptor is open on. `/proc/locks` names an flock lock by the process that
  /// took it, which may be a parent that passed it on; the descriptors name every holder.
  /// Empty when the process is gone or its descriptors cannot be read.
  public static func locks(heldBy pid: Int32, root: ContainerRoot) -> [HeldLock] {
    let places = [
      (root.url.appendingPathComponent("Shared/AppGroup").path, false),
      (root.keychainsURL.path, true),
    ].map { folder, isKeychain in ((Paths.realPath(folder) ?? folder) + "/", isKeychain) }
    var found: [HeldLock] = []
    var seen = Set<String>()
    for fd in FileSystem.entryNames(in: "/proc/\(pid)/fdinfo") {
      guard Int32(fd) != nil,
        let data = try? FileSystem.read("/proc/\(pid)/fdinfo/\(fd)")?.0
      else { continue }
      let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        .filter { $0.hasPrefix("lock:") && !$0.contains("->") }
      guard !lines.isEmpty else { continue }
      let link = "/proc/\(pid)/fd/\(fd)"
      guard let path = Paths.linkContents(link),
        let (prefix, isKeychain) = places.first(where: { path.hasPrefix($0.0) })
      else { continue }
      guard let file = FileStatus(atPath: link, followingLinks: true) else { continue }
      let group = String(path.dropFirst(prefix.count).prefix { $0 != "/" })
      // A coordinated access's claims file: one lock per item claimed (its other bytes, the
      // folders above it and a waiting writer's turnstile, say nothing more), named or not.
      let claims = !isKeychain && path.hasSuffix("/" + CoordinationLayout.folder + "/" + CoordinationLayout.claimsFile)
      for line in lines {
        guard let lock = LockLine(line), lock.matches(file) else { continue }
        if claims {
          guard let claim = CoordinationLayout.claim(at: lock.start, claimsPath: path),
            claim.part == "item" || (claim.part == "subtree" && lock.isExclusive)
          else { continue }
        }
        let key = "\(lock.kind) \(file.device) \(file.inode)" + (claims ? " \(lock.start)" : "")
        guard seen.insert(key).inserted else { continue }
        found.append(
          HeldLock(
            pid: pid, kind: lock.kind, isExclusive: lock.isExclusive, path: path,
            groupIdentifier: group, isKeychain: isKeychain, start: lock.start))
      }
    }
    return found.sorted { ($0.path, $0.kind.rawValue) < ($1.path, $1.kind.rawValue) }
  }
}

/// One line of the kernel's lock table, as `/proc/locks` and `/proc/PID/fdinfo/FD` print it:
/// `lock:	1: FLOCK  ADVISORY  WRITE 26300 fe:00:16222034 0 EOF`.
struct LockLine: Equatable {
  var kind: HeldLock.Kind
  var isExclusive: Bool
  var major: UInt64
  var minor: UInt64
  var inode: UInt64
  /// The first byte locked.
  var start: UInt64

  init?(_ line: Substring) {
    var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
    if words.first == "lock:" { words.removeFirst() }
    // number:, class, ADVISORY|MANDATORY, READ|WRITE, pid, maj:min:inode, start, end
    guard words.count >= 6 else { return nil }
    switch words[1] {
    case "FLOCK": kind = .flock
    case "POSIX": kind = .posix
    case "OFDLCK": kind = .ofd
    default: return nil  // leases and delegations are not locks an app holds
    }
    isExclusive = words[3] == "WRITE"
    let device = words[5].split(separator: ":")
    guard device.count == 3, let major = UInt64(device[0], radix: 16),
      let minor = UInt64(device[1], radix: 16), let inode = UInt64(device[2])
    else { return nil }
    self.major = major
    self.minor = minor
    self.inode = inode
    start = words.count > 6 ? UInt64(words[6]) ?? 0 : 0
  }

  /// Whether the line is about `file` (device numbers as glibc's `major(3)`/`minor(3)`).
  func matches(_ file: FileStatus) -> Bool {
    let device = file.device
    let fileMajor = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
    let fileMinor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
    return fileMajor == major && fileMinor == minor && file.inode == inode
  }
}

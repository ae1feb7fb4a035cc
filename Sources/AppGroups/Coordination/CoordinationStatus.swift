import Foundation

/// Who presents and who coordinates what in a root, for `groupctl ps` and `doctor`.
public enum CoordinationStatus {
  /// A registered presenter.
  public struct Presenter: Sendable, Hashable, CustomStringConvertible {
    /// The app that registered it.
    public let bundleIdentifier: String
    /// Its process.
    public let pid: Int32
    /// The presented item's path.
    public let path: String
    /// Whether it presents a folder.
    public let isFolder: Bool
    /// The container's group identifier (nil for an app's own container).
    public let groupIdentifier: String?
    /// Whether its process still runs; a stale registration's process crashed.
    public let isLive: Bool
    /// Whether its process is stopped (suspended): it cannot answer a coordinated access.
    public let isStopped: Bool
    /// The registration file.
    public let registrationPath: String

    /// The path as a line shows it (as it is, or quoted with its control characters and
    /// backslashes escaped): a name with a newline in it does not split the line.
    public var shownPath: String { PrintedText.shown(path) }

    /// `com.example.widget (4101) presents PATH (folder)`.
    public var description: String {
      "\(PrintedText.shown(bundleIdentifier)) (\(pid)) presents \(shownPath)\(isFolder ? " (folder)" : "")"
        + (isLive ? (isStopped ? " [stopped: cannot answer]" : "") : " [stale: its process is gone]")
    }
  }

  /// A coordinated access holding its claim now.
  public struct Access: Sendable, Hashable, CustomStringConvertible {
    /// The process.
    public let pid: Int32
    /// Its app, when known (a run record or `APPGROUPS_BUNDLE_ID`).
    public let bundleIdentifier: String?
    /// The item's path; the container's when the item's name cannot be read
    /// (``isItemNameKnown``).
    public let path: String
    /// Whether the item's name was read: a claim whose slot's name file is missing or empty
    /// is still held, on an item of the container at ``path``.
    public let isItemNameKnown: Bool
    /// A write (exclusive) rather than a read.
    public let isWrite: Bool
    /// Whether the process is stopped while it holds the claim.
    public let isStopped: Bool

    /// The item as a report names it: its path, or `an item of CONTAINER whose name is
    /// unknown`, the path as a line shows it (as it is, or quoted with its control characters
    /// and backslashes escaped).
    public var item: String {
      isItemNameKnown ? PrintedText.shown(path) : "an item of \(PrintedText.shown(path)) whose name is unknown"
    }

    /// `com.example.app (4099) coordinates a write of PATH`.
    public var description: String {
      "\(bundleIdentifier.map(PrintedText.shown) ?? "process") (\(pid)) coordinates a \(isWrite ? "write" : "read") of \(item)"
        + (isStopped ? " [stopped]" : "")
    }
  }

  /// Every container's coordination folder in `root`.
  static func folders(root: ContainerRoot) -> [(container: String, group: String?)] {
    var found: [(String, String?)] = []
    let shared = root.path + "/Shared/AppGroup"
    for group in FileSystem.entryNames(in: shared).sorted() {
      found.append((shared + "/" + group, group))
    }
    let apps = root.path + "/Data/Application"
    for app in FileSystem.entryNames(in: apps).sorted() { found.append((apps + "/" + app, nil)) }
    return found.filter { Paths.exists($0.0 + "/" + CoordinationLayout.folder) }
  }

  /// Every presenter registered in `root`'s containers, live or stale, in registration order.
  public static func presenters(root: ContainerRoot) -> [Presenter] {
    folders(root: root).flatMap { container, group -> [Presenter] in
      let folder = container + "/" + CoordinationLayout.folder + "/" + CoordinationLayout.presentersFolder
      return PresenterRegistry(folder: folder).scan().map { record in
        let live = ThisProcess.isAlive(record.process)
        return Presenter(
          bundleIdentifier: record.bundleIdentifier, pid: record.pid,
          path: record.item.isEmpty ? container : container + "/" + record.item,
          isFolder: record.isFolder, groupIdentifier: group, isLive: live,
          isStopped: live && ProcessStatus(pid: record.pid)?.isStopped == true,
          registrationPath: folder + "/" + record.name)
      }
    }
  }

  /// Every coordinated access holding a claim in `root` now, read from the processes' locks
  /// (`/proc/PID/fdinfo`). A process whose app is not known otherwise, such as the command
  /// that `groupctl coordinate` runs, which inherits the claim, is its nearest ancestor's app
  /// among those holding a claim.
  public static func accesses(root: ContainerRoot) -> [Access] {
    let found = accessesByProcess(root: root)
    var known: [Int32: String] = [:]
    for access in found { if let bundle = access.bundleIdentifier { known[access.pid] = bundle } }
    return found.map { access in
      guard access.bundleIdentifier == nil else { return access }
      var ancestor = access.pid
      for _ in 0..<64 {
        guard let parent = ProcessStatus(pid: ancestor)?.parentID, parent > 1 else { break }
        if let bundle = known[parent] {
          return Access(
            pid: access.pid, bundleIdentifier: bundle, path: access.path,
            isItemNameKnown: access.isItemNameKnown, isWrite: access.isWrite,
            isStopped: access.isStopped)
        }
        ancestor = parent
      }
      return access
    }
  }

  private static func accessesByProcess(root: ContainerRoot) -> [Access] {
    let device = Device(root: root)
    return ProcessStatus.allPIDs().flatMap { pid -> [Access] in
      let locks = HeldLock.locks(heldBy: pid, root: root).filter(\.isCoordinated)
      guard !locks.isEmpty, let status = ProcessStatus(pid: pid) else { return [] }
      let stopped = status.isStopped
      // Its run record or environment, else what it wrote beside the claims it holds.
      let key = "\(pid)-\(status.startTime)"
      let bundle =
        device.bundleIdentifier(of: pid)
        ?? locks.lazy.compactMap { lock -> String? in
          let folder = FileSystem.folder(of: lock.path)
          let path = folder + "/" + CoordinationLayout.processesFolder + "/" + key
          return FileSystem.readPrefix(256, of: path).map { String(decoding: $0, as: UTF8.self) }
        }.first
      return locks.compactMap { lock in
        guard let path = lock.coordinatedItem ?? lock.coordinationContainer else { return nil }
        return Access(
          pid: pid, bundleIdentifier: bundle, path: path,
          isItemNameKnown: lock.coordinatedItem != nil, isWrite: lock.isExclusive,
          isStopped: stopped)
      }
    }
  }

  /// The accesses other than this process's holding a claim on one of `claims`' items.
  static func holders(of claims: [Claim]) -> [Access] {
    guard let space = claims.first?.item.space else { return [] }
    let paths = Set(claims.map(\.item.path))
    return accesses(root: space.containerRoot).filter {
      $0.pid != Processes.currentID && $0.isItemNameKnown && paths.contains($0.path)
    }
  }

  /// The unanswered presenters and terminations reported in `root` (the lifecycle log and
  /// the containers' coordination logs), oldest first; a log grown past 4 MiB is read for its
  /// newest lines.
  public static func reports(root: ContainerRoot) -> [String] {
    var lines = Device(root: root).logLines().filter { $0.contains(" unanswered: ") }
    for (container, _) in folders(root: root) {
      let log = container + "/" + CoordinationLayout.folder + "/" + CoordinationLayout.logFile
      lines += FileSystem.logLines(log).map(String.init)
    }
    return lines.sorted()
  }
}

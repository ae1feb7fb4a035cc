import CAppGroupsLinux
import Foundation

/// An item of a container, as coordination names it: its container's space and its path
/// in the container.
struct CoordinatedItem: Sendable, Hashable, CustomStringConvertible {
  let space: CoordinationSpace
  /// The path below the container, without a leading `/`; empty for the container itself.
  let relativePath: String

  var path: String { relativePath.isEmpty ? space.container : space.container + "/" + relativePath }
  var url: URL { URL(fileURLWithPath: path) }
  var slot: Int64 { CoordinationLayout.slot(of: relativePath) }

  /// The folders above the item in its container, the container's own path (empty) first.
  var ancestors: [String] {
    guard !relativePath.isEmpty else { return [] }
    var result = [""]
    var current = ""
    let parts = relativePath.split(separator: "/")
    for part in parts.dropLast() {
      current += current.isEmpty ? String(part) : "/" + part
      result.append(current)
    }
    return result
  }

  /// Whether `other` is this item or lies inside it.
  func contains(_ other: CoordinatedItem) -> Bool {
    guard space == other.space else { return false }
    return relativePath.isEmpty || other.relativePath == relativePath
      || other.relativePath.hasPrefix(relativePath + "/")
  }

  /// Whether this item lies strictly inside `folder`.
  func isInside(_ folder: CoordinatedItem) -> Bool { folder != self && folder.contains(self) }

  /// The item `other`, which lies inside this one, once this one is at `destination`.
  func moved(_ other: CoordinatedItem, to destination: CoordinatedItem) -> CoordinatedItem {
    let rest = other.relativePath.dropFirst(relativePath.count)
    let joined = destination.relativePath + rest
    return CoordinatedItem(
      space: destination.space, relativePath: joined.hasPrefix("/") ? String(joined.dropFirst()) : joined)
  }

  var description: String { path }

  /// `relativePath` in `group.x` (or in the app's container), for messages.
  var described: String {
    "\(relativePath.isEmpty ? "the container" : relativePath) in \(space.owner)"
  }

  /// Refuses a coordinated move, deletion or replacement (`options`) of an item that holds
  /// the container's coordination state: the container itself, its `Library` folder, or
  /// `Library/Coordination`. Moved or removed, the state would go with it (the claims file of
  /// the accesses running, the presenters' registrations) and be made again empty by the next
  /// access, while the old copy stayed in the user's folder.
  ///
  /// A plain coordinated write or read of `Library` stays allowed: it claims the folder
  /// itself, a write of its contents, not the removal of the folder.
  ///
  /// - Throws: `.outsideContainer`, naming the item and the reason.
  func refuseRemovingCoordinationState(_ options: NSFileCoordinator.WritingOptions) throws(AppGroupsError) {
    let folder = CoordinationLayout.folder
    guard relativePath.isEmpty || folder.hasPrefix(relativePath + "/") || relativePath == folder
    else { return }
    let doing =
      options.contains(.forDeleting) ? "deleted" : options.contains(.forMoving) ? "moved" : "replaced"
    let what = relativePath.isEmpty ? "it is the container, and holds" : "it holds"
    throw AppGroupsError(
      .outsideContainer,
      "\(path) cannot be \(doing) in a coordinated write: \(what) the coordination state of"
        + " \(space.container) (\(space.folder)), which every coordinated access of the container"
        + " uses; move or delete the items inside it instead")
  }

  /// The item at `url`: a file URL inside a group container (`<root>/Shared/AppGroup/<group>/…`)
  /// or an app's own container (`<root>/Data/Application/<bundle id>/…`) of a root. The
  /// container is the outermost such folder of the path whose root holds a manifest
  /// (`Entitlements.plist`), else the outermost: a `Data/Application/<id>` or
  /// `Shared/AppGroup/<group>` folder inside a container is an ordinary folder of it.
  ///
  /// The existing part of the path is resolved (`realpath(3)`), so that a link into a
  /// container names the item inside it.
  ///
  /// - Throws: `.outsideContainer` for a URL that is not a file URL or not inside a container,
  ///   or inside the container's coordination folder; `.invalidName` for a container name that
  ///   is not one.
  static func resolve(_ url: URL) throws(AppGroupsError) -> CoordinatedItem {
    guard url.isFileURL else {
      throw AppGroupsError(
        .outsideContainer,
        "\(url.absoluteString) is not a file URL: file coordination is for files in containers")
    }
    let path = ContainerRoot.resolve(url.path, currentDirectory: Paths.currentDirectory())
    let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    // Each <root>/Shared/AppGroup/<group> or <root>/Data/Application/<bundle id> of the path,
    // outermost first. The container is the outermost one whose root holds a manifest: a
    // folder of the same shape inside a container is the container's (not another app's or
    // group's container, even with a manifest planted beside it), and a root that lives below
    // a folder of that shape is still found. With no manifest anywhere, the outermost.
    var candidates: [(root: String, kind: CoordinationSpace.Kind, rest: ArraySlice<String>)] = []
    var index = 0
    while index + 3 <= parts.count {
      let owner = parts[index + 2]
      let root = "/" + parts[..<index].joined(separator: "/")
      if parts[index] == "Shared", parts[index + 1] == "AppGroup" {
        candidates.append((root, .group(owner), parts[(index + 3)...]))
      } else if parts[index] == "Data", parts[index + 1] == "Application" {
        candidates.append((root, .app(owner), parts[(index + 3)...]))
      }
      index += 1
    }
    let manifested =
      candidates.count < 2
      ? nil
      : candidates.first {
        Paths.exists(($0.root == "/" ? "" : $0.root) + "/" + ContainerRoot.manifestFileName)
      }
    guard let found = manifested ?? candidates.first else {
      throw AppGroupsError(
        .outsideContainer,
        "\(path) is not inside a container (<root>/Shared/AppGroup/GROUP-ID/… or"
          + " <root>/Data/Application/BUNDLE-ID/…): file coordination is between the processes"
          + " that share a container")
    }
    switch found.kind {
    case .group(let group): try Names.validateGroupIdentifier(group)
    case .app(let bundle): try Names.validateBundleIdentifier(bundle)
    }
    let relative = found.rest.joined(separator: "/")
    if relative == CoordinationLayout.folder || relative.hasPrefix(CoordinationLayout.folder + "/") {
      throw AppGroupsError(
        .outsideContainer,
        "\(path) is inside the container's coordination folder, which only the library writes")
    }
    let space = CoordinationSpace.shared(root: found.root == "/" ? "" : found.root, kind: found.kind)
    return CoordinatedItem(space: space, relativePath: relative)
  }
}

/// One container's coordination state in this process: its folder's paths, the presenters'
/// registry, and the entitlement checks already made.
final class CoordinationSpace: Sendable, Hashable, CustomStringConvertible {
  enum Kind: Sendable, Hashable {
    case group(String)
    case app(String)
  }

  /// The root's path.
  let root: String
  let kind: Kind
  /// The container's path.
  let container: String
  /// `<container>/Library/Coordination`.
  let folder: String
  let registry: PresenterRegistry
  /// The identities already found entitled to this container.
  private let admitted = Mutex<Set<String>>([])

  private static let spaces = Mutex<[String: CoordinationSpace]>([:])

  /// The process's one space for the container `kind` names in `root`.
  static func shared(root: String, kind: Kind) -> CoordinationSpace {
    let container: String
    switch kind {
    case .group(let group): container = root + "/Shared/AppGroup/" + group
    case .app(let bundle): container = root + "/Data/Application/" + bundle
    }
    return spaces.withLock { spaces in
      if let space = spaces[container] { return space }
      let space = CoordinationSpace(root: root, kind: kind, container: container)
      spaces[container] = space
      return space
    }
  }

  private init(root: String, kind: Kind, container: String) {
    self.root = root
    self.kind = kind
    self.container = container
    folder = container + "/" + CoordinationLayout.folder
    registry = PresenterRegistry(folder: folder + "/" + CoordinationLayout.presentersFolder)
  }

  var claimsPath: String { folder + "/" + CoordinationLayout.claimsFile }
  var inboxFolder: String { folder + "/" + CoordinationLayout.inboxFolder }
  var containerRoot: ContainerRoot { ContainerRoot(path: root.isEmpty ? "/" : root) }

  /// The group identifier, or the app's bundle identifier for an app's container.
  var owner: String {
    switch kind {
    case .group(let group): group
    case .app(let bundle): "the container of \(bundle)"
    }
  }

  var groupIdentifier: String? {
    if case .group(let group) = kind { return group }
    return nil
  }

  var description: String { container }

  static func == (a: CoordinationSpace, b: CoordinationSpace) -> Bool { a === b }
  func hash(into hasher: inout Hasher) { hasher.combine(container) }

  /// Checks, once per identity in this process, that `identity` may use this container: a
  /// member of the group as the manifest says now, or the app whose container it is. The
  /// container is made when it is missing (a group's by the resolver, an app's own as
  /// ``ContainerRoot/prepareContainer(at:)`` makes it). Then creates the coordination folder
  /// (mode 0700) when it is missing.
  ///
  /// - Throws: `.notEntitled`, `.executableMismatch`, `.invalidManifest` (the resolver's
  ///   refusals); `.outsideRoot` when a folder on the way to the app's container is a
  ///   symbolic link; `.io` when a folder cannot be created.
  func admit(_ identity: AppIdentity) throws(AppGroupsError) {
    let name = identity.bundleIdentifier
    if !admitted.withLock({ $0.contains(name) }) {
      switch kind {
      case .group(let group):
        _ = try SuiteResolver(identity: identity, root: containerRoot)
          .container(forSecurityApplicationGroupIdentifier: group)
      case .app(let bundle):
        guard bundle == name else {
          throw AppGroupsError(
            .notEntitled,
            "\(name) cannot coordinate files in the container of \(bundle): an app's own"
              + " container is its own")
        }
        // Made on demand, as a group container is when the resolver hands it out.
        try containerRoot.prepareContainer(atPath: container)
      }
      admitted.withLock { _ = $0.insert(name) }
      try prepareFolders()
      noteProcess(acting: name)
    }
    try prepareFolders()
  }

  /// Writes who this process is (`processes/<pid>-<start time>`), for `groupctl ps` to name
  /// a process that `groupctl run` did not launch; removes the notes of processes that are
  /// gone, and, at this process's normal exit, its own.
  private func noteProcess(acting name: String) {
    let processes = folder + "/" + CoordinationLayout.processesFolder
    try? FileSystem.replace(processes + "/" + ThisProcess.key, with: Array(name.utf8))
    for entry in FileSystem.entryNames(in: processes)
    where entry != ThisProcess.key && ThisProcess.parse(entry) != nil && !ThisProcess.isAlive(entry) {
      try? FileSystem.remove(processes + "/" + entry)
    }
    let first = Self.noted.withLock { noted in
      noted.append(processes + "/" + ThisProcess.key)
      return noted.count == 1
    }
    if first {
      Processes.atExit {
        for path in CoordinationSpace.noted.withLock({ $0 }) { try? FileSystem.remove(path) }
      }
    }
  }

  /// The notes ``noteProcess(acting:)`` wrote.
  private static let noted = Mutex<[String]>([])

  /// Creates the coordination folder and its subfolders when missing (a folder removed under
  /// a running process is made again).
  func prepareFolders() throws(AppGroupsError) {
    guard !Paths.exists(registry.folder) || !Paths.exists(inboxFolder)
      || !Paths.exists(folder + "/" + CoordinationLayout.processesFolder)
    else { return }
    do {
      for sub in [
        CoordinationLayout.namesFolder, CoordinationLayout.presentersFolder,
        CoordinationLayout.inboxFolder, CoordinationLayout.processesFolder,
      ] {
        try FileSystem.makeDirectory(folder + "/" + sub, within: container)
      }
    } catch {
      throw AppGroupsError.coordinationFiles(error, "creating the coordination folder \(folder)")
    }
  }

  /// The item at `relativePath` in this container.
  func item(_ relativePath: String) -> CoordinatedItem {
    CoordinatedItem(space: self, relativePath: relativePath)
  }

  /// The item at the absolute `path` when it is in this container.
  func item(atPath path: String) -> CoordinatedItem? {
    if path == container { return item("") }
    guard path.hasPrefix(container + "/") else { return nil }
    return item(String(path.dropFirst(container.count + 1)))
  }
}

/// This process, as other processes of the device name it: its pid and start time.
enum ThisProcess {
  /// `<pid>-<start time>`: unique while the machine runs, even when the pid is reused.
  static let key: String = {
    let pid = Processes.currentID
    let start = ProcessStatus(pid: pid)?.startTime ?? 0
    return "\(pid)-\(start)"
  }()

  /// Whether the process a `<pid>-<start time>` key names still runs.
  static func isAlive(_ key: String) -> Bool {
    guard let (pid, start) = parse(key) else { return false }
    return ProcessStatus(pid: pid)?.startTime == start
  }

  static func parse(_ key: String) -> (Int32, UInt64)? {
    let fields = key.split(separator: "-")
    guard fields.count >= 2, let pid = Int32(fields[0]), let start = UInt64(fields[1]) else {
      return nil
    }
    return (pid, start)
  }
}

extension AppGroupsError {
  /// `error` of a call on the coordination folder or its files: a symbolic link met where one
  /// of them should be (never followed: `O_NOFOLLOW`, `ELOOP`) is said as such, as
  /// `.outsideRoot`; any other failure is `.io`.
  static func coordinationFiles(_ error: SystemCallError, _ doing: String) -> AppGroupsError {
    guard error.code == .tooManySymbolicLinkLevels else { return AppGroupsError(io: error, doing) }
    return AppGroupsError(
      .outsideRoot,
      "\(doing): \(error.path ?? "a path of the coordination folder") is a symbolic link, which is"
        + " never followed there; remove it, and the next access makes what it needs",
      cause: error)
  }
}

import Foundation

/// The folders and files a confined process may use, and how: the Landlock
/// ruleset of an app's sandbox.
///
/// Everything not listed is denied by the kernel (`EACCES`), to root too:
/// another app's container, a group the app is not entitled to, the rest of
/// the root, the manifest for writing.
///
/// ```swift
/// let ruleset = try SandboxRuleset.app(identity, root: root)
/// for rule in ruleset.rules { print(rule) }  // read-write …/Data/Application/com.example.app …
/// try ruleset.restrictCurrentThread()
/// ```
public struct SandboxRuleset: Sendable, CustomStringConvertible {
  /// What a rule allows on its path and everything beneath it.
  public enum Access: String, Sendable, Hashable, CustomStringConvertible {
    /// Read files and list folders.
    case readOnly = "read-only"
    /// Read files, list folders and run programs: system and toolchain libraries.
    case readExecute = "read-execute"
    /// Everything a container needs: read, write, create, remove, rename
    /// within and between read-write folders, truncate; no running of
    /// programs and no device files.
    case readWrite = "read-write"
    /// Read and write an existing file, such as `/dev/null`.
    case readWriteFile = "read-write-file"

    var rights: Landlock.Rights {
      switch self {
      case .readOnly: [.readFile, .readDir]
      case .readExecute: [.readFile, .readDir, .execute]
      case .readWrite:
        [
          .readFile, .readDir, .writeFile, .truncate, .removeDir, .removeFile, .makeDir, .makeReg,
          .makeSock, .makeFifo, .makeSym, .refer,
        ]
      case .readWriteFile: [.readFile, .writeFile, .truncate]
      }
    }

    public var description: String { rawValue }
  }

  /// One path and what is allowed on it.
  public struct Rule: Sendable, Hashable, CustomStringConvertible {
    /// An absolute path; a symbolic link stands for its target.
    public var path: String
    /// What is allowed on the path and beneath it.
    public var access: Access
    /// Why the rule is there, for `groupctl run -v`.
    public var purpose: String

    public init(path: String, access: Access, purpose: String) {
      self.path = path
      self.access = access
      self.purpose = purpose
    }

    /// `access path (purpose)`.
    public var description: String { "\(access) \(path) (\(purpose))" }
  }

  /// The rules, in the order they were added.
  public internal(set) var rules: [Rule] = []

  /// The private temporary folder the confined process should get as
  /// `TMPDIR`, when the ruleset is an app's; it is inside a read-write rule.
  public var temporaryDirectory: String?

  /// The paths no rule may hold: an app's ruleset keeps its root's here (see
  /// ``allow(_:_:purpose:)``).
  var protectedPaths: [String] = []

  /// The files the program needs to start (itself, its interpreters, its libraries), each
  /// with why, whether a rule of its own or a folder's allows it; see
  /// ``refusedProgramFiles()``.
  public internal(set) var programFiles: [Rule] = []

  /// What the ruleset could not provide for, one sentence each: a library found nowhere, a
  /// malformed one, a file the program needs that lies inside the root.
  public internal(set) var notes: [String] = []

  /// An empty ruleset: nothing is allowed.
  public init() {}

  /// Allows `access` on `path` and everything beneath it. A path that is
  /// already listed with the same access is not added again.
  ///
  /// In an app's ruleset, a folder that holds the root is never listed: a
  /// rule on it would open every container. What it holds is allowed entry
  /// by entry instead, except the way down to the root (`groupctl run -v`
  /// says so in each such rule's purpose), and the root itself is left out.
  public mutating func allow(_ access: Access, _ path: String, purpose: String) {
    if !protectedPaths.isEmpty, let real = Paths.realPath(path),
      let held = protectedPath(heldBy: real)
    {
      if real != held { allowAround(access, folder: real, purpose: purpose) }
      return
    }
    append(Rule(path: path, access: access, purpose: purpose))
  }

  /// One rule per line.
  public var description: String { rules.map(\.description).joined(separator: "\n") }

  // MARK: An app's sandbox

  /// The ruleset of an app's sandbox, after creating the folders it names.
  ///
  /// - read-write: the app's own container (created on first use) with its
  ///   `tmp` folder, the private ``temporaryDirectory``; every group
  ///   container the manifest entitles the app to (created on first use),
  ///   lock files and notification folders included; the folder of each of its keychain
  ///   access groups (`<root>/Keychains/<group>`, created on first use); each of `readWrite`.
  /// - read-only: the manifest, the global preferences container and the
  ///   managed preferences folder (both created if missing, so that a later
  ///   write by the administrator is seen); the device state, `<root>/Device`
  ///   (`allowDeviceState(root:)`); `/proc` (a Swift program reads
  ///   its arguments from `/proc/self/cmdline` and needs `/proc/self` to run;
  ///   the ids of the children it will start are unknown, so it is all of
  ///   `/proc`: other processes' command lines and environments can be read,
  ///   their memory cannot); a few files of `/etc` (the loader's cache, time
  ///   zone, users, name service, certificates); each of `readOnly`.
  /// - read-execute: `/usr`, `/lib*`, `/bin`, `/sbin`; the folders of the
  ///   shared libraries the calling process has loaded (the Swift runtime);
  ///   the folder of `executable`, unless it lies inside the root (a
  ///   program in a container is not allowed to run) or holds it (then
  ///   `executable` alone).
  /// - read-write on the file alone: the global preferences' lock file
  ///   (created here), whose token page every reader maps; `/dev/null`, `/dev/zero`, `/dev/full`,
  ///   `/dev/tty`; read-only: `/dev/random`, `/dev/urandom`.
  ///
  /// No rule holds the root: a system folder or library folder that holds it
  /// is allowed entry by entry around it (see ``allow(_:_:purpose:)``).
  /// System paths that do not exist are left out. The identity's executable
  /// binding is not checked here (``AppSandbox`` and `groupctl run` do).
  ///
  /// - Parameters:
  ///   - identity: the app; its groups come from the root's manifest.
  ///   - root: the root holding the manifest and containers.
  ///   - executable: the program that will run confined, whose folder is
  ///     readable and executable when it is outside the root; `nil` for none.
  ///   - readOnly: more paths to read, such as a data folder.
  ///   - readWrite: more paths to read and write.
  /// - Throws: the manifest's `.invalidManifest`; `.outsideRoot` when a
  ///   container or a folder on the way is a symbolic link; `.io` when a
  ///   container cannot be created; `.notFound` when a path of `readOnly` or
  ///   `readWrite` does not exist; `.notEntitled` when one holds the root,
  ///   or lies inside it outside the app's containers.
  public static func app(
    _ identity: AppIdentity,
    root: ContainerRoot,
    executable: String? = nil,
    readOnly: [String] = [],
    readWrite: [String] = []
  ) throws(AppGroupsError) -> SandboxRuleset {
    var ruleset = SandboxRuleset()
    let manifest =
      try EntitlementManifest.loadIfPresent(atPath: root.manifestPath)?.manifest
      ?? EntitlementManifest()
    try ruleset.addAppContainers(identity.bundleIdentifier, manifest: manifest, root: root)
    ruleset.protectedPaths = Self.protectedPaths(of: root)
    try ruleset.addManifestAndGlobalPreferences(root: root)
    try ruleset.allowDeviceState(root: root)
    for path in readOnly {
      try ruleset.allowRequested(.readOnly, path, purpose: "--ro", identity: identity, root: root)
    }
    for path in readWrite {
      try ruleset.allowRequested(.readWrite, path, purpose: "--rw", identity: identity, root: root)
    }
    if let executable { ruleset.addExecutable(executable, root: root) }
    ruleset.addSystemRules()
    if let executable {
      try ruleset.addProgramFiles(executable, environment: ProcessInfo.processInfo.environment)
    }
    return ruleset
  }

  /// Read-write: the app's own container with its `tmp` folder, and every group container
  /// the manifest entitles it to; each created when missing.
  mutating func addAppContainers(
    _ bundleIdentifier: String, manifest: EntitlementManifest, root: ContainerRoot
  ) throws(AppGroupsError) {
    let appContainer = root.appContainerURL(for: bundleIdentifier)
    try root.prepareContainer(at: appContainer)
    let temporary = appContainer.path + "/tmp"
    do {
      try FileSystem.makeDirectory(temporary, within: root.path)
    } catch {
      throw AppGroupsError(io: error, "cannot create the temporary folder \(temporary)")
    }
    allow(.readWrite, appContainer.path, purpose: "\(bundleIdentifier)'s own container")
    temporaryDirectory = temporary
    for group in manifest.groups(for: bundleIdentifier).sorted() {
      try Names.validateGroupIdentifier(group)
      let container = root.groupContainerURL(for: group)
      try root.prepareContainer(at: container)
      allow(.readWrite, container.path, purpose: "group container of \(group)")
    }
    try allowKeychainAccessGroups(of: bundleIdentifier, manifest: manifest, root: root)
  }

  /// Read-only: the manifest, the global preferences and the managed preferences (both
  /// created when missing, so that a later write by the administrator is seen); read-write:
  /// the global preferences' lock file alone.
  mutating func addManifestAndGlobalPreferences(root: ContainerRoot) throws(AppGroupsError) {
    if FileManager.default.fileExists(atPath: root.manifestPath) {
      allow(.readOnly, root.manifestPath, purpose: "the manifest")
    }
    try root.prepareContainer(at: root.globalContainerURL)
    allow(.readOnly, root.globalContainerURL.path, purpose: "global preferences")
    // Every process that reads the global domain maps its lock file's token
    // page and may take its lock: the file is made here, once, and allowed
    // alone, so the folder (and the preferences file) stays read-only.
    let globalLock = SuiteLockFile.path(of: root.globalPreferencesPath)
    do throws(SystemCallError) {
      _ = try SuiteLockFile(path: globalLock, makeFolder: nil)
    } catch {
      throw AppGroupsError(io: error, "cannot create the global preferences' lock file")
    }
    allow(.readWriteFile, globalLock, purpose: "the global preferences' lock file")
    let managed = root.managedPreferencesDirectoryPath
    do {
      try FileSystem.makeDirectory(managed, within: root.path)
    } catch {
      throw AppGroupsError(io: error, "cannot create the managed preferences folder \(managed)")
    }
    allow(.readOnly, managed, purpose: "managed preferences")
  }

  /// Read access to the device state, `<root>/Device`: the page every app maps to read the
  /// lock state, and the folder its change monitor watches to hear a lock, an unlock or a
  /// reboot (see ``ProtectedData``). The folder and the state file are made first: the app
  /// could not make them. The keybag (`<root>/Keybag`) stays out of reach.
  mutating func allowDeviceState(root: ContainerRoot) throws(AppGroupsError) {
    _ = try DeviceStateFile(root: root)
    allow(.readOnly, DeviceStateFile.folder(root: root), purpose: "the device state")
  }

  /// Allows the folder of each of the app's keychain access groups (created if missing),
  /// `<root>/Keychains/<group>`: the kernel then admits the app to exactly its own groups'
  /// items, whatever library it uses.
  mutating func allowKeychainAccessGroups(
    of bundleIdentifier: String, manifest: EntitlementManifest, root: ContainerRoot
  ) throws(AppGroupsError) {
    for group in manifest.keychainAccessGroups(for: bundleIdentifier) {
      let folder = root.keychainFolderURL(forAccessGroup: group).path
      do {
        try FileSystem.makeDirectory(folder, within: root.path)
      } catch {
        throw AppGroupsError(io: error, "cannot create the keychain folder \(folder)")
      }
      allow(.readWrite, folder, purpose: "keychain access group \(group)")
    }
  }

  /// Adds a rule for a path given by the user (`--ro`, `--rw`), which must exist and must
  /// neither hold the root nor lie inside it outside the app's own and group containers.
  mutating func allowRequested(
    _ access: Access, _ path: String, purpose: String, identity: AppIdentity,
    root: ContainerRoot
  ) throws(AppGroupsError) {
    let absolute = ContainerRoot.lexicallyStandardized(
      path, currentDirectory: FileManager.default.currentDirectoryPath)
    guard let real = Paths.realPath(absolute) else {
      throw AppGroupsError(.notFound, "\(path) does not exist, so it cannot be allowed \(access)")
    }
    let shown = real == path ? path : "\(path) (\(real))"
    let bundleIdentifier = identity.bundleIdentifier
    if let held = protectedPath(heldBy: real) {
      throw AppGroupsError(
        .notEntitled,
        "\(purpose) \(shown) holds the root \(held): a sandbox that allows a folder allows"
          + " everything in it, every app's container included, so \(bundleIdentifier) may not"
          + " have it; allow the files or folders inside it that the program needs, or move"
          + " the root out of it (--root, \(ContainerRoot.environmentVariable))")
    }
    if let inside = protectedPaths.first(where: { ContainerRoot.isStrictlyInside(real, $0) }) {
      let containers = rules.filter { $0.access == .readWrite }.compactMap { Paths.realPath($0.path) }
      guard containers.contains(where: { Self.isWithin(real, $0) }) else {
        throw AppGroupsError(
          .notEntitled,
          "\(purpose) \(shown) is inside the root \(inside) and outside \(bundleIdentifier)'s"
            + " containers: a sandbox opens only the app's own container and the groups the"
            + " manifest entitles it to ('groupctl grant \(bundleIdentifier) GROUP-ID')")
      }
    }
    // What is read outside the root may be a program or an interpreter the program runs.
    let outside = !protectedPaths.contains { Self.isWithin(real, $0) }
    allow(access == .readOnly && outside ? .readExecute : access, absolute, purpose: purpose)
  }

  /// Read-execute: the folder of `executable` (as `realpath(3)` resolves it); the program
  /// alone when its folder holds the root; nothing when it lies inside the root (it could be
  /// another app's container, and a program in a container is not run).
  mutating func addExecutable(_ executable: String, root: ContainerRoot) {
    let real = Paths.realPath(executable) ?? executable
    let folder = FileSystem.folder(of: real)
    if protectedPaths.contains(where: { Self.isWithin(folder, $0) }) { return }
    if let held = protectedPath(heldBy: folder) {
      allow(
        .readExecute, real,
        purpose: "the executable alone: its folder holds the root \(held)")
      return
    }
    allow(.readExecute, folder, purpose: "the executable's folder")
  }

  /// What any program needs to start and run: libraries, the loader's
  /// configuration, `/proc`, a few devices.
  mutating func addSystemRules() {
    let systemFolders = ["/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"]
    for path in systemFolders where Paths.exists(path) {
      allow(.readExecute, path, purpose: "system programs and libraries")
    }
    for folder in Self.loadedLibraryFolders() where !Self.isBelowSystemFolder(folder) {
      allow(.readExecute, folder, purpose: "shared libraries of this process")
    }
    for path in Self.configurationFiles where Paths.exists(path) {
      allow(.readOnly, path, purpose: "system configuration")
    }
    // The Swift runtime reads a program's arguments from /proc/self/cmdline
    // and libdispatch stops with SIGILL without /proc/self; so the whole of
    // /proc, for the processes the confined one starts, whose ids are not
    // known yet. Other processes' memory stays closed (Landlock's ptrace rule).
    allow(.readOnly, "/proc", purpose: "process information, /proc/self of every child")
    if Paths.exists("/sys/devices/system/cpu") {
      allow(.readOnly, "/sys/devices/system/cpu", purpose: "processor count")
    }
    for path in ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"] where Paths.exists(path) {
      allow(.readWriteFile, path, purpose: "device")
    }
    for path in ["/dev/random", "/dev/urandom"] where Paths.exists(path) {
      allow(.readOnly, path, purpose: "device")
    }
  }

  /// Files of `/etc` a program may read: the loader's cache, time zone,
  /// users and groups, name service, certificates.
  static let configurationFiles = [
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
    "/etc/timezone", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts",
    "/etc/host.conf", "/etc/resolv.conf", "/etc/gai.conf", "/etc/ssl", "/etc/ca-certificates",
  ]

  static func isBelowSystemFolder(_ path: String) -> Bool {
    ["/usr", "/lib", "/lib64", "/lib32", "/libx32"].contains {
      path == $0 || path.hasPrefix($0 + "/")
    }
  }

  /// The folders of the shared libraries mapped into this process, from
  /// `/proc/self/maps`: where the Swift runtime and Foundation live.
  static func loadedLibraryFolders() -> [String] {
    // Read to its end: Foundation's String(contentsOfFile:) came back empty for the 50 KB
    // map of a process built with the thread sanitizer.
    guard let data = try? FileSystem.read("/proc/self/maps")?.0 else { return [] }
    let maps = String(decoding: data, as: UTF8.self)
    var folders: [String] = []
    for line in maps.split(separator: "\n") {
      guard let slash = line.firstIndex(of: "/") else { continue }
      let path = String(line[slash...])
      let name = (path as NSString).lastPathComponent
      guard name.hasSuffix(".so") || name.contains(".so.") else { continue }
      let folder = (path as NSString).deletingLastPathComponent
      if !folders.contains(folder) { folders.append(folder) }
    }
    return folders
  }
}

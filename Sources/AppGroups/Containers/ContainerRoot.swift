public import Foundation
internal import Synchronization

/// The simulated device: one folder holding the entitlement manifest and
/// every container.
///
/// ```
/// <root>/Entitlements.plist                          the manifest
/// <root>/Data/Application/<bundle id>/               an app's own container
/// <root>/Shared/AppGroup/<group id>/                 a group container
/// <root>/Global/Library/Preferences/.GlobalPreferences.plist
/// <root>/Managed/<domain>.plist                      administrator-forced values
/// ```
///
/// Every container holds `Library/Preferences` and `Library/Caches`, as on a
/// device. Folders are created on first use with mode 0700, and nothing is
/// ever created outside the root: a container or folder that is a symbolic
/// link is refused.
///
/// ```swift
/// let root = ContainerRoot(path: "Containers")
/// let shared = root.groupContainerURL(for: "group.com.example.shared")
/// let preferences = try root.prepareContainer(at: shared)
/// ```
public struct ContainerRoot: Sendable, Hashable, CustomStringConvertible {
  /// The environment variable that chooses the default root: `APPGROUPS_ROOT`.
  public static let environmentVariable = "APPGROUPS_ROOT"
  /// The default root's folder name, in the current directory: `Containers`.
  public static let defaultFolderName = "Containers"
  /// The manifest's file name inside the root: `Entitlements.plist`.
  public static let manifestFileName = "Entitlements.plist"

  /// The root folder's path: absolute, standardized, with the symbolic links
  /// of the part of the path that exists resolved (`realpath(3)`).
  public let path: String

  /// The root folder.
  public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

  /// A root at `url`. A relative path is taken against the current directory;
  /// `.` and `..` are removed and the existing part of the path is resolved
  /// with `realpath(3)`. Nothing is created: see ``prepareRoot()``.
  public init(url: URL) {
    self.init(path: url.path)
  }

  /// A root at `path`. A relative path is taken against the current
  /// directory; `.` and `..` are removed and the existing part of the path
  /// is resolved with `realpath(3)`. Nothing is created: see ``prepareRoot()``.
  public init(path: String) {
    // An absolute path needs no current directory (`getcwd(3)` not called).
    self.path = Self.resolve(path, currentDirectory: path.hasPrefix("/") ? "/" : Paths.currentDirectory())
  }

  /// The root that `environment` chooses: `APPGROUPS_ROOT` when it is set and
  /// not empty, else `Containers` in `currentDirectory`.
  init(environment: [String: String], currentDirectory: String) {
    let chosen = environment[Self.environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
    path = Self.resolve(chosen ?? Self.defaultFolderName, currentDirectory: currentDirectory)
  }

  /// The default root: `APPGROUPS_ROOT` when it is set and not empty, else
  /// `Containers` in the current directory. Read each time it is asked for.
  ///
  /// Inside a test scoped by `AppGroupsTesting`, the test's own temporary root.
  public static var `default`: ContainerRoot {
    if let scoped = ScopedEnvironment.root { return scoped }
    return ContainerRoot(
      environment: ProcessInfo.processInfo.environment,
      currentDirectory: Paths.currentDirectory())
  }

  /// The root's path.
  public var description: String { path }

  /// Whether two roots are the same folder (compared by their resolved paths).
  public static func == (lhs: ContainerRoot, rhs: ContainerRoot) -> Bool { lhs.path == rhs.path }
  /// Hashes the resolved path.
  public func hash(into hasher: inout Hasher) { hasher.combine(path) }

  // MARK: Layout

  /// The entitlement manifest: `<root>/Entitlements.plist`.
  public var manifestURL: URL { URL(fileURLWithPath: manifestPath, isDirectory: false) }

  /// An app's own container: `<root>/Data/Application/<bundle id>`.
  ///
  /// The identifier is not validated here; ``SuiteResolver`` validates every
  /// name before it asks for a path. Pass only a validated identifier.
  public func appContainerURL(for bundleIdentifier: String) -> URL {
    URL(fileURLWithPath: appContainerPath(for: bundleIdentifier), isDirectory: true)
  }

  /// A group container: `<root>/Shared/AppGroup/<group id>`.
  ///
  /// The identifier is not validated or checked against the manifest here;
  /// ``SuiteResolver/container(forSecurityApplicationGroupIdentifier:)`` does
  /// both. Pass only a validated identifier.
  public func groupContainerURL(for groupIdentifier: String) -> URL {
    URL(fileURLWithPath: groupContainerPath(for: groupIdentifier), isDirectory: true)
  }

  /// The global domain's container: `<root>/Global`.
  public var globalContainerURL: URL {
    URL(fileURLWithPath: globalContainerPath, isDirectory: true)
  }

  /// The global domain's file:
  /// `<root>/Global/Library/Preferences/.GlobalPreferences.plist`.
  public var globalPreferencesURL: URL {
    URL(fileURLWithPath: globalPreferencesPath, isDirectory: false)
  }

  /// The folder of administrator-forced values: `<root>/Managed`.
  public var managedPreferencesDirectoryURL: URL {
    URL(fileURLWithPath: managedPreferencesDirectoryPath, isDirectory: true)
  }

  /// A domain's administrator-forced values: `<root>/Managed/<domain>.plist`.
  /// The domain is not validated here; pass only a validated name.
  public func managedPreferencesURL(forDomain domain: String) -> URL {
    URL(fileURLWithPath: managedPreferencesPath(forDomain: domain), isDirectory: false)
  }

  // The same places as paths: what the library itself uses (a `URL`'s first
  // `path` costs a new process a search of every protocol conformance it has loaded).

  /// The global domain's file name: `.GlobalPreferences.plist`.
  static let globalFileName = ".GlobalPreferences.plist"

  var manifestPath: String { path + "/" + Self.manifestFileName }
  func appContainerPath(for bundleIdentifier: String) -> String {
    path + "/Data/Application/" + bundleIdentifier
  }
  func groupContainerPath(for groupIdentifier: String) -> String {
    path + "/Shared/AppGroup/" + groupIdentifier
  }
  var globalContainerPath: String { path + "/Global" }
  var globalPreferencesPath: String {
    globalContainerPath + "/Library/Preferences/" + Self.globalFileName
  }
  var managedPreferencesDirectoryPath: String { path + "/Managed" }
  func managedPreferencesPath(forDomain domain: String) -> String {
    managedPreferencesDirectoryPath + "/" + domain + ".plist"
  }

  // MARK: Creation

  /// Creates the root folder itself, and any missing parent, with mode 0700
  /// if it does not exist. The default root in the repository already exists.
  ///
  /// - Throws: `.io` when a folder cannot be created or a component of the
  ///   path is a file or a symbolic link.
  public func prepareRoot() throws(AppGroupsError) {
    if FileStatus(atPath: path, followingLinks: true)?.kind == .folder { return }
    do {
      try FileSystem.makeDirectory(path, within: "")
    } catch {
      throw AppGroupsError(io: error, "cannot create the root \(path)")
    }
  }

  /// Creates a container, with `Library/Preferences` and `Library/Caches`
  /// inside it, if missing, and returns its `Library/Preferences` folder.
  ///
  /// Missing folders, including the root and the folders between it and
  /// the container, are created with mode 0700; existing ones are left as
  /// they are. Symbolic links are never followed: when the container, a
  /// folder above it under the root, or one inside it is a symbolic link,
  /// it is refused and nothing is created through it: each level from the
  /// root down is checked to be a real folder (`openat2(2)` refusing a link
  /// at any level, else `lstat(2)` level by level), so the container and its
  /// folders are inside the root. Used for app, group and
  /// global containers alike.
  ///
  /// When another process removes the container's `Library` after it is made
  /// and before `Preferences` or `Caches` is made in it (a folder on the way
  /// missing, `ENOENT`), the folders are made again from `Library`, at most
  /// three times in all and with no wait; only then is it reported. A link or
  /// a file on the way is refused at once, never tried again.
  ///
  /// - Parameter container: a folder under the root, such as
  ///   ``groupContainerURL(for:)`` or ``globalContainerURL``.
  /// - Returns: the container's `Library/Preferences` folder.
  /// - Throws: `.outsideRoot` naming the path and where it leads when the
  ///   container is not under the root or a folder on the way is a symbolic
  ///   link (out of the root, or to another place inside it); `.io` when a
  ///   folder cannot be created or a file stands where a folder should be.
  @discardableResult
  public func prepareContainer(at container: URL) throws(AppGroupsError) -> URL {
    URL(fileURLWithPath: try prepareContainer(atPath: container.path), isDirectory: true)
  }

  /// ``prepareContainer(at:)`` for a path: returns the path of the container's
  /// `Library/Preferences` folder.
  @discardableResult
  func prepareContainer(atPath container: String) throws(AppGroupsError) -> String {
    let rootPath = path
    // Lexically only: a link in the container's own path must be seen, not followed.
    let containerPath = Self.lexicallyStandardized(container, currentDirectory: rootPath)
    guard Self.isStrictlyInside(containerPath, rootPath) else {
      throw AppGroupsError(
        .outsideRoot, "container \(containerPath) is not inside the root \(rootPath)")
    }
    let library = containerPath + "/Library"
    let preferences = library + "/Preferences"
    let caches = library + "/Caches"
    // Already there, as at most opens: both folders reached from `/` through real folders only
    // (the root's path is resolved) are what the walk below would find at every level, with
    // nothing to make. Four system calls, not seven. Anything else (a link or a file on the
    // way, a folder missing, an older kernel): the walk decides and says why.
    if FileSystem.isFolderWithoutLinks(preferences) && FileSystem.isFolderWithoutLinks(caches) {
      return preferences
    }
    try prepareRoot()
    // makeDirectory walks down from `within` with lstat(2) and stops at the first link
    // without following it, so nothing is ever created through one, and a folder it passes
    // is a real folder: once these succeed, the container and its folders are inside the
    // root. The levels down to `Library` are walked once, not once per folder in it.
    // Another process may remove `Library` (an `rm -rf` of the container's) after it is made
    // and before the folders in it are: their mkdir then finds no folder to make them in
    // (ENOENT), and the walk is done again from `Library`, `libraryWalkAttempts` times in all,
    // with no wait, before it is reported. A link or a file on the way is refused at once.
    var attempt = 1
    while true {
      try makeFolder(library, within: rootPath)
      #if DEBUG
      if let hook = Self.afterMakingLibraryForTesting.withLock({ $0 }) { hook(library) }
      #endif
      let mayWalkAgain = attempt < Self.libraryWalkAttempts
      if try makeFolder(preferences, within: library, unlessMissing: mayWalkAgain),
        try makeFolder(caches, within: library, unlessMissing: mayWalkAgain)
      {
        return preferences
      }
      attempt += 1
    }
  }

  /// How many times ``prepareContainer(atPath:)`` walks from `Library` when a folder on the
  /// way goes missing (another process removed it) before it reports that: 3.
  static let libraryWalkAttempts = 3

  #if DEBUG
  /// For tests: called with a container's `Library` folder right after
  /// ``prepareContainer(atPath:)`` makes it (or finds it), before `Preferences` and `Caches`
  /// are made in it, so that a test can remove it in that window.
  static let afterMakingLibraryForTesting = Mutex<(@Sendable (String) -> Void)?>(nil)
  #endif

  /// `FileSystem.makeDirectory`, its refusals said for a container.
  ///
  /// - Parameter unlessMissing: when a folder on the way is missing (`ENOENT`: another
  ///   process removed it), return `false` instead of throwing, for the caller to walk again.
  /// - Returns: `true` when the folder is there; `false` only for `unlessMissing`.
  @discardableResult
  private func makeFolder(
    _ folder: String, within: String, unlessMissing: Bool = false
  ) throws(AppGroupsError) -> Bool {
    do {
      try FileSystem.makeDirectory(folder, within: within)
    } catch where unlessMissing && error.code == .noSuchFileOrDirectory {
      return false
    } catch where error.code == .tooManySymbolicLinkLevels {
      throw linkRefusal(error.path ?? folder)
    } catch where error.code == .notDirectory {
      throw AppGroupsError(
        .io,
        "\(error.path ?? folder) is not a folder; a container and its Library folders "
          + "must be folders", cause: error)
    } catch {
      throw AppGroupsError(io: error, "cannot create \(folder)")
    }
    return true
  }

  /// Why the folder `folder`, inside the root, cannot be read as an app reads it: a symbolic
  /// link on the way down from the root, refused as an app's open refuses it (the same
  /// words); `nil` when every folder on the way is a real one, or missing (nothing to read
  /// there). `lstat(2)` of each level below the root, only when the cheap check finds a link
  /// or a missing folder.
  package func linkRefusal(onTheWayTo folder: String) -> AppGroupsError? {
    guard !FileSystem.isFolderWithoutLinks(folder), Self.isStrictlyInside(folder, path) else {
      return nil
    }
    var current = path
    for part in folder.dropFirst(path.count).split(separator: "/") {
      current += "/" + part
      guard let status = try? FileSystem.linkStatus(current) else { return nil }
      if status.fileType == FileMode.symbolicLink { return linkRefusal(current) }
      if status.fileType != FileMode.folder { return nil }
    }
    return nil
  }

  private func linkRefusal(_ link: String) -> AppGroupsError {
    let rootPath = path
    let written = Paths.linkContents(link) ?? "?"
    let parent = (link as NSString).deletingLastPathComponent
    let lexical = Self.resolve(written, currentDirectory: parent)
    let destination = Paths.realPath(link) ?? lexical
    if Self.isStrictlyInside(destination, rootPath) {
      return AppGroupsError(
        .outsideRoot,
        "\(link) is a symbolic link to \(written) (\(destination)); a container and its folders "
          + "must be real folders inside the root \(rootPath), so it is refused")
    }
    return AppGroupsError(
      .outsideRoot,
      "\(link) is a symbolic link that leads outside the root \(rootPath), to \(destination); "
        + "it is refused and nothing was created through it")
  }

  // MARK: Paths

  /// Whether `path` is below `folder` (not equal to it). Both absolute and standardized.
  static func isStrictlyInside(_ path: String, _ folder: String) -> Bool {
    if folder == "/" { return path.count > 1 && path.hasPrefix("/") }
    return path.hasPrefix(folder + "/") && path.count > folder.count + 1
  }

  /// Makes `path` absolute against `currentDirectory`, removes `.`, `..`
  /// and empty components, and resolves the longest existing prefix with
  /// `realpath(3)`, keeping the rest as written.
  static func resolve(_ path: String, currentDirectory: String) -> String {
    let absolute = path.hasPrefix("/") ? path : currentDirectory + "/" + path
    // Already standard and there (a root usually is): `realpath(3)`'s answer, which is
    // standard too, is what the walk below would give at its first step.
    if isStandard(absolute), let real = Paths.realPath(absolute), isStandard(real) { return real }
    // Find the longest prefix that realpath resolves, component by component
    // from the end, so that `..` after a link follows the link as the kernel does.
    let parts = components(absolute)
    var kept = parts.count
    while true {
      if let real = Paths.realPath(joined(parts[..<kept])) {
        return normalize(real, appending: parts[kept...])
      }
      guard kept > 0 else { return normalize("/", appending: parts[...]) }
      kept -= 1
    }
  }

  /// Makes `path` absolute against `currentDirectory` and removes `.`, `..`
  /// and empty components, without looking at the file system.
  static func lexicallyStandardized(_ path: String, currentDirectory: String) -> String {
    let absolute = path.hasPrefix("/") ? path : currentDirectory + "/" + path
    if isStandard(absolute) { return absolute }
    return normalize("/", appending: components(absolute)[...])
  }

  /// Whether `path` is already what ``normalize(_:appending:)`` makes of it: `/` followed by
  /// components that are not empty, `.` or `..`, separated by single `/`s (checked on the
  /// bytes, as ``components(_:)`` splits).
  private static func isStandard(_ path: String) -> Bool {
    var length = -1  // the current component's bytes; -1 before the leading `/`
    var dots = true  // whether they are all `.`
    for byte in path.utf8 {
      if byte == UInt8(ascii: "/") {
        if length == 0 || (dots && length <= 2 && length > 0) { return false }
        length = 0
        dots = true
      } else {
        guard length >= 0 else { return false }
        length += 1
        if byte != UInt8(ascii: ".") { dots = false }
      }
    }
    // `/` alone; otherwise a last component that is not empty, `.` or `..`.
    if length == 0 { return path.utf8.count == 1 }
    return length > 0 && !(dots && length <= 2)
  }

  /// Appends `components` to the absolute `base`, lexically removing `.`,
  /// `..` and empty components.
  private static func normalize(_ base: String, appending more: ArraySlice<Substring>) -> String {
    var parts = components(base)
    for component in more {
      switch component {
      case ".": continue
      case "..": _ = parts.popLast()
      default: parts.append(component)
      }
    }
    return joined(parts[...])
  }

  /// The non-empty components of `path`, split at each `/` (by its byte).
  private static func components(_ path: String) -> [Substring] {
    path.utf8.split(separator: UInt8(ascii: "/")).map { Substring($0) }
  }

  /// `/` followed by `parts` separated by `/`.
  private static func joined(_ parts: ArraySlice<Substring>) -> String {
    if parts.isEmpty { return "/" }
    var path = ""
    for part in parts {
      path.append("/")
      path.append(contentsOf: part)
    }
    return path
  }
}

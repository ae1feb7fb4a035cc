import Foundation

// What an administrator tool (`groupctl` without `--as`) needs beyond what
// an app may do: name any domain of the root without an entitlement check,
// list the domains that have a preferences file, edit the managed
// (administrator-forced) values of a domain, and replace a domain as a
// whole, throwing the reason when that is refused.

extension SuiteResolver {
  /// A preferences domain as an administrator names it, before it is resolved: a
  /// ``SuiteLocation/Kind`` with the names that say which suite of that kind.
  ///
  /// Two types, because the kind is public and has no names (apps switch on
  /// ``SuiteLocation/kind``), while a domain named on a command line carries them, unchecked,
  /// until ``administratorLocation(for:root:)`` validates them.
  package enum AdministeredDomain: Sendable, Hashable, CustomStringConvertible {
    /// An app's standard suite, in its own container.
    case standard(bundleIdentifier: String)
    /// An application group's suite, in the group container.
    case group(String)
    /// A private suite of an app, in the app's own container.
    case privateSuite(bundleIdentifier: String, suiteName: String)
    /// The global domain, `NSGlobalDomain`.
    case global

    /// The domain as `groupctl` writes it: `BUNDLE-ID`, `GROUP-ID`,
    /// `BUNDLE-ID:SUITE`, or `NSGlobalDomain`.
    package var description: String {
      switch self {
      case .standard(let bundleIdentifier): bundleIdentifier
      case .group(let groupIdentifier): groupIdentifier
      case .privateSuite(let bundleIdentifier, let suiteName): "\(bundleIdentifier):\(suiteName)"
      case .global: Names.globalDomain
      }
    }
  }

  /// Where `domain` lives in `root`, for any domain, without an entitlement
  /// check: open it with ``GroupDefaults/init(administering:options:)``.
  ///
  /// ```swift
  /// let location = try SuiteResolver.administratorLocation(
  ///   for: .group("group.com.example.shared"), root: .default)
  /// let shared = try GroupDefaults(administering: location)
  /// ```
  ///
  /// The names are checked as ``resolve(suiteName:)`` checks them: valid
  /// file names, at most ``maximumDomainByteCount`` bytes; a group
  /// identifier starts with `group.`; a private suite is not named after a
  /// group, its own app, or `NSGlobalDomain`. Creates nothing on disk.
  ///
  /// - Throws: `.invalidName` naming the name and the reason, or
  ///   `.reservedSuiteName` for a private suite with a reserved name.
  package static func administratorLocation(
    for domain: AdministeredDomain, root: ContainerRoot
  ) throws(AppGroupsError) -> SuiteLocation {
    switch domain {
    case .global:
      break
    case .standard(let bundleIdentifier):
      try Names.validateBundleIdentifier(bundleIdentifier)
      try requireFileNameLength(bundleIdentifier, as: "bundle identifier")
    case .group(let groupIdentifier):
      try Names.validateGroupIdentifier(groupIdentifier)
      try requireFileNameLength(groupIdentifier, as: "group identifier")
    case .privateSuite(let bundleIdentifier, let suiteName):
      try Names.validateBundleIdentifier(bundleIdentifier)
      try Names.validate(suiteName, as: "suite name")
      try requireFileNameLength(suiteName, as: "suite name")
      if suiteName.hasPrefix(Names.groupPrefix) {
        throw AppGroupsError(
          .invalidName,
          "invalid suite name \(Names.quoted(suiteName)) for \(bundleIdentifier): a name that "
            + "starts with '\(Names.groupPrefix)' is an application group's suite, which lives "
            + "in the group container, not in an app's own")
      }
      if suiteName == bundleIdentifier || suiteName == Names.globalDomain {
        throw AppGroupsError(
          .reservedSuiteName,
          "suite name \(suiteName) is reserved for \(bundleIdentifier): it names "
            + (suiteName == bundleIdentifier ? "the app's standard suite" : "the global domain")
            + ", not a private suite")
      }
    }
    return SuiteLocation(domain, root: root)
  }

  /// Every domain of `root` that has a preferences file, sorted by name:
  /// standard and private suites in the apps' containers, group suites in
  /// the group containers, and the global domain.
  ///
  /// Files and folders whose names are not valid names, symbolic links,
  /// lock files, temporary files and quarantined files are skipped.
  package static func domainsWithPreferences(root: ContainerRoot) -> [AdministeredDomain] {
    var domains: [AdministeredDomain] = []
    let apps = root.url.appendingPathComponent("Data/Application", isDirectory: true)
    for bundleIdentifier in realFolders(in: apps.path)
    where Names.problem(with: bundleIdentifier) == nil {
      let preferences = root.appContainerURL(for: bundleIdentifier)
        .appendingPathComponent("Library/Preferences", isDirectory: true)
      for name in preferencesFileDomains(in: preferences.path) {
        if name == bundleIdentifier {
          domains.append(.standard(bundleIdentifier: bundleIdentifier))
        } else if !name.hasPrefix(Names.groupPrefix), name != Names.globalDomain {
          domains.append(.privateSuite(bundleIdentifier: bundleIdentifier, suiteName: name))
        }
      }
    }
    let groups = root.url.appendingPathComponent("Shared/AppGroup", isDirectory: true)
    for groupIdentifier in realFolders(in: groups.path)
    where Names.groupIdentifierProblem(with: groupIdentifier) == nil {
      let preferences = root.groupContainerURL(for: groupIdentifier)
        .appendingPathComponent("Library/Preferences", isDirectory: true)
      if preferencesFileDomains(in: preferences.path).contains(groupIdentifier) {
        domains.append(.group(groupIdentifier))
      }
    }
    if isRegularFile(root.globalPreferencesPath) { domains.append(.global) }
    return domains.sorted { $0.description < $1.description }
  }

  // MARK: Managed values

  /// The values an administrator forces in the domain of `location`, read
  /// from `<root>/Managed/<domain>.plist`; empty when there is no file.
  ///
  /// - Throws: `.corruptPreferences` naming the file when it cannot be
  ///   parsed or its root is not a dictionary; `.io` when it cannot be read.
  package static func managedValues(
    for location: SuiteLocation
  ) throws(AppGroupsError) -> [String: PropertyListValue] {
    let path = location.root.managedPreferencesPath(forDomain: location.domain)
    return try readManaged(path)?.values ?? [:]
  }

  /// Changes the values an administrator forces in the domain of
  /// `location` (`<root>/Managed/<domain>.plist`) and returns them.
  ///
  /// ```swift
  /// try SuiteResolver.updateManagedValues(for: location) { $0["theme"] = .string("dark") }
  /// ```
  ///
  /// Holds the exclusive lock of `<domain>.plist.lock` (see ``LockedFile``) while it reads,
  /// lets `body` change the values, and writes them durably and atomically
  /// (a temporary file, `fsync(2)`, `rename(2)`, mode 0600, binary property
  /// list), so two administrators never lose each other's changes and every
  /// process with the suite open sees the new file through inotify. When no
  /// value is left the file is removed. Creates the root and its `Managed`
  /// folder (mode 0700) if they are missing.
  ///
  /// - Throws: `.corruptPreferences` when the file on disk cannot be parsed
  ///   (it is left as it is and nothing is written), `.lockTimeout` when
  ///   another process holds the folder's lock for 5 seconds, `.outsideRoot`
  ///   when `Managed` is a symbolic link, `.io` when a system call fails, or
  ///   what `body` throws (nothing is written then).
  @discardableResult
  package static func updateManagedValues(
    for location: SuiteLocation, _ body: (inout [String: PropertyListValue]) throws -> Void
  ) throws -> [String: PropertyListValue] {
    let root = location.root
    let directory = root.managedPreferencesDirectoryPath
    let path = root.managedPreferencesPath(forDomain: location.domain)
    try root.prepareRoot()
    do {
      try FileSystem.makeDirectory(directory, within: root.path)
    } catch where error.code == .tooManySymbolicLinkLevels {
      throw AppGroupsError(
        .outsideRoot,
        "\(error.path ?? directory) is a symbolic link; the managed preferences folder must be "
          + "a real folder inside the root \(root.path)", cause: error)
    } catch {
      throw AppGroupsError(io: error, "creating the managed preferences folder \(directory)")
    }
    let lock: LockedFile
    do {
      lock = try LockedFile(path: path + ".lock", options: .init(makeFolder: root.path))
      try lock.lock(until: FileSystem.deadline(after: .seconds(5)))
    } catch let error as SystemCallError where error.code == .tooManySymbolicLinkLevels {
      throw AppGroupsError(
        .outsideRoot, "\(path).lock is a symbolic link; nothing was written through it", cause: error)
    } catch let error as SystemCallError {
      throw AppGroupsError(io: error, "opening the lock of \(path)")
    } catch LockedFile.Failure.failed(let error) {
      throw AppGroupsError(io: error, "locking \(path)")
    } catch {
      throw AppGroupsError(
        .lockTimeout,
        "timed out after 5 seconds waiting for the lock \(path).lock; another process holds it")
    }
    defer { lock.unlock() }

    let name = (path as NSString).lastPathComponent
    FileSystem.removeLeftoverTemporaries(for: name, in: directory)
    let current = try readManaged(path)
    var values = current?.values ?? [:]
    try body(&values)
    if let current, current.values == values { return values }
    if current == nil && values.isEmpty { return values }
    do {
      if values.isEmpty {
        try FileSystem.removeDurably(path)
      } else {
        let data = try PropertyListValue.dictionary(values).propertyListData(format: .binary)
        try FileSystem.writeAtomically(
          data, to: path, mode: 0o600, notBefore: current?.identity.modified)
      }
    } catch let error as SystemCallError {
      throw AppGroupsError(io: error, "writing \(path)")
    }
    return values
  }

  // MARK: Helpers

  /// The managed file's values and the identity of the version read, or
  /// `nil` when there is no file.
  private static func readManaged(
    _ path: String
  ) throws(AppGroupsError) -> (values: [String: PropertyListValue], identity: FileIdentity)? {
    let contents: PropertyListFile.Contents
    do {
      contents = try PropertyListFile.read(path)
    } catch {
      throw AppGroupsError(io: error, "reading \(path)")
    }
    switch contents {
    case .missing: return nil
    case .unreadable(let reason, _): throw AppGroupsError(.corruptPreferences, "\(path): \(reason)")
    case .salvaged(_, _, let skipped, _):
      // Rewriting it would drop what could not be read: leave it as it is.
      let left = skipped.map(\.description).joined(separator: ", ")
      throw AppGroupsError(.corruptPreferences, "\(path): some values cannot be read: \(left)")
    case .values(let values, let identity): return (values, identity)
    }
  }

  /// The names of the folders (not links) in `path`.
  private static func realFolders(in path: String) -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    return names.filter { FileStatus(atPath: path + "/" + $0)?.kind == .folder }
  }

  /// The domain names of the `<domain>.plist` regular files in `path`.
  private static func preferencesFileDomains(in path: String) -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    return names.compactMap { name in
      guard name.hasSuffix(".plist"), isRegularFile(path + "/" + name) else { return nil }
      let domain = String(name.dropLast(".plist".count))
      return Names.problem(with: domain) == nil ? domain : nil
    }
  }

  private static func isRegularFile(_ path: String) -> Bool {
    FileStatus(atPath: path)?.kind == .regularFile
  }
}

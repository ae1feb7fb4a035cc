public import Foundation

/// Where a suite lives, once resolved: its kind, its domain name, its
/// container and its property-list file.
public struct SuiteLocation: Sendable, Hashable {
  /// What kind of suite this is.
  public enum Kind: Sendable, Hashable {
    /// The app's standard suite (suite name `nil`), in its own container.
    case standard
    /// An application group's suite, in the group container shared by its members.
    case group
    /// A named suite that only this app sees, in its own container.
    case privateSuite
    /// The global domain, `NSGlobalDomain`, shared by every app in the root.
    case global
  }

  /// What kind of suite this is.
  public let kind: Kind
  /// The domain name: the bundle identifier for ``Kind/standard``, the group
  /// identifier for ``Kind/group``, the suite name for ``Kind/privateSuite``,
  /// and `NSGlobalDomain` for ``Kind/global``.
  public let domain: String
  /// The container the suite lives in: the app's, the group's, or `<root>/Global`.
  public var containerURL: URL { URL(fileURLWithPath: containerPath, isDirectory: true) }
  /// The property-list file: `<preferencesDirectory>/<domain>.plist`, or
  /// `.GlobalPreferences.plist` for the global domain.
  public var fileURL: URL { URL(fileURLWithPath: filePath, isDirectory: false) }
  /// The root the container is in.
  public let root: ContainerRoot
  /// ``containerURL``'s path.
  package let containerPath: String
  /// ``fileURL``'s path.
  package let filePath: String

  /// The folder holding the file: `<container>/Library/Preferences`.
  public var preferencesDirectory: URL {
    URL(fileURLWithPath: containerPath + "/Library/Preferences", isDirectory: true)
  }

  /// Where `domain` lives in `root`: the one place that maps a domain to its container and
  /// file. The names are not checked here; ``SuiteResolver`` checks them first.
  init(_ domain: SuiteResolver.AdministeredDomain, root: ContainerRoot) {
    switch domain {
    case .standard(let bundleIdentifier):
      self.init(
        kind: .standard, domain: bundleIdentifier,
        containerPath: root.appContainerPath(for: bundleIdentifier), root: root)
    case .group(let groupIdentifier):
      self.init(
        kind: .group, domain: groupIdentifier,
        containerPath: root.groupContainerPath(for: groupIdentifier), root: root)
    case .privateSuite(let bundleIdentifier, let suiteName):
      self.init(
        kind: .privateSuite, domain: suiteName,
        containerPath: root.appContainerPath(for: bundleIdentifier), root: root)
    case .global:
      self.init(
        kind: .global, domain: Names.globalDomain,
        containerPath: root.globalContainerPath, fileName: ContainerRoot.globalFileName,
        root: root)
    }
  }

  /// A location whose file is `<domain>.plist`: every suite's but the global domain's.
  private init(kind: Kind, domain: String, containerPath: String, root: ContainerRoot) {
    self.init(
      kind: kind, domain: domain, containerPath: containerPath, fileName: domain + ".plist",
      root: root)
  }

  /// A location; ``SuiteResolver`` makes them.
  private init(
    kind: Kind, domain: String, containerPath: String, fileName: String, root: ContainerRoot
  ) {
    self.kind = kind
    self.domain = domain
    self.containerPath = containerPath
    self.root = root
    self.filePath = containerPath + "/Library/Preferences/" + fileName
  }
}

/// Decides, for an identity and a suite name, where the suite lives or why
/// the identity may not open it.
///
/// ```swift
/// let resolver = SuiteResolver(identity: try .current(), root: .default)
/// let group = "group.com.example.shared"
/// let shared = try resolver.resolve(suiteName: group)
/// let folder = resolver.containerURL(forSecurityApplicationGroupIdentifier: group)
/// ```
///
/// The resolver reads the manifest on every call, so a grant or a revoke
/// made by another process applies to the next call. It creates nothing,
/// except the group container that
/// ``containerURL(forSecurityApplicationGroupIdentifier:)`` hands out.
public struct SuiteResolver: Sendable {
  /// Who is asking.
  public let identity: AppIdentity
  /// The root whose manifest and containers are used.
  public let root: ContainerRoot

  /// The longest domain name a suite may have, in UTF-8 bytes: 200.
  ///
  /// A name may be 255 bytes, but a suite's files are named after its
  /// domain with a suffix (`<domain>.plist`, `<domain>.plist.lock`, and
  /// `.<domain>.plist.tmp-<pid>-<random>` while writing), and every file
  /// name must fit in Linux's 255 bytes.
  public static let maximumDomainByteCount = 200

  /// A resolver for `identity` in `root` (by default ``ContainerRoot/default``).
  public init(identity: AppIdentity, root: ContainerRoot = .default) {
    self.identity = identity
    self.root = root
  }

  /// Resolves a suite name as `GroupDefaults(suiteName:)` does, or throws why not.
  ///
  /// In order:
  /// - When the manifest binds the identity's bundle identifier to an
  ///   executable and the identity runs another one, `.executableMismatch`.
  ///   A binding with a `/` is compared with the executable's real path; a
  ///   bare name with its file name.
  /// - `nil`: the app's standard suite, in its own container.
  /// - A name that is empty, longer than ``maximumDomainByteCount``, or has
  ///   characters that cannot name a file: `.invalidName` with the reason.
  /// - `group.*`: the group's suite in the group container when the manifest
  ///   entitles the identity to the group; else `.notEntitled`.
  /// - The app's own bundle identifier or `NSGlobalDomain`:
  ///   `.reservedSuiteName`. Apple's `UserDefaults(suiteName:)` returns `nil`
  ///   for these too; use the standard suite (`nil`) instead.
  /// - Any other name: a private suite in the app's own container.
  ///
  /// Unlike Apple, which gives an unentitled `group.` suite name a private,
  /// unshared suite, this refuses it, so that a missing entitlement shows at
  /// once instead of as data that silently is not shared.
  ///
  /// Creates nothing on disk.
  ///
  /// - Throws: `.executableMismatch`, `.invalidName`, `.notEntitled`,
  ///   `.reservedSuiteName`, or the manifest's `.invalidManifest` (a
  ///   malformed manifest is never read as granting nothing).
  public func resolve(suiteName: String?) throws(AppGroupsError) -> SuiteLocation {
    let lookup = try checkedEntry()
    let bundleIdentifier = identity.bundleIdentifier
    guard let suiteName else {
      try Self.requireFileNameLength(bundleIdentifier, as: "bundle identifier")
      return SuiteLocation(.standard(bundleIdentifier: bundleIdentifier), root: root)
    }
    try Names.validate(suiteName, as: "suite name")
    try Self.requireFileNameLength(suiteName, as: "suite name")
    if suiteName.hasPrefix(Names.groupPrefix) {
      try requireEntitlement(to: suiteName, lookup)
      return SuiteLocation(.group(suiteName), root: root)
    }
    if suiteName == bundleIdentifier {
      throw AppGroupsError(
        .reservedSuiteName,
        "suite name \(suiteName) is reserved: it is \(bundleIdentifier)'s own bundle identifier, "
          + "whose domain is the standard suite (Apple's UserDefaults(suiteName:) returns nil "
          + "for it too); use the standard suite, suite name nil, instead")
    }
    if suiteName == Names.globalDomain {
      throw AppGroupsError(
        .reservedSuiteName,
        "suite name \(suiteName) is reserved: it is the global domain, which every suite "
          + "already searches (Apple's UserDefaults(suiteName:) returns nil for it too); "
          + "use the standard suite, suite name nil, instead")
    }
    return SuiteLocation(
      .privateSuite(bundleIdentifier: bundleIdentifier, suiteName: suiteName), root: root)
  }

  /// The global domain, `NSGlobalDomain`, of this root:
  /// `<root>/Global/Library/Preferences/.GlobalPreferences.plist`.
  public func globalDomain() -> SuiteLocation { Self.globalLocation(root: root) }

  /// The global domain of `root`, for any identity: ``globalDomain()`` without a resolver.
  package static func globalLocation(root: ContainerRoot) -> SuiteLocation {
    SuiteLocation(.global, root: root)
  }

  /// The group container of `groupIdentifier` when the identity is entitled
  /// to it, creating it (mode 0700, with `Library/Preferences` and
  /// `Library/Caches`) on first use; `nil` when it is not entitled or on any
  /// error, as Apple's `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`.
  ///
  /// Use ``container(forSecurityApplicationGroupIdentifier:)`` to learn why.
  public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? {
    try? container(forSecurityApplicationGroupIdentifier: groupIdentifier)
  }

  /// The group container of `groupIdentifier`, as
  /// ``containerURL(forSecurityApplicationGroupIdentifier:)``, throwing the
  /// reason instead of returning `nil`.
  ///
  /// - Throws: `.executableMismatch`; `.invalidName` when the identifier is
  ///   not a valid `group.` name; `.notEntitled`; the manifest's
  ///   `.invalidManifest`; `.outsideRoot` when the container or a folder on
  ///   the way is a symbolic link; `.io` when it cannot be created.
  public func container(
    forSecurityApplicationGroupIdentifier groupIdentifier: String
  ) throws(AppGroupsError) -> URL {
    try requireEntitlement(to: groupIdentifier, try checkedEntry())
    let container = root.groupContainerURL(for: groupIdentifier)
    try root.prepareContainer(at: container)
    return container
  }

  // MARK: Checks

  /// The manifest, whether its file exists, after checking the identity's
  /// executable binding.
  package func checkedManifest() throws(AppGroupsError) -> (EntitlementManifest, Bool) {
    let loaded = try EntitlementManifest.loadIfPresent(atPath: root.manifestPath)
    let manifest = loaded?.manifest ?? EntitlementManifest()
    if let entry = manifest.entries[identity.bundleIdentifier] { try checkBinding(entry) }
    return (manifest, loaded != nil)
  }

  /// The identity's own entry in the manifest (`nil` when it has none) and whether the file
  /// exists, after checking the identity's executable binding: ``checkedManifest()`` for the
  /// calls that need one entry. The whole manifest is still checked (a malformed entry of
  /// another app refuses the call as it does there).
  func checkedEntry() throws(AppGroupsError) -> EntitlementManifest.EntryLookup {
    let lookup = try EntitlementManifest.entry(
      of: identity.bundleIdentifier, atPath: root.manifestPath)
    if lookup.isListed { try checkBinding(lookup.entry) }
    return lookup
  }

  /// Refuses an identity whose entry binds its bundle identifier to another executable.
  private func checkBinding(_ entry: EntitlementManifest.Entry) throws(AppGroupsError) {
    let bundleIdentifier = identity.bundleIdentifier
    if let bound = entry.executable, let running = identity.executablePath,
      !identity.runs(bound)
    {
      if entry.executableIsBareName {
        throw AppGroupsError(
          .executableMismatch,
          "\(bundleIdentifier) is bound to '\(bound)' in \(root.manifestPath), a bare file name,"
            + " which any program of that name could claim; it binds no program until it names"
            + " one file: 'groupctl grant \(bundleIdentifier) --executable PATH' (this process"
            + " runs \(running))")
      }
      throw AppGroupsError(
        .executableMismatch,
        "\(bundleIdentifier) is bound to executable '\(bound)' in \(root.manifestPath) "
          + "but this process runs \(running)")
    }
  }

  /// Refuses a domain name too long for the suite's file names (see ``maximumDomainByteCount``).
  package static func requireFileNameLength(
    _ domain: String, as what: String
  ) throws(AppGroupsError) {
    let byteCount = domain.utf8.count
    guard byteCount > Self.maximumDomainByteCount else { return }
    throw AppGroupsError(
      .invalidName,
      "invalid \(what) \(Names.quoted(domain)): longer than \(Self.maximumDomainByteCount) "
        + "bytes (\(byteCount)); the suite's files (<name>.plist, its lock and temporary "
        + "files) must fit in 255 bytes")
  }

  private func requireEntitlement(
    to groupIdentifier: String, _ lookup: EntitlementManifest.EntryLookup
  ) throws(AppGroupsError) {
    try Names.validateGroupIdentifier(groupIdentifier)
    let bundleIdentifier = identity.bundleIdentifier
    if lookup.isListed, lookup.entry.applicationGroups.contains(groupIdentifier) { return }
    let present = lookup.present
    let manifestPath = root.manifestPath
    let source = present ? "manifest: \(manifestPath)" : "no manifest at \(manifestPath)"
    throw AppGroupsError(
      .notEntitled, "\(bundleIdentifier) is not entitled to \(groupIdentifier) (\(source))")
  }
}

public import Foundation

/// The entitlement manifest: which app holds which application groups, and
/// which executable may claim each app's bundle identifier.
///
/// The manifest is a property list in the root, `Entitlements.plist`, keyed
/// by bundle identifier; each entry carries the entitlement Apple uses,
/// `com.apple.security.application-groups`, and optionally an `executable`:
///
/// ```xml
/// <dict>
/// 	<key>com.example.app</key>
/// 	<dict>
/// 		<key>com.apple.security.application-groups</key>
/// 		<array>
/// 			<string>group.com.example.shared</string>
/// 		</array>
/// 		<key>executable</key>
/// 		<string>/opt/example/bin/app</string>
/// 	</dict>
/// </dict>
/// ```
///
/// An `executable` names one file, by its absolute path: only a process running that file
/// (its symbolic links resolved) may claim the bundle identifier. A bare file name, which
/// manifests of earlier versions held and which matched any program of that name, is still
/// read and kept, but binds no program: the identity is refused until it is bound to a path
/// (``Entry/executableIsBareName``, and `groupctl doctor` says so). The keychain's entitlements
/// (`keychain-access-groups`, `application-identifier`,
/// `com.apple.developer.team-identifier`) are read and checked too (see
/// `EntitlementManifest+Keychain.swift`). Other keys in an entry (Xcode
/// entitlements carry many) are ignored when reading and kept when
/// ``update(root:_:)`` rewrites the file.
public struct EntitlementManifest: Sendable, Equatable {
  /// The key of an entry's application groups: `com.apple.security.application-groups`.
  public static let applicationGroupsKey = "com.apple.security.application-groups"
  /// The key of an entry's executable binding: `executable`.
  public static let executableKey = "executable"
  /// How long ``update(root:_:)`` waits for another process's update: 5 seconds.
  public static let lockTimeout: Duration = .seconds(5)

  /// One app's entry.
  public struct Entry: Sendable, Equatable {
    /// The application groups the app holds, in the manifest's order.
    public var applicationGroups: [String]
    /// The executable bound to the app's bundle identifier, an absolute path; `nil` when any
    /// executable may claim it. A bare file name read from an older manifest is kept here as
    /// written, and binds no program (see ``executableIsBareName``).
    public var executable: String?

    /// Whether ``executable`` is a bare file name from an older manifest, which any program
    /// of that name once matched: it binds no program now, so the identity is refused until
    /// the entry is bound to one file (`groupctl grant BUNDLE-ID --executable PATH`).
    public var executableIsBareName: Bool { executable.map { !$0.hasPrefix("/") } ?? false }
    /// The keychain access groups the app holds (`keychain-access-groups`), team-prefixed
    /// (`ABCDE12345.com.example.shared`), in the manifest's order.
    public var keychainAccessGroups: [String]
    /// The app's App ID (`application-identifier`): its App ID prefix, a dot and its
    /// bundle identifier, `ABCDE12345.com.example.app`; `nil` when the entry has none.
    public var applicationIdentifier: String?
    /// The app's team (`com.apple.developer.team-identifier`): ten characters of `A-Z` and
    /// `0-9`; `nil` when the entry has none.
    public var teamIdentifier: String?

    /// An entry holding `applicationGroups`, bound to `executable` when given, with the
    /// keychain entitlements given. Names are validated when the manifest is written.
    public init(
      applicationGroups: [String] = [], executable: String? = nil,
      keychainAccessGroups: [String] = [], applicationIdentifier: String? = nil,
      teamIdentifier: String? = nil
    ) {
      self.applicationGroups = applicationGroups
      self.executable = executable
      self.keychainAccessGroups = keychainAccessGroups
      self.applicationIdentifier = applicationIdentifier
      self.teamIdentifier = teamIdentifier
    }
  }

  /// The entries, by bundle identifier.
  public var entries: [String: Entry]

  /// A manifest with the given entries; by default an empty one, which
  /// entitles no app to anything.
  public init(entries: [String: Entry] = [:]) {
    self.entries = entries
  }

  // MARK: Reading

  /// Loads the manifest at `url`.
  ///
  /// A missing file is an empty manifest: no app is entitled to anything.
  /// Anything else that is wrong is an error, never an empty manifest.
  ///
  /// - Throws: `.invalidManifest`, naming the file and the entry, when the
  ///   file cannot be read, is not a property list, its root is not a
  ///   dictionary, an entry is not a dictionary, its groups are not an array
  ///   of strings, a bundle or group identifier is invalid, an executable
  ///   is not a string naming a file or an absolute path, or an XML manifest
  ///   lists a bundle identifier twice or gives a field of one entry twice
  ///   (naming it and both lines).
  public static func load(from url: URL) throws(AppGroupsError) -> EntitlementManifest {
    try loadIfPresent(from: url)?.manifest ?? EntitlementManifest()
  }

  /// Loads the manifest of `root`, `<root>/Entitlements.plist`, as
  /// ``load(from:)`` does.
  ///
  /// - Throws: `.invalidManifest` naming the file and the entry.
  public static func load(root: ContainerRoot) throws(AppGroupsError) -> EntitlementManifest {
    try load(from: root.manifestURL)
  }

  /// The manifest at `url` and its raw property list, or `nil` when there
  /// is no file.
  static func loadIfPresent(
    from url: URL
  ) throws(AppGroupsError) -> (manifest: EntitlementManifest, raw: [String: PropertyListValue])? {
    try loadIfPresent(atPath: url.path)
  }

  /// The manifest at `path` and its raw property list, or `nil` when there
  /// is no file.
  static func loadIfPresent(
    atPath path: String
  ) throws(AppGroupsError) -> (manifest: EntitlementManifest, raw: [String: PropertyListValue])? {
    guard let raw = try readRaw(atPath: path) else { return nil }
    var entries: [String: Entry] = [:]
    entries.reserveCapacity(raw.count)
    for (bundleIdentifier, value) in raw {
      entries[bundleIdentifier] = try entry(bundleIdentifier, value, path: path)
    }
    return (EntitlementManifest(entries: entries), raw)
  }

  /// The entry of `bundleIdentifier` in the manifest at `path` (`nil` when it has none), and
  /// whether there is a file: what resolving a suite needs. Every entry is checked as
  /// ``loadIfPresent(atPath:)`` checks it, in the same order, so a manifest refused there is
  /// refused here with the same error; only the table of every entry is not built (a new
  /// process opening its first group suite would pay for it and its types, and use one entry).
  ///
  /// A manifest in the plain form groupctl writes is walked on its XML, without building the
  /// property list (`EntitlementManifest+Scan.swift`); any other, and any wrong one, is read
  /// whole, which words the error.
  static func entry(
    of bundleIdentifier: String, atPath path: String
  ) throws(AppGroupsError) -> EntryLookup {
    guard let data = try readData(atPath: path) else { return EntryLookup() }
    if let scanned = scannedEntry(of: bundleIdentifier, in: data) { return scanned }
    return try entry(of: bundleIdentifier, decoding: data, path: path)
  }

  /// ``entry(of:atPath:)`` from the manifest's bytes `data`, read whole.
  static func entry(
    of bundleIdentifier: String, decoding data: Data, path: String
  ) throws(AppGroupsError) -> EntryLookup {
    var lookup = EntryLookup()
    let raw = try decode(data, path: path)
    lookup.present = true
    for (name, value) in raw {
      let entry = try entry(name, value, path: path)
      if name == bundleIdentifier {
        lookup.entry = entry
        lookup.isListed = true
      }
    }
    return lookup
  }

  /// One app's entry as ``entry(of:atPath:)`` finds it. A struct of plain fields, not an
  /// `(Entry?, Bool)`: an optional entry and a tuple are two more generic types a new process
  /// instantiates when it opens its first suite.
  struct EntryLookup: Sendable {
    /// The app's entry; an empty one when the manifest has none for it.
    var entry = Entry()
    /// Whether the manifest has an entry for the app.
    var isListed = false
    /// Whether the manifest's file exists.
    var present = false
  }

  /// The manifest's file at `path` as a dictionary, or `nil` when there is no file.
  private static func readRaw(
    atPath path: String
  ) throws(AppGroupsError) -> [String: PropertyListValue]? {
    guard let data = try readData(atPath: path) else { return nil }
    return try decode(data, path: path)
  }

  /// The most bytes a manifest is read for, 16 MiB: thousands of apps' entries fit in one.
  /// A larger file is refused unread: every process reads the manifest.
  static let maximumBytes = 16 << 20

  /// The bytes of the manifest's file at `path`, or `nil` when there is no file; refused when
  /// they hold what a property list of entitlements cannot, or more than ``maximumBytes``.
  private static func readData(atPath path: String) throws(AppGroupsError) -> Data? {
    let data: Data
    do {
      guard let read = try FileSystem.readWhole(path, atMost: maximumBytes) else { return nil }
      data = read.data
    } catch {
      throw AppGroupsError(.invalidManifest, "\(path): cannot be read: \(error)", cause: error)
    }
    if let problem = PropertyListScreen.problem(with: data) {
      throw AppGroupsError(.invalidManifest, "\(path): not a property list of entitlements: \(problem)")
    }
    return data
  }

  /// The manifest `data`, read from `path`, as a dictionary.
  private static func decode(
    _ data: Data, path: String
  ) throws(AppGroupsError) -> [String: PropertyListValue] {
    do {
      // The package's own XML reader first: Foundation's parser (and the bridging of what it
      // returns) was most of a new process's time to open a group suite.
      let value: PropertyListValue
      if let decoded = XMLPropertyList.decode(data) {
        value = decoded
      } else {
        let object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        guard let converted = PropertyListValue(object) else {
          throw AppGroupsError(
            .invalidManifest, "\(path): not a property list of entitlements: holds a \(type(of: object))")
        }
        value = converted
        // Read by Foundation's parser, which keeps one of a key written twice: refused.
        if let problem = repeatedKeyProblem(in: data) {
          throw AppGroupsError(.invalidManifest, "\(path): \(problem)")
        }
      }
      guard case .dictionary(let dictionary) = value else {
        throw AppGroupsError(
          .invalidManifest,
          "\(path): the root must be a dictionary of bundle identifiers, found \(kindName(value))")
      }
      return dictionary
    } catch let error as AppGroupsError {
      throw error
    } catch {
      throw AppGroupsError(
        .invalidManifest, "\(path): not a property list (\(error.localizedDescription))")
    }
  }

  /// The entry `value` of `bundleIdentifier`, checked; the manifest at `path` is refused,
  /// naming the entry, when it is not a valid one.
  private static func entry(
    _ bundleIdentifier: String, _ value: PropertyListValue, path: String
  ) throws(AppGroupsError) -> Entry {
    func invalid(_ reason: String) -> AppGroupsError {
      AppGroupsError(.invalidManifest, "\(path): entry \(Names.quotedIfNeeded(bundleIdentifier)): \(reason)")
    }
    if let reason = Names.problem(with: bundleIdentifier) {
      throw invalid("invalid bundle identifier: \(reason)")
    }
    guard case .dictionary(let fields) = value else {
      throw invalid("must be a dictionary, found \(kindName(value))")
    }
    var groups: [String] = []
    if let list = fields[applicationGroupsKey] {
      guard case .array(let array) = list else {
        throw invalid(
          "\(applicationGroupsKey) must be an array of strings, found \(kindName(list))")
      }
      groups.reserveCapacity(array.count)
      var repeated = false
      for (index, element) in array.enumerated() {
        guard case .string(let group) = element else {
          throw invalid(
            "\(applicationGroupsKey) must be an array of strings, "
              + "found \(kindName(element)) at index \(index)")
        }
        if let reason = Names.groupIdentifierProblem(with: group) {
          throw invalid(
            "\(applicationGroupsKey): invalid group identifier \(Names.quoted(group)): \(reason)")
        }
        // A few groups an entry: a search of those before is cheaper than a set (whose
        // storage type a new process would instantiate for this alone).
        if !repeated, array.count <= 64, groups.contains(group) { repeated = true }
        groups.append(group)
      }
      // Each group once, in the order first written.
      if repeated || array.count > 64 {
        var seen = Set<String>(minimumCapacity: groups.count)
        groups = groups.filter { seen.insert($0).inserted }
      }
    }
    var executable: String?
    if let value = fields[executableKey] {
      guard case .string(let string) = value else {
        throw invalid("\(executableKey) must be a string, found \(kindName(value))")
      }
      if let reason = Names.executableProblem(with: string) {
        throw invalid("\(executableKey) \(Names.quoted(string)): \(reason)")
      }
      executable = string
    }
    var entry = Entry(applicationGroups: groups, executable: executable)
    if let reason = readKeychainEntitlements(fields, bundleIdentifier, into: &entry) {
      throw invalid(reason)
    }
    return entry
  }

  /// The property-list type name of a decoded value, for messages (`real` for a
  /// floating-point number, as the manifest's XML names it).
  static func kindName(_ value: PropertyListValue) -> String {
    switch value {
    case .real, .float: "real"
    default: value.typeName
    }
  }

  // MARK: Queries

  /// The application groups `bundleIdentifier` holds, in the manifest's
  /// order; empty when it has no entry.
  public func groups(for bundleIdentifier: String) -> [String] {
    entries[bundleIdentifier]?.applicationGroups ?? []
  }

  /// Whether `bundleIdentifier` holds `groupIdentifier`.
  public func isEntitled(_ bundleIdentifier: String, to groupIdentifier: String) -> Bool {
    groups(for: bundleIdentifier).contains(groupIdentifier)
  }

  // MARK: Writing

  /// The manifest as an XML property list, with sorted keys and tab
  /// indentation as Apple writes it: the manifest is an administrator's
  /// file that people read and diff.
  ///
  /// - Throws: `.invalidName` when a bundle identifier, group identifier or
  ///   executable is invalid; nothing invalid is ever written.
  public func propertyListData() throws(AppGroupsError) -> Data {
    try propertyListData(keeping: [:])
  }

  /// Validates every name, and throws `.invalidName` naming the entry; and refuses an
  /// application group held by apps of two teams (``applicationGroupTeamProblem``).
  func validate() throws(AppGroupsError) {
    for (bundleIdentifier, entry) in entries {
      try Names.validateBundleIdentifier(bundleIdentifier)
      for group in entry.applicationGroups {
        do {
          try Names.validateGroupIdentifier(group)
        } catch {
          throw AppGroupsError(
            .invalidName, "entry \(Names.quotedIfNeeded(bundleIdentifier)): \(error.message)")
        }
      }
      if let executable = entry.executable {
        do {
          try Names.validateExecutable(executable)
        } catch {
          throw AppGroupsError(
            .invalidName, "entry \(Names.quotedIfNeeded(bundleIdentifier)): \(error.message)")
        }
      }
      if let reason = Self.keychainEntitlementProblem(entry, bundleIdentifier) {
        throw AppGroupsError(
          .invalidName, "entry \(Names.quotedIfNeeded(bundleIdentifier)): \(reason)")
      }
    }
    if let reason = applicationGroupTeamProblem {
      throw AppGroupsError(.invalidName, reason)
    }
  }

  /// The XML property list, keeping the unknown keys of each entry in `raw`.
  func propertyListData(keeping raw: [String: PropertyListValue]) throws(AppGroupsError) -> Data {
    try validate()
    var root: [String: Any] = [:]
    for (bundleIdentifier, entry) in entries {
      var fields = raw[bundleIdentifier]?.foundationValue as? [String: Any] ?? [:]
      var groups: [String] = []
      for group in entry.applicationGroups where !groups.contains(group) { groups.append(group) }
      fields[Self.applicationGroupsKey] = groups
      if let executable = entry.executable {
        fields[Self.executableKey] = executable
      } else {
        fields.removeValue(forKey: Self.executableKey)
      }
      Self.writeKeychainEntitlements(entry, into: &fields)
      root[bundleIdentifier] = fields
    }
    do {
      return try PropertyListSerialization.data(fromPropertyList: root, format: .xml, options: 0)
    } catch {
      throw AppGroupsError(
        .io, "cannot encode the manifest: \(error.localizedDescription)")
    }
  }

  // MARK: Updating

  /// Changes the manifest of `root` atomically with respect to every other
  /// process and thread doing the same, and returns the result.
  ///
  /// Takes an exclusive lock on `<manifest>.lock` (waiting at most
  /// ``lockTimeout``), re-reads the manifest inside the lock, lets `body`
  /// change it, validates it, and writes it durably and atomically (mode
  /// 0600) when it changed. Two concurrent updates from different processes
  /// both land. Creates the root if it is missing. The lock is not
  /// reentrant: do not call `update` (or ``grant(_:groups:executable:root:)``,
  /// ``revoke(_:groups:root:)``) from inside `body`.
  ///
  /// - Throws: `.lockTimeout` naming the lock file; `.invalidManifest` when
  ///   the file on disk is malformed (it is left as it is); `.invalidName`
  ///   when `body` leaves an invalid name; `.io` when the file cannot be
  ///   written; or whatever `body` throws, in which case nothing is written.
  ///   (The caller's own error passes through as it is, which is why this call's
  ///   throws are not typed; ``grant(_:groups:executable:root:)`` and
  ///   ``revoke(_:groups:root:)`` throw `AppGroupsError` only.)
  @discardableResult
  public static func update(
    root: ContainerRoot, _ body: (inout EntitlementManifest) throws -> Void
  ) throws -> EntitlementManifest {
    try update(root: root, timeout: lockTimeout, body)
  }

  /// ``update(root:_:)`` with another bound on the wait for the lock.
  static func update(
    root: ContainerRoot, timeout: Duration, _ body: (inout EntitlementManifest) throws -> Void
  ) throws -> EntitlementManifest {
    var bodyError: (any Error)?
    do {
      return try update(root: root, timeout: timeout) { manifest throws(AppGroupsError) in
        do {
          try body(&manifest)
        } catch let error as AppGroupsError {
          throw error
        } catch {
          bodyError = error
          throw AppGroupsError(.io, "the manifest update was abandoned: \(error)")
        }
      }
    } catch {
      if let bodyError { throw bodyError }
      throw error
    }
  }

  /// ``update(root:_:)`` for a body that throws only `AppGroupsError`.
  static func update(
    root: ContainerRoot, timeout: Duration = lockTimeout,
    _ body: (inout EntitlementManifest) throws(AppGroupsError) -> Void
  ) throws(AppGroupsError) -> EntitlementManifest {
    try root.prepareRoot()
    let path = root.manifestPath
    let lock = try LockedFile.opening(path + ".lock", options: .init(makeFolder: root.path))
    return try lock.withLock(timeout: timeout, doing: "updating the manifest \(path)") { () throws(AppGroupsError) in
      FileSystem.removeLeftoverTemporaries(for: ContainerRoot.manifestFileName, in: root.path)
      let current = try loadIfPresent(atPath: root.manifestPath)
      var manifest = current?.manifest ?? EntitlementManifest()
      try body(&manifest)
      if let current, current.manifest == manifest { return manifest }
      let data = try manifest.propertyListData(keeping: current?.raw ?? [:])
      do throws(SystemCallError) {
        try FileSystem.writeAtomically(data, to: path, mode: 0o600)
      } catch {
        throw AppGroupsError(io: error, "cannot write the manifest \(path)")
      }
      return manifest
    }
  }

  /// Grants `bundleIdentifier` the application groups `groups`, creating its
  /// entry if needed, and binds it to `executable` when one is given.
  ///
  /// Groups it already holds are not repeated; new ones are appended in
  /// order. Runs under ``update(root:_:)``'s lock.
  ///
  /// - Throws: `.invalidName` for an invalid bundle identifier, group
  ///   identifier or executable (before anything is changed), or for a group that an app of
  ///   another team holds (``applicationGroupTeamProblem``: nothing is written), and what
  ///   ``update(root:_:)`` throws.
  @discardableResult
  public static func grant(
    _ bundleIdentifier: String, groups: [String], executable: String? = nil, root: ContainerRoot
  ) throws(AppGroupsError) -> EntitlementManifest {
    try Names.validateBundleIdentifier(bundleIdentifier)
    for group in groups { try Names.validateGroupIdentifier(group) }
    if let executable { try Names.validateExecutableBinding(executable) }
    return try update(root: root, timeout: lockTimeout) { manifest throws(AppGroupsError) in
      var entry = manifest.entries[bundleIdentifier] ?? Entry()
      for group in groups where !entry.applicationGroups.contains(group) {
        entry.applicationGroups.append(group)
      }
      if let executable { entry.executable = executable }
      manifest.entries[bundleIdentifier] = entry
    }
  }

  /// Revokes application groups from `bundleIdentifier`; with no groups,
  /// removes its whole entry (its groups and its executable binding).
  ///
  /// Either every named group is revoked or nothing changes.
  ///
  /// - Throws: `.notFound` naming the app when it has no entry, or the group
  ///   when the app does not hold it; `.invalidName` for an invalid name;
  ///   and what ``update(root:_:)`` throws.
  @discardableResult
  public static func revoke(
    _ bundleIdentifier: String, groups: [String] = [], root: ContainerRoot
  ) throws(AppGroupsError) -> EntitlementManifest {
    try Names.validateBundleIdentifier(bundleIdentifier)
    for group in groups { try Names.validateGroupIdentifier(group) }
    let path = root.manifestPath
    return try update(root: root, timeout: lockTimeout) { manifest throws(AppGroupsError) in
      guard var entry = manifest.entries[bundleIdentifier] else {
        throw AppGroupsError(.notFound, "\(bundleIdentifier) has no entry in \(path)")
      }
      if groups.isEmpty {
        manifest.entries[bundleIdentifier] = nil
        return
      }
      for group in groups where !entry.applicationGroups.contains(group) {
        throw AppGroupsError(
          .notFound, "\(bundleIdentifier) does not hold \(group) in \(path)")
      }
      entry.applicationGroups.removeAll { groups.contains($0) }
      manifest.entries[bundleIdentifier] = entry
    }
  }
}

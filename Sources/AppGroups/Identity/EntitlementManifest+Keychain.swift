/// The keychain's entitlements in the manifest, with Apple's keys: `keychain-access-groups`,
/// `application-identifier` and `com.apple.developer.team-identifier`.
///
/// ```xml
/// <key>com.example.app</key>
/// <dict>
/// 	<key>application-identifier</key>
/// 	<string>ABCDE12345.com.example.app</string>
/// 	<key>com.apple.security.application-groups</key>
/// 	<array><string>group.com.example.shared</string></array>
/// 	<key>keychain-access-groups</key>
/// 	<array><string>ABCDE12345.com.example.shared</string></array>
/// </dict>
/// ```
///
/// An app's keychain access groups are, in this order, as iOS lists them: its
/// `keychain-access-groups`, its App ID (`application-identifier`, else the team identifier, a
/// dot and the bundle identifier), and its application groups. The first is the group an item
/// added without `kSecAttrAccessGroup` goes to.
///
/// The manifest stands for the signed app and its provisioning profile, so it is checked as a
/// profile checks it: a team identifier is ten characters of `A-Z` and `0-9`; the App ID is the
/// App ID prefix, a dot and the bundle identifier; every keychain access group starts with the
/// app's App ID prefix (`$(AppIdentifierPrefix)`), so an app cannot claim another team's group.
extension EntitlementManifest {
  /// The key of an entry's keychain access groups: `keychain-access-groups`.
  public static let keychainAccessGroupsKey = "keychain-access-groups"
  /// The key of an entry's App ID: `application-identifier`.
  public static let applicationIdentifierKey = "application-identifier"
  /// The key of an entry's team: `com.apple.developer.team-identifier`.
  public static let teamIdentifierKey = "com.apple.developer.team-identifier"

  // MARK: Queries

  /// The App ID of `bundleIdentifier`: its entry's `application-identifier`, else its team
  /// identifier, a dot and the bundle identifier (as Xcode writes
  /// `$(AppIdentifierPrefix)$(CFBundleIdentifier)`); `nil` when the entry has neither.
  public func applicationIdentifier(for bundleIdentifier: String) -> String? {
    guard let entry = entries[bundleIdentifier] else { return nil }
    return Self.applicationIdentifier(of: entry, bundleIdentifier)
  }

  /// The keychain access groups of `bundleIdentifier`, in the order iOS lists them: its
  /// `keychain-access-groups`, its App ID (``applicationIdentifier(for:)``), its application
  /// groups; each once. The first is the default group of an item added without one. Empty
  /// when the app has none: every keychain call it makes is refused with
  /// `errSecMissingEntitlement`.
  public func keychainAccessGroups(for bundleIdentifier: String) -> [String] {
    guard let entry = entries[bundleIdentifier] else { return [] }
    var groups = entry.keychainAccessGroups
    if let identifier = Self.applicationIdentifier(of: entry, bundleIdentifier),
      !groups.contains(identifier)
    {
      groups.append(identifier)
    }
    for group in entry.applicationGroups
    where !groups.contains(group) && otherTeam(holding: group, than: entry) == nil {
      groups.append(group)
    }
    return groups
  }

  /// An app of another team than `entry`'s that holds application group `group`, and its team;
  /// `nil` when there is none, or when `entry` has no team (no App ID prefix, no team
  /// identifier) to compare. An app with no team is of no other team.
  ///
  /// On a device an App Group is registered to one team, and only that team's provisioning
  /// profiles hold it: an application group that apps of two teams hold is a manifest that no
  /// device would have. `groupctl grant` refuses to write one (``applicationGroupTeamProblem``);
  /// in one written by hand, the group is no keychain access group of either team's apps, so
  /// that neither reads the other's items, and `groupctl doctor` says why.
  public func otherTeam(
    holding group: String, than entry: Entry
  ) -> (bundleIdentifier: String, team: String)? {
    guard let mine = Self.applicationIdentifierPrefix(of: entry) else { return nil }
    for (bundleIdentifier, other) in entries where other.applicationGroups.contains(group) {
      if let theirs = Self.applicationIdentifierPrefix(of: other), theirs != mine {
        return (bundleIdentifier, theirs)
      }
    }
    return nil
  }

  /// Why the manifest gives an application group to apps of two teams, or `nil` when it
  /// does not (see ``otherTeam(holding:than:)``). Names the group, an app of each team and
  /// the teams.
  public var applicationGroupTeamProblem: String? {
    for (bundleIdentifier, entry) in entries.sorted(by: { $0.key < $1.key }) {
      guard let mine = Self.applicationIdentifierPrefix(of: entry) else { continue }
      for group in entry.applicationGroups {
        if let other = otherTeam(holding: group, than: entry) {
          return "application group \(group) is held by \(bundleIdentifier) (team \(mine)) and by"
            + " \(other.bundleIdentifier) (team \(other.team)): on a device an App Group is"
            + " registered to one team, and only that team's apps can hold it"
        }
      }
    }
    return nil
  }

  /// Every keychain access group some app of the manifest holds.
  public var allKeychainAccessGroups: Set<String> {
    Set(entries.keys.flatMap { keychainAccessGroups(for: $0) })
  }

  // MARK: Updating

  /// Grants `bundleIdentifier` keychain entitlements: records its team identifier and App ID
  /// when given, and appends the keychain access groups it does not hold yet, creating its
  /// entry if needed. Runs under ``update(root:_:)``'s lock.
  ///
  /// - Throws: `.invalidName` for an invalid bundle identifier or team identifier, an App ID
  ///   that is not the prefix and the bundle identifier, or a keychain access group that does
  ///   not start with the app's App ID prefix (or when the app has no prefix to check it
  ///   against); nothing is written then. And what ``update(root:_:)`` throws.
  @discardableResult
  public static func grantKeychainAccess(
    _ bundleIdentifier: String, keychainAccessGroups: [String] = [],
    teamIdentifier: String? = nil, applicationIdentifier: String? = nil, root: ContainerRoot
  ) throws(AppGroupsError) -> EntitlementManifest {
    try Names.validateBundleIdentifier(bundleIdentifier)
    return try update(root: root, timeout: lockTimeout) { manifest throws(AppGroupsError) in
      var entry = manifest.entries[bundleIdentifier] ?? Entry()
      try Self.addKeychainEntitlements(
        to: &entry, bundleIdentifier, keychainAccessGroups: keychainAccessGroups,
        teamIdentifier: teamIdentifier, applicationIdentifier: applicationIdentifier)
      manifest.entries[bundleIdentifier] = entry
    }
  }

  /// Adds keychain entitlements to `entry` as
  /// ``grantKeychainAccess(_:keychainAccessGroups:teamIdentifier:applicationIdentifier:root:)``
  /// does, and checks the result.
  ///
  /// - Throws: `.invalidName` naming the entry and the reason; `entry` is then unchanged.
  public static func addKeychainEntitlements(
    to entry: inout Entry, _ bundleIdentifier: String, keychainAccessGroups: [String] = [],
    teamIdentifier: String? = nil, applicationIdentifier: String? = nil
  ) throws(AppGroupsError) {
    var changed = entry
    if let teamIdentifier { changed.teamIdentifier = teamIdentifier }
    if let applicationIdentifier { changed.applicationIdentifier = applicationIdentifier }
    for group in keychainAccessGroups where !changed.keychainAccessGroups.contains(group) {
      changed.keychainAccessGroups.append(group)
    }
    if let reason = keychainEntitlementProblem(changed, bundleIdentifier) {
      throw AppGroupsError(
        .invalidName, "entry \(Names.quotedIfNeeded(bundleIdentifier)): \(reason)")
    }
    entry = changed
  }

  /// Revokes keychain access groups from `bundleIdentifier`'s `keychain-access-groups`.
  /// Either every named group is revoked or nothing changes.
  ///
  /// - Throws: `.notFound` naming the app when it has no entry, or the group when the app
  ///   does not hold it; and what ``update(root:_:)`` throws.
  @discardableResult
  public static func revokeKeychainAccess(
    _ bundleIdentifier: String, keychainAccessGroups: [String], root: ContainerRoot
  ) throws(AppGroupsError) -> EntitlementManifest {
    try Names.validateBundleIdentifier(bundleIdentifier)
    let path = root.manifestPath
    return try update(root: root, timeout: lockTimeout) { manifest throws(AppGroupsError) in
      guard var entry = manifest.entries[bundleIdentifier] else {
        throw AppGroupsError(.notFound, "\(bundleIdentifier) has no entry in \(path)")
      }
      for group in keychainAccessGroups where !entry.keychainAccessGroups.contains(group) {
        throw AppGroupsError(
          .notFound,
          "\(bundleIdentifier) does not hold the keychain access group \(group) in \(path)")
      }
      entry.keychainAccessGroups.removeAll { keychainAccessGroups.contains($0) }
      manifest.entries[bundleIdentifier] = entry
    }
  }

  // MARK: Checks

  /// Why `team` is not a team identifier (or an App ID prefix), or `nil` when it is one:
  /// ten characters of `A-Z` and `0-9`, as Apple issues them.
  public static func teamIdentifierProblem(_ team: String) -> String? {
    let valid =
      team.utf8.count == 10
      && team.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }
    return valid
      ? nil
      : "\(Names.quoted(team)) is not a team identifier: ten characters of A-Z and 0-9,"
        + " such as ABCDE12345"
  }

  /// Why `group` cannot name an access group (it names a folder of the keychain), or `nil`
  /// when it can: 1 to 255 bytes of `A-Z a-z 0-9 . _ -`, not starting with `.` or `-`, without
  /// `..`.
  public static func accessGroupNameProblem(_ group: String) -> String? {
    Names.problem(with: group)
  }

  /// The App ID prefix keychain access groups of `entry` must start with: its App ID's, else
  /// its team identifier.
  static func applicationIdentifierPrefix(of entry: Entry) -> String? {
    if let identifier = entry.applicationIdentifier, let dot = identifier.firstIndex(of: ".") {
      return String(identifier[..<dot])
    }
    return entry.teamIdentifier
  }

  static func applicationIdentifier(of entry: Entry, _ bundleIdentifier: String) -> String? {
    entry.applicationIdentifier ?? entry.teamIdentifier.map { "\($0).\(bundleIdentifier)" }
  }

  /// Why the keychain entitlements of `entry` are not what a provisioning profile would allow,
  /// or `nil` when they are.
  static func keychainEntitlementProblem(_ entry: Entry, _ bundleIdentifier: String) -> String? {
    if let team = entry.teamIdentifier, let reason = teamIdentifierProblem(team) {
      return "\(teamIdentifierKey): \(reason)"
    }
    if let identifier = entry.applicationIdentifier {
      let parts = identifier.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
      guard parts.count == 2, String(parts[1]) == bundleIdentifier else {
        return "\(applicationIdentifierKey) \(Names.quoted(identifier)) must be the App ID prefix,"
          + " a dot and the bundle identifier: TEAMID.\(bundleIdentifier)"
      }
      if let reason = teamIdentifierProblem(String(parts[0])) {
        return "\(applicationIdentifierKey) \(Names.quoted(identifier)): its prefix \(reason)"
      }
    }
    guard !entry.keychainAccessGroups.isEmpty else { return nil }
    guard let prefix = applicationIdentifierPrefix(of: entry) else {
      return "\(keychainAccessGroupsKey) needs the app's App ID prefix to check the groups"
        + " against: add \(applicationIdentifierKey) (TEAMID.\(bundleIdentifier)) or"
        + " \(teamIdentifierKey)"
    }
    for group in entry.keychainAccessGroups {
      if let reason = Names.problem(with: group) {
        return "\(keychainAccessGroupsKey): invalid access group \(Names.quoted(group)): \(reason)"
      }
      guard group.hasPrefix(prefix + "."), group.utf8.count > prefix.utf8.count + 1 else {
        return "\(keychainAccessGroupsKey): \(Names.quoted(group)) does not start with the app's"
          + " App ID prefix \(prefix). (a provisioning profile allows \(prefix).* only; the"
          + " app's application groups are keychain access groups already)"
      }
    }
    return nil
  }

  /// Reads the keychain entitlements of one entry's `fields` into `entry`; the reason when
  /// they are not of the right type or not valid.
  static func readKeychainEntitlements(
    _ fields: [String: PropertyListValue], _ bundleIdentifier: String, into entry: inout Entry
  ) -> String? {
    for key in [applicationIdentifierKey, teamIdentifierKey] {
      guard let value = fields[key] else { continue }
      guard case .string(let string) = value else {
        return "\(key) must be a string, found \(kindName(value))"
      }
      if key == applicationIdentifierKey {
        entry.applicationIdentifier = string
      } else {
        entry.teamIdentifier = string
      }
    }
    if let list = fields[keychainAccessGroupsKey] {
      guard case .array(let array) = list else {
        return "\(keychainAccessGroupsKey) must be an array of strings, found \(kindName(list))"
      }
      for (index, element) in array.enumerated() {
        guard case .string(let group) = element else {
          return "\(keychainAccessGroupsKey) must be an array of strings, found"
            + " \(kindName(element)) at index \(index)"
        }
        if !entry.keychainAccessGroups.contains(group) { entry.keychainAccessGroups.append(group) }
      }
    }
    return keychainEntitlementProblem(entry, bundleIdentifier)
  }

  /// Writes the keychain entitlements of `entry` into its fields; a key whose value is absent
  /// is removed.
  static func writeKeychainEntitlements(_ entry: Entry, into fields: inout [String: Any]) {
    var groups: [String] = []
    for group in entry.keychainAccessGroups where !groups.contains(group) { groups.append(group) }
    fields[keychainAccessGroupsKey] = groups.isEmpty ? nil : groups
    fields[applicationIdentifierKey] = entry.applicationIdentifier
    fields[teamIdentifierKey] = entry.teamIdentifier
  }
}

import AppGroups
import Foundation

extension Doctor {
  /// The keychain: each app's keychain access groups, default first.
  mutating func checkKeychain(manifest: EntitlementManifest?) {
    guard let manifest else { return }
    for (bundleID, entry) in manifest.entries.sorted(by: { $0.key < $1.key }) {
      let groups = manifest.keychainAccessGroups(for: bundleID)
      guard !groups.isEmpty else {
        add(
          .note,
          "\(bundleID) has no keychain access group: its keychain calls get -34018"
            + " (errSecMissingEntitlement)",
          "groupctl grant \(bundleID) --team TEAMID gives it its App ID's group")
        continue
      }
      let own = !entry.keychainAccessGroups.isEmpty || entry.applicationIdentifier != nil
        || entry.teamIdentifier != nil
      add(
        .ok,
        "\(bundleID) keychain access groups: \(groups[0]) (default)"
          + groups.dropFirst().map { ", \($0)" }.joined()
          + (own ? "" : " (its application groups)"))
    }
  }
}

import AppGroups
import AppGroupsKeychain
import Foundation

extension Doctor {
  /// The keychain: each app's keychain access groups, default first; each group's items on
  /// disk (damaged ones, files moved aside, groups no app holds); the modes of its files.
  mutating func checkKeychain(manifest: EntitlementManifest?) {
    guard let manifest else { return }
    if let problem = manifest.applicationGroupTeamProblem {
      add(
        .problem, problem + "; it is no keychain access group of either team's apps",
        "revoke the group from the apps of the team that does not own it (groupctl revoke)")
    }
    for (bundleID, entry) in manifest.entries.sorted(by: { $0.key < $1.key }) {
      let groups = manifest.keychainAccessGroups(for: bundleID)
      guard let first = groups.first else {
        add(
          .note,
          "\(bundleID) has no keychain access group: its keychain calls get -34018"
            + " (errSecMissingEntitlement)",
          "groupctl grant \(bundleID) --team TEAMID gives it its App ID's group")
        continue
      }
      let own =
        !entry.keychainAccessGroups.isEmpty || entry.applicationIdentifier != nil
        || entry.teamIdentifier != nil
      add(
        .ok,
        "\(bundleID) keychain access groups: \(first) (default)"
          + groups.dropFirst().map { ", \($0)" }.joined()
          + (own ? "" : " (its application groups)"))
    }
    let keychains = root.keychainsURL.path
    guard FileManager.default.fileExists(atPath: keychains) else { return }
    let held = manifest.allKeychainAccessGroups
    let reports: [KeychainSession.GroupReport]
    do {
      reports = try KeychainSession(root: root, identity: nil).inventory(secrets: false)
    } catch {
      add(.problem, "the keychain cannot be read: \(error)", "check \(keychains)")
      return
    }
    var items = 0
    var unopened = 0
    for report in reports {
      let count = report.entries.count
      items += count
      if !held.contains(report.accessGroup), FileManager.default.fileExists(atPath: report.folder) {
        add(
          .note,
          "no app holds keychain access group \(report.accessGroup); its \(count)"
            + " \(count == 1 ? "item stays" : "items stay") on disk in \(report.folder)",
          "remove the folder if its items are no longer needed")
      }
      if let problem = report.problem, report.writtenByAnotherVersion {
        add(
          .problem, problem,
          "use the version of AppGroups that wrote it; this one never moves it aside or writes"
            + " over it")
      } else if let problem = report.problem {
        add(
          .problem, problem,
          "move it aside yourself (a keychain call moves aside a damaged file, never"
            + " one over the size bound)")
      }
      let damaged = report.entries.filter { $0.state == .damaged }.count
      unopened += damaged
      if damaged > 0 {
        add(
          .problem,
          "\(damaged) \(damaged == 1 ? "item" : "items") of keychain access group"
            + " \(report.accessGroup) \(damaged == 1 ? "does" : "do") not open with the class key:"
            + " changed on disk",
          "delete them with groupctl keychain delete-generic-password, or restore the file")
      }
      // A passcode-set item whose key is gone went with the passcode (the next call that meets
      // it removes it); an item of another class whose key is not this device's stays.
      let foreign = report.entries.filter {
        $0.state == .keyGone
          && $0.accessibility != Keychain.Accessibility.whenPasscodeSetThisDeviceOnly.rawValue
      }.count
      if foreign > 0 {
        add(
          .problem,
          "\(foreign) \(foreign == 1 ? "item" : "items") of keychain access group"
            + " \(report.accessGroup) \(foreign == 1 ? "does" : "do") not open with this device's"
            + " keys: sealed under a class key its keybag does not have (copied from another"
            + " device, or the keybag was made again); no call returns or replaces"
            + " \(foreign == 1 ? "it" : "them")",
          "delete them with groupctl keychain delete-generic-password, or restore the keybag"
            + " they were sealed under")
        unopened += foreign
      }
      if report.unreadableEntries > 0 {
        add(
          .note,
          "\(report.unreadableEntries) entries of keychain access group \(report.accessGroup) are"
            + " not items this version reads; they are kept as they are")
      }
    }
    let locked = reports.flatMap(\.entries).filter { $0.state == .locked }.count
    let unread = reports.filter { $0.problem != nil }.count
    // The groups looked at are every group an app holds or a folder is for; say how many of
    // them hold the items (an empty group's store is no item).
    let holding = reports.filter { !$0.entries.isEmpty }.count
    add(
      .ok,
      "keychain: \(items) \(items == 1 ? "item" : "items") in"
        + (holding == reports.count ? "" : " \(holding) of")
        + " \(reports.count) access \(reports.count == 1 ? "group" : "groups")"
        + (unread > 0 ? " (\(unread) not read, said above)" : "")
        + (unopened > 0
          ? " (\(unopened) \(unopened == 1 ? "does" : "do") not open, said above)" : "")
        + (locked > 0 ? " (\(locked) closed by the device's state, not checked)" : ""))
    _ = walk([keychains], keychain: true)
  }
}

package import AppGroups
import Foundation

/// The keychain as a tool uses it (`groupctl keychain`): the `SecItem` calls for an app of a
/// root, or for the root's administrator, and an inventory of what is on disk.
package struct KeychainSession: Sendable {
  let service: KeychainService
  let caller: KeychainCaller

  /// A session of `root`, as `identity`; `nil`: the administrator, who sees every access
  /// group and must name the group of an item it adds.
  package init(root: ContainerRoot, identity: AppIdentity?) {
    service = KeychainService.shared(root: root)
    caller = identity.map { .app($0) } ?? .administrator
  }

  /// `text` in quotes, `\` and `"` escaped with a backslash, control and non-ASCII characters
  /// as `\u{…}`, for a tool's listing.
  package static func quoted(_ text: String) -> String { KeychainService.quoted(text) }

  /// The caller's access groups, in order (every group of the root for the administrator).
  package func accessGroups() throws(KeychainError) -> [String] {
    try service.accessGroups(for: caller)
  }

  /// `SecItemAdd`, returning what the attributes ask for.
  package func add(_ attributes: [String: Any]) throws(KeychainError) -> AnyObject? {
    try service.add(try ItemQuery.parse(attributes, for: .add), caller: caller)
  }

  /// `SecItemCopyMatching`.
  package func copyMatching(_ query: [String: Any]) throws(KeychainError) -> AnyObject? {
    try service.copyMatching(try ItemQuery.parse(query, for: .copyMatching), caller: caller)
  }

  /// `SecItemUpdate`.
  package func update(_ query: [String: Any], _ changes: [String: Any]) throws(KeychainError) {
    let parsed = try ItemQuery.parse(query, for: .update)
    try service.update(
      parsed, try ItemChanges.parse(changes, itemClass: parsed.itemClass), caller: caller)
  }

  /// `SecItemUpdate` of the items `query` matches with `changes`, else (none) `SecItemAdd` of
  /// `query` and `changes` together; an add that loses a race to another process's add
  /// updates what that one added, as `security add-generic-password -U` must for writers of
  /// one item at once.
  package func updateOrAdd(_ query: [String: Any], _ changes: [String: Any])
    throws(KeychainError)
  {
    let name = (query[kSecAttrAccount as String] as? String).map(KeychainService.quoted) ?? "?"
    try KeychainService.updateOrAdd(
      name, update: { () throws(KeychainError) in try update(query, changes) },
      add: { () throws(KeychainError) in _ = try add(query.merging(changes) { $1 }) })
  }

  /// The first item `query` (a `SecItemCopyMatching` query) matches, found without opening
  /// its secret, for a deletion: an item changed on disk, or one the device's state keeps
  /// closed, is found too. Only attributes and a persistent reference can be returned.
  package func firstToDelete(_ query: [String: Any]) throws(KeychainError) -> AnyObject {
    try service.firstMatch(try ItemQuery.parse(query, for: .copyMatching), caller: caller)
  }

  /// `SecItemDelete`.
  package func delete(_ query: [String: Any]) throws(KeychainError) {
    try service.delete(try ItemQuery.parse(query, for: .delete), caller: caller)
  }

  /// One item as the inventory finds it on disk.
  package struct Entry: Sendable {
    /// What opening its secret found.
    package enum State: Sendable, Equatable {
      /// It opened: its attributes are checked, and its secret is here when asked for.
      case readable(secret: Data?)
      /// The device's state keeps its class closed: its attributes are shown as the file
      /// holds them, unchecked.
      case locked
      /// It does not open with its class key: its bytes or attributes were changed on disk.
      case damaged
      /// It was sealed under a class key the keybag no longer has.
      case keyGone
    }

    package let accessGroup: String
    package let itemClass: String
    package let accessibility: String
    package let synchronizable: Bool
    /// By Apple's key, each as `security` prints it after the key: `<blob>="alice"`,
    /// `<timedate>="2026-01-31 10:00:00 +0000"`, `<sint32>=443`.
    package let attributes: [String: String]
    package let state: State
  }

  /// What a group's folder holds besides its items: entries a later version wrote, files
  /// moved aside.
  package struct GroupReport: Sendable {
    package let accessGroup: String
    package let folder: String
    package let entries: [Entry]
    /// Entries of the file that are not items this version reads.
    package let unreadableEntries: Int
    /// Files of the folder that are not the items file and its lock (`keychain.plist.unreadable-*`, …).
    package let otherFiles: [String]
    /// Why the items file could not be read, when it could not.
    package let problem: String?
    /// Whether the items file was refused as another version's (its `Format` another
    /// `AppGroups keychain …`): left as it is for the version that wrote it, not damage that
    /// a keychain call moves aside.
    package var writtenByAnotherVersion = false
  }

  /// Every item of the caller's groups, opened when its class allows, with its secret when
  /// `secrets` is set; never an error for one item.
  package func inventory(secrets: Bool) throws(KeychainError) -> [GroupReport] {
    let groups = try accessGroups()
    var reports: [GroupReport] = []
    for group in groups {
      let file = service.file(group)
      let names = (try? FileManager.default.contentsOfDirectory(atPath: file.folder)) ?? []
      let others = names.filter {
        $0 != AccessGroupFile.fileName && $0 != AccessGroupFile.fileName + ".lock"
      }
      .sorted()
      let contents: GroupContents
      do {
        guard let read = try file.contentsLeavingDamage() else {
          reports.append(
            GroupReport(
              accessGroup: group, folder: file.folder, entries: [], unreadableEntries: 0,
              otherFiles: others,
              problem: "\(file.path) is not a keychain file; the next keychain call in the group"
                + " moves it aside"))
          continue
        }
        contents = read
      } catch {
        reports.append(
          GroupReport(
            accessGroup: group, folder: file.folder, entries: [], unreadableEntries: 0,
            otherFiles: others, problem: error.message,
            writtenByAnotherVersion: error.status == errSecDecode))
        continue
      }
      var entries: [Entry] = []
      for item in contents.items {
        var attributes: [String: String] = [:]
        for (key, value) in item.attributes { attributes[key] = value.printed }
        let state: Entry.State
        switch service.peek(item, group: group) {
        case .secret(let secret): state = .readable(secret: secrets ? Data(secret) : nil)
        case .keyGone: state = .keyGone
        case .damaged: state = .damaged
        case nil: state = .locked
        }
        entries.append(
          Entry(
            accessGroup: group, itemClass: item.itemClass.rawValue,
            accessibility: item.accessibility.rawValue, synchronizable: item.synchronizable,
            attributes: attributes, state: state))
      }
      reports.append(
        GroupReport(
          accessGroup: group, folder: file.folder, entries: entries,
          unreadableEntries: contents.unreadable.count, otherFiles: others, problem: nil))
    }
    return reports
  }
}

extension KeychainService {
  /// Opens `item` when its class key is available now; `nil` when the device's state keeps it
  /// closed (or the keybag cannot be used).
  func peek(_ item: StoredItem, group: String) -> StoredItem.Opened? {
    do throws(ClassKeyProblem) {
      return item.open(group: group, key: try keys.key(item.accessibility.keyClass))
    } catch {
      if case .noPasscode = error { return .keyGone }
      return nil
    }
  }
}

extension AttributeValue {
  /// The value as `security` prints an attribute: its type in angle brackets, then its value.
  var printed: String {
    switch self {
    case .string(let string): "<blob>=" + KeychainService.quoted(string)
    case .data(let data): "<blob>=0x" + data.map { String(format: "%02X", $0) }.joined()
    case .number(let number): "<sint32>=\(number)"
    case .bool(let flag): "<sint32>=\(flag ? 1 : 0)"
    case .date(let date): "<timedate>=\"\(date)\""
    }
  }
}

import AppGroups
import AppGroupsKeybag
import Foundation
internal import Synchronization

/// Who a keychain call is made for.
enum KeychainCaller: Sendable, Hashable {
  /// An app: the access groups its entitlements give it.
  case app(AppIdentity)
  /// The device's administrator (`groupctl keychain` without `--as`): every access group that
  /// has items or that an app holds. Adding needs a group named.
  case administrator
}

/// The keychain of one root, in this process: the access groups' files, the manifest as last
/// read, the class keys. One per root per process (``shared(root:)``).
final class KeychainService: Sendable {
  let root: ContainerRoot
  let keys: ClassKeys
  private let files = Mutex<[String: AccessGroupFile]>([:])

  private struct Entitlements {
    var manifestIdentity: FileIdentity?
    var groups: [AppIdentity: Result<[String], KeychainError>] = [:]
  }
  /// The manifest's path, worked out once.
  private let manifestPath: String
  private let entitlements = Mutex(Entitlements())

  private init(root: ContainerRoot) {
    self.root = root
    keys = ClassKeys(root: root)
    manifestPath = root.manifestURL.path
  }

  private static let services = Mutex<[String: KeychainService]>([:])

  /// The keychain of `root` in this process.
  static func shared(root: ContainerRoot) -> KeychainService {
    services.withLock { services in
      if let service = services[root.path] { return service }
      let service = KeychainService(root: root)
      services[root.path] = service
      return service
    }
  }

  func file(_ group: String) -> AccessGroupFile {
    files.withLock { files in
      if let file = files[group] { return file }
      let file = AccessGroupFile(root: root, group: group)
      files[group] = file
      return file
    }
  }

  // MARK: Access groups

  /// The access groups of `caller`, in the order iOS lists them.
  ///
  /// - Throws: `errSecMissingEntitlement` when the app holds none, when the manifest cannot be
  ///   used, or when it binds the app's bundle identifier to another executable.
  func accessGroups(for caller: KeychainCaller) throws(KeychainError) -> [String] {
    guard case .app(let identity) = caller else { return administratorGroups() }
    let manifestPath = self.manifestPath
    let current = try? FileSystem.identity(ofPath: manifestPath)
    let key = identity
    if let cached = entitlements.withLock({ state -> Result<[String], KeychainError>? in
      guard state.manifestIdentity == current else { return nil }
      return state.groups[key]
    }) {
      return try cached.get()
    }
    let result: Result<[String], KeychainError>
    do {
      let (manifest, present) = try SuiteResolver(identity: identity, root: root).checkedManifest()
      let groups = manifest.keychainAccessGroups(for: identity.bundleIdentifier)
      if groups.isEmpty {
        let source = present ? "manifest: \(manifestPath)" : "no manifest at \(manifestPath)"
        result = .failure(
          KeychainError(
            errSecMissingEntitlement,
            "\(identity.bundleIdentifier) has neither application-identifier nor"
              + " keychain-access-groups entitlements, nor an application group (\(source))"))
      } else {
        result = .success(groups)
      }
    } catch {
      result = .failure(KeychainError(errSecMissingEntitlement, "\(error.message)"))
    }
    entitlements.withLock { state in
      if state.manifestIdentity != current {
        state = Entitlements(manifestIdentity: current)
      }
      state.groups[key] = result
    }
    return try result.get()
  }

  /// Every access group an app holds or that has a folder, sorted.
  private func administratorGroups() -> [String] {
    var groups = Set((try? EntitlementManifest.load(root: root))?.allKeychainAccessGroups ?? [])
    let names = (try? FileManager.default.contentsOfDirectory(atPath: root.keychainsURL.path)) ?? []
    for name in names where !name.hasPrefix(".") { groups.insert(name) }
    return groups.sorted()
  }

  /// The groups a search or a change looks in: the one named, when the caller holds it, else
  /// all of the caller's.
  private func searchedGroups(
    _ named: String?, _ caller: KeychainCaller, _ operation: Operation
  ) throws(KeychainError) -> [String] {
    let groups = try accessGroups(for: caller)
    guard let named else { return groups }
    guard groups.contains(named) || caller == .administrator else {
      throw notEntitled(named, caller, groups, operation)
    }
    return [named]
  }

  private func notEntitled(
    _ group: String, _ caller: KeychainCaller, _ groups: [String], _ operation: Operation
  ) -> KeychainError {
    let who: String
    if case .app(let identity) = caller {
      who = identity.bundleIdentifier
    } else {
      who = "the administrator"
    }
    return KeychainError(
      errSecMissingEntitlement,
      "\(operation.rawValue): \(who) names access group \(Self.quoted(group)) but is only entitled"
        + " to \(groups.joined(separator: ", ")) (manifest: \(root.manifestURL.path))")
  }

  /// `text` in double quotes, unambiguous on one line: `\` and `"` escaped with a backslash,
  /// control and non-ASCII characters as `\u{…}`. A value cannot end its quotes early, print
  /// a line of its own or drive a terminal: the one quoting of the keychain's messages and of
  /// `groupctl keychain`'s listings.
  static func quoted(_ text: String) -> String {
    "\""
      + text.unicodeScalars.map { scalar -> String in
        switch scalar {
        case "\\", "\"": "\\" + String(scalar)
        case _ where scalar.value >= 0x20 && scalar.value < 0x7F: String(scalar)
        default: "\\u{\(String(scalar.value, radix: 16))}"
        }
      }.joined() + "\""
  }

  // MARK: Keys

  /// The key of `accessibility`'s class for an operation that needs it now.
  ///
  /// - Throws: `errSecInteractionNotAllowed` when the device's state makes it unavailable;
  ///   `errSecAuthFailed` for the passcode-set class on a device without a passcode;
  ///   the keybag's failure otherwise.
  private func key(
    _ accessibility: Keychain.Accessibility, _ operation: Operation, group: String
  ) throws(KeychainError) -> ClassKey {
    do throws(ClassKeyProblem) {
      return try keys.key(accessibility.keyClass)
    } catch {
      switch error {
      case .unavailable(let reason):
        throw KeychainError(
          errSecInteractionNotAllowed,
          "\(operation.rawValue): an item of access group \(group) is"
            + " \(accessibility.constantName), and \(reason)")
      case .noPasscode:
        throw KeychainError(
          errSecAuthFailed,
          "\(operation.rawValue): kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly needs a device"
            + " passcode, and \(root.path) has none")
      case .failed(let error):
        throw error
      }
    }
  }

  // MARK: SecItemAdd

  /// Adds an item; returns what the query asks for.
  func add(_ query: ItemQuery, caller: KeychainCaller) throws(KeychainError) -> AnyObject? {
    try Self.refuseOversized(query.secret, .add)
    let groups = try accessGroups(for: caller)
    guard let group = query.accessGroup ?? (caller == .administrator ? nil : groups.first) else {
      throw KeychainError(
        errSecParam,
        "SecItemAdd: the administrator adds to a named access group (kSecAttrAccessGroup)")
    }
    guard groups.contains(group) || caller == .administrator else {
      throw notEntitled(group, caller, groups, .add)
    }
    if caller == .administrator, let reason = EntitlementManifest.accessGroupNameProblem(group) {
      throw KeychainError(errSecParam, "SecItemAdd: access group \(Self.quoted(group)): \(reason)")
    }
    let accessibility = query.accessibility ?? .whenUnlocked
    try Self.refuseSynchronizedThisDeviceOnly(
      synchronizable: query.synchronizable == .yes, accessibility, .add)
    let key = try key(accessibility, .add, group: group)
    let now = Date()
    var item = StoredItem(
      itemClass: query.itemClass, identifier: Data(try randomIdentifier()),
      accessibility: accessibility, synchronizable: query.synchronizable == .yes,
      attributes: query.attributes, keyIdentifier: Data(), sealed: Data())
    item.attributes[SecKey.AttrCreationDate] = .date(now)
    item.attributes[SecKey.AttrModificationDate] = .date(now)
    let secret = Array(query.secret ?? Data())
    try item.seal(secret, group: group, key: key)
    let added = item
    _ = try file(group).transaction { (contents: inout GroupContents) throws(KeychainError) in
      let primaryKey = added.primaryKey
      // A passcode-set item gone with the passcode is no item: the add that meets it removes it.
      contents.items.removeAll {
        $0.itemClass == added.itemClass && $0.primaryKey == primaryKey
          && isGoneWithPasscode($0, group: group)
      }
      if let existing = contents.items.first(where: {
        $0.itemClass == added.itemClass && $0.primaryKey == primaryKey
      }) {
        let why: String
        switch peek(existing, group: group) {
        case .keyGone?: why = Self.sealedElsewhere
        case .damaged?: why = "its bytes were changed on disk"
        case .secret?, nil: why = ""
        }
        var error = KeychainError(
          errSecDuplicateItem,
          "SecItemAdd: access group \(group) already holds a \(added.itemClass.rawValue) item with"
            + " \(Self.describePrimaryKey(added))"
            + (why.isEmpty
              ? ""
              : ", and it does not open with this device's keys (\(why)); it is kept until"
                + " deleted (SecItemDelete, groupctl keychain delete-generic-password)"))
        error.existingDoesNotOpen = !why.isEmpty
        throw error
      }
      contents.items.append(added)
    }
    guard query.returnsSomething else { return nil }
    return result(
      [Found(item: added, group: group, secret: secret)], query: query, limit: 1)
  }

  /// Runs `update`, else (no item) `add`; an add that loses a race to another process's add
  /// (a duplicate) updates what that one added. Three rounds, then `errSecIO` naming `item`:
  /// other processes kept adding and deleting it. An add that meets an item that does not
  /// open on this device (which an update skips) throws its `errSecDuplicateItem` at once.
  static func updateOrAdd(
    _ item: String, update: () throws(KeychainError) -> Void,
    add: () throws(KeychainError) -> Void
  ) throws(KeychainError) {
    for _ in 0..<3 {
      do {
        try update()
        return
      } catch KeychainError.Code.itemNotFound {
      }
      do throws(KeychainError) {
        try add()
        return
      } catch {
        guard error.code == .duplicateItem, !error.existingDoesNotOpen else { throw error }
      }
    }
    throw KeychainError(
      errSecIO, "the item \(item) kept being added and removed by other processes")
  }

  /// Refuses an item that is synchronizable and of a `…ThisDeviceOnly` accessibility with
  /// `errSecParam`, as a device does: such an item cannot go to another device.
  private static func refuseSynchronizedThisDeviceOnly(
    synchronizable: Bool, _ accessibility: Keychain.Accessibility, _ operation: Operation
  ) throws(KeychainError) {
    guard synchronizable, accessibility.isThisDeviceOnly else { return }
    throw KeychainError(
      errSecParam,
      "\(operation.rawValue): the item would be kSecAttrSynchronizable and"
        + " \(accessibility.constantName) (kSecAttrAccessible): a synchronizable item cannot be"
        + " ThisDeviceOnly; nothing was stored")
  }

  /// Refuses data longer than ``Keychain/maximumDataBytes`` with `errSecDataTooLarge`, before
  /// anything is read or written; the message gives its length and the bound, never a byte.
  private static func refuseOversized(_ secret: Data?, _ operation: Operation)
    throws(KeychainError)
  {
    guard let secret, secret.count > Keychain.maximumDataBytes else { return }
    throw KeychainError(
      errSecDataTooLarge,
      "\(operation.rawValue): kSecValueData holds \(secret.count) bytes, more than the"
        + " \(Keychain.maximumDataBytes) bytes (1 MiB) an item's data may hold; nothing was stored")
  }

  private func randomIdentifier() throws(KeychainError) -> [UInt8] {
    do {
      return try Crypto.randomBytes(16)
    } catch {
      throw KeychainError(errSecInternalComponent, "cannot draw an item identifier: \(error)")
    }
  }

  /// The primary key's values of an item, for messages: `acct "x", svce "y"`.
  static func describePrimaryKey(_ item: StoredItem) -> String {
    var parts = item.itemClass.primaryKey.map { key -> String in
      switch item.attributes[key] ?? StoredItem.emptyValue(for: key) {
      case .string(let string): return "\(key) \(quoted(String(string.prefix(80))))"
      case .number(let number): return "\(key) \(number)"
      default: return key
      }
    }
    if item.synchronizable { parts.append("sync 1") }
    return parts.joined(separator: ", ")
  }

  // MARK: SecItemCopyMatching

  /// An item found, with its group and, once opened, its secret.
  struct Found {
    var item: StoredItem
    var group: String
    var secret: [UInt8]
  }

  /// Finds the items `query` matches in the caller's groups, opening each.
  ///
  /// - Throws: `errSecMissingEntitlement` as ``accessGroups(for:)`` and for a group named that
  ///   the caller does not hold; `errSecInteractionNotAllowed` when a matching item's class is
  ///   unavailable, even when only its attributes are asked for (a device decrypts every row
  ///   it matches); `errSecItemNotFound` when none matches.
  func copyMatching(_ query: ItemQuery, caller: KeychainCaller) throws(KeychainError) -> AnyObject?
  {
    let found = try find(query, caller: caller)
    return result(found, query: query, limit: query.limit ?? 1)
  }

  /// The items `query` matches, opened, as ``copyMatching(_:caller:)`` finds them: for the
  /// Swift-shaped layer, which needs no Foundation objects.
  func find(_ query: ItemQuery, caller: KeychainCaller) throws(KeychainError) -> [Found] {
    let groups = try searchedGroups(query.accessGroup, caller, .copyMatching)
    let limit = query.limit ?? 1
    var found: [Found] = []
    var stale: [String: [Data]] = [:]
    search: for group in groups {
      for item in try file(group).contents().items where item.matches(query) {
        switch try open(item, group: group, .copyMatching) {
        case .secret(let secret):
          found.append(Found(item: item, group: group, secret: secret))
          if found.count >= limit { break search }
        case .keyGone where item.accessibility == .whenPasscodeSetThisDeviceOnly:
          stale[group, default: []].append(item.identifier)
        case .keyGone:
          AccessGroupFile.report(
            "keychain: an item of access group \(group) (\(item.itemClass.rawValue), "
              + "\(Self.describePrimaryKey(item))) does not open with this device's keys ("
              + Self.sealedElsewhere + "); it is left as it is and not returned")
        case .damaged:
          AccessGroupFile.report(
            "keychain: an item of access group \(group) (\(item.itemClass.rawValue), "
              + "\(Self.describePrimaryKey(item))) does not open: its bytes were changed on"
              + " disk; it is left as it is and not returned")
        }
      }
    }
    purge(stale)
    guard !found.isEmpty else {
      throw KeychainError(
        errSecItemNotFound,
        "SecItemCopyMatching: no \(query.itemClass.rawValue) item matches in "
          + (groups.count == 1
            ? "access group \(groups[0])" : "access groups \(groups.joined(separator: ", "))"))
    }
    return found
  }

  /// Why an item of a class other than the passcode-set one does not open with a key of this
  /// device's keybag, for messages.
  static let sealedElsewhere =
    "it was sealed under a class key this device's keybag does not have: copied from another"
    + " device, or its keybag was made again"

  /// Opens `item`'s secret.
  ///
  /// - Throws: `errSecInteractionNotAllowed` when its class is unavailable.
  private func open(
    _ item: StoredItem, group: String, _ operation: Operation
  ) throws(KeychainError) -> StoredItem.Opened {
    do throws(ClassKeyProblem) {
      let key = try keys.key(item.accessibility.keyClass)
      return item.open(group: group, key: key)
    } catch {
      switch error {
      case .noPasscode:
        // The passcode-set class is gone with the passcode, and its items with it.
        return .keyGone
      case .unavailable(let reason):
        throw KeychainError(
          errSecInteractionNotAllowed,
          "\(operation.rawValue): a matching item of access group \(group) is"
            + " \(item.accessibility.constantName), and \(reason)")
      case .failed(let error):
        throw error
      }
    }
  }

  /// Whether `item` is of the passcode-set class and sealed under a key the keybag no longer
  /// has (the passcode was cleared, or cleared and set again): gone to every call, and removed
  /// by the next call that meets it.
  func isGoneWithPasscode(_ item: StoredItem, group: String) -> Bool {
    guard item.accessibility == .whenPasscodeSetThisDeviceOnly else { return false }
    if case .keyGone? = peek(item, group: group) { return true }
    return false
  }

  /// Removes the passcode-set items whose class key is gone (the passcode was removed), as a
  /// device deletes them. Other items sealed under a key the keybag no longer has are left.
  private func purge(_ stale: [String: [Data]]) {
    for (group, identifiers) in stale {
      _ = try? file(group).transaction { (contents: inout GroupContents) throws(KeychainError) in
        contents.items.removeAll { item in
          identifiers.contains(item.identifier)
            && item.accessibility == .whenPasscodeSetThisDeviceOnly
        }
      }
    }
  }

  /// The result a query asks for: nothing (`NSNull`), the secret (`NSData`), a persistent
  /// reference (`NSData`) or a dictionary; an array of them when the limit is above one.
  private func result(_ found: [Found], query: ItemQuery, limit: Int) -> AnyObject {
    let objects = found.map { one -> AnyObject in
      if !query.returnsSomething { return NSNull() }
      if query.returnData && !query.returnAttributes && !query.returnRef
        && !query.returnPersistentRef
      {
        return NSData(bytes: one.secret, length: one.secret.count)
      }
      if query.returnPersistentRef && !query.returnData && !query.returnAttributes
        && !query.returnRef
      {
        return NSData(
          data: PersistentReference(itemClass: one.item.itemClass, identifier: one.item.identifier)
            .data)
      }
      var dictionary: [String: Any] = [:]
      if query.returnAttributes || query.returnRef {
        for (key, value) in one.item.attributes { dictionary[key] = value.object }
        dictionary[SecKey.AttrAccessGroup] = NSString(string: one.group)
        dictionary[SecKey.AttrAccessible] = NSString(string: one.item.accessibility.rawValue)
        dictionary[SecKey.AttrSynchronizable] = NSNumber(value: one.item.synchronizable)
      }
      if query.returnRef {
        dictionary[SecKey.Class] = NSString(string: one.item.itemClass.rawValue)
      }
      if query.returnData {
        dictionary[SecKey.ValueData] = NSData(bytes: one.secret, length: one.secret.count)
      }
      if query.returnPersistentRef {
        dictionary[SecKey.ValuePersistentRef] = NSData(
          data: PersistentReference(itemClass: one.item.itemClass, identifier: one.item.identifier)
            .data)
      }
      return NSDictionary(dictionary: dictionary)
    }
    if limit == 1, let first = objects.first { return first }
    return NSArray(array: objects)
  }

  // MARK: SecItemUpdate

  /// Changes the items `query` matches.
  ///
  /// - Throws: as ``copyMatching(_:caller:)``, and `errSecMissingEntitlement` when the
  ///   changes move the items to a group the caller does not hold; `errSecDuplicateItem` when
  ///   a changed item would be another item of its group; `errSecAuthFailed` for the
  ///   passcode-set class without a passcode.
  func update(_ query: ItemQuery, _ changes: ItemChanges, caller: KeychainCaller)
    throws(KeychainError)
  {
    try Self.refuseOversized(changes.secret, .update)
    let groups = try searchedGroups(query.accessGroup, caller, .update)
    if let destination = changes.accessGroup {
      let held = try accessGroups(for: caller)
      guard held.contains(destination) || caller == .administrator else {
        throw notEntitled(destination, caller, held, .update)
      }
      if caller == .administrator,
        let reason = EntitlementManifest.accessGroupNameProblem(destination)
      {
        throw KeychainError(
          errSecParam, "SecItemUpdate: access group \(Self.quoted(destination)): \(reason)")
      }
    }
    var involved = groups
    if let destination = changes.accessGroup, !involved.contains(destination) {
      involved.append(destination)
    }
    let files = involved.map { file($0) }
    let limit = query.limit ?? .max
    let now = Date()
    // Passcode-set items met that are gone with the passcode: removed even when the update
    // fails (it answers -25300 when they are all it matched).
    var stale: [String: [Data]] = [:]
    defer { purge(stale) }
    try AccessGroupFile.transaction(files) { (all: inout [GroupContents]) throws(KeychainError) in
      stale = [:]
      var matched: [(group: Int, index: Int)] = []
      search: for g in groups.indices {
        for (index, item) in all[g].items.enumerated() where item.matches(query) {
          matched.append((g, index))
          if matched.count >= limit { break search }
        }
      }
      var changedAny = false
      var removals: [Int: Set<Int>] = [:]
      for (g, index) in matched {
        let group = groups[g]
        let item = all[g].items[index]
        let secret: [UInt8]
        switch try open(item, group: group, .update) {
        case .secret(let opened): secret = opened
        case .keyGone:
          if item.accessibility == .whenPasscodeSetThisDeviceOnly {
            stale[group, default: []].append(item.identifier)
          }
          continue
        case .damaged: continue
        }
        var changed = item
        for (key, value) in changes.attributes { changed.attributes[key] = value }
        if let accessibility = changes.accessibility { changed.accessibility = accessibility }
        if let synchronizable = changes.synchronizable { changed.synchronizable = synchronizable }
        changed.attributes[SecKey.AttrModificationDate] = .date(now)
        try Self.refuseSynchronizedThisDeviceOnly(
          synchronizable: changed.synchronizable, changed.accessibility, .update)
        let destination = changes.accessGroup ?? group
        let target = involved.firstIndex(of: destination) ?? g
        let primaryKey = changed.primaryKey
        var clash = false
        for (offset, other) in all[target].items.enumerated()
        where other.identifier != item.identifier && other.itemClass == changed.itemClass
          && other.primaryKey == primaryKey && !(removals[target]?.contains(offset) ?? false)
        {
          if isGoneWithPasscode(other, group: destination) {
            // No item: removed, as the call that meets it removes it.
            removals[target, default: []].insert(offset)
            stale[destination, default: []].append(other.identifier)
          } else {
            clash = true
          }
        }
        if clash {
          throw KeychainError(
            errSecDuplicateItem,
            "SecItemUpdate: access group \(destination) already holds a \(changed.itemClass.rawValue)"
              + " item with \(Self.describePrimaryKey(changed))")
        }
        let key = try key(changed.accessibility, .update, group: destination)
        try changed.seal(changes.secret.map(Array.init) ?? secret, group: destination, key: key)
        if target == g {
          all[g].items[index] = changed
        } else {
          removals[g, default: []].insert(index)
          all[target].items.append(changed)
        }
        changedAny = true
      }
      for (g, indices) in removals {
        all[g].items = all[g].items.enumerated().filter { !indices.contains($0.offset) }.map(
          \.element)
      }
      guard changedAny else {
        throw KeychainError(
          errSecItemNotFound,
          "SecItemUpdate: no \(query.itemClass.rawValue) item matches in "
            + (groups.count == 1
              ? "access group \(groups[0])" : "access groups \(groups.joined(separator: ", "))"))
      }
    }
  }

  // MARK: SecItemDelete

  /// The first item `query` matches, as ``copyMatching(_:caller:)`` returns its attributes
  /// and persistent reference, found without opening it: what a deletion of one item needs,
  /// since a deletion opens no secret. An item that does not open (changed on disk) or whose
  /// class the device's state keeps closed is found too, so that it can be deleted.
  ///
  /// - Throws: as ``delete(_:caller:)``.
  func firstMatch(_ query: ItemQuery, caller: KeychainCaller) throws(KeychainError) -> AnyObject {
    let groups = try searchedGroups(query.accessGroup, caller, .delete)
    for group in groups {
      if let item = try file(group).contents().items.first(where: { $0.matches(query) }) {
        return result([Found(item: item, group: group, secret: [])], query: query, limit: 1)
      }
    }
    throw Self.noneToDelete(query, in: groups)
  }

  /// Deletes every item `query` matches; the device's state does not matter (no secret is
  /// opened), as on a device.
  ///
  /// - Throws: `errSecMissingEntitlement` as ``accessGroups(for:)``; `errSecItemNotFound`
  ///   when none matches.
  func delete(_ query: ItemQuery, caller: KeychainCaller) throws(KeychainError) {
    let groups = try searchedGroups(query.accessGroup, caller, .delete)
    var deleted = 0
    for group in groups {
      // Looked at first without the lock: a group with nothing to delete is not locked.
      guard try file(group).contents().items.contains(where: { $0.matches(query) }) else {
        continue
      }
      let (count, _) = try file(group).transaction {
        (contents: inout GroupContents) throws(KeychainError) in
        let before = contents.items.count
        contents.items.removeAll { $0.matches(query) }
        return before - contents.items.count
      }
      deleted += count
    }
    guard deleted > 0 else { throw Self.noneToDelete(query, in: groups) }
  }

  /// `errSecItemNotFound` for a deletion whose `query` matches nothing in `groups`.
  private static func noneToDelete(_ query: ItemQuery, in groups: [String]) -> KeychainError {
    KeychainError(
      errSecItemNotFound,
      "SecItemDelete: no \(query.itemClass.rawValue) item matches in "
        + (groups.count == 1
          ? "access group \(groups[0])" : "access groups \(groups.joined(separator: ", "))"))
  }
}

extension Keychain.Accessibility {
  /// Whether it is one of the `…ThisDeviceOnly` classes, which a synchronizable item cannot be.
  var isThisDeviceOnly: Bool {
    switch self {
    case .whenUnlocked, .afterFirstUnlock, .always: false
    case .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly,
      .whenPasscodeSetThisDeviceOnly:
      true
    }
  }

  /// The constant's name: `kSecAttrAccessibleWhenUnlocked`.
  var constantName: String {
    switch self {
    case .whenUnlocked: "kSecAttrAccessibleWhenUnlocked"
    case .afterFirstUnlock: "kSecAttrAccessibleAfterFirstUnlock"
    case .always: "kSecAttrAccessibleAlways"
    case .whenUnlockedThisDeviceOnly: "kSecAttrAccessibleWhenUnlockedThisDeviceOnly"
    case .afterFirstUnlockThisDeviceOnly: "kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly"
    case .alwaysThisDeviceOnly: "kSecAttrAccessibleAlwaysThisDeviceOnly"
    case .whenPasscodeSetThisDeviceOnly: "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly"
    }
  }
}

import AppGroups
import AppGroupsKeychain
import AppGroupsTestSupport
import ExampleKeychain
import Foundation
import Testing

/// Runs `body` as `bundleID` in `k`'s root, as the SecItem calls find the process's identity.
func asApp<T>(_ k: KeychainRoot, _ bundleID: String, _ body: () throws -> T) throws -> T {
  let identity = try AppIdentity(bundleIdentifier: bundleID)
  return try ScopedEnvironment.$root.withValue(k.root) {
    try ScopedEnvironment.$identity.withValue(identity) { try body() }
  }
}

/// A generic password query of `service`, with more keys.
func genp(_ service: String, _ more: [String: Any] = [:]) -> [String: Any] {
  [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service]
    .merging(more) { $1 }
}

/// `SecItemCopyMatching` with its result.
func copy(_ query: [String: Any]) -> (OSStatus, AnyObject?) {
  var result: AnyObject?
  let status = SecItemCopyMatching(query as CFDictionary, &result)
  return (status, result)
}

@Suite("Keychain: SecItem calls")
struct KeychainSecItemTests {
  @Test func theReferenceKeychainStoreAndAWrapperRunUnchanged() throws {
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      let refreshToken = "rt-\(UUID().uuidString)"
      try KeychainStore.save(refreshToken, service: "com.company.app.auth", account: "refreshToken")
      #expect(
        try KeychainStore.load(service: "com.company.app.auth", account: "refreshToken")
          == refreshToken)
      try KeychainStore.save("second", service: "com.company.app.auth", account: "refreshToken")
      #expect(
        try KeychainStore.load(service: "com.company.app.auth", account: "refreshToken") == "second"
      )

      let item = PasswordItem(service: "wrapper", account: "alice", accessGroup: nil)
      try item.savePassword("one")
      try item.savePassword("two")
      #expect(try item.readPassword() == "two")
      try PasswordItem(service: "wrapper", account: "bob", accessGroup: KeychainRoot.shared)
        .savePassword("b")
      #expect(
        try PasswordItem.passwordItems(forService: "wrapper").map(\.account).sorted() == [
          "alice", "bob",
        ])
      try item.deleteItem()
      #expect(throws: PasswordItem.KeychainError.self) { try item.readPassword() }

      #expect(TokenHelpers.store(Data("tok".utf8), key: "t") == errSecSuccess)
      #expect(TokenHelpers.store(Data("tok2".utf8), key: "t") == errSecSuccess)
      #expect(TokenHelpers.token(key: "t") == Data("tok2".utf8))
      #expect(TokenHelpers.label(key: "t") == "t")
      #expect(
        TokenHelpers.message(errSecItemNotFound)
          == "The specified item could not be found in the keychain.")
    }
    // The widget, of the same team and group, reads what the app saved: the reference's
    // KeychainStore keeps the token in the app's first access group, the shared one.
    try asApp(k, KeychainRoot.widget) { () throws in
      #expect(
        try KeychainStore.load(service: "com.company.app.auth", account: "refreshToken") == "second"
      )
    }
  }

  @Test func addWithoutAGroupGoesToTheFirstAccessGroup() throws {
    let k = try KeychainRoot()
    try EntitlementManifest.grant(
      "com.example.plain", groups: ["group.b", "group.a"], root: k.root)
    try EntitlementManifest.grantKeychainAccess(
      "com.example.team-only", teamIdentifier: "ABCDE12345", root: k.root)
    let expected = [
      (KeychainRoot.app, KeychainRoot.shared),  // keychain-access-groups[0]
      ("com.example.team-only", "ABCDE12345.com.example.team-only"),  // the App ID
      ("com.example.plain", "group.b"),  // the first application group
    ]
    for (app, group) in expected {
      try asApp(k, app) {
        #expect(
          SecItemAdd(genp("s", [kSecAttrAccount as String: "a"]) as CFDictionary, nil)
            == errSecSuccess)
        let (status, result) = copy(genp("s", [kSecReturnAttributes as String: true]))
        #expect(status == errSecSuccess)
        #expect(
          (result as? [String: Any])?[kSecAttrAccessGroup as String] as? String == group, "\(app)")
      }
      #expect(
        FileManager.default.fileExists(
          atPath: k.root.keychainFolderURL(forAccessGroup: group).path + "/keychain.plist"))
    }
  }

  @Test func aGroupNotEntitledIsMissingEntitlementForEveryCall() throws {
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      let other = genp("s", [kSecAttrAccessGroup as String: "ZZZZZ99999.com.example.intruder"])
      #expect(
        SecItemAdd(
          other.merging([kSecValueData as String: Data("x".utf8)]) { $1 } as CFDictionary, nil)
          == errSecMissingEntitlement)
      #expect(
        copy(other.merging([kSecReturnData as String: true]) { $1 }).0 == errSecMissingEntitlement)
      #expect(
        SecItemUpdate(other as CFDictionary, [kSecAttrLabel as String: "l"] as CFDictionary)
          == errSecMissingEntitlement)
      #expect(SecItemDelete(other as CFDictionary) == errSecMissingEntitlement)
      // Moving an item of its own to a group it does not hold.
      #expect(SecItemAdd(genp("s") as CFDictionary, nil) == errSecSuccess)
      #expect(
        SecItemUpdate(
          genp("s") as CFDictionary, [kSecAttrAccessGroup as String: "ZZZZZ99999.x"] as CFDictionary
        )
          == errSecMissingEntitlement)
      // A name that could not even be a folder is refused the same way, and touches nothing.
      #expect(
        copy(genp("s", [kSecAttrAccessGroup as String: "../../etc"])).0 == errSecMissingEntitlement)
    }
    #expect(
      !FileManager.default.fileExists(
        atPath: k.root.keychainFolderURL(forAccessGroup: "ZZZZZ99999.com.example.intruder").path))
  }

  @Test func anAppWithNoGroupAtAllIsMissingEntitlement() throws {
    let k = try KeychainRoot()
    for app in ["com.example.stranger", "com.example.empty"] {
      if app == "com.example.empty" {
        try EntitlementManifest.update(root: k.root) { $0.entries[app] = .init() }
      }
      try asApp(k, app) {
        #expect(SecItemAdd(genp("s") as CFDictionary, nil) == errSecMissingEntitlement)
        #expect(copy(genp("s")).0 == errSecMissingEntitlement)
        #expect(
          SecItemUpdate(genp("s") as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary)
            == errSecMissingEntitlement)
        #expect(SecItemDelete(genp("s") as CFDictionary) == errSecMissingEntitlement)
      }
      let error = try #require(throws: KeychainError.self) {
        try Keychain(service: "s", identity: AppIdentity(bundleIdentifier: app), root: k.root).get(
          "k")
      }
      #expect(error.code == .missingEntitlement)
      #expect(
        error.message.contains(
          "\(app) has neither application-identifier nor keychain-access-groups"))
    }
  }

  @Test func aQueryWithoutAGroupSearchesAllOfTheAppsGroups() throws {
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      for group in [KeychainRoot.shared, "ABCDE12345.com.example.app", KeychainRoot.appGroup] {
        let item = genp(
          "s", [kSecAttrAccount as String: group, kSecAttrAccessGroup as String: group])
        #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
      }
      let (status, result) = copy(
        genp(
          "s", [kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitAll]))
      #expect(status == errSecSuccess)
      let groups = (result as? [[String: Any]])?.compactMap {
        $0[kSecAttrAccessGroup as String] as? String
      }
      #expect(groups == [KeychainRoot.shared, "ABCDE12345.com.example.app", KeychainRoot.appGroup])
      // Naming one group searches that one only.
      let named = copy(
        genp(
          "s",
          [
            kSecAttrAccessGroup as String: KeychainRoot.appGroup,
            kSecReturnAttributes as String: true,
            kSecMatchLimit as String: kSecMatchLimitAll,
          ]))
      #expect((named.1 as? [[String: Any]])?.count == 1)
      // A delete without a group deletes in all of them.
      #expect(SecItemDelete(genp("s") as CFDictionary) == errSecSuccess)
      #expect(copy(genp("s")).0 == errSecItemNotFound)
    }
  }

  @Test func appsOfOneGroupShareAndAnotherTeamSeesNothing() throws {
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      let item = genp(
        "auth",
        [
          kSecAttrAccount as String: "token", kSecValueData as String: Data("secret".utf8),
          kSecAttrAccessGroup as String: KeychainRoot.shared,
        ])
      #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
    }
    try asApp(k, KeychainRoot.widget) {
      let (status, result) = copy(genp("auth", [kSecReturnData as String: true]))
      #expect(status == errSecSuccess)
      #expect(result as? Data == Data("secret".utf8))
      // And it may change it: the app sees the change.
      #expect(
        SecItemUpdate(
          genp("auth") as CFDictionary, [kSecValueData as String: Data("new".utf8)] as CFDictionary)
          == errSecSuccess)
    }
    try asApp(k, KeychainRoot.app) {
      #expect(copy(genp("auth", [kSecReturnData as String: true])).1 as? Data == Data("new".utf8))
    }
    try asApp(k, KeychainRoot.intruder) {
      #expect(copy(genp("auth", [kSecReturnData as String: true])).0 == errSecItemNotFound)
      #expect(
        copy(genp("auth", [kSecAttrAccessGroup as String: KeychainRoot.shared])).0
          == errSecMissingEntitlement)
      #expect(SecItemDelete(genp("auth") as CFDictionary) == errSecItemNotFound)
      #expect(
        SecItemDelete(
          genp("auth", [kSecAttrAccessGroup as String: KeychainRoot.shared]) as CFDictionary)
          == errSecMissingEntitlement)
      // Its own items go to its own App ID's group.
      #expect(
        SecItemAdd(genp("auth", [kSecAttrAccount as String: "token"]) as CFDictionary, nil)
          == errSecSuccess)
    }
    try asApp(k, KeychainRoot.app) {
      let all = copy(
        genp(
          "auth",
          [kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitAll]))
      #expect((all.1 as? [Any])?.count == 1)
    }
  }

  @Test func duplicatesFollowThePrimaryKey() throws {
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      let item = genp(
        "s", [kSecAttrAccount as String: "a", kSecValueData as String: Data("1".utf8)])
      #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
      #expect(SecItemAdd(item as CFDictionary, nil) == errSecDuplicateItem)
      // The label is not part of the primary key; the account and the service are.
      #expect(
        SecItemAdd(item.merging([kSecAttrLabel as String: "other"]) { $1 } as CFDictionary, nil)
          == errSecDuplicateItem)
      #expect(
        SecItemAdd(item.merging([kSecAttrAccount as String: "b"]) { $1 } as CFDictionary, nil)
          == errSecSuccess)
      // A missing account is an empty one, as on a device.
      #expect(SecItemAdd(genp("s2") as CFDictionary, nil) == errSecSuccess)
      #expect(
        SecItemAdd(genp("s2", [kSecAttrAccount as String: ""]) as CFDictionary, nil)
          == errSecDuplicateItem)
      // Another group may hold the same item.
      #expect(
        SecItemAdd(
          item.merging([kSecAttrAccessGroup as String: KeychainRoot.appGroup]) { $1 }
            as CFDictionary, nil) == errSecSuccess)
      // An update that would make one item equal another is refused, and changes nothing.
      #expect(
        SecItemUpdate(
          genp("s", [kSecAttrAccount as String: "b"]) as CFDictionary,
          [kSecAttrAccount as String: "a"] as CFDictionary) == errSecDuplicateItem)
      #expect(copy(genp("s", [kSecAttrAccount as String: "b"])).0 == errSecSuccess)
    }
  }

  @Test func synchronizableIsKeptAndMatchedAsOnADevice() throws {
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      #expect(
        SecItemAdd(
          genp("s", [kSecAttrAccount as String: "a", kSecAttrSynchronizable as String: true])
            as CFDictionary, nil) == errSecSuccess)
      // Part of the identity: a non-synchronizable item of the same account is another item.
      #expect(
        SecItemAdd(genp("s", [kSecAttrAccount as String: "a"]) as CFDictionary, nil)
          == errSecSuccess)
      let plain = copy(
        genp(
          "s", [kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitAll]))
      #expect((plain.1 as? [Any])?.count == 1)
      let any = copy(
        genp(
          "s",
          [
            kSecAttrSynchronizable as String: kSecAttrSynchronizableAny,
            kSecMatchLimit as String: kSecMatchLimitAll,
            kSecReturnAttributes as String: true,
          ]))
      #expect((any.1 as? [Any])?.count == 2)
      #expect(
        SecItemAdd(
          genp("x", [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) as CFDictionary,
          nil) == errSecParam)
    }
  }

  @Test func returnTypesLimitsAndPersistentReferences() throws {
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      for account in ["a", "b", "c"] {
        #expect(
          SecItemAdd(
            genp(
              "s",
              [
                kSecAttrAccount as String: account, kSecValueData as String: Data(account.utf8),
                kSecAttrLabel as String: "L-\(account)",
              ]) as CFDictionary, nil) == errSecSuccess)
      }
      // No return key: found, and nothing returned.
      var nothing: AnyObject?
      #expect(SecItemCopyMatching(genp("s") as CFDictionary, &nothing) == errSecSuccess)
      #expect(nothing is NSNull)
      // A return key without a pointer.
      #expect(
        SecItemCopyMatching(genp("s", [kSecReturnData as String: true]) as CFDictionary, nil)
          == errSecParam)
      // Attributes and data together.
      let both = copy(
        genp(
          "s",
          [
            kSecAttrAccount as String: "b", kSecReturnData as String: true,
            kSecReturnAttributes as String: true,
          ]))
      let attributes = try #require(both.1 as? [String: Any])
      #expect(attributes[kSecValueData as String] as? Data == Data("b".utf8))
      #expect(attributes[kSecAttrLabel as String] as? String == "L-b")
      #expect(attributes[kSecAttrAccessible as String] as? String == "ak")
      #expect(attributes[kSecAttrCreationDate as String] is Date)
      // Attributes alone carry no secret.
      let bare = copy(
        genp("s", [kSecAttrAccount as String: "b", kSecReturnAttributes as String: true]))
      #expect((bare.1 as? [String: Any])?[kSecValueData as String] == nil)
      // A limit of two; case-insensitive matching.
      #expect(
        (copy(genp("s", [kSecMatchLimit as String: 2, kSecReturnData as String: true])).1 as? [Data])?
          .count == 2)
      #expect(
        copy(genp("s", [kSecAttrLabel as String: "l-C", kSecMatchCaseInsensitive as String: true]))
          .0 == errSecSuccess)
      #expect(copy(genp("s", [kSecAttrLabel as String: "l-C"])).0 == errSecItemNotFound)
      // A persistent reference finds its item again.
      let reference = try #require(
        copy(genp("s", [kSecAttrAccount as String: "c", kSecReturnPersistentRef as String: true])).1
          as? Data)
      let found = copy([
        kSecValuePersistentRef as String: reference, kSecReturnData as String: true,
      ])
      #expect(found.1 as? Data == Data("c".utf8))
      // A delete takes every match and refuses a limit of one.
      #expect(
        SecItemDelete(genp("s", [kSecMatchLimit as String: kSecMatchLimitOne]) as CFDictionary)
          == errSecParam)
      // kSecValueData in a search is ignored, as on a device: the delete-then-add pattern works.
      #expect(
        SecItemDelete(genp("s", [kSecValueData as String: Data("whatever".utf8)]) as CFDictionary)
          == errSecSuccess)
      #expect(copy(genp("s")).0 == errSecItemNotFound)
    }
  }

  @Test func stringsMatchByTheirBytesNotByCanonicalEquivalence() throws {
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      let account = kSecAttrAccount as String
      let nfc = "caf\u{e9}"
      let nfd = "cafe\u{301}"
      // One string for Swift's ==, two byte strings: two accounts, as on a device.
      #expect(nfc == nfd && Array(nfc.utf8) != Array(nfd.utf8))
      for (name, secret) in [(nfc, "nfc"), (nfd, "nfd"), ("\u{2126}", "ohm"), ("\u{3a9}", "omega")] {
        #expect(
          SecItemAdd(
            genp("s", [account: name, kSecValueData as String: Data(secret.utf8)]) as CFDictionary,
            nil) == errSecSuccess, "\(secret)")
      }
      #expect(
        copy(genp("s", [account: nfd, kSecReturnData as String: true])).1 as? Data
          == Data("nfd".utf8))
      // An update onto the other's account is not a duplicate; a delete takes only its own.
      #expect(
        SecItemUpdate(
          genp("s", [account: "\u{2126}"]) as CFDictionary,
          [kSecAttrLabel as String: "ohm"] as CFDictionary) == errSecSuccess)
      #expect(SecItemDelete(genp("s", [account: nfd]) as CFDictionary) == errSecSuccess)
      #expect(copy(genp("s", [account: nfd])).0 == errSecItemNotFound)
      #expect(
        copy(genp("s", [account: nfc, kSecReturnData as String: true])).1 as? Data
          == Data("nfc".utf8))
      #expect(
        copy(genp("s", [account: "\u{3a9}", kSecReturnAttributes as String: true])).1
          .flatMap { ($0 as? [String: Any])?[kSecAttrLabel as String] } == nil)
      // kSecMatchCaseInsensitive still matches another case.
      #expect(
        copy(genp("s", [account: "CAF\u{c9}", kSecMatchCaseInsensitive as String: true])).0
          == errSecSuccess)
    }
  }

  @Test func aSynchronizableItemCannotBeThisDeviceOnly() throws {
    let k = try KeychainRoot()
    let session = KeychainSession(
      root: k.root, identity: try AppIdentity(bundleIdentifier: KeychainRoot.app))
    let account = kSecAttrAccount as String
    let sync = kSecAttrSynchronizable as String
    let accessible = kSecAttrAccessible as String
    let data = [kSecValueData as String: Data("x".utf8)]
    // An add: -50, naming both attributes; nothing stored.
    let add = try #require(throws: KeychainError.self) {
      _ = try session.add(
        genp("s", [account: "s1", sync: true, accessible: kSecAttrAccessibleWhenUnlockedThisDeviceOnly])
          .merging(data) { $1 })
    }
    #expect(add.code == .param, "\(add)")
    #expect(
      add.message.contains("kSecAttrSynchronizable")
        && add.message.contains("kSecAttrAccessibleWhenUnlockedThisDeviceOnly"), "\(add)")
    #expect(throws: KeychainError.self) {
      _ = try session.copyMatching(genp("s", [account: "s1", sync: kSecAttrSynchronizableAny]))
    }
    // An update whose merged item would be both: -50, the item unchanged.
    _ = try session.add(genp("s", [account: "s2", sync: true]).merging(data) { $1 })
    _ = try session.add(
      genp("s", [account: "s3", accessible: kSecAttrAccessibleWhenUnlockedThisDeviceOnly])
        .merging(data) { $1 })
    for (query, changes) in [
      (genp("s", [account: "s2", sync: true]),
       [accessible: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly as String]),
      (genp("s", [account: "s3"]), [sync: true]),
    ] as [([String: Any], [String: Any])] {
      let update = try #require(throws: KeychainError.self) { try session.update(query, changes) }
      #expect(update.code == .param, "\(update)")
      #expect(update.message.contains("SecItemUpdate"), "\(update)")
    }
    let s2 = try session.copyMatching(
      genp("s", [account: "s2", sync: true, kSecReturnAttributes as String: true]))
    #expect((s2 as? [String: Any])?[accessible] as? String == "ak")
    let s3 = try session.copyMatching(
      genp("s", [account: "s3", sync: false, kSecReturnAttributes as String: true]))
    #expect((s3 as? [String: Any])?[accessible] as? String == "aku")
  }

  @Test func updateChangesAttributesSecretAndAccessibility() throws {
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      #expect(
        SecItemAdd(
          genp("s", [kSecAttrAccount as String: "a", kSecValueData as String: Data("1".utf8)])
            as CFDictionary, nil) == errSecSuccess)
      let before = try #require(
        copy(genp("s", [kSecReturnAttributes as String: true])).1 as? [String: Any])
      #expect(
        SecItemUpdate(
          genp("s") as CFDictionary,
          [
            kSecAttrLabel as String: "label", kSecValueData as String: Data("2".utf8),
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
          ] as CFDictionary) == errSecSuccess)
      let after = try #require(
        copy(genp("s", [kSecReturnAttributes as String: true, kSecReturnData as String: true])).1
          as? [String: Any])
      #expect(after[kSecAttrLabel as String] as? String == "label")
      #expect(after[kSecValueData as String] as? Data == Data("2".utf8))
      #expect(after[kSecAttrAccessible as String] as? String == "ck")
      #expect(
        after[kSecAttrCreationDate as String] as? Date == before[kSecAttrCreationDate as String]
          as? Date)
      #expect(
        try #require(after[kSecAttrModificationDate as String] as? Date)
          >= (before[kSecAttrModificationDate as String] as? Date ?? .distantFuture))
      // Moving it to another of the app's groups.
      #expect(
        SecItemUpdate(
          genp("s") as CFDictionary,
          [kSecAttrAccessGroup as String: KeychainRoot.appGroup] as CFDictionary) == errSecSuccess)
      let moved = copy(
        genp("s", [kSecReturnAttributes as String: true, kSecReturnData as String: true]))
      #expect(
        (moved.1 as? [String: Any])?[kSecAttrAccessGroup as String] as? String
          == KeychainRoot.appGroup)
      #expect((moved.1 as? [String: Any])?[kSecValueData as String] as? Data == Data("2".utf8))
      #expect(
        copy(genp("s", [kSecAttrAccessGroup as String: KeychainRoot.shared])).0
          == errSecItemNotFound)
      // Read-only attributes, return keys, and nothing to update.
      #expect(
        SecItemUpdate(
          genp("s") as CFDictionary, [kSecAttrCreationDate as String: Date()] as CFDictionary)
          == errSecReadOnlyAttr)
      #expect(
        SecItemUpdate(
          genp("s", [kSecReturnData as String: true]) as CFDictionary,
          [kSecAttrLabel as String: "x"] as CFDictionary) == errSecParam)
      #expect(
        SecItemUpdate(
          genp("nothing") as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary)
          == errSecItemNotFound)
    }
  }

  /// Data longer than an item holds (1 MiB) is refused by SecItemAdd, SecItemUpdate and the
  /// Swift layer with errSecDataTooLarge, before anything is written: no item is added, the
  /// item updated keeps its data, and the message gives the sizes, never a byte of the data.
  @Test func dataLongerThanAnItemHoldsIsRefusedAndNothingIsStored() throws {
    let k = try KeychainRoot()
    let most = Keychain.maximumDataBytes
    let over = Data(repeating: UInt8(ascii: "Z"), count: most + 1)
    let fits = Data(repeating: UInt8(ascii: "y"), count: most)
    try asApp(k, KeychainRoot.app) {
      #expect(
        SecItemAdd(
          genp("big", [kSecAttrAccount as String: "a", kSecValueData as String: over])
            as CFDictionary, nil) == errSecDataTooLarge)
      #expect(copy(genp("big")).0 == errSecItemNotFound)
      #expect(
        SecItemAdd(
          genp("big", [kSecAttrAccount as String: "a", kSecValueData as String: fits])
            as CFDictionary, nil) == errSecSuccess)
      #expect(
        SecItemUpdate(genp("big") as CFDictionary, [kSecValueData as String: over] as CFDictionary)
          == errSecDataTooLarge)
      #expect(copy(genp("big", [kSecReturnData as String: true])).1 as? Data == fits)
    }
    let keychain = Keychain(
      service: "swift", accessGroup: KeychainRoot.shared,
      identity: try AppIdentity(bundleIdentifier: KeychainRoot.app), root: k.root)
    do {
      try keychain.set(over, key: "k")
      Issue.record("data of \(over.count) bytes was stored")
    } catch {
      #expect(error.code == .dataTooLarge, "\(error)")
      #expect(
        error.description.hasPrefix(
          "errSecDataTooLarge (-25302): This item contains information which is too large"),
        "\(error)")
      #expect(
        error.message.contains(
          "kSecValueData holds 1048577 bytes, more than the 1048576 bytes (1 MiB) an item's data"
            + " may hold; nothing was stored"), "\(error)")
      #expect(!error.description.contains("ZZZZ"))
    }
    #expect(try keychain.getData("k") == nil)
  }

  @Test func internetPasswords() throws {
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      let item: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com",
        kSecAttrProtocol as String: kSecAttrProtocolHTTPS, kSecAttrPort as String: 443,
        kSecAttrAccount as String: "me", kSecValueData as String: Data("pw".utf8),
      ]
      #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
      #expect(SecItemAdd(item as CFDictionary, nil) == errSecDuplicateItem)
      #expect(
        SecItemAdd(item.merging([kSecAttrPort as String: 8443]) { $1 } as CFDictionary, nil)
          == errSecSuccess)
      var result: AnyObject?
      let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com",
        kSecAttrPort as String: 8443, kSecReturnData as String: true,
      ]
      #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
      #expect(result as? Data == Data("pw".utf8))
      // A generic password's attribute on an internet password, and the other way round.
      #expect(
        SecItemAdd(item.merging([kSecAttrService as String: "s"]) { $1 } as CFDictionary, nil)
          == errSecNoSuchAttr)
      #expect(
        SecItemAdd(genp("s", [kSecAttrServer as String: "x"]) as CFDictionary, nil)
          == errSecNoSuchAttr)
    }
  }

  @Test func messagesAndClassesAreApples() throws {
    #expect(
      SecCopyErrorMessageString(errSecMissingEntitlement, nil) as String?
        == "A required entitlement isn't present.")
    #expect(
      SecCopyErrorMessageString(errSecInteractionNotAllowed, nil) as String?
        == "User interaction is not allowed.")
    #expect(
      SecCopyErrorMessageString(errSecDuplicateItem, nil) as String?
        == "The specified item already exists in the keychain.")
    #expect(
      SecCopyErrorMessageString(errSecParam, nil) as String?
        == "One or more parameters passed to a function were not valid.")
    #expect(SecCopyErrorMessageString(-1, nil) as String? == "OSStatus -1")
    #expect(
      kSecClass as String == "class"
        && kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly as String == "akpu")
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      #expect(
        SecItemAdd([kSecClass as String: kSecClassCertificate] as CFDictionary, nil)
          == errSecUnimplemented)
      #expect(SecItemAdd([kSecClass as String: "nope"] as CFDictionary, nil) == errSecNoSuchClass)
      #expect(SecItemAdd([kSecAttrAccount as String: "a"] as CFDictionary, nil) == errSecParam)
    }
  }

  @Test func theSwiftLayer() throws {
    let k = try KeychainRoot()
    let app = try AppIdentity(bundleIdentifier: KeychainRoot.app)
    let widget = try AppIdentity(bundleIdentifier: KeychainRoot.widget)
    let keychain = Keychain(
      service: "com.example.auth", accessGroup: KeychainRoot.shared, identity: app, root: k.root
    )
    .accessibility(.afterFirstUnlock)
    #expect(try keychain.get("refreshToken") == nil)
    try keychain.set("t1", key: "refreshToken")
    try keychain.set("t2", key: "refreshToken")
    keychain["theme"] = "dark"
    #expect(keychain["theme"] == "dark")
    let seen = Keychain(service: "com.example.auth", identity: widget, root: k.root)
    #expect(try seen.get("refreshToken") == "t2")
    #expect(try seen.allKeys() == ["refreshToken", "theme"])
    #expect(try seen.contains("theme"))
    keychain["theme"] = nil
    #expect(try !seen.contains("theme"))
    try keychain.set(Data([0xff, 0xfe]), key: "binary")
    #expect(try keychain.getData("binary") == Data([0xff, 0xfe]))
    #expect(throws: KeychainError.self) { try keychain.get("binary") }
    try keychain.removeAll()
    #expect(try seen.allKeys() == [])
    let intruder = Keychain(
      service: "com.example.auth", accessGroup: KeychainRoot.shared,
      identity: try AppIdentity(bundleIdentifier: KeychainRoot.intruder), root: k.root)
    do {
      _ = try intruder.get("refreshToken")
      Issue.record("the intruder read the shared group")
    } catch KeychainError.Code.missingEntitlement {
    } catch {
      Issue.record("unexpected \(error)")
    }
  }
}

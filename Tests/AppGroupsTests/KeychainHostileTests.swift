import AppGroups
import AppGroupsKeychain
import AppGroupsTestSupport
import Foundation
import Testing

@Suite("Keychain: hostile input and damage")
struct KeychainHostileTests {
  /// Values of every kind a query could be handed.
  nonisolated(unsafe) static let values: [(String, Any)] = [
    ("string", "text"), ("empty string", ""), ("int", 7), ("negative", -1), ("bool", true),
    ("NSNumber bool", kCFBooleanFalse!), ("double", 1.5), ("data", Data([0, 1, 2])),
    ("date", Date(timeIntervalSinceReferenceDate: 0)), ("array", ["a", "b"]),
    ("dictionary", ["k": 1]), ("null", NSNull()), ("nil", String?.none as Any),
    ("NUL string", "a\u{0}b"), ("huge string", String(repeating: "x", count: 100_000)),
    ("emoji", "🔑"), ("NSString", NSString(string: "ns")), ("NSData", NSData(data: Data([9]))),
  ]

  /// Each key a generic-password dictionary may hold, and the kinds of value it takes.
  static let accepted: [(String, Set<String>)] = [
    (
      kSecAttrAccount as String,
      ["string", "empty string", "NUL string", "huge string", "emoji", "NSString"]
    ),
    (
      kSecAttrLabel as String,
      ["string", "empty string", "NUL string", "huge string", "emoji", "NSString"]
    ),
    (kSecAttrGeneric as String, ["data", "NSData"]),
    (kSecAttrCreator as String, ["int", "negative"]),
    (kSecAttrIsInvisible as String, ["bool", "NSNumber bool"]),
    (kSecValueData as String, ["data", "NSData"]),
    (kSecReturnData as String, ["bool", "NSNumber bool"]),
    (kSecMatchCaseInsensitive as String, ["bool", "NSNumber bool"]),
    (kSecAttrAccessible as String, []),
    (kSecAttrSynchronizable as String, ["bool", "NSNumber bool"]),
    (kSecMatchLimit as String, ["int"]),
  ]

  /// A value of the wrong type for a key gets errSecParam from every call, never a crash.
  @Test func wrongTypesAreParamErrors() throws {
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      #expect(
        SecItemAdd(genp("base", [kSecAttrAccount as String: "a"]) as CFDictionary, nil)
          == errSecSuccess)
      for (key, accepted) in Self.accepted {
        for (kind, value) in Self.values where !accepted.contains(kind) {
          let dictionary = genp("base", [key: value])
          var result: AnyObject?
          let statuses = [
            key == kSecMatchLimit as String || key == kSecMatchCaseInsensitive as String
              ? errSecParam : SecItemAdd(dictionary as CFDictionary, nil),
            SecItemCopyMatching(dictionary as CFDictionary, &result),
            SecItemUpdate(
              dictionary as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary),
            SecItemDelete(dictionary as CFDictionary),
          ]
          // A return key with the wrong type is refused by the calls that read it; SecItemUpdate
          // refuses a return key of any value.
          for (index, status) in statuses.enumerated() {
            #expect(status == errSecParam, "\(key) = \(kind), call \(index): \(status)")
          }
          #expect(result == nil, "\(key) = \(kind)")
          if ItemKeys.attributes.contains(key) {
            let update = SecItemUpdate(genp("base") as CFDictionary, [key: value] as CFDictionary)
            #expect(update == errSecParam, "update to \(key) = \(kind): \(update)")
          }
        }
      }
      // Unknown keys, a key that is not a string, a class of the wrong type.
      #expect(SecItemAdd(genp("base", ["xyzw": "1"]) as CFDictionary, nil) == errSecParam)
      #expect(SecItemAdd(genp("base", ["r_Bogus": true]) as CFDictionary, nil) == errSecParam)
      #expect(
        SecItemAdd([1: "x", kSecClass as String: kSecClassGenericPassword] as NSDictionary, nil)
          == errSecParam)
      #expect(SecItemAdd([kSecClass as String: 5] as CFDictionary, nil) == errSecParam)
      #expect(
        SecItemUpdate(
          genp("base") as CFDictionary,
          [kSecClass as String: kSecClassInternetPassword] as CFDictionary) == errSecParam)
      #expect(
        SecItemUpdate(
          genp("base") as CFDictionary,
          [kSecMatchLimit as String: kSecMatchLimitAll] as CFDictionary) == errSecParam)
      #expect(
        SecItemAdd(genp("base", [kSecAttrAccessible as String: "ak "]) as CFDictionary, nil)
          == errSecParam)
      // The one item is intact.
      #expect(copy(genp("base", [kSecAttrAccount as String: "a"])).0 == errSecSuccess)
    }
  }

  /// Random dictionaries: every call returns one of the keychain's statuses, and never
  /// crashes. APPGROUPS_FUZZ_SEED replays a run; APPGROUPS_FUZZ_COUNT sets its length.
  @Test func randomDictionariesNeverCrash() throws {
    let environment = ProcessInfo.processInfo.environment
    let seed =
      environment["APPGROUPS_FUZZ_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
    let count = environment["APPGROUPS_FUZZ_COUNT"].flatMap { Int($0) } ?? 1500
    var random = SeededGenerator(seed: seed)
    let keys =
      Self.accepted.map(\.0) + [
        kSecClass as String, kSecAttrService as String, kSecAttrAccessGroup as String,
        kSecAttrServer as String,
        kSecAttrPort as String, kSecAttrCreationDate as String, kSecReturnAttributes as String,
        kSecReturnPersistentRef as String, kSecValuePersistentRef as String,
        kSecAttrAccessControl as String,
        kSecValueRef as String, "", "class ", "🔑", "m_", "r_", "v_",
      ]
    let classes: [Any] = [
      kSecClassGenericPassword, kSecClassInternetPassword, kSecClassKey, "junk", 3,
    ]
    let allowed: Set<OSStatus> = [
      errSecSuccess, errSecParam, errSecItemNotFound, errSecDuplicateItem, errSecMissingEntitlement,
      errSecNoSuchClass, errSecNoSuchAttr, errSecReadOnlyAttr, errSecUnimplemented,
    ]
    let k = try KeychainRoot()
    try asApp(k, KeychainRoot.app) {
      for round in 0..<count {
        var dictionary: [String: Any] = [:]
        if Int.random(in: 0..<10, using: &random) > 0 {
          dictionary[kSecClass as String] =
            classes[Int.random(in: 0..<classes.count, using: &random)]
        }
        for _ in 0..<Int.random(in: 0...5, using: &random) {
          let key = keys[Int.random(in: 0..<keys.count, using: &random)]
          var value = Self.values[Int.random(in: 0..<Self.values.count, using: &random)].1
          if key == kSecAttrAccessGroup as String, Bool.random(using: &random) {
            value = KeychainRoot.shared
          }
          dictionary[key] = value
        }
        var result: AnyObject?
        let added =
          Bool.random(using: &random)
          ? SecItemAdd(dictionary as CFDictionary, &result)
          : SecItemAdd(dictionary as CFDictionary, nil)
        let statuses = [
          added,
          SecItemCopyMatching(dictionary as CFDictionary, &result),
          SecItemUpdate(dictionary as CFDictionary, dictionary as CFDictionary),
          SecItemDelete(dictionary as CFDictionary),
        ]
        for status in statuses where !allowed.contains(status) {
          Issue.record(
            "seed \(seed), round \(round): status \(status) for \(dictionary.keys.sorted())")
        }
      }
    }
  }

  /// Every file of the root, after every kind of write, holds no secret in plaintext.
  @Test func noSecretInPlaintextInAnyFile() throws {
    let k = try KeychainRoot()
    let marker = "PLAINTEXT-MARKER-\(UUID().uuidString)"
    try asApp(k, KeychainRoot.app) {
      for i in 0..<20 {
        let item = genp(
          "s",
          [
            kSecAttrAccount as String: "a\(i)",
            kSecValueData as String: Data("\(marker)-\(i)".utf8),
          ])
        #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
      }
      #expect(
        SecItemUpdate(
          genp("s", [kSecAttrAccount as String: "a3"]) as CFDictionary,
          [kSecValueData as String: Data("\(marker)-updated".utf8)] as CFDictionary)
          == errSecSuccess)
      #expect(
        SecItemUpdate(
          genp("s", [kSecAttrAccount as String: "a4"]) as CFDictionary,
          [kSecAttrAccessGroup as String: KeychainRoot.appGroup] as CFDictionary) == errSecSuccess)
      #expect(
        SecItemDelete(genp("s", [kSecAttrAccount as String: "a5"]) as CFDictionary) == errSecSuccess
      )
    }
    try Keychain(
      service: "swift", identity: AppIdentity(bundleIdentifier: KeychainRoot.widget), root: k.root
    )
    .set(marker, key: "k")
    let files = k.allFiles()
    #expect(files.contains { $0.hasSuffix("/keychain.plist") })
    let needles = [
      Data(marker.utf8), marker.data(using: .utf16LittleEndian)!,
      marker.data(using: .utf16BigEndian)!,
    ]
    for file in files {
      let data = try Data(contentsOf: URL(fileURLWithPath: file))
      for needle in needles { #expect(data.range(of: needle) == nil, "\(file) holds the secret") }
    }
  }

  /// Bytes changed on disk: a sealed secret moved to another item, an attribute rewritten, a
  /// flipped bit. None of them reads as a secret; nothing is deleted.
  @Test func damageOnDiskNeverReadsAsASecret() throws {
    let k = try KeychainRoot()
    let file = k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared).appendingPathComponent(
      "keychain.plist")
    try asApp(k, KeychainRoot.app) {
      for account in ["a", "b", "c"] {
        #expect(
          SecItemAdd(
            genp(
              "s",
              [
                kSecAttrAccount as String: account,
                kSecValueData as String: Data("secret-\(account)".utf8),
              ]) as CFDictionary, nil) == errSecSuccess)
      }
    }
    var plist = try #require(
      try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
        as? [String: Any])
    var items = try #require(plist["Items"] as? [[String: Any]])
    #expect(items.count == 3)
    // a gets b's sealed secret; b's label is rewritten; c's last byte is flipped.
    items[0]["data"] = items[1]["data"]
    var attributes = try #require(items[1]["attributes"] as? [String: Any])
    attributes["labl"] = "forged"
    items[1]["attributes"] = attributes
    var sealed = try #require(items[2]["data"] as? Data)
    sealed[sealed.count - 1] ^= 1
    items[2]["data"] = sealed
    plist["Items"] = items
    try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0).write(
      to: file)
    try asApp(k, KeychainRoot.app) {
      for account in ["a", "b", "c"] {
        #expect(
          copy(genp("s", [kSecAttrAccount as String: account, kSecReturnData as String: true])).0
            == errSecItemNotFound)
      }
      // A new item beside them is fine, and writing the group keeps the damaged ones as they are.
      #expect(
        SecItemAdd(genp("s", [kSecAttrAccount as String: "d"]) as CFDictionary, nil)
          == errSecSuccess)
    }
    let after = try #require(
      try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
        as? [String: Any])
    #expect((after["Items"] as? [Any])?.count == 4)
  }

  /// A group's folder replaced by a symbolic link out of the root, under a process that has
  /// written there already: a write is refused, and nothing is created outside the root.
  @Test func aFolderReplacedByALinkOutOfTheRootIsNeverWrittenThrough() throws {
    let k = try KeychainRoot()
    let outside = try Sandbox()
    try asApp(k, KeychainRoot.app) {
      #expect(SecItemAdd(genp("s", [kSecAttrAccount as String: "1"]) as CFDictionary, nil) == errSecSuccess)
    }
    let folder = k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared)
    try FileManager.default.removeItem(at: folder)
    try FileManager.default.createSymbolicLink(at: folder, withDestinationURL: outside.url)
    try asApp(k, KeychainRoot.app) {
      let status = SecItemAdd(genp("s", [kSecAttrAccount as String: "2"]) as CFDictionary, nil)
      #expect(status == errSecIO)
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
  }

  /// Two damaged files in a row (within one second) are both kept, each moved aside under a
  /// name of its own: the second was renamed over the first, which was lost.
  @Test func twoDamagedFilesInOneSecondAreBothKept() throws {
    let k = try KeychainRoot()
    let folder = k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let file = folder.appendingPathComponent("keychain.plist")
    let damaged = (0..<3).map { Data("damaged copy \($0)".utf8) }
    for bytes in damaged {
      try bytes.write(to: file)
      try asApp(k, KeychainRoot.app) { #expect(copy(genp("s")).0 == errSecItemNotFound) }
    }
    let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
    let kept = try names.filter { $0.hasPrefix("keychain.plist.unreadable-") }.map {
      try Data(contentsOf: folder.appendingPathComponent($0))
    }
    #expect(Set(kept) == Set(damaged), "\(names)")
  }

  /// A file that is not a keychain file is moved aside, never deleted, and the group starts
  /// over; an entry this version cannot read is kept through writes.
  @Test func anUnreadableFileIsMovedAside() throws {
    let k = try KeychainRoot()
    let folder = k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let file = folder.appendingPathComponent("keychain.plist")
    try Data("not a property list".utf8).write(to: file)
    try asApp(k, KeychainRoot.app) {
      #expect(copy(genp("s")).0 == errSecItemNotFound)
      #expect(SecItemAdd(genp("s") as CFDictionary, nil) == errSecSuccess)
    }
    let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
    let aside = try #require(names.first { $0.hasPrefix("keychain.plist.unreadable-") })
    #expect(
      try Data(contentsOf: folder.appendingPathComponent(aside)) == Data("not a property list".utf8)
    )

    var plist = try #require(
      try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
        as? [String: Any])
    var items = try #require(plist["Items"] as? [Any])
    items.append(["class": "future", "what": "a later version's entry"])
    plist["Items"] = items
    try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0).write(
      to: file)
    try asApp(k, KeychainRoot.app) {
      #expect(
        SecItemAdd(genp("s", [kSecAttrAccount as String: "2"]) as CFDictionary, nil)
          == errSecSuccess)
    }
    let after = try #require(
      try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
        as? [String: Any])
    #expect(
      (after["Items"] as? [[String: Any]])?.contains { $0["class"] as? String == "future" } == true)
  }

  /// A file another version of the keychain wrote (its `Format` "AppGroups keychain 2") is not
  /// damage: every call on the group is refused with errSecDecode, the Swift-shaped one naming
  /// the file and its format, and the file is left as it is, byte for byte, nothing moved aside.
  /// It was taken for damage: moved aside by a read, which answered errSecItemNotFound, so a
  /// downgrade emptied every group and signed every user out. A damaged dictionary (no
  /// `Format` of the family) is still moved aside.
  @Test func aFileOfAnotherVersionIsRefusedAndLeftAsItIs() throws {
    let k = try KeychainRoot()
    let secret = "secret-\(UUID().uuidString)"
    let account: [String: Any] = [kSecAttrAccount as String: "tok"]
    try asApp(k, KeychainRoot.app) {
      let item = genp("s", account.merging([kSecValueData as String: Data(secret.utf8)]) { $1 })
      #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
    }
    let (file, folder, later) = try k.rewriteSharedGroupFile(format: "AppGroups keychain 2")
    func expectLeftAsItIs(_ after: String) throws {
      #expect(try Data(contentsOf: file) == later, "\(after)")
      let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
      #expect(!names.contains { $0.contains(".unreadable-") }, "\(after): \(names)")
    }

    try asApp(k, KeychainRoot.app) {
      let read = genp("s", account.merging([kSecReturnData as String: true]) { $1 })
      #expect(copy(read).0 == errSecDecode)
      try expectLeftAsItIs("SecItemCopyMatching")
      #expect(copy(genp("s")).0 == errSecDecode)
      try expectLeftAsItIs("SecItemCopyMatching without an account")
      let add = genp("other", [kSecValueData as String: Data("pw".utf8)])
      #expect(SecItemAdd(add as CFDictionary, nil) == errSecDecode)
      try expectLeftAsItIs("SecItemAdd")
      let change = [kSecValueData as String: Data("new".utf8)]
      #expect(SecItemUpdate(genp("s") as CFDictionary, change as CFDictionary) == errSecDecode)
      try expectLeftAsItIs("SecItemUpdate")
      #expect(SecItemDelete(genp("s") as CFDictionary) == errSecDecode)
      try expectLeftAsItIs("SecItemDelete")
      do throws(KeychainError) {
        _ = try Keychain(service: "s", accessGroup: KeychainRoot.shared).get("tok")
        Issue.record("read a file of another version")
      } catch {
        #expect(error.code == .decode, "\(error)")
        let words = [
          file.path, "\"AppGroups keychain 2\"", "left as it is", "the version that wrote it",
        ]
        for part in words {
          #expect(error.message.contains(part), "\(error)")
        }
        #expect(!error.description.contains(secret))
      }
      try expectLeftAsItIs("Keychain.get")
    }

    // A dictionary whose Format is not of the family is damage, moved aside as before.
    _ = try k.rewriteSharedGroupFile(format: "Something else 2")
    try asApp(k, KeychainRoot.app) { #expect(copy(genp("s")).0 == errSecItemNotFound) }
    let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
    #expect(names.contains { $0.hasPrefix("keychain.plist.unreadable-") }, "\(names)")
  }
}

/// The attribute keys of a generic password an update may set.
enum ItemKeys {
  static let attributes: Set<String> = [
    kSecAttrAccount as String, kSecAttrLabel as String, kSecAttrGeneric as String,
    kSecAttrCreator as String, kSecAttrIsInvisible as String, kSecAttrAccessible as String,
    kSecAttrSynchronizable as String,
  ]
}

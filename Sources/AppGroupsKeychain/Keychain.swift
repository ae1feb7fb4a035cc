public import AppGroups
public import Foundation

/// The shared keychain, shaped for Swift: generic passwords of one service, by key, with
/// typed errors.
///
/// ```swift
/// let keychain = Keychain(service: "com.example.auth", accessGroup: "ABCDE12345.com.example.shared")
///   .accessibility(.afterFirstUnlock)
/// try keychain.set(refreshToken, key: "refreshToken")
///
/// do {
///   let token = try keychain.get("refreshToken")          // nil when there is none
/// } catch KeychainError.Code.interactionNotAllowed {
///   // Locked: the token is there but cannot be read now.
/// }
/// keychain["theme"] = "dark"                              // see the subscript's note
/// ```
///
/// A key is an item's account (`kSecAttrAccount`); the service is its `kSecAttrService`. Each
/// call is one `SecItem` call (two for ``set(_:key:)-(String,_)``), with the same rules:
/// access groups as the manifest gives them, accessibility as the device's state allows.
public struct Keychain: Sendable {
  /// When an item can be read: the `kSecAttrAccessible…` values, by their raw strings.
  public enum Accessibility: String, Sendable, CaseIterable, CustomStringConvertible {
    /// `kSecAttrAccessibleWhenUnlocked`: while the device is unlocked. The default.
    case whenUnlocked = "ak"
    /// `kSecAttrAccessibleAfterFirstUnlock`: from the first unlock after a start until the next
    /// start, even while locked again. For what a background launch or an extension reads.
    case afterFirstUnlock = "ck"
    /// `kSecAttrAccessibleAlways`: always. Deprecated by Apple since iOS 12; kept so that old
    /// code and items behave as they did.
    case always = "dk"
    /// `kSecAttrAccessibleWhenUnlockedThisDeviceOnly`.
    case whenUnlockedThisDeviceOnly = "aku"
    /// `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`.
    case afterFirstUnlockThisDeviceOnly = "cku"
    /// `kSecAttrAccessibleAlwaysThisDeviceOnly`. Deprecated by Apple.
    case alwaysThisDeviceOnly = "dku"
    /// `kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly`: while unlocked, and only while the
    /// device has a passcode; refused without one, deleted when it is removed.
    case whenPasscodeSetThisDeviceOnly = "akpu"

    /// The name after `kSecAttrAccessible`, lowercased first: `afterFirstUnlock`.
    public var description: String {
      switch self {
      case .whenUnlocked: "whenUnlocked"
      case .afterFirstUnlock: "afterFirstUnlock"
      case .always: "always"
      case .whenUnlockedThisDeviceOnly: "whenUnlockedThisDeviceOnly"
      case .afterFirstUnlockThisDeviceOnly: "afterFirstUnlockThisDeviceOnly"
      case .alwaysThisDeviceOnly: "alwaysThisDeviceOnly"
      case .whenPasscodeSetThisDeviceOnly: "whenPasscodeSetThisDeviceOnly"
      }
    }

    /// The value named `name` (``description``), or `nil`.
    public init?(name: String) {
      guard let value = Self.allCases.first(where: { $0.description == name }) else { return nil }
      self = value
    }
  }

  /// The most bytes an item's data (`kSecValueData`) holds: 1 MiB (1,048,576 bytes).
  ///
  /// `SecItemAdd` and `SecItemUpdate` refuse longer data with `errSecDataTooLarge`, storing
  /// nothing, and so does `groupctl keychain add-generic-password`. A keychain item is a
  /// secret: a password, a token, a key or a certificate, a few kilobytes at most, so 1 MiB
  /// holds any of them with room; and an access group's items are one file that every write
  /// reads, seals and writes again whole, so the bound also bounds what one item costs the
  /// group's other writers.
  public static let maximumDataBytes = 1 << 20

  /// The most bytes one attribute's value holds: 16 KiB (16,384 bytes), a string's in UTF-8,
  /// `kSecAttrGeneric`'s data as they are.
  ///
  /// `SecItemAdd` and `SecItemUpdate` refuse a longer account, service, label, description,
  /// comment, server, path, generic data or other attribute with `errSecParam`, storing
  /// nothing; the message names the attribute, its length and the bound, never its value. An
  /// attribute names or describes a secret (an account, a host, a label a person reads), tens
  /// or hundreds of bytes: 16 KiB holds any of them with room, and keeps every attribute of an
  /// item together (nine at most) under a seventh of ``maximumDataBytes``. A search is not
  /// bounded: an item stored before the bound is still found, and deleted, by its attributes.
  public static let maximumAttributeBytes = 16 << 10

  /// The most bytes an access group's file (`keychain.plist`) holds: 16 MiB (16,777,216 bytes).
  ///
  /// Every call reads the file whole when it changed, and every write writes it again whole,
  /// so the bound is what a call may cost in memory and time. 16 MiB holds at least twelve
  /// items each at every bound at once (``maximumDataBytes`` of data and every attribute at
  /// ``maximumAttributeBytes``), and tens of thousands of ordinary ones (a password with its
  /// attributes takes a few hundred bytes).
  ///
  /// - A file larger than this (written by hand, or by another tool) is not read: its size is
  ///   taken from the open file before a byte is read, and every call on the group fails with
  ///   `errSecAllocate`, naming the file and the bound. It is left where it is, never moved
  ///   aside or changed: nothing in it is lost, and moving it aside is a person's decision.
  /// - `SecItemAdd` and `SecItemUpdate` that would grow the file past it fail with
  ///   `errSecDiskFull` and leave the file as it was: delete items to make room.
  public static let maximumAccessGroupBytes = 16 << 20

  /// The items' service (`kSecAttrService`).
  public let service: String
  /// The access group items are added to and searched in; `nil`: added to the app's default
  /// group, searched in all of its groups.
  public let accessGroup: String?
  /// The accessibility of items this keychain adds or sets.
  public let accessibilityValue: Accessibility
  private let who: Who

  private enum Who: Sendable {
    case process
    case app(AppIdentity, ContainerRoot)
    case administrator(ContainerRoot)
  }

  /// The keychain of this process (its identity and root, as the `SecItem` calls use them).
  public init(service: String, accessGroup: String? = nil) {
    self.init(
      service: service, accessGroup: accessGroup, accessibility: .whenUnlocked, who: .process)
  }

  /// The keychain of `identity` in `root`, for tools and tests.
  public init(
    service: String, accessGroup: String? = nil, identity: AppIdentity, root: ContainerRoot
  ) {
    self.init(
      service: service, accessGroup: accessGroup, accessibility: .whenUnlocked,
      who: .app(identity, root))
  }

  /// The administrator's keychain of `root` (`groupctl keychain` without `--as`): every access
  /// group; adding needs one named.
  package init(service: String, accessGroup: String?, administratorOf root: ContainerRoot) {
    self.init(
      service: service, accessGroup: accessGroup, accessibility: .whenUnlocked,
      who: .administrator(root))
  }

  private init(service: String, accessGroup: String?, accessibility: Accessibility, who: Who) {
    self.service = service
    self.accessGroup = accessGroup
    self.accessibilityValue = accessibility
    self.who = who
  }

  /// The same keychain, adding and setting items with `accessibility`.
  public func accessibility(_ accessibility: Accessibility) -> Keychain {
    Keychain(service: service, accessGroup: accessGroup, accessibility: accessibility, who: who)
  }

  // MARK: Reading

  /// The string stored for `key`, or `nil` when there is none.
  ///
  /// - Throws: ``KeychainError`` (`interactionNotAllowed` when the item exists but the device's
  ///   state keeps it closed; `decode` when its bytes are not UTF-8 text; `missingEntitlement`).
  public func get(_ key: String) throws(KeychainError) -> String? {
    guard let data = try getData(key) else { return nil }
    guard let string = String(validating: data, as: UTF8.self) else {
      throw KeychainError(
        errSecDecode,
        "the item \(KeychainService.quoted(key)) of service \(KeychainService.quoted(service))"
          + " is not UTF-8 text; read it with getData")
    }
    return string
  }

  /// The bytes stored for `key`, or `nil` when there is none.
  ///
  /// - Throws: ``KeychainError``.
  public func getData(_ key: String) throws(KeychainError) -> Data? {
    var query = base(key)
    query[SecKey.ReturnData] = true
    query[SecKey.MatchLimit] = SecKey.MatchLimitOne
    do {
      let found = try perform { (service, caller) throws(KeychainError) in
        try service.find(try ItemQuery.parse(query, for: .copyMatching), caller: caller)
      }
      return found.first.map { Data($0.secret) }
    } catch KeychainError.Code.itemNotFound {
      return nil
    }
  }

  /// Whether an item is stored for `key` (its class must be available: the device's state
  /// is checked as for a read).
  ///
  /// - Throws: ``KeychainError``.
  public func contains(_ key: String) throws(KeychainError) -> Bool {
    do {
      _ = try perform { (service, caller) throws(KeychainError) in
        try service.find(try ItemQuery.parse(base(key), for: .copyMatching), caller: caller)
      }
      return true
    } catch KeychainError.Code.itemNotFound {
      return false
    }
  }

  /// The keys of the service's items, sorted.
  ///
  /// - Throws: ``KeychainError``.
  public func allKeys() throws(KeychainError) -> [String] {
    var query = base(nil)
    query[SecKey.ReturnAttributes] = true
    query[SecKey.MatchLimit] = SecKey.MatchLimitAll
    do {
      let found = try perform { (service, caller) throws(KeychainError) in
        try service.find(try ItemQuery.parse(query, for: .copyMatching), caller: caller)
      }
      return found.compactMap { one -> String? in
        if case .string(let account)? = one.item.attributes[SecKey.AttrAccount] { return account }
        return nil
      }.sorted()
    } catch KeychainError.Code.itemNotFound {
      return []
    }
  }

  // MARK: Writing

  /// Stores `value` for `key`, replacing what was there, durably: when it returns, it is on
  /// disk.
  ///
  /// - Throws: ``KeychainError`` (`interactionNotAllowed`: the class of the item is unavailable
  ///   now; `missingEntitlement`; `authFailed` for `whenPasscodeSetThisDeviceOnly` without a
  ///   passcode; `dataTooLarge` for more than ``maximumDataBytes``; `param` for a key or
  ///   service longer than ``maximumAttributeBytes``; `diskFull` when the group's file would
  ///   grow past ``maximumAccessGroupBytes``, storing nothing; `allocate` when it is already
  ///   larger).
  public func set(_ value: String, key: String) throws(KeychainError) {
    try set(Data(value.utf8), key: key)
  }

  /// Stores `value` for `key`, replacing what was there, durably.
  ///
  /// - Throws: ``KeychainError``, as ``set(_:key:)-(String,_)`` throws it.
  public func set(_ value: Data, key: String) throws(KeychainError) {
    var item = base(key)
    item[SecKey.ValueData] = value
    item[SecKey.AttrAccessible] = accessibilityValue.rawValue
    try KeychainService.updateOrAdd(
      KeychainService.quoted(key),
      update: { () throws(KeychainError) in
        try perform { (service, caller) throws(KeychainError) in
          let changes = ItemChanges(accessibility: accessibilityValue, secret: value)
          try service.update(try ItemQuery.parse(base(key), for: .update), changes, caller: caller)
        }
      },
      add: { () throws(KeychainError) in
        _ = try perform { (service, caller) throws(KeychainError) in
          try service.add(try ItemQuery.parse(item, for: .add), caller: caller)
        }
      })
  }

  /// Removes the item stored for `key`; nothing happens when there is none.
  ///
  /// - Throws: ``KeychainError`` (not `itemNotFound`).
  public func remove(_ key: String) throws(KeychainError) {
    do {
      try perform { (service, caller) throws(KeychainError) in
        try service.delete(try ItemQuery.parse(base(key), for: .delete), caller: caller)
      }
    } catch KeychainError.Code.itemNotFound {
    }
  }

  /// Removes every item of the service.
  ///
  /// - Throws: ``KeychainError`` (not `itemNotFound`).
  public func removeAll() throws(KeychainError) {
    do {
      try perform { (service, caller) throws(KeychainError) in
        try service.delete(try ItemQuery.parse(base(nil), for: .delete), caller: caller)
      }
    } catch KeychainError.Code.itemNotFound {
    }
  }

  /// The string stored for `key`, read and written as ``get(_:)`` and ``set(_:key:)-(String,_)``
  /// do; assigning `nil` removes it.
  ///
  /// A subscript cannot throw: reading gives `nil` for every failure (a locked device
  /// included), and a write that fails is reported on stderr (its status and why, never the
  /// value). Use ``get(_:)`` and ``set(_:key:)-(String,_)`` to know.
  public subscript(key: String) -> String? {
    get { (try? get(key)) ?? nil }
    nonmutating set {
      do {
        if let newValue { try set(newValue, key: key) } else { try remove(key) }
      } catch {
        AccessGroupFile.report(
          "keychain: writing \(KeychainService.quoted(key)) of service"
            + " \(KeychainService.quoted(service)) failed: \(error)")
      }
    }
  }

  // MARK: The process

  /// Says who the `SecItem` calls of this process act as, and in which root.
  ///
  /// By default they act as ``AppIdentity/current(fallback:)`` without a fallback
  /// (`APPGROUPS_BUNDLE_ID`, else the executable's name) in ``ContainerRoot/default``, settled at
  /// the first call. An app that names itself another way, as the examples do with
  /// `AppIdentity.current(fallback: "com.example.app")`, says so here before its first keychain
  /// call. A test scoped by `AppGroupsTesting` keeps its own identity and root.
  public static func useProcessIdentity(_ identity: AppIdentity, root: ContainerRoot = .default) {
    KeychainCall.settle(identity, root)
  }

  // MARK: Helpers

  /// The query of the service's items, of `key` when given.
  private func base(_ key: String?) -> [String: Any] {
    var query: [String: Any] = [
      SecKey.Class: SecKey.ClassGenericPassword, SecKey.AttrService: service,
    ]
    if let key { query[SecKey.AttrAccount] = key }
    if let accessGroup { query[SecKey.AttrAccessGroup] = accessGroup }
    return query
  }

  private func perform<Result>(
    _ body: (KeychainService, KeychainCaller) throws(KeychainError) -> Result
  ) throws(KeychainError) -> Result {
    switch who {
    case .process:
      let (service, caller) = try KeychainCall.current()
      return try body(service, caller)
    case .app(let identity, let root):
      return try body(KeychainService.shared(root: root), .app(identity))
    case .administrator(let root):
      return try body(KeychainService.shared(root: root), .administrator)
    }
  }
}

import AppGroups
public import Foundation
internal import Synchronization

// The keychain's four calls, with Apple's signatures. Each acts for the calling process: its
// identity (`APPGROUPS_BUNDLE_ID`, checked against the manifest's executable binding) in its
// root (`APPGROUPS_ROOT`, else `Containers/`), or the identity and root of a test scoped by
// `AppGroupsTesting`. Each returns an `OSStatus`; the Swift-shaped ``Keychain`` throws the
// same codes as ``KeychainError`` with a message that says why. With the environment variable
// `APPGROUPS_KEYCHAIN_LOG` set, every failure's message also goes to stderr, as a device's
// `securityd` logs it: the way to learn why a call returned -34018.

/// Adds an item to the keychain.
///
/// The item goes to its `kSecAttrAccessGroup`, which must be one of the app's access groups,
/// or, without one, to the app's first access group (its first `keychain-access-groups`
/// entry, else its App ID, else its first application group). Its secret
/// (`kSecValueData`) is sealed with AES-256-GCM under the key of its protection class
/// (`kSecAttrAccessible`, by default `kSecAttrAccessibleWhenUnlocked`) and written durably
/// before the call returns.
///
/// - Parameters:
///   - attributes: The item: `kSecClass`, its attributes, `kSecValueData`, and optionally
///     return keys (`kSecReturnData`, `kSecReturnAttributes`, `kSecReturnPersistentRef`).
///   - result: Where to put what the return keys ask for; may be `nil`.
/// - Returns: `errSecSuccess`; `errSecDuplicateItem` when the group already holds an item with
///   the same primary key; `errSecMissingEntitlement` for a group the app does not hold, or an
///   app that holds none; `errSecInteractionNotAllowed` when the device's state makes the
///   item's class unavailable (a `WhenUnlocked` item while locked); `errSecAuthFailed` for a
///   `WhenPasscodeSetThisDeviceOnly` item on a device without a passcode;
///   `errSecDataTooLarge` for data longer than ``Keychain/maximumDataBytes`` (1 MiB);
///   `errSecParam` for a dictionary it cannot take, or an attribute longer than
///   ``Keychain/maximumAttributeBytes`` (16 KiB); `errSecDiskFull` when the group's file would
///   grow past ``Keychain/maximumAccessGroupBytes`` (16 MiB), and `errSecAllocate` when it is
///   already larger (it is not read); `errSecDecode` when another version of the keychain
///   wrote the group's file (its `Format` another `AppGroups keychain …`: it is left as it
///   is); nothing is stored then.
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?)
  -> OSStatus
{
  KeychainCall.run(.add) { (service, caller) throws(KeychainError) in
    let query = try ItemQuery.parse(try dictionary(attributes, .add), for: .add)
    let object = try service.add(query, caller: caller)
    if let object { result?.pointee = object }
  }
}

/// Finds items and returns what the query asks for.
///
/// Without `kSecAttrAccessGroup` it searches every access group of the app, in order; with
/// one, that group, which the app must hold. Without `kSecMatchLimit` it returns the first
/// item found; with `kSecMatchLimitAll`, an array. Only items that are not synchronizable
/// match, unless the query says `kSecAttrSynchronizable`.
///
/// - Parameters:
///   - query: `kSecClass`, attributes to match, return keys, `kSecMatchLimit`.
///   - result: Where to put the result: `NSData` for `kSecReturnData` alone, an
///     `NSDictionary` of attributes for `kSecReturnAttributes`, an `NSArray` of them for more
///     than one item, `NSNull` when nothing is asked for.
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when nothing matches (in the app's own
///   groups: another app's items are not seen); `errSecMissingEntitlement` for a group the
///   app does not hold; `errSecInteractionNotAllowed` when a matching item's class is
///   unavailable, even when only attributes are asked for, as on a device; `errSecAllocate`
///   for a group whose file is larger than ``Keychain/maximumAccessGroupBytes`` (it is not
///   read, and left as it is); `errSecDecode` for a group whose file another version of the
///   keychain wrote (left as it is: its items are not this version's to read); `errSecParam`.
@discardableResult
public func SecItemCopyMatching(
  _ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?
) -> OSStatus {
  KeychainCall.run(.copyMatching) { (service, caller) throws(KeychainError) in
    let parsed = try ItemQuery.parse(try dictionary(query, .copyMatching), for: .copyMatching)
    if parsed.returnsSomething && result == nil {
      throw KeychainError(
        errSecParam, "SecItemCopyMatching: the query asks for a result and gives no pointer")
    }
    let object = try service.copyMatching(parsed, caller: caller)
    if let object { result?.pointee = object }
  }
}

/// Changes the items a query matches: their attributes, secret, accessibility or access group.
///
/// Every item changed is sealed again (so its class must be available now); the changes of
/// one call land together in each access group.
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound`; `errSecDuplicateItem` when a changed item
///   would equal another; `errSecMissingEntitlement`; `errSecInteractionNotAllowed`;
///   `errSecDataTooLarge` for new data longer than ``Keychain/maximumDataBytes`` (1 MiB);
///   `errSecParam` (a return key in the query, a search key among the changes, a new attribute
///   longer than ``Keychain/maximumAttributeBytes``); `errSecDiskFull` when a group's file
///   would grow past ``Keychain/maximumAccessGroupBytes``, changing nothing; `errSecAllocate`
///   for a group whose file is already larger; `errSecDecode` for a group whose file another
///   version of the keychain wrote (left as it is).
@discardableResult
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
  KeychainCall.run(.update) { (service, caller) throws(KeychainError) in
    let parsed = try ItemQuery.parse(try dictionary(query, .update), for: .update)
    let changes = try ItemChanges.parse(
      try dictionary(attributesToUpdate, .update), itemClass: parsed.itemClass)
    try service.update(parsed, changes, caller: caller)
  }
}

/// Deletes every item a query matches, whatever the device's state.
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound`; `errSecMissingEntitlement`;
///   `errSecAllocate` for a group whose file is larger than
///   ``Keychain/maximumAccessGroupBytes`` (it is not read, and left as it is); `errSecDecode`
///   for a group whose file another version of the keychain wrote (left as it is);
///   `errSecParam` (`kSecMatchLimitOne`: a delete takes every match).
@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
  KeychainCall.run(.delete) { (service, caller) throws(KeychainError) in
    try service.delete(
      try ItemQuery.parse(try dictionary(query, .delete), for: .delete), caller: caller)
  }
}

/// `dictionary` with string keys, as the keychain reads it.
///
/// - Throws: `errSecParam` for a key that is not a string.
private func dictionary(_ dictionary: CFDictionary, _ operation: Operation) throws(KeychainError)
  -> [String: Any]
{
  var result: [String: Any] = [:]
  result.reserveCapacity(dictionary.count)
  for (key, value) in dictionary {
    guard let key = key as? String else {
      throw KeychainError(
        errSecParam,
        "\(operation.rawValue): a key of the dictionary is a \(type(of: key)), not a string")
    }
    result[key] = value
  }
  return result
}

/// Who the calling process is, settled once, and the running of one call.
enum KeychainCall {
  private static let process = Mutex<(AppIdentity, ContainerRoot)?>(nil)

  /// The service and caller of a `SecItem` call: the scoped test's identity and root, else
  /// the process's, settled at its first call (and its lifecycle started, so that no keychain
  /// lock is held across a suspension).
  static func current() throws(KeychainError) -> (KeychainService, KeychainCaller) {
    if ScopedEnvironment.identity != nil || ScopedEnvironment.root != nil {
      do {
        let identity = try AppIdentity.current()
        return (KeychainService.shared(root: .default), .app(identity))
      } catch {
        throw KeychainError(errSecMissingEntitlement, error.message)
      }
    }
    if let (identity, root) = process.withLock({ $0 }) {
      return (KeychainService.shared(root: root), .app(identity))
    }
    let identity: AppIdentity
    do {
      identity = try AppIdentity.current()
    } catch {
      throw KeychainError(errSecMissingEntitlement, "who this process is: \(error.message)")
    }
    let root = ContainerRoot.default
    process.withLock { $0 = (identity, root) }
    AppLifecycle.start(identity: identity, root: root)
    return (KeychainService.shared(root: root), .app(identity))
  }

  /// Settles who the process is, as ``Keychain/useProcessIdentity(_:root:)`` says.
  static func settle(_ identity: AppIdentity, _ root: ContainerRoot) {
    process.withLock { $0 = (identity, root) }
    AppLifecycle.start(identity: identity, root: root)
  }

  static let logs =
    ProcessInfo.processInfo.environment["APPGROUPS_KEYCHAIN_LOG"].map { !$0.isEmpty } ?? false

  /// Runs `body` for the current caller and returns its status.
  static func run(
    _ operation: Operation,
    _ body: (KeychainService, KeychainCaller) throws(KeychainError) -> Void
  ) -> OSStatus {
    do {
      let (service, caller) = try current()
      try body(service, caller)
      return errSecSuccess
    } catch {
      if logs { AccessGroupFile.report("keychain: \(error)") }
      return error.status
    }
  }
}

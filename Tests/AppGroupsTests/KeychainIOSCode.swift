// Keychain code as iOS apps write it, compiled here with only its import changed
// (`import Security` on iOS). If a spelling iOS code uses stops compiling, this file says so.
// The tests in KeychainSecItemTests run it.
import AppGroupsKeychain
import Foundation

/// A typical hand-written wrapper, in the style of Apple's GenericKeychain sample and of the
/// wrappers most apps carry: `CFTypeRef?` results, `as! CFDictionary`, `kCFBooleanTrue!`,
/// `NSDictionary` attributes, `withUnsafeMutablePointer`, `SecCopyErrorMessageString`.
struct PasswordItem {
  enum KeychainError: Error {
    case noPassword
    case unexpectedPasswordData
    case unexpectedItemData
    case unhandledError(status: OSStatus)
  }

  let service: String
  let account: String
  let accessGroup: String?

  func readPassword() throws -> String {
    var query = PasswordItem.query(withService: service, account: account, accessGroup: accessGroup)
    query[kSecMatchLimit as String] = kSecMatchLimitOne
    query[kSecReturnAttributes as String] = kCFBooleanTrue!
    query[kSecReturnData as String] = kCFBooleanTrue!

    var queryResult: AnyObject?
    let status = withUnsafeMutablePointer(to: &queryResult) {
      SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0))
    }
    guard status != errSecItemNotFound else { throw KeychainError.noPassword }
    guard status == noErr else { throw KeychainError.unhandledError(status: status) }

    guard let existingItem = queryResult as? [String: AnyObject],
      let passwordData = existingItem[kSecValueData as String] as? Data,
      let password = String(data: passwordData, encoding: String.Encoding.utf8)
    else {
      throw KeychainError.unexpectedPasswordData
    }
    return password
  }

  func savePassword(_ password: String) throws {
    let encodedPassword = password.data(using: String.Encoding.utf8)!
    do {
      try _ = readPassword()
      var attributesToUpdate = [String: AnyObject]()
      attributesToUpdate[kSecValueData as String] = encodedPassword as AnyObject?
      let query = PasswordItem.query(
        withService: service, account: account, accessGroup: accessGroup)
      let status = SecItemUpdate(query as CFDictionary, attributesToUpdate as CFDictionary)
      guard status == noErr else { throw KeychainError.unhandledError(status: status) }
    } catch KeychainError.noPassword {
      var newItem = PasswordItem.query(
        withService: service, account: account, accessGroup: accessGroup)
      newItem[kSecValueData as String] = encodedPassword as AnyObject?
      let status = SecItemAdd(newItem as CFDictionary, nil)
      guard status == noErr else { throw KeychainError.unhandledError(status: status) }
    }
  }

  func deleteItem() throws {
    let query = PasswordItem.query(withService: service, account: account, accessGroup: accessGroup)
    let status = SecItemDelete(query as CFDictionary)
    guard status == noErr || status == errSecItemNotFound else {
      throw KeychainError.unhandledError(status: status)
    }
  }

  static func passwordItems(forService service: String, accessGroup: String? = nil) throws
    -> [PasswordItem]
  {
    var query = PasswordItem.query(withService: service, accessGroup: accessGroup)
    query[kSecMatchLimit as String] = kSecMatchLimitAll
    query[kSecReturnAttributes as String] = kCFBooleanTrue
    query[kSecReturnData as String] = kCFBooleanFalse

    var queryResult: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &queryResult)
    guard status != errSecItemNotFound else { return [] }
    guard status == noErr else { throw KeychainError.unhandledError(status: status) }
    guard let results = queryResult as? [[String: AnyObject]] else {
      throw KeychainError.unexpectedItemData
    }
    var passwordItems = [PasswordItem]()
    for result in results {
      guard let account = result[kSecAttrAccount as String] as? String else {
        throw KeychainError.unexpectedItemData
      }
      passwordItems.append(
        PasswordItem(service: service, account: account, accessGroup: accessGroup))
    }
    return passwordItems
  }

  private static func query(
    withService service: String, account: String? = nil, accessGroup: String? = nil
  ) -> [String: AnyObject] {
    var query = [String: AnyObject]()
    query[kSecClass as String] = kSecClassGenericPassword as AnyObject
    query[kSecAttrService as String] = service as AnyObject?
    if let account = account {
      query[kSecAttrAccount as String] = account as AnyObject?
    }
    if let accessGroup = accessGroup {
      query[kSecAttrAccessGroup as String] = accessGroup as AnyObject?
    }
    return query
  }
}

/// The one-function helpers many apps carry, with CFString keys and `as CFDictionary`
/// literals, `NSDictionary` results and an error message from `SecCopyErrorMessageString`.
enum TokenHelpers {
  static func store(_ token: Data, key: String) -> OSStatus {
    let query =
      [
        kSecClass: kSecClassGenericPassword,
        kSecAttrAccount: key,
        kSecValueData: token,
        kSecAttrAccessible: kSecAttrAccessibleAfterFirstUnlock,
      ] as CFDictionary
    SecItemDelete(query)
    return SecItemAdd(query, nil)
  }

  static func token(key: String) -> Data? {
    let query =
      [
        kSecClass: kSecClassGenericPassword,
        kSecAttrAccount: key,
        kSecReturnData: kCFBooleanTrue!,
        kSecMatchLimit: kSecMatchLimitOne,
      ] as CFDictionary
    var dataTypeRef: AnyObject? = nil
    let status: OSStatus = SecItemCopyMatching(query, &dataTypeRef)
    if status == noErr {
      return dataTypeRef as! Data?
    }
    return nil
  }

  static func label(key: String) -> String? {
    let query: NSDictionary = [
      kSecClass: kSecClassGenericPassword,
      kSecAttrAccount: key,
      kSecReturnAttributes: true,
    ]
    var result: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess,
      let attributes = result as? NSDictionary
    else { return nil }
    return attributes[kSecAttrAccount] as? String
  }

  static func message(_ status: OSStatus) -> String {
    SecCopyErrorMessageString(status, nil) as String? ?? "OSStatus \(status)"
  }
}

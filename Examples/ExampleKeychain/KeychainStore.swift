// A keychain wrapper as iOS apps write it, around the four SecItem calls: the first reference
// document's ✅ example calls it as
//
//     try KeychainStore.save(refreshToken, service: "com.company.app.auth", account: "refreshToken")
//
// The code is what it would be on iOS; only the import differs (`import Security` there).
// The example app signs in with it and the widget reads the token with it; the tests compile
// it unchanged.
public import AppGroupsKeychain
import Foundation

public enum KeychainStore {
  /// A keychain call that failed, with its status.
  public struct Failure: Error, CustomStringConvertible {
    public let status: OSStatus

    public var description: String {
      let message = SecCopyErrorMessageString(status, nil) as String? ?? "unknown error"
      return "\(message) (OSStatus \(status))"
    }
  }

  /// Stores `value` for `account` of `service`, replacing the value that was there.
  public static func save(
    _ value: String, service: String, account: String,
    accessible: CFString = kSecAttrAccessibleWhenUnlocked
  ) throws {
    let query: [String: Any] = [
      kSecClass as String: kSecClassGenericPassword,
      kSecAttrService as String: service,
      kSecAttrAccount as String: account,
    ]
    let attributes: [String: Any] = [
      kSecValueData as String: Data(value.utf8),
      kSecAttrAccessible as String: accessible,
    ]
    let status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
    if status == errSecItemNotFound {
      let item = query.merging(attributes) { $1 }
      let added = SecItemAdd(item as CFDictionary, nil)
      guard added == errSecSuccess else { throw Failure(status: added) }
    } else if status != errSecSuccess {
      throw Failure(status: status)
    }
  }

  /// The value stored for `account` of `service`, or `nil` when there is none.
  public static func load(service: String, account: String) throws -> String? {
    let query: [String: Any] = [
      kSecClass as String: kSecClassGenericPassword,
      kSecAttrService as String: service,
      kSecAttrAccount as String: account,
      kSecReturnData as String: true,
      kSecMatchLimit as String: kSecMatchLimitOne,
    ]
    var result: AnyObject?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    if status == errSecItemNotFound { return nil }
    guard status == errSecSuccess, let data = result as? Data else {
      throw Failure(status: status)
    }
    return String(data: data, encoding: .utf8)
  }

  /// Removes the value stored for `account` of `service`, if any.
  public static func delete(service: String, account: String) throws {
    let query: [String: Any] = [
      kSecClass as String: kSecClassGenericPassword,
      kSecAttrService as String: service,
      kSecAttrAccount as String: account,
    ]
    let status = SecItemDelete(query as CFDictionary)
    guard status == errSecSuccess || status == errSecItemNotFound else {
      throw Failure(status: status)
    }
  }
}

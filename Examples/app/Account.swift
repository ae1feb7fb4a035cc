// The app's account: `app sign-in TOKEN` keeps the refresh token in the keychain, in the
// access group the app shares with its widget, never in the group suite, as the first
// reference document's ✅ example does it:
//
//   app sign-in TOKEN [--accessible afterFirstUnlock]   store the token (default WhenUnlocked)
//   app sign-out                                         remove it
//
// Either then posts com.example.widget.reload, so that the widget shows the new state. The
// token is never printed.
import AppGroups
import AppGroupsKeychain
import ExampleKeychain
import ExampleSchema
import Foundation

enum Account {
  static let service = "com.example.auth"
  static let account = "refreshToken"
  /// The widget's reload notification (as main.swift's `reloadNotification`).
  static let reload = "com.example.widget.reload"

  /// Runs `arguments` when they are an account command; `false` when they are not one.
  static func run(_ arguments: [String]) -> Bool {
    guard let name = arguments.first, name == "sign-in" || name == "sign-out" else { return false }
    var rest = Array(arguments.dropFirst())
    var accessible = kSecAttrAccessibleWhenUnlocked
    if let index = rest.firstIndex(of: "--accessible") {
      guard index + 1 < rest.count else {
        usageError("--accessible needs whenUnlocked or afterFirstUnlock")
      }
      switch rest[index + 1] {
      case "whenUnlocked": accessible = kSecAttrAccessibleWhenUnlocked
      case "afterFirstUnlock": accessible = kSecAttrAccessibleAfterFirstUnlock
      default:
        usageError(
          "--accessible takes whenUnlocked or afterFirstUnlock, not \(rest[index + 1].debugDescription)"
        )
      }
      rest.removeSubrange(index...(index + 1))
    }
    do {
      // The keychain calls act as the app, named as main.swift names it.
      Keychain.useProcessIdentity(try AppIdentity.current(fallback: "com.example.app"))
      if name == "sign-in" {
        guard rest.count == 1, !rest[0].isEmpty else { usageError("sign-in takes a TOKEN") }
        try KeychainStore.save(rest[0], service: service, account: account, accessible: accessible)
        say("app: signed in; the refresh token is in the keychain (\(location()))")
      } else {
        guard rest.isEmpty else { usageError("sign-out takes no arguments") }
        try KeychainStore.delete(service: service, account: account)
        say("app: signed out")
      }
    } catch let failure as KeychainStore.Failure {
      fail("\(name) refused by the keychain: \(failure)")
    } catch {
      fail("\(name): \(error)")
    }
    post()
    return true
  }

  /// The stored item's access group and accessibility, as the keychain reports them.
  static func location() -> String {
    let query: [String: Any] = [
      kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
      kSecAttrAccount as String: account, kSecReturnAttributes as String: true,
    ]
    var result: AnyObject?
    guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess,
      let attributes = result as? [String: Any]
    else { return "its attributes cannot be read now" }
    let group = attributes[kSecAttrAccessGroup as String] as? String ?? "?"
    let accessible = attributes[kSecAttrAccessible as String] as? String ?? "?"
    return "access group \(group), kSecAttrAccessible \(accessible)"
  }

  /// Asks the widget to reload.
  static func post() {
    do {
      let identity = try AppIdentity.current(fallback: "com.example.app")
      let center = try GroupNotificationCenter(
        groupIdentifier: ExampleSchema.group, identity: identity)
      try center.post(reload)
      say("app: posted \(reload)")
    } catch {
      fail("the keychain changed, but posting \(reload) failed: \(error)")
    }
  }
}

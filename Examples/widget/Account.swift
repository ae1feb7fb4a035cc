// What the widget shows of the app's account: whether the app signed in, read from the
// keychain's shared access group (the refresh token itself is never shown).
//
//   signed-in    the token is there
//   signed-out   there is none
//   locked       the device's state keeps it closed (a WhenUnlocked token before the first
//                unlock, or while locked): the user is not signed out, the widget just
//                cannot tell yet, as an extension on a locked device cannot
//
// The widget renders again when the device's state changes (an unlock, a lock), so that
// "locked" turns into "signed-in" as soon as the token can be read.
import AppGroups
import AppGroupsKeychain
import ExampleKeychain
import Foundation

enum Account {
  static let service = "com.example.auth"
  static let account = "refreshToken"

  /// The keychain calls act as the widget, named as main.swift names it.
  static let identity: Void = {
    if let identity = try? AppIdentity.current(fallback: "com.example.widget") {
      Keychain.useProcessIdentity(identity)
    }
  }()

  /// `signed-in`, `signed-out`, `locked`, or `unknown (OSStatus N)` for another failure.
  static func state() -> String {
    _ = identity
    do {
      return try KeychainStore.load(service: service, account: account) == nil
        ? "signed-out" : "signed-in"
    } catch let failure as KeychainStore.Failure {
      return failure.status == errSecInteractionNotAllowed
        ? "locked" : "unknown (OSStatus \(failure.status))"
    } catch {
      return "unknown"
    }
  }

  /// Calls `handler` at every change of the device's state but the unlock, which main.swift's
  /// own observer renders (after it registers the schema).
  static func observeDevice(_ handler: @escaping @Sendable () -> Void) -> Observation {
    ProtectedData.observe { event in
      guard event.kind != .didBecomeAvailable else { return }
      handler()
    }
  }
}

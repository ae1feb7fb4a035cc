import AppGroups
import AppGroupsKeybag
import Foundation

extension Keychain.Accessibility {
  /// The keybag class whose key seals an item of this accessibility: `complete` (class A) for
  /// `WhenUnlocked`, `completeUntilFirstUserAuthentication` (class C) for `AfterFirstUnlock`,
  /// `none` (class D) for `Always`, and the class that exists only with a passcode for
  /// `WhenPasscodeSetThisDeviceOnly`. The other `ThisDeviceOnly` variants share their
  /// sibling's class: on a device they differ only in being left out of backups, and the
  /// simulated device makes none.
  var keyClass: Keybag.KeyClass {
    switch self {
    case .whenUnlocked, .whenUnlockedThisDeviceOnly: .complete
    case .afterFirstUnlock, .afterFirstUnlockThisDeviceOnly: .completeUntilFirstUserAuthentication
    case .always, .alwaysThisDeviceOnly: .none
    case .whenPasscodeSetThisDeviceOnly: .passcodeSetThisDeviceOnly
    }
  }
}

/// A class key of one call, its bytes wiped when it goes.
final class ClassKey {
  // Written only by init and deinit.
  private(set) var bytes: [UInt8]

  /// Takes `bytes` (the caller's copy is left to the caller to wipe).
  init(_ bytes: [UInt8]) {
    self.bytes = bytes
  }

  deinit { Crypto.wipe(&bytes) }

  /// The key's identifier: the first 8 bytes of SHA-256 over a fixed label and the key,
  /// stored beside each item so that an item sealed under a key the keybag no longer has (the
  /// passcode-set class after the passcode was removed) is told from one whose bytes were
  /// changed. It says nothing about the key. Worked out when an item is sealed, and when one
  /// does not open; a read that opens needs none.
  func identifier() throws(KeychainError) -> Data {
    do {
      let digest = try Crypto.sha256(
        Array("AppGroups keychain class key identifier\0".utf8) + bytes)
      return Data(digest.prefix(8))
    } catch {
      throw KeychainError(errSecInternalComponent, "cannot name a class key: \(error)")
    }
  }
}

/// Why a class key cannot be had now.
enum ClassKeyProblem: Error {
  /// The device's state makes the class unavailable (locked; not unlocked since it started):
  /// `errSecInteractionNotAllowed`.
  case unavailable(String)
  /// The passcode-set class does not exist: the device has no passcode.
  case noPasscode
  /// The keybag cannot be used.
  case failed(KeychainError)
}

/// The one place the keychain gets class keys from: the device's keybag, asked at every call
/// (a lock takes a class away at once; no key is kept between calls).
struct ClassKeys: Sendable {
  let root: ContainerRoot

  var keybag: Keybag { Keybag(root: root) }

  /// The key of `keyClass` now.
  func key(_ keyClass: Keybag.KeyClass) throws(ClassKeyProblem) -> ClassKey {
    let result = Result { () throws(KeybagError) in try keybag.classKey(keyClass) }
    switch result {
    case .success(var bytes):
      defer { Crypto.wipe(&bytes) }
      return ClassKey(bytes)
    case .failure(let error):
      // The keybag says "no passcode" only when it has none, under the device's lock: what
      // leads to the passcode-set items' deletion never comes from a state page alone.
      if error.code == .noPasscodeSet { throw .noPasscode }
      if error.code == .unavailable { throw .unavailable(error.message) }
      throw .failed(KeychainError(errSecNotAvailable, "the device's keybag: \(error.message)"))
    }
  }

  /// Whether the device has a passcode.
  var hasPasscode: Bool { keybag.hasPasscode }
}

import AppGroups
import AppGroupsKeybag
import Foundation

/// The protection classes items are sealed under, as the keybag keeps their keys.
enum ProtectionClass: String, Sendable, Hashable {
  /// Class A: while the device is unlocked.
  case whenUnlocked
  /// Class C: from the first unlock until the device restarts.
  case afterFirstUnlock
  /// Class D: always.
  case always
  /// Class A, existing only while the device has a passcode.
  case whenPasscodeSet
}

extension Keychain.Accessibility {
  /// The class whose key seals an item of this accessibility. The `ThisDeviceOnly` variants
  /// share their sibling's class: on a device they differ only in being left out of backups,
  /// and the simulated device makes none.
  var protectionClass: ProtectionClass {
    switch self {
    case .whenUnlocked, .whenUnlockedThisDeviceOnly: .whenUnlocked
    case .afterFirstUnlock, .afterFirstUnlockThisDeviceOnly: .afterFirstUnlock
    case .always, .alwaysThisDeviceOnly: .always
    case .whenPasscodeSetThisDeviceOnly: .whenPasscodeSet
    }
  }
}

/// A class key and its identifier: the first 8 bytes of SHA-256 over a fixed label and the
/// key, stored beside each item so that an item sealed under a key the keybag no longer has
/// (the passcode-set class after the passcode was removed) is told from one whose bytes were
/// changed. The identifier says nothing about the key.
final class ClassKey: Sendable {
  let bytes: [UInt8]
  let identifier: Data

  init(_ bytes: [UInt8]) throws(KeychainError) {
    self.bytes = bytes
    do {
      let digest = try Crypto.sha256(Array("AppGroups keychain class key identifier\0".utf8) + bytes)
      identifier = Data(digest.prefix(8))
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

/// The one place the keychain gets class keys from: the device's keybag.
struct ClassKeys: Sendable {
  let root: ContainerRoot

  /// The environment variable that holds, for now, the one class key of every class (64
  /// hexadecimal digits): the keychain's stand-in until the device's keybag is merged.
  static let interimVariable = "APPGROUPS_INTERIM_CLASS_KEY"

  /// The key of `protectionClass` now.
  func key(_ protectionClass: ProtectionClass) throws(ClassKeyProblem) -> ClassKey {
    if protectionClass == .whenPasscodeSet && !hasPasscode { throw .noPasscode }
    guard let hex = ProcessInfo.processInfo.environment[Self.interimVariable],
      let bytes = Self.bytes(hex: hex), bytes.count == 32
    else {
      throw .failed(
        KeychainError(
          errSecNotAvailable,
          "the device's keybag is not available yet in \(root.path) (set \(Self.interimVariable))"))
    }
    do {
      return try ClassKey(bytes)
    } catch {
      throw .failed(error)
    }
  }

  /// Whether the device has a passcode.
  var hasPasscode: Bool { false }

  private static func bytes(hex: String) -> [UInt8]? {
    var bytes: [UInt8] = []
    var high: UInt8?
    for character in hex.utf8 {
      guard let nibble = hexValue(character) else { return nil }
      if let h = high {
        bytes.append(h << 4 | nibble)
        high = nil
      } else {
        high = nibble
      }
    }
    return high == nil ? bytes : nil
  }

  private static func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: c - 0x30
    case 0x61...0x66: c - 0x61 + 10
    case 0x41...0x46: c - 0x41 + 10
    default: nil
    }
  }
}

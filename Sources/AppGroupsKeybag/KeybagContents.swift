import Foundation

/// What `<root>/Keybag/Keybag.plist` holds: a binary property list.
///
/// | key | value |
/// | --- | --- |
/// | `version` | 1 |
/// | `device` | the device's identity, 16 hex digits (the device state's) |
/// | `deviceKey` | 32 random bytes: the stand-in for a device's hardware key, in the root |
/// | `salt`, `iterations` | the passcode's PBKDF2-HMAC-SHA256 salt (16 bytes) and count |
/// | `passcode` | whether a passcode is set |
/// | `classes` | per class name, its 32-byte key sealed with AES-256-GCM (nonce, ciphertext, tag) |
/// | `failedAttempts`, `retryAfter` | wrong codes in a row, and when the next is heard (seconds since 1970) |
///
/// Class `none` is sealed with the device key; the others with the key derived from the
/// passcode when one is set, else with the device key. Each sealed key is bound to its device
/// and class (the associated data), so that a sealed key moved to another class or device
/// does not open. No class key is ever written unsealed.
struct KeybagContents: Sendable {
  var device: UInt64
  var deviceKey: [UInt8]
  var salt: [UInt8]
  var iterations: Int
  var hasPasscode: Bool
  var sealed: [Keybag.KeyClass: [UInt8]]
  var failedAttempts: Int
  var retryAfter: Double?

  static let version = 1

  init(
    device: UInt64, deviceKey: [UInt8], salt: [UInt8], iterations: Int, hasPasscode: Bool,
    sealed: [Keybag.KeyClass: [UInt8]], failedAttempts: Int, retryAfter: Double?
  ) {
    self.device = device
    self.deviceKey = deviceKey
    self.salt = salt
    self.iterations = iterations
    self.hasPasscode = hasPasscode
    self.sealed = sealed
    self.failedAttempts = failedAttempts
    self.retryAfter = retryAfter
  }
  static let saltLength = 16

  /// A new device's keybag: a device key, and a random key for each class a device without a
  /// passcode has, each sealed with the device key.
  static func new(device: UInt64) throws(KeybagError) -> KeybagContents {
    var contents = KeybagContents(
      device: device, deviceKey: try random(Crypto.keyLength), salt: try random(saltLength),
      iterations: Passcode.iterations, hasPasscode: false, sealed: [:], failedAttempts: 0,
      retryAfter: nil)
    for keyClass in Keybag.KeyClass.allCases where keyClass != .passcodeSetThisDeviceOnly {
      var key = try random(Crypto.keyLength)
      defer { Crypto.wipe(&key) }
      try contents.seal(key, as: keyClass, with: contents.deviceKey)
    }
    return contents
  }

  static func random(_ count: Int) throws(KeybagError) -> [UInt8] {
    do {
      return try Crypto.randomBytes(count)
    } catch {
      throw KeybagError(.io, "drawing random bytes for the keybag: \(error)")
    }
  }

  /// What binds a sealed key to its device and class.
  func associatedData(_ keyClass: Keybag.KeyClass) -> [UInt8] {
    Array("AppGroups keybag 1 \(String(device, radix: 16)) \(keyClass.rawValue)".utf8)
  }

  /// Seals `key` as `keyClass`'s with `wrappingKey`.
  mutating func seal(_ key: [UInt8], as keyClass: Keybag.KeyClass, with wrappingKey: [UInt8])
    throws(KeybagError)
  {
    do {
      sealed[keyClass] = try Crypto.seal(
        key, key: wrappingKey, associatedData: associatedData(keyClass)
      )
      .combined
    } catch {
      throw KeybagError(.io, "sealing the \(keyClass) key: \(error)")
    }
  }

  /// The key of `keyClass`, opened with `wrappingKey`; `nil` when this keybag has none for it.
  ///
  /// - Throws: a ``CryptoError`` whose `isAuthenticationFailure` says the wrapping key is not
  ///   the one it was sealed with (a wrong passcode), or the bytes were changed.
  func open(_ keyClass: Keybag.KeyClass, with wrappingKey: [UInt8]) throws(CryptoError) -> [UInt8]?
  {
    guard let bytes = sealed[keyClass] else { return nil }
    guard let box = SealedBox(combined: bytes) else {
      throw CryptoError("AES-256-GCM", reason: "the sealed key is too short", authentication: true)
    }
    return try Crypto.open(box, key: wrappingKey, associatedData: associatedData(keyClass))
  }

  /// Whether `keyClass`'s key is sealed with the passcode's key (else with the device key).
  func isPasscodeSealed(_ keyClass: Keybag.KeyClass) -> Bool {
    hasPasscode && keyClass != .none
  }

  // MARK: Coding

  /// The contents as a binary property list.
  func encoded() throws(KeybagError) -> [UInt8] {
    var classes: [String: Data] = [:]
    for (keyClass, bytes) in sealed { classes[keyClass.rawValue] = Data(bytes) }
    var list: [String: Any] = [
      "version": Self.version, "device": Self.hex(device), "deviceKey": Data(deviceKey),
      "salt": Data(salt), "iterations": iterations, "passcode": hasPasscode, "classes": classes,
      "failedAttempts": failedAttempts,
    ]
    if let retryAfter { list["retryAfter"] = retryAfter }
    do {
      return [UInt8](
        try PropertyListSerialization.data(fromPropertyList: list, format: .binary, options: 0))
    } catch {
      throw KeybagError(.io, "encoding the keybag: \(error.localizedDescription)")
    }
  }

  /// The contents of `bytes`, read from `path`.
  ///
  /// - Throws: ``KeybagError/Code/damaged`` naming what is wrong.
  init(decoding bytes: [UInt8], path: String) throws(KeybagError) {
    func damaged(_ reason: String) -> KeybagError {
      KeybagError(
        .damaged,
        "the keybag \(path) cannot be read (\(reason)); the device's keys cannot be unwrapped."
          + " Restore it from a backup; moving it aside starts a new keybag, and every keychain"
          + " item of this device is then lost")
    }
    let object: Any
    do {
      object = try PropertyListSerialization.propertyList(from: Data(bytes), format: nil)
    } catch {
      throw damaged("not a property list")
    }
    guard let list = object as? [String: Any] else { throw damaged("not a dictionary") }
    guard let version = list["version"] as? Int, version == Self.version else {
      throw damaged(
        "version \(list["version"].map { "\($0)" } ?? "missing"), expected \(Self.version)")
    }
    guard let deviceText = list["device"] as? String, let device = UInt64(deviceText, radix: 16),
      device != 0
    else { throw damaged("no device identity") }
    guard let deviceKey = list["deviceKey"] as? Data, deviceKey.count == Crypto.keyLength else {
      throw damaged("no 32-byte device key")
    }
    guard let salt = list["salt"] as? Data, salt.count == Self.saltLength else {
      throw damaged("no 16-byte salt")
    }
    guard let iterations = list["iterations"] as? Int, Passcode.iterationRange.contains(iterations)
    else { throw damaged("an iteration count outside \(Passcode.iterationRange)") }
    guard let hasPasscode = list["passcode"] as? Bool else { throw damaged("no passcode flag") }
    guard let classes = list["classes"] as? [String: Data] else { throw damaged("no class keys") }
    var sealed: [Keybag.KeyClass: [UInt8]] = [:]
    for (name, data) in classes {
      guard let keyClass = Keybag.KeyClass(rawValue: name) else {
        throw damaged("an unknown class \(name.debugDescription)")
      }
      sealed[keyClass] = [UInt8](data)
    }
    for keyClass in [Keybag.KeyClass.complete, .completeUntilFirstUserAuthentication, .none]
    where sealed[keyClass] == nil {
      throw damaged("no \(keyClass) key")
    }
    if hasPasscode != (sealed[.passcodeSetThisDeviceOnly] != nil) {
      throw damaged("the passcode-set key does not match the passcode flag")
    }
    let failed = list["failedAttempts"] as? Int ?? 0
    self.init(
      device: device, deviceKey: [UInt8](deviceKey), salt: [UInt8](salt), iterations: iterations,
      hasPasscode: hasPasscode, sealed: sealed, failedAttempts: max(failed, 0),
      retryAfter: list["retryAfter"] as? Double)
  }

  static func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }
}

/// The passcode's rules, its key derivation, and the delays after wrong codes.
enum Passcode {
  /// The shortest passcode, in characters: iOS's simple passcode has 4 digits.
  static let minimumLength = 4
  /// The longest, in bytes of UTF-8.
  static let maximumBytes = Keybag.maximumPasscodeBytes

  /// The bytes a passcode is derived from: its Unicode composed form (NFC), so that the same
  /// text typed as composed or decomposed characters is the same passcode.
  static func bytes(_ passcode: String) -> [UInt8] {
    Array(passcode.precomposedStringWithCanonicalMapping.utf8)
  }

  /// Why `passcode` cannot be set, or `nil`. Never quotes it.
  static func problem(with passcode: String) -> String? {
    let count = passcode.count
    if count < minimumLength {
      return "a passcode must have at least \(minimumLength) characters (this one has \(count))"
    }
    if passcode.utf8.count > maximumBytes {
      return
        "a passcode must fit in \(maximumBytes) bytes of UTF-8 (this one has \(passcode.utf8.count))"
    }
    if passcode.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
      return "a passcode cannot hold control characters (a newline, a tab, …)"
    }
    if passcode.first?.isWhitespace == true || passcode.last?.isWhitespace == true {
      return "a passcode cannot start or end with a space"
    }
    return nil
  }

  /// The counts a keybag may record.
  static let iterationRange = 10_000...50_000_000

  /// The PBKDF2 iteration count for a new passcode: as many as take about 100 ms of this
  /// machine's processor time (iOS calibrates its passcode derivation to about 80 ms of the
  /// device's), at least 100,000. Measured once per process in processor time, so that a
  /// loaded machine does not choose fewer.
  static let iterations: Int = {
    let trial = 20_000
    let start = threadTime()
    _ = try? Crypto.deriveKey(
      passcode: Array("calibration".utf8), salt: [UInt8](repeating: 0, count: 16), iterations: trial
    )
    let spent = max(threadTime() - start, 1)
    let target: UInt64 = 100_000_000
    let count = Int(UInt64(trial) * target / spent)
    return min(max(count / 1_000 * 1_000, 100_000), 5_000_000)
  }()

  /// The calling thread's processor time, in nanoseconds.
  private static func threadTime() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }

  /// How long the next attempt waits after `failed` wrong codes in a row, as iOS spaces
  /// them: nothing for the first four, then 1 minute, 5 minutes, 15 minutes (twice), and an
  /// hour for each one after.
  static func delay(afterFailures failed: Int) -> Double {
    switch failed {
    case ..<5: 0
    case 5: 60
    case 6: 5 * 60
    case 7, 8: 15 * 60
    default: 60 * 60
    }
  }
}

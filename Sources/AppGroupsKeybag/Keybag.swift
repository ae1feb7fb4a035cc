public import AppGroups
public import Foundation

/// The device's keybag: a random key per protection class, sealed with a key derived from the
/// passcode, and served to the processes of the root only while the device state allows.
///
/// ```swift
/// let keybag = Keybag(root: root)
/// try keybag.setPasscode("123456")               // the device must be unlocked
/// try Device(root: root).reboot()                // before first unlock: class C is gone
/// try keybag.unlock(passcode: "123456")          // a wrong code: KeybagError.wrongPasscode
/// ```
///
/// **Where the keys are.** Sealed, in `<root>/Keybag/Keybag.plist` (AES-256-GCM, each key
/// bound to its device and class). Unsealed, only in the kernel's keyring (`add_key(2)`),
/// which every process of the user reaches, a sandboxed app too, and which a restart of the
/// machine empties as it empties a device's Secure Enclave: an unsealed class key is never
/// written to a file.
///
/// **What the passcode protects.** With a passcode, every class but `none` is sealed with a
/// key derived from it (PBKDF2-HMAC-SHA256, a per-device salt, an iteration count measured to
/// take about 100 ms here). Without one, every class is sealed with the device key, which is
/// in the root: whoever can read the root can unseal everything. On a device a hardware key
/// that never leaves the chip does that part, and it also slows a guess of the passcode down
/// to the device's own speed; here a copy of the root can be attacked offline at the speed
/// of PBKDF2 (a six-digit code falls in about a day of one core of this machine). The keybag
/// keeps out the processes that go through the library and the apps whose sandbox does not
/// reach `<root>/Keybag`; it is not a vault against the machine's owner.
///
/// **Wrong codes.** Each wrong code is counted in the keybag; after five in a row, attempts
/// are heard only after a delay, as on iOS (1 minute, then 5, 15, 15, then an hour each),
/// whoever asks and across reboots. A right code resets the count.
///
/// Every change (a passcode set or cleared, an unlock) happens under the device's lock, so
/// two processes changing the device at once end in a state one of them asked for.
public struct Keybag: Sendable {
  /// The longest passcode, in bytes of UTF-8: ``setPasscode(_:current:)`` refuses a longer
  /// one, so no longer code can ever unlock the device.
  public static let maximumPasscodeBytes = 128

  /// A class of keys, as the keychain and the files use them.
  public enum KeyClass: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Class A: available while the device is unlocked, and for the grace after a lock.
    case complete
    /// Class C: available from the first unlock until the next reboot.
    case completeUntilFirstUserAuthentication
    /// Class D: always available.
    case none
    /// Available as ``complete``, and only while a passcode is set: made when a passcode is
    /// set and destroyed when it is cleared, so that what it sealed can never be read again
    /// (the keychain's `WhenPasscodeSetThisDeviceOnly`).
    case passcodeSetThisDeviceOnly

    public var description: String { rawValue }

    /// The protection class whose availability this class follows.
    var protectionClass: ProtectionClass {
      switch self {
      case .complete, .passcodeSetThisDeviceOnly: .complete
      case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
      case .none: .none
      }
    }
  }

  /// The root: the device.
  public let root: ContainerRoot

  /// The keybag of the device at `root`. Nothing is read or created until it is used.
  public init(root: ContainerRoot = .default) {
    self.root = root
  }

  /// The keybag's file: `<root>/Keybag/Keybag.plist`.
  public var path: String { KeybagStorage(root: root).path }

  // MARK: Class keys

  /// The 32-byte key of `keyClass`, when the device state makes the class available now.
  ///
  /// Any process of the root may call it: the key comes from the kernel's keyring, where the
  /// unlock put it. A key that needs no passcode (class `none`, and every class of a device
  /// without one) is unsealed and put there on first use, by a process that may read the
  /// keybag; `groupctl run` does it before it starts a sandboxed app. Wipe the key when done.
  ///
  /// Whether the device has no passcode (so that ``KeyClass/passcodeSetThisDeviceOnly`` does
  /// not exist, and what it sealed may be deleted) is decided by the keybag, under the
  /// device's lock, never by a state page alone: a page removed or zeroed reads as a new
  /// device without a passcode, while the keybag still has one. Only a process that cannot
  /// take the device's lock (a sandboxed app) goes by a page that names a device, which
  /// `groupctl run` brought in line with the keybag when it started the app.
  ///
  /// - Throws: ``KeybagError/Code/noPasscodeSet`` for ``KeyClass/passcodeSetThisDeviceOnly``
  ///   when the device has no passcode; ``KeybagError/Code/unavailable`` when the device is
  ///   locked past the grace or has not been unlocked since it started, or when the key was
  ///   dropped since the unlock; ``KeybagError/Code/keyringUnavailable``,
  ///   ``KeybagError/Code/damaged``, ``KeybagError/Code/io``.
  package func classKey(_ keyClass: KeyClass) throws(KeybagError) -> [UInt8] {
    let state = DeviceState.current(root: root)
    // "No passcode" on the page is not taken for the keybag's word: it is checked under the
    // device's lock below, where the record is brought in line with the keybag.
    let passcodeInDoubt = keyClass == .passcodeSetThisDeviceOnly && !state.hasPasscode
    if !passcodeInDoubt { try requireAvailable(keyClass, state) }
    if !passcodeInDoubt && state.deviceIdentifier != 0 {
      let keyring = DeviceKeyring(deviceIdentifier: state.deviceIdentifier, rootPath: root.path)
      if let key = try keyringCall({ () throws(DeviceKeyring.Failure) in
        try keyring.load(name: keyClass.rawValue, session: state.bootSession)
      }) {
        return key
      }
    }
    // Not in the keyring: unseal it, if no passcode is needed for it.
    let file: DeviceStateFile
    do {
      file = try DeviceStateFile(root: root)
    } catch {
      if passcodeInDoubt && state.deviceIdentifier != 0 { try requireAvailable(keyClass, state) }
      throw KeybagError(
        .unavailable,
        "the \(keyClass) key of the device at \(root.path) is not loaded, and this process"
          + " cannot load it (\(error.message)); launching the app with groupctl run loads the"
          + " keys the device state allows")
    }
    return try withDevice(file) { record, contents throws(KeybagError) -> [UInt8] in
      try requireAvailable(keyClass, record.state)
      let keyring = DeviceKeyring(deviceIdentifier: record.deviceIdentifier, rootPath: root.path)
      if let key = try keyringCall({ () throws(DeviceKeyring.Failure) in
        try keyring.load(name: keyClass.rawValue, session: record.bootSession)
      }) {
        return key
      }
      guard !contents.isPasscodeSealed(keyClass) else {
        throw KeybagError(
          .unavailable,
          "the \(keyClass) key of the device at \(root.path) is not in the kernel's keyring"
            + " (it was dropped since the last unlock); lock and unlock the device again")
      }
      let key = try open(keyClass, contents, with: contents.deviceKey)
      try keyringCall { () throws(DeviceKeyring.Failure) in
        try keyring.store(key, name: keyClass.rawValue, session: record.bootSession)
      }
      return key
    }
  }

  /// Makes sure the keybag exists and that every key the device state allows without a
  /// passcode is in the kernel's keyring: what `groupctl run` does before it starts an app,
  /// whose sandbox keeps it from the keybag.
  ///
  /// - Throws: ``KeybagError/Code/keyringUnavailable``, ``KeybagError/Code/damaged``,
  ///   ``KeybagError/Code/lockTimeout``, ``KeybagError/Code/io``.
  public func prepare() throws(KeybagError) {
    try withDevice { record, contents throws(KeybagError) in
      let keyring = DeviceKeyring(deviceIdentifier: record.deviceIdentifier, rootPath: root.path)
      for keyClass in KeyClass.allCases where contents.sealed[keyClass] != nil {
        guard !contents.isPasscodeSealed(keyClass) else { continue }
        let present = try keyringCall { () throws(DeviceKeyring.Failure) in
          try keyring.load(name: keyClass.rawValue, session: record.bootSession)
        }
        guard present == nil else { continue }
        var key = try open(keyClass, contents, with: contents.deviceKey)
        defer { Crypto.wipe(&key) }
        try keyringCall { () throws(DeviceKeyring.Failure) in
          try keyring.store(key, name: keyClass.rawValue, session: record.bootSession)
        }
      }
    }
  }

  // MARK: Passcode

  /// Whether a passcode is set on the device.
  public var hasPasscode: Bool { DeviceState.current(root: root).hasPasscode }

  /// Wrong codes in a row, and when the next attempt is heard (`nil`: now).
  public struct Attempts: Sendable, Hashable {
    /// How many wrong codes were given in a row.
    public let failed: Int
    /// When the next attempt will be heard; `nil` when it is heard now.
    public let retryAfter: Date?
  }

  /// The wrong codes given in a row, read from the keybag (nothing is changed).
  ///
  /// - Throws: ``KeybagError/Code/damaged`` or ``KeybagError/Code/io``.
  public func attempts() throws(KeybagError) -> Attempts {
    let storage = KeybagStorage(root: root)
    let bytes: [UInt8]?
    do {
      bytes = try storage.read()
    } catch {
      throw KeybagError(error)
    }
    guard let bytes else { return Attempts(failed: 0, retryAfter: nil) }
    let contents = try KeybagContents(decoding: bytes, path: storage.path)
    let retry = contents.retryAfter.flatMap { $0 > Date().timeIntervalSince1970 ? $0 : nil }
    return Attempts(
      failed: contents.failedAttempts, retryAfter: retry.map { Date(timeIntervalSince1970: $0) })
  }

  /// Sets the passcode, or changes it (then `current` must be the passcode now).
  ///
  /// The class keys stay the same: what they sealed stays readable. Setting the first
  /// passcode makes the ``KeyClass/passcodeSetThisDeviceOnly`` key. The device must be
  /// unlocked, as iOS's Settings is only reached unlocked.
  ///
  /// - Throws: ``KeybagError/Code/invalidPasscode`` when `passcode` breaks the rules (at
  ///   least 4 characters, at most 128 bytes, no control characters, no space at either
  ///   end); ``KeybagError/Code/unavailable`` when the device is locked;
  ///   ``KeybagError/Code/passcodeRequired`` when a passcode is set and `current` is `nil`;
  ///   ``KeybagError/Code/noPasscodeSet`` when `current` is given and none is set;
  ///   ``KeybagError/Code/wrongPasscode`` (counted), ``KeybagError/Code/rateLimited``, or
  ///   ``KeybagError/Code/invalidPasscode`` (not counted) for a `current` that breaks the
  ///   rules; then nothing changed.
  public func setPasscode(_ passcode: String, current: String? = nil) throws(KeybagError) {
    if let problem = Passcode.problem(with: passcode) {
      throw KeybagError(
        .invalidPasscode, "the new passcode was refused: \(problem); nothing was changed")
    }
    var early = current.flatMap(deriveBeforeLocking)
    defer { early?.wipe() }
    try withDevice(publishingEarly: { record, contents, publishNow throws(KeybagError) in
      try requireUnlocked(record, "changing the passcode")
      var keys: [KeyClass: [UInt8]] = [:]
      defer { Self.wipe(&keys) }
      if contents.hasPasscode {
        guard let current else {
          throw KeybagError(
            .passcodeRequired,
            "a passcode is set on the device at \(root.path): give the current one to change it;"
              + " nothing was changed")
        }
        var sealing = try verify(current, &contents, derived: early)
        defer { Crypto.wipe(&sealing) }
        for keyClass in [
          KeyClass.complete, .completeUntilFirstUserAuthentication, .passcodeSetThisDeviceOnly,
        ] {
          keys[keyClass] = try open(keyClass, contents, with: sealing)
        }
      } else {
        if current != nil {
          throw KeybagError(
            .noPasscodeSet,
            "no passcode is set on the device at \(root.path): give only the new one;"
              + " nothing was changed")
        }
        for keyClass in [KeyClass.complete, .completeUntilFirstUserAuthentication] {
          keys[keyClass] = try open(keyClass, contents, with: contents.deviceKey)
        }
        keys[.passcodeSetThisDeviceOnly] = try KeybagContents.random(Crypto.keyLength)
      }
      var next = contents
      next.salt = try KeybagContents.random(KeybagContents.saltLength)
      next.iterations = Passcode.iterations
      next.hasPasscode = true
      next.failedAttempts = 0
      next.retryAfter = nil
      var sealing = try derive(passcode, next)
      defer { Crypto.wipe(&sealing) }
      for (keyClass, key) in keys { try next.seal(key, as: keyClass, with: sealing) }
      // The device says it has a passcode before the keybag needs one: a process stopped
      // between the two writes leaves a device that restarts before its first unlock (the
      // unlock then finds the keybag without a passcode, and says so), never one that
      // restarts unlocked with every class sealed by a passcode.
      record.hasPasscode = true
      publishNow(record)
      try save(next)
      contents = next
      storeIgnoringUnavailableKeyring(keys, record)
    })
  }

  /// Clears the passcode: every class is then sealed with the device key, and the
  /// ``KeyClass/passcodeSetThisDeviceOnly`` key is destroyed, in the keybag and in the
  /// kernel's keyring, so that what it sealed can never be read again (iOS deletes those
  /// keychain items). The device must be unlocked.
  ///
  /// - Throws: ``KeybagError/Code/noPasscodeSet``; ``KeybagError/Code/unavailable`` when the
  ///   device is locked; ``KeybagError/Code/invalidPasscode`` (not counted) for a code that
  ///   breaks the passcode's rules; ``KeybagError/Code/wrongPasscode`` (counted),
  ///   ``KeybagError/Code/rateLimited``; then nothing changed.
  public func clearPasscode(current: String) throws(KeybagError) {
    var early = deriveBeforeLocking(current)
    defer { early?.wipe() }
    try withDevice { record, contents throws(KeybagError) in
      guard contents.hasPasscode else {
        throw KeybagError(
          .noPasscodeSet, "no passcode is set on the device at \(root.path); nothing was changed")
      }
      try requireUnlocked(record, "clearing the passcode")
      var sealing = try verify(current, &contents, derived: early)
      defer { Crypto.wipe(&sealing) }
      var keys: [KeyClass: [UInt8]] = [:]
      defer { Self.wipe(&keys) }
      for keyClass in [KeyClass.complete, .completeUntilFirstUserAuthentication] {
        keys[keyClass] = try open(keyClass, contents, with: sealing)
      }
      var next = contents
      next.hasPasscode = false
      next.sealed[.passcodeSetThisDeviceOnly] = nil
      for (keyClass, key) in keys { try next.seal(key, as: keyClass, with: next.deviceKey) }
      // The key goes from the kernel's keyring before the keybag forgets it: a process
      // stopped between the two leaves the passcode set and that class unavailable until the
      // next unlock puts the key back, never the key served after the keybag destroyed it.
      let keyring = DeviceKeyring(deviceIdentifier: record.deviceIdentifier, rootPath: root.path)
      do throws(DeviceKeyring.Failure) {
        try keyring.remove(
          name: KeyClass.passcodeSetThisDeviceOnly.rawValue, session: record.bootSession)
      } catch  where error.isUnavailable {
        // No keyring: the key was never stored there.
      } catch {
        throw KeybagError(
          .keyringUnavailable,
          "clearing the passcode of \(root.path): the \(KeyClass.passcodeSetThisDeviceOnly) key"
            + " cannot be removed from the kernel's keyring (\(error.message)); nothing was changed")
      }
      try save(next)
      contents = next
      record.hasPasscode = false
      storeIgnoringUnavailableKeyring(keys, record)
    }
  }

  /// Unlocks the device: with its passcode, when one is set; without a code otherwise.
  ///
  /// Every class key goes to the kernel's keyring, the device is `unlocked`, and every
  /// running app hears ``ProtectedData/didBecomeAvailableNotification``. A device already
  /// unlocked stays so (the code is still checked).
  ///
  /// - Returns: Whether the device was locked (or before first unlock).
  /// - Throws: ``KeybagError/Code/passcodeRequired`` when a passcode is set and none was
  ///   given; ``KeybagError/Code/noPasscodeSet`` when a code was given and none is set;
  ///   ``KeybagError/Code/invalidPasscode`` (not counted) for a code that breaks the
  ///   passcode's rules; ``KeybagError/Code/wrongPasscode`` (counted),
  ///   ``KeybagError/Code/rateLimited``; then the device is as it was.
  @discardableResult
  public func unlock(passcode: String? = nil) throws(KeybagError) -> Bool {
    var early = passcode.flatMap(deriveBeforeLocking)
    defer { early?.wipe() }
    return try withDevice { record, contents throws(KeybagError) -> Bool in
      var keys: [KeyClass: [UInt8]] = [:]
      defer { Self.wipe(&keys) }
      if contents.hasPasscode {
        guard let passcode else {
          throw KeybagError(
            .passcodeRequired,
            "a passcode is set on the device at \(root.path): give it to unlock; the device stays"
              + " \(record.lockState)")
        }
        var sealing = try verify(passcode, &contents, derived: early)
        defer { Crypto.wipe(&sealing) }
        for keyClass in KeyClass.allCases {
          keys[keyClass] = try open(
            keyClass, contents,
            with: contents.isPasscodeSealed(keyClass) ? sealing : contents.deviceKey)
        }
      } else {
        if passcode != nil {
          throw KeybagError(
            .noPasscodeSet,
            "no passcode is set on the device at \(root.path): unlock it without one; the device"
              + " stays \(record.lockState)")
        }
        for keyClass in KeyClass.allCases where contents.sealed[keyClass] != nil {
          keys[keyClass] = try open(keyClass, contents, with: contents.deviceKey)
        }
      }
      storeIgnoringUnavailableKeyring(keys, record)
      guard record.lockState != .unlocked else { return false }
      if record.hasPasscode { record.unlockCount &+= 1 }
      record.lockState = .unlocked
      record.lockedAt = 0
      record.grace = 0
      return true
    }
  }

  // MARK: Inside the device's lock

  /// Runs `body` under the device's lock with the device record and the keybag (made for a
  /// new device); what it leaves in the record is published when it returns, not when it
  /// throws.
  private func withDevice<Result>(
    _ opened: DeviceStateFile? = nil,
    _ body: (inout DeviceRecord, inout KeybagContents) throws(KeybagError) -> Result
  ) throws(KeybagError) -> Result {
    try withDevice(opened, publishingEarly: { record, contents, _ throws(KeybagError) in
      try body(&record, &contents)
    })
  }

  /// ``withDevice(_:_:)``, whose body may publish a record before it returns (see
  /// ``DeviceStateFile/transition(publishingEarly:)``).
  private func withDevice<Result>(
    _ opened: DeviceStateFile? = nil,
    publishingEarly body: (inout DeviceRecord, inout KeybagContents, @escaping (DeviceRecord) -> Void) throws(KeybagError) -> Result
  ) throws(KeybagError) -> Result {
    let file: DeviceStateFile
    if let opened {
      file = opened
    } else {
      do throws(AppGroupsError) {
        file = try DeviceStateFile(root: root)
      } catch {
        throw KeybagError(error)
      }
    }
    let outcome: Swift.Result<Result, KeybagError>
    do {
      outcome = try file.transition(publishingEarly: {
        record, publishNow throws(AppGroupsError) -> Swift.Result<Result, KeybagError> in
        var changed = record
        // The record brought in line with the keybag (see `load`): kept when the body fails.
        var aligned: DeviceRecord?
        do throws(KeybagError) {
          var contents = try load(&changed)
          aligned = changed
          let result = try body(&changed, &contents, publishNow)
          record = changed
          return .success(result)
        } catch {
          if let aligned { record = aligned }
          return .failure(error)
        }
      })
    } catch {
      throw KeybagError(error)
    }
    return try outcome.get()
  }

  /// The keybag, made (without a passcode) for a new device; the record brought in line with
  /// it. Call holding the device's lock.
  private func load(_ record: inout DeviceRecord) throws(KeybagError) -> KeybagContents {
    let storage = KeybagStorage(root: root)
    let bytes: [UInt8]?
    do {
      bytes = try storage.read()
    } catch {
      throw KeybagError(error)
    }
    guard let bytes else {
      if record.hasPasscode {
        throw KeybagError(
          .damaged,
          "the device at \(root.path) has a passcode but no keybag at \(storage.path): its keys"
            + " cannot be unwrapped. Restore the keybag from a backup; removing"
            + " \(DeviceStateFile.path(root: root)) starts the device anew, and every keychain"
            + " item of this device is then lost")
      }
      let contents = try KeybagContents.new(device: record.deviceIdentifier)
      try save(contents)
      return contents
    }
    let contents = try KeybagContents(decoding: bytes, path: storage.path)
    if contents.device != record.deviceIdentifier {
      // The device state was made again (removed by hand): the keybag names the device. It
      // starts as a device does, its keys dropped.
      try? DeviceKeyring(deviceIdentifier: contents.device, rootPath: root.path).removeAll()
      record.deviceIdentifier = contents.device
      record.hasPasscode = contents.hasPasscode
      record.lockState = contents.hasPasscode ? .beforeFirstUnlock : .unlocked
      record.lockedAt = 0
      record.grace = 0
    } else if record.hasPasscode != contents.hasPasscode {
      // A change of the passcode stopped between the keybag's write and the state's.
      record.hasPasscode = contents.hasPasscode
      // A device without a passcode is never before its first unlock: one restarted while the
      // state said "a passcode is set" (a passcode set stopped before the keybag was sealed
      // with it) comes back unlocked, as a device without one starts.
      if !contents.hasPasscode && record.lockState == .beforeFirstUnlock {
        record.lockState = .unlocked
        record.lockedAt = 0
        record.grace = 0
      }
    }
    return contents
  }

  private func save(_ contents: KeybagContents) throws(KeybagError) {
    TestHooks.beforeKeybagSave?(path)
    let bytes = try contents.encoded()
    do {
      try KeybagStorage(root: root).write(bytes)
    } catch {
      throw KeybagError(error)
    }
  }

  /// A passcode's key derived before the device's lock is taken, with the salt and the count
  /// of the keybag as it was read then.
  private struct EarlyKey {
    let salt: [UInt8]
    let iterations: Int
    var key: [UInt8]

    mutating func wipe() { Crypto.wipe(&key) }
  }

  /// The key of `passcode`, derived from the keybag as it is now, read without the device's
  /// lock: the derivation (about 100 ms of PBKDF2) runs before the lock is taken, where it
  /// held every other change of the device back (60 unlocks at once waited past the lock's
  /// 5 s). Nothing is judged here: ``verify(_:_:derived:)`` checks the code under the lock,
  /// after the delay that wrong codes earned, and counts a wrong one there, as before.
  /// `nil` when there is nothing to derive for (no keybag, no passcode, a code that breaks
  /// the rules, attempts not heard yet): the check under the lock says why.
  private func deriveBeforeLocking(_ passcode: String) -> EarlyKey? {
    guard let bytes = try? KeybagStorage(root: root).read(),
      let contents = try? KeybagContents(decoding: bytes, path: path), contents.hasPasscode
    else { return nil }
    if let retryAfter = contents.retryAfter, Date().timeIntervalSince1970 < retryAfter {
      return nil
    }
    guard Passcode.problem(with: passcode.precomposedStringWithCanonicalMapping) == nil,
      let key = try? derive(passcode, contents)
    else { return nil }
    return EarlyKey(salt: contents.salt, iterations: contents.iterations, key: key)
  }

  /// Checks `passcode` against the keybag, as iOS spaces attempts: refused before the delay
  /// that wrong codes earned; one that breaks the passcode's rules refused and not counted; a
  /// wrong one counted (and saved). Returns the passcode's key: `derived`'s when it was
  /// derived with this keybag's salt and count (see ``deriveBeforeLocking(_:)``), else
  /// derived here.
  private func verify(
    _ passcode: String, _ contents: inout KeybagContents, derived: EarlyKey? = nil
  ) throws(KeybagError) -> [UInt8] {
    let now = Date().timeIntervalSince1970
    if let retryAfter = contents.retryAfter, now < retryAfter {
      let wait = Int((retryAfter - now).rounded(.up))
      throw KeybagError(
        .rateLimited,
        "\(contents.failedAttempts) wrong passcodes in a row: the next attempt is heard in"
          + " \(Self.spoken(seconds: wait)); nothing was changed",
        retryAfter: Date(timeIntervalSince1970: retryAfter))
    }
    // A code that breaks the passcode's rules cannot be the passcode: it is refused as bad
    // input, and not counted as a wrong one.
    if let problem = Passcode.problem(with: passcode.precomposedStringWithCanonicalMapping) {
      throw KeybagError(
        .invalidPasscode,
        "that cannot be the passcode: \(problem); the attempt was not counted, and nothing was"
          + " changed")
    }
    var sealing: [UInt8]
    if let derived, derived.salt == contents.salt, derived.iterations == contents.iterations {
      sealing = derived.key
    } else {
      sealing = try derive(passcode, contents)
    }
    do {
      var check = try contents.open(.completeUntilFirstUserAuthentication, with: sealing) ?? []
      Crypto.wipe(&check)
    } catch  where error.isAuthenticationFailure {
      Crypto.wipe(&sealing)
      var next = contents
      next.failedAttempts += 1
      let delay = Passcode.delay(afterFailures: next.failedAttempts)
      next.retryAfter = delay > 0 ? now + delay : nil
      try save(next)
      contents = next
      var message = "wrong passcode (\(next.failedAttempts) in a row)"
      if delay > 0 {
        message += "; the next attempt is heard in \(Self.spoken(seconds: Int(delay)))"
      } else if next.failedAttempts == 4 {
        message += "; one more and attempts are spaced out"
      }
      throw KeybagError(.wrongPasscode, message + "; nothing else was changed")
    } catch {
      Crypto.wipe(&sealing)
      throw KeybagError(.io, "checking the passcode: \(error)")
    }
    if contents.failedAttempts != 0 || contents.retryAfter != nil {
      var next = contents
      next.failedAttempts = 0
      next.retryAfter = nil
      try save(next)
      contents = next
    }
    return sealing
  }

  private func derive(_ passcode: String, _ contents: KeybagContents) throws(KeybagError) -> [UInt8]
  {
    var bytes = Passcode.bytes(passcode)
    defer { Crypto.wipe(&bytes) }
    do {
      return try Crypto.deriveKey(
        passcode: bytes, salt: contents.salt, iterations: contents.iterations)
    } catch {
      throw KeybagError(.io, "deriving the passcode's key: \(error)")
    }
  }

  /// The key of `keyClass`, unsealed with `sealing`.
  private func open(
    _ keyClass: KeyClass, _ contents: KeybagContents, with sealing: [UInt8]
  ) throws(KeybagError) -> [UInt8] {
    do {
      guard let key = try contents.open(keyClass, with: sealing) else {
        throw KeybagError(.damaged, "the keybag \(path) holds no \(keyClass) key")
      }
      return key
    } catch let error as KeybagError {
      throw error
    } catch {
      throw KeybagError(
        .damaged,
        "the \(keyClass) key in the keybag \(path) does not open (\(error)): the keybag was"
          + " changed or damaged")
    }
  }

  private func requireAvailable(_ keyClass: KeyClass, _ state: DeviceState) throws(KeybagError) {
    if keyClass == .passcodeSetThisDeviceOnly && !state.hasPasscode {
      throw KeybagError(
        .noPasscodeSet,
        "the device at \(root.path) has no passcode: the \(keyClass) class exists only while"
          + " one is set")
    }
    if let reason = state.unavailabilityReason(for: keyClass.protectionClass) {
      throw KeybagError(.unavailable, "the \(keyClass) key is unavailable: \(reason)")
    }
  }

  private func requireUnlocked(_ record: DeviceRecord, _ doing: String) throws(KeybagError) {
    guard record.lockState == .unlocked else {
      throw KeybagError(
        .unavailable,
        "\(doing) needs the device unlocked (it is \(record.lockState)); nothing was changed")
    }
  }

  /// Stores unsealed keys in the kernel's keyring. Without a keyring the device state still
  /// changes, said once: no key can be served then.
  private func storeIgnoringUnavailableKeyring(_ keys: [KeyClass: [UInt8]], _ record: DeviceRecord)
  {
    let keyring = DeviceKeyring(deviceIdentifier: record.deviceIdentifier, rootPath: root.path)
    for (keyClass, key) in keys {
      do throws(DeviceKeyring.Failure) {
        try keyring.store(key, name: keyClass.rawValue, session: record.bootSession)
      } catch {
        Diagnostics.report(
          "the device at \(root.path) changed, but its keys cannot be kept: \(error.message)")
        return
      }
    }
  }

  /// A keyring call, its failure as the keybag's.
  private func keyringCall<Result>(
    _ body: () throws(DeviceKeyring.Failure) -> Result
  ) throws(KeybagError) -> Result {
    do {
      return try body()
    } catch {
      throw KeybagError(
        error.isUnavailable || error.isQuotaExceeded ? .keyringUnavailable : .io, error.message)
    }
  }

  private static func wipe(_ keys: inout [KeyClass: [UInt8]]) {
    for keyClass in Array(keys.keys) {
      keys[keyClass].map { key in
        var key = key
        Crypto.wipe(&key)
      }
    }
    keys.removeAll()
  }

  static func spoken(seconds: Int) -> String {
    if seconds >= 3600 { return "\((seconds + 3599) / 3600) h" }
    if seconds >= 60 { return "\((seconds + 59) / 60) min" }
    return "\(seconds) s"
  }
}

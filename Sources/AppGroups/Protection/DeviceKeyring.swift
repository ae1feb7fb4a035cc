
/// A device's unwrapped class keys, in the kernel's keyring: where a device keeps them in its
/// Secure Enclave, never in a file.
///
/// Each device (root) has one keyring, linked into the user's keyring and described
/// `appgroups:device:<id>:<mount namespace>:<root path>`, which holds one `user` key per
/// class, described `appgroups:<id>:<boot session>:<class>`, 32 bytes each. A reboot of the
/// device empties its keyring; a restart of the machine empties them all. Any process of the
/// user finds a key by its description (a sandboxed app too: Landlock does not govern keys),
/// in the root's own keyring only: two roots that are copies of each other (`cp -a`) share
/// the device identifier and boot session, and each still reads, expires and removes only
/// its own keys, so a lock or a passcode change of one never changes what the other reads.
///
/// The keybag (`AppGroupsKeybag`) unwraps keys and stores them here; the core expires the
/// `complete` keys at a lock, and drops them all at a reboot or when the root goes.
package struct DeviceKeyring: Sendable {
  /// The device's random identity (``DeviceState``'s).
  package let deviceIdentifier: UInt64
  /// The root's path, recorded in the keyring's description so that the keys of a root
  /// removed without a teardown can be found and dropped.
  package let rootPath: String

  /// The key names that go when the device locks (their class is available only while the
  /// device is unlocked): `complete`, and the keychain's passcode-set class.
  package static let unlockedOnlyNames = ["complete", "passcodeSetThisDeviceOnly"]

  package init(deviceIdentifier: UInt64, rootPath: String) {
    self.deviceIdentifier = deviceIdentifier
    self.rootPath = rootPath
  }

  /// A keyring operation that failed: what was being done and the system call's error, never
  /// a key.
  package struct Failure: Error, Sendable, CustomStringConvertible {
    /// What was being done and why it failed.
    package let message: String
    /// Whether the kernel refuses keys to this process altogether (no keyring support, or a
    /// seccomp filter such as a container runtime's default one).
    package let isUnavailable: Bool
    /// Whether the user's key quota is full (`EDQUOT`).
    package let isQuotaExceeded: Bool

    init(_ doing: String, _ error: SystemCallError) {
      isUnavailable = [.noFunction, .notPermitted, .permissionDenied].contains(error.code)
      isQuotaExceeded = error.code == .diskQuotaExceeded
      var message = "\(doing): \(error)"
      if isUnavailable {
        message +=
          "; the kernel's keyring is not available to this process (a container's"
          + " seccomp profile may block add_key(2) and keyctl(2))"
      } else if isQuotaExceeded {
        message +=
          "; the user's key quota is full (/proc/sys/kernel/keys/maxkeys and maxbytes;"
          + " /proc/key-users shows the use)"
      }
      self.message = message
    }

    package var description: String { message }
  }

  private var hex: String {
    let digits = String(deviceIdentifier, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }

  /// The keyring's description.
  var keyringDescription: String {
    "appgroups:device:\(hex):\(Self.mountNamespace):\(rootPath)"
  }

  /// The description of the key `name` in boot session `session`.
  func keyDescription(_ name: String, session: UInt64) -> String {
    "appgroups:\(hex):\(session):\(name)"
  }

  /// The device's keyring; `nil` when it does not exist and `create` is false.
  private func keyring(create: Bool) throws(Failure) -> KernelKeyring.Serial? {
    do {
      if let found = try KernelKeyring.search(
        KernelKeyring.userKeyring, type: "keyring", description: keyringDescription)
      {
        return found
      }
      guard create else { return nil }
      return try KernelKeyring.addKeyring(
        description: keyringDescription, to: KernelKeyring.userKeyring)
    } catch {
      throw Failure("finding the device's keyring", error)
    }
  }

  // MARK: Keys

  /// Stores `key` as `name` for boot session `session`, replacing the one there, with no
  /// expiry.
  package func store(_ key: [UInt8], name: String, session: UInt64) throws(Failure) {
    guard let keyring = try keyring(create: true) else { return }
    do {
      let serial = try KernelKeyring.add(
        description: keyDescription(name, session: session), payload: key, to: keyring)
      try KernelKeyring.setTimeout(serial, seconds: 0)
    } catch {
      throw Failure("storing the \(name) key in the kernel's keyring", error)
    }
  }

  /// The key `name` of boot session `session`; `nil` when it is not there (not unwrapped
  /// since the device started, or expired after a lock).
  package func load(name: String, session: UInt64) throws(Failure) -> [UInt8]? {
    guard let keyring = try keyring(create: false) else { return nil }
    do {
      guard
        let serial = try KernelKeyring.search(
          keyring, description: keyDescription(name, session: session))
      else { return nil }
      return try KernelKeyring.read(serial, maximumLength: 64)
    } catch {
      throw Failure("reading the \(name) key from the kernel's keyring", error)
    }
  }

  /// Makes the keys `names` expire after `grace` (at once for none): the kernel then frees
  /// them, whoever reads the device state or not. Rounded up to a whole second, the kernel's
  /// unit; the library refuses the class from the end of the grace itself.
  package func expire(_ names: [String], session: UInt64, after grace: Duration) throws(Failure) {
    guard let keyring = try keyring(create: false) else { return }
    for name in names {
      do {
        guard
          let serial = try KernelKeyring.search(
            keyring, description: keyDescription(name, session: session))
        else { continue }
        let nanoseconds = DeviceState.nanoseconds(grace)
        if nanoseconds == 0 {
          try KernelKeyring.invalidate(serial)
        } else {
          let seconds = UInt32(clamping: (nanoseconds + 999_999_999) / 1_000_000_000)
          try KernelKeyring.setTimeout(serial, seconds: seconds)
        }
      } catch {
        throw Failure("expiring the \(name) key", error)
      }
    }
  }

  /// Destroys the key `name` of boot session `session`, if it is there.
  package func remove(name: String, session: UInt64) throws(Failure) {
    guard let keyring = try keyring(create: false) else { return }
    do {
      if let serial = try KernelKeyring.search(
        keyring, description: keyDescription(name, session: session))
      {
        try KernelKeyring.invalidate(serial)
      }
    } catch {
      throw Failure("removing the \(name) key", error)
    }
  }

  /// Drops every key of the device (a reboot): the keyring stays, empty.
  package func removeAll() throws(Failure) {
    guard let keyring = try keyring(create: false) else { return }
    do {
      for serial in try KernelKeyring.links(of: keyring) { try KernelKeyring.invalidate(serial) }
      try KernelKeyring.clear(keyring)
    } catch {
      throw Failure("dropping the device's keys", error)
    }
  }

  /// Drops the device's keyring and every key in it (the root goes).
  package func destroy() throws(Failure) {
    guard let keyring = try keyring(create: false) else { return }
    do {
      for serial in try KernelKeyring.links(of: keyring) { try KernelKeyring.invalidate(serial) }
      try KernelKeyring.invalidate(keyring)
    } catch {
      throw Failure("dropping the device's keyring", error)
    }
  }

  // MARK: Roots that went

  /// Drops the keyring of the device at `root`, if it has one: for a test's teardown, or a
  /// root about to be removed. Nothing is created.
  package static func removeKeys(ofRoot root: ContainerRoot) {
    let record = DeviceStatePage.peek(DeviceStateFile.path(root: root))
    guard record.initialized, KernelKeyring.availability() == nil else { return }
    try? DeviceKeyring(deviceIdentifier: record.deviceIdentifier, rootPath: root.path).destroy()
  }

  /// Drops the keyrings of devices of this mount namespace whose root is gone (removed
  /// without a teardown, a test killed): their keys would count against the user's quota
  /// until the machine restarts. A root whose state names another device is gone too.
  package static func removeOrphans() {
    guard KernelKeyring.availability() == nil,
      let links = try? KernelKeyring.links(of: KernelKeyring.userKeyring)
    else { return }
    let prefix = "appgroups:device:"
    for serial in links {
      guard let (type, description) = KernelKeyring.describe(serial), type == "keyring",
        description.hasPrefix(prefix)
      else { continue }
      let fields = description.dropFirst(prefix.count).split(
        separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
      guard fields.count == 3, let identifier = UInt64(fields[0], radix: 16),
        String(fields[1]) == mountNamespace
      else { continue }
      let path = String(fields[2])
      let record = DeviceStatePage.peek(path + "/Device/state")
      if record.initialized && record.deviceIdentifier == identifier { continue }
      for key in (try? KernelKeyring.links(of: serial)) ?? [] { try? KernelKeyring.invalidate(key) }
      try? KernelKeyring.invalidate(serial)
    }
  }

  /// This process's mount namespace (`/proc/self/ns/mnt`), so that roots are looked for only
  /// where their path means the same folder.
  static let mountNamespace: String = {
    guard let text = Paths.linkContents("/proc/self/ns/mnt"), !text.isEmpty else { return "mnt" }
    // "mnt:[4026531832]": the number alone, so that the description's fields stay apart.
    return String(text.filter(\.isNumber))
  }()
}

import CAppGroupsLinux
import Glibc

/// The kernel's key retention service: keys held in kernel memory, found by type and
/// description, readable by the processes of the user that added them, gone when the machine
/// restarts. The device's class keys live here once unwrapped, as a device keeps them in its
/// Secure Enclave: never in a file.
///
/// Every call works on the user keyring (`KEY_SPEC_USER_KEYRING`) or on a keyring linked into
/// it, which every process of the user reaches: a sandboxed app too (Landlock does not govern
/// keys). Keys count against the user's quota (`/proc/sys/kernel/keys/maxkeys`, 200 keys and
/// `maxbytes` 20,000 bytes for a user other than root).
///
/// See: man 7 keyrings, man 2 add_key, man 2 keyctl.
enum KernelKeyring {
  /// A key's serial number.
  typealias Serial = Int32

  /// The user keyring, as the special id the calls accept.
  static let userKeyring: Serial = CAPPGROUPS_KEY_SPEC_USER_KEYRING

  /// Adds a key of type `user` holding `payload` to `keyring`, or updates the payload of the
  /// one already there with that description.
  ///
  /// The corresponding system call is `add_key(2)` (EDQUOT: the user's key quota is full).
  @discardableResult
  static func add(
    description: String, payload: [UInt8], to keyring: Serial
  ) throws(SystemCallError) -> Serial {
    try valueOrErrno("add_key", path: description) {
      payload.withUnsafeBytes { bytes in
        cappgroups_add_key("user", description, bytes.baseAddress, bytes.count, keyring)
      }
    }
  }

  /// Adds an empty keyring to `keyring` (or finds the one there with that description).
  ///
  /// The corresponding system call is `add_key(2)` with type `keyring`.
  static func addKeyring(description: String, to keyring: Serial) throws(SystemCallError) -> Serial
  {
    try valueOrErrno("add_key", path: description) {
      cappgroups_add_key("keyring", description, nil, 0, keyring)
    }
  }

  /// The key of `type` and `description` in `keyring` or a keyring linked from it; `nil`
  /// when there is none, or when it expired or was revoked.
  ///
  /// The corresponding system call is `keyctl(KEYCTL_SEARCH)`.
  static func search(
    _ keyring: Serial, type: String = "user", description: String
  ) throws(SystemCallError) -> Serial? {
    do {
      return try valueOrErrno("keyctl(KEYCTL_SEARCH)", path: description) {
        cappgroups_keyctl_search(keyring, type, description)
      }
    } catch  where [ENOKEY, EKEYEXPIRED, EKEYREVOKED].contains(error.errno) {
      return nil
    }
  }

  /// A key's payload; `nil` when the key is gone, expired or revoked since it was found.
  ///
  /// The corresponding system call is `keyctl(KEYCTL_READ)`.
  static func read(_ key: Serial, maximumLength: Int = 4096) throws(SystemCallError) -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: maximumLength)
    do throws(SystemCallError) {
      let length = try valueOrErrno("keyctl(KEYCTL_READ)") {
        buffer.withUnsafeMutableBytes { cappgroups_keyctl_read(key, $0.baseAddress, $0.count) }
      }
      guard length <= maximumLength else {
        throw SystemCallError(call: "keyctl(KEYCTL_READ)", path: nil, errno: EMSGSIZE)
      }
      buffer.removeSubrange(length...)
      return buffer
    } catch  where [ENOKEY, EKEYEXPIRED, EKEYREVOKED].contains(error.errno) {
      return nil
    }
  }

  /// The serial numbers a keyring links.
  static func links(of keyring: Serial) throws(SystemCallError) -> [Serial] {
    guard let bytes = try read(keyring, maximumLength: 64 * 1024) else { return [] }
    return stride(from: 0, to: bytes.count - 3, by: 4).map { offset in
      bytes[offset..<offset + 4].withUnsafeBytes { $0.loadUnaligned(as: Serial.self) }
    }
  }

  /// A key's type and description; `nil` when it is gone or cannot be viewed.
  ///
  /// The corresponding system call is `keyctl(KEYCTL_DESCRIBE)`.
  static func describe(_ key: Serial) -> (type: String, description: String)? {
    var buffer = [CChar](repeating: 0, count: 4200)
    let length = buffer.withUnsafeMutableBufferPointer {
      cappgroups_keyctl_describe(key, $0.baseAddress, $0.count)
    }
    guard length > 0, length <= buffer.count else { return nil }
    let text = String(
      decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    // "type;uid;gid;perm;description": the description may hold semicolons itself.
    let fields = text.split(separator: ";", maxSplits: 4, omittingEmptySubsequences: false)
    guard fields.count == 5 else { return nil }
    return (String(fields[0]), String(fields[4]))
  }

  /// Makes `key` expire `seconds` from now (0: never), after which it can no longer be found
  /// or read, and the kernel frees it.
  ///
  /// The corresponding system call is `keyctl(KEYCTL_SET_TIMEOUT)`.
  static func setTimeout(_ key: Serial, seconds: UInt32) throws(SystemCallError) {
    _ = try valueOrErrno("keyctl(KEYCTL_SET_TIMEOUT)") {
      cappgroups_keyctl_set_timeout(key, seconds)
    }
  }

  /// Destroys `key` at once, whatever links it. A key already gone is not an error.
  ///
  /// The corresponding system call is `keyctl(KEYCTL_INVALIDATE)`.
  static func invalidate(_ key: Serial) throws(SystemCallError) {
    do {
      _ = try valueOrErrno("keyctl(KEYCTL_INVALIDATE)") { cappgroups_keyctl_invalidate(key) }
    } catch  where [ENOKEY, EKEYEXPIRED, EKEYREVOKED].contains(error.errno) {}
  }

  /// Unlinks every key from `keyring`.
  ///
  /// The corresponding system call is `keyctl(KEYCTL_CLEAR)`.
  static func clear(_ keyring: Serial) throws(SystemCallError) {
    _ = try valueOrErrno("keyctl(KEYCTL_CLEAR)") { cappgroups_keyctl_clear(keyring) }
  }

  /// Whether the kernel offers keys to this process: `nil` when it does, else the failure
  /// (ENOSYS: not built in; EPERM or ENOSYS from a seccomp filter, such as a container
  /// runtime's default one).
  static func availability() -> SystemCallError? {
    do {
      _ = try valueOrErrno("keyctl(KEYCTL_GET_KEYRING_ID)") { cappgroups_keyctl_user_keyring() }
      return nil
    } catch {
      return error
    }
  }
}

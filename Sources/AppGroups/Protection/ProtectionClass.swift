/// When data can be read, as iOS's data protection classes say: a file's protection, the
/// class of a suite's preferences file, the key class of a keychain item.
///
/// On a device with a passcode:
///
/// | class | readable |
/// | --- | --- |
/// | ``complete`` | while unlocked, and for the grace period (10 s) after a lock |
/// | ``completeUnlessOpen`` | as `complete` for opening an existing file; a new file can be created while locked |
/// | ``completeUntilFirstUserAuthentication`` | from the first unlock until the next reboot (iOS's default, and the class of preferences files) |
/// | ``none`` | always |
///
/// Without a passcode every class is always available.
public enum ProtectionClass: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// Class A: available while the device is unlocked (`NSFileProtectionComplete`).
  case complete
  /// Class B: a new file can be written while locked; an existing one opens only while
  /// unlocked (`NSFileProtectionCompleteUnlessOpen`).
  case completeUnlessOpen
  /// Class C: available from the first unlock until the next reboot
  /// (`NSFileProtectionCompleteUntilFirstUserAuthentication`).
  case completeUntilFirstUserAuthentication
  /// Class D: always available (`NSFileProtectionNone`).
  case none

  public var description: String { rawValue }
}

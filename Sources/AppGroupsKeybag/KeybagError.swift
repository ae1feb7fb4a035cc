import AppGroups
public import Foundation

/// Why the keybag refused: a device state that makes a class unavailable, a passcode that is
/// wrong, missing or refused, a damaged keybag, or the system.
///
/// The message names the device, the class and the reason; it never holds a passcode, a key
/// or any byte derived from one.
///
/// ```swift
/// do {
///   try keybag.unlock(passcode: code)
/// } catch KeybagError.Code.wrongPasscode {
///   print("try again")
/// } catch KeybagError.Code.rateLimited {
///   // too many wrong codes: KeybagError.retryAfter says when the next attempt is heard
/// }
/// ```
public struct KeybagError: Error, Sendable, CustomStringConvertible {
  /// What kind of refusal this is. New codes may be added; match the ones you handle.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    fileprivate let name: String

    /// The device state makes the class unavailable now: the device is locked (past the
    /// grace), has not been unlocked since it started, has no passcode (for the passcode-set
    /// class), or must be unlocked first (to change the passcode). The keychain answers
    /// `errSecInteractionNotAllowed` (-25308).
    public static let unavailable = Code(name: "unavailable")
    /// The code given is not the device's passcode. The attempt was counted; nothing else
    /// changed.
    public static let wrongPasscode = Code(name: "wrongPasscode")
    /// A passcode is set and none was given.
    public static let passcodeRequired = Code(name: "passcodeRequired")
    /// A code was given, but the device has no passcode.
    public static let noPasscodeSet = Code(name: "noPasscodeSet")
    /// Too many wrong codes in a row: no attempt is heard before ``KeybagError/retryAfter``.
    public static let rateLimited = Code(name: "rateLimited")
    /// A passcode breaks the rules (length, characters): a new one is refused, and a code
    /// given to unlock or to confirm a change is refused without being counted as a wrong one.
    public static let invalidPasscode = Code(name: "invalidPasscode")
    /// The keybag cannot be read, belongs to another device, or a key in it does not open
    /// with the device key: it was changed or damaged.
    public static let damaged = Code(name: "damaged")
    /// The kernel's keyring, where unwrapped keys live, refuses this process (or the user's
    /// key quota is full).
    public static let keyringUnavailable = Code(name: "keyringUnavailable")
    /// Another process held the device's lock for too long.
    public static let lockTimeout = Code(name: "lockTimeout")
    /// A file or system call failed.
    public static let io = Code(name: "io")

    public var description: String { name }

    /// Matches an error against a code, so that `catch KeybagError.Code.wrongPasscode` works.
    public static func ~= (code: Code, error: any Error) -> Bool {
      (error as? KeybagError)?.code == code
    }
  }

  /// What kind of refusal this is.
  public let code: Code
  /// A sentence that says what was refused and why.
  public let message: String
  /// For ``Code/rateLimited``: when the next attempt will be heard.
  public let retryAfter: Date?

  /// Creates an error.
  public init(_ code: Code, _ message: String, retryAfter: Date? = nil) {
    self.code = code
    self.message = message
    self.retryAfter = retryAfter
  }

  /// An error of the core (the device's lock, a file) as the keybag's.
  init(_ error: AppGroupsError) {
    let code: Code =
      switch error.code {
      case .lockTimeout: .lockTimeout
      default: .io
      }
    self.init(code, error.message)
  }

  public var description: String { message }
}

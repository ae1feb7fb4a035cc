/// The one error the Swift-shaped keychain throws: an `OSStatus`, as the `SecItem` calls
/// return it, and a sentence that names what was asked and why it failed.
///
/// Match it by its code in a `catch` clause:
///
/// ```swift
/// do {
///   let token = try Keychain(service: "com.example.auth").get("refreshToken")
/// } catch KeychainError.Code.interactionNotAllowed {
///   // The device is locked: try again once it is unlocked; do not sign the user out.
/// } catch KeychainError.Code.missingEntitlement {
///   // The manifest does not give this app the access group.
/// }
/// ```
///
/// The message never holds a secret.
public struct KeychainError: Error, Sendable, Equatable, CustomStringConvertible {
  /// A status a keychain call returns, to match errors by.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// The `OSStatus`.
    public let status: OSStatus

    /// The code of `status`.
    public init(_ status: OSStatus) {
      self.status = status
    }

    /// `errSecItemNotFound` (-25300).
    public static let itemNotFound = Code(errSecItemNotFound)
    /// `errSecDuplicateItem` (-25299).
    public static let duplicateItem = Code(errSecDuplicateItem)
    /// `errSecParam` (-50).
    public static let param = Code(errSecParam)
    /// `errSecMissingEntitlement` (-34018).
    public static let missingEntitlement = Code(errSecMissingEntitlement)
    /// `errSecInteractionNotAllowed` (-25308).
    public static let interactionNotAllowed = Code(errSecInteractionNotAllowed)
    /// `errSecAuthFailed` (-25293).
    public static let authFailed = Code(errSecAuthFailed)
    /// `errSecNoSuchClass` (-25306).
    public static let noSuchClass = Code(errSecNoSuchClass)
    /// `errSecReadOnlyAttr` (-25309).
    public static let readOnlyAttribute = Code(errSecReadOnlyAttr)
    /// `errSecUnimplemented` (-4).
    public static let unimplemented = Code(errSecUnimplemented)
    /// `errSecIO` (-36).
    public static let io = Code(errSecIO)
    /// `errSecNotAvailable` (-25291).
    public static let notAvailable = Code(errSecNotAvailable)
    /// `errSecDataTooLarge` (-25302).
    public static let dataTooLarge = Code(errSecDataTooLarge)
    /// `errSecDiskFull` (-34): an access group's file would grow past
    /// ``Keychain/maximumAccessGroupBytes``.
    public static let diskFull = Code(errSecDiskFull)
    /// `errSecAllocate` (-108): an access group's file is larger than
    /// ``Keychain/maximumAccessGroupBytes`` and is not read.
    public static let allocate = Code(errSecAllocate)
    /// `errSecDecode` (-26275): an item's bytes are not what was asked for (not UTF-8 text,
    /// for ``Keychain/get(_:)``), or an access group's file was written by another version of
    /// the keychain and is left as it is.
    public static let decode = Code(errSecDecode)

    /// The constant's name and number: `errSecItemNotFound (-25300)`.
    public var description: String {
      if let name = statusNames[status] { return "\(name) (\(status))" }
      return "OSStatus \(status)"
    }

    /// Matches an error against a code, so that `catch KeychainError.Code.itemNotFound` works.
    public static func ~= (code: Code, error: any Error) -> Bool {
      (error as? KeychainError)?.code == code
    }
  }

  /// The status the corresponding `SecItem` call returns.
  public let status: OSStatus
  /// What was asked and why it failed, in a sentence; never a secret.
  public let message: String

  /// Set on the `errSecDuplicateItem` of an add over an item that does not open on this
  /// device (sealed under a key its keybag does not have, or changed on disk): no other
  /// process will remove it, so an update-else-add stops at it.
  var existingDoesNotOpen = false

  /// An error with `status` and `message`.
  public init(_ status: OSStatus, _ message: String) {
    self.status = status
    self.message = message
  }

  /// The code, to match.
  public var code: Code { Code(status) }

  /// `errSecItemNotFound (-25300): The specified item could not be found in the keychain.`
  /// followed by the message.
  public var description: String {
    let apple = statusMessages[status] ?? "OSStatus \(status)."
    return "\(code): \(apple) \(message)"
  }
}

public import Foundation

// The result codes of the keychain's calls, with Apple's names, numbers and messages.

/// No error.
public let errSecSuccess: OSStatus = 0
/// No error: `noErr`, as older code spells `errSecSuccess`.
public let noErr: OSStatus = 0
/// Function or operation not implemented: certificates, keys, identities, access-control
/// objects and item references are not kept by this keychain.
public let errSecUnimplemented: OSStatus = -4
/// The disk is full: an `SecItemAdd` or `SecItemUpdate` that would grow an access group's file
/// past ``Keychain/maximumAccessGroupBytes``; nothing was written.
public let errSecDiskFull: OSStatus = -34
/// I/O error: a file of the keychain could not be read or written (the message of the
/// Swift-shaped ``KeychainError`` names it), or another process held its lock past the bound.
public let errSecIO: OSStatus = -36
/// One or more parameters passed to a function were not valid: an unknown key, a value of the
/// wrong type, a key the call does not take.
public let errSecParam: OSStatus = -50
/// Failed to allocate memory: an access group's file is larger than
/// ``Keychain/maximumAccessGroupBytes``, and is refused rather than read into memory.
public let errSecAllocate: OSStatus = -108
/// An internal component failed.
public let errSecInternalComponent: OSStatus = -2070
/// No keychain is available: the device's keybag cannot be used.
public let errSecNotAvailable: OSStatus = -25291
/// The user name or passphrase you entered is not correct: an item that needs a passcode
/// (`kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly`) on a device without one.
public let errSecAuthFailed: OSStatus = -25293
/// The specified item already exists in the keychain.
public let errSecDuplicateItem: OSStatus = -25299
/// The specified item could not be found in the keychain.
public let errSecItemNotFound: OSStatus = -25300
/// This item contains information which is too large: its data (`kSecValueData`) is longer
/// than ``Keychain/maximumDataBytes``.
public let errSecDataTooLarge: OSStatus = -25302
/// The specified attribute does not exist.
public let errSecNoSuchAttr: OSStatus = -25303
/// The specified item does not appear to be a valid keychain item: an unknown `kSecClass`.
public let errSecNoSuchClass: OSStatus = -25306
/// User interaction is not allowed: the device's state makes the item's protection class
/// unavailable (locked, or not unlocked since it started).
public let errSecInteractionNotAllowed: OSStatus = -25308
/// The specified attribute could not be modified: the creation and modification dates.
public let errSecReadOnlyAttr: OSStatus = -25309
/// The contents of this item cannot be retrieved.
public let errSecDataNotAvailable: OSStatus = -25316
/// Unable to decode the provided data: an item whose bytes on disk were changed.
public let errSecDecode: OSStatus = -26275
/// A required entitlement isn't present: the app holds no keychain access group, or not the
/// one it named.
public let errSecMissingEntitlement: OSStatus = -34018

/// Apple's message for each status this keychain returns, and for a few more an app may test.
let statusMessages: [OSStatus: String] = [
  errSecSuccess: "No error.",
  errSecUnimplemented: "Function or operation not implemented.",
  errSecDiskFull: "The disk is full.",
  errSecIO: "I/O error.",
  errSecParam: "One or more parameters passed to a function were not valid.",
  errSecAllocate: "Failed to allocate memory.",
  -128: "User canceled the operation.",
  -909: "Bad parameter or invalid state for operation.",
  errSecInternalComponent: "An internal component failed.",
  errSecNotAvailable: "No keychain is available. You may need to restart your computer.",
  -25292: "This keychain cannot be modified.",
  errSecAuthFailed: "The user name or passphrase you entered is not correct.",
  -25294: "The specified keychain could not be found.",
  -25295: "The specified keychain is not a valid keychain file.",
  errSecDuplicateItem: "The specified item already exists in the keychain.",
  errSecItemNotFound: "The specified item could not be found in the keychain.",
  -25301: "There is not enough memory available to use the specified item.",
  errSecDataTooLarge: "This item contains information which is too large or in a format that cannot be"
    + " displayed.",
  errSecNoSuchAttr: "The specified attribute does not exist.",
  -25304: "The specified item is no longer valid. It may have been deleted from the keychain.",
  errSecNoSuchClass: "The specified item does not appear to be a valid keychain item.",
  errSecInteractionNotAllowed: "User interaction is not allowed.",
  errSecReadOnlyAttr: "The specified attribute could not be modified.",
  -25315: "User interaction is required, but is currently not allowed.",
  errSecDataNotAvailable: "The contents of this item cannot be retrieved.",
  -25317: "The contents of this item cannot be modified.",
  errSecDecode: "Unable to decode the provided data.",
  errSecMissingEntitlement: "A required entitlement isn't present.",
  -34020: "Client is restricted and is not permitted to perform this operation.",
]

/// A sentence that says what `status` means, as Apple words it; for a code it does not know,
/// `OSStatus <code>`.
///
/// - Parameters:
///   - status: A result code of a keychain call.
///   - reserved: Pass `nil`.
/// - Returns: The message.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?)
  -> CFString?
{
  CFString(string: statusMessages[status] ?? "OSStatus \(status)")
}

/// The constant's name of each status this keychain returns (`errSecItemNotFound`).
let statusNames: [OSStatus: String] = [
  errSecSuccess: "errSecSuccess", errSecUnimplemented: "errSecUnimplemented", errSecDiskFull: "errSecDiskFull",
  errSecIO: "errSecIO",
  errSecParam: "errSecParam", errSecAllocate: "errSecAllocate",
  errSecInternalComponent: "errSecInternalComponent", errSecNotAvailable: "errSecNotAvailable",
  errSecAuthFailed: "errSecAuthFailed", errSecDuplicateItem: "errSecDuplicateItem",
  errSecItemNotFound: "errSecItemNotFound", errSecDataTooLarge: "errSecDataTooLarge",
  errSecNoSuchAttr: "errSecNoSuchAttr",
  errSecNoSuchClass: "errSecNoSuchClass",
  errSecInteractionNotAllowed: "errSecInteractionNotAllowed",
  errSecReadOnlyAttr: "errSecReadOnlyAttr", errSecDataNotAvailable: "errSecDataNotAvailable",
  errSecDecode: "errSecDecode", errSecMissingEntitlement: "errSecMissingEntitlement",
]

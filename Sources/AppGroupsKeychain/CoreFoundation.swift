// Re-exported, as Security re-exports CoreFoundation on Apple platforms: the aliases below name
// Foundation classes, so a module that uses them in its interface (an app's keychain wrapper)
// needs only `public import AppGroupsKeychain`.
@_exported public import Foundation

// Foundation on Linux has no CoreFoundation types in its interface, and no `Security`. Code
// written for iOS spells the keychain's calls with them: `query as CFDictionary`,
// `kSecClass as String`, `var result: CFTypeRef?`, `result as? Data`,
// `SecCopyErrorMessageString(status, nil) as String?`. These aliases name the Foundation
// classes the CoreFoundation types are toll-free bridged to on Apple platforms, so that such
// code compiles with only its `import Security` changed to `import AppGroupsKeychain`:
//
// - a `CFString` is an `NSString`: `kSecClass as String` bridges, and `kSecMatchLimitOne`
//   goes into a `[String: AnyObject]`;
// - a `CFDictionary` is an `NSDictionary`: `query as CFDictionary` bridges a
//   `[String: Any]` (or a `[CFString: Any]`), and `[kSecClass: …] as CFDictionary` is a
//   literal;
// - a `CFTypeRef` is an `AnyObject`: results come back as Foundation objects (`NSData`,
//   `NSDictionary`, `NSArray`, `NSNull`), which `as? Data`, `as? [String: Any]` and
//   `as? [[String: Any]]` bridge on Linux as they do on Apple platforms.

/// A string key or value of the keychain's dictionaries: an `NSString`.
public typealias CFString = NSString
/// A query or attribute dictionary: an `NSDictionary`. iOS code's `query as CFDictionary`
/// bridges a Swift dictionary.
public typealias CFDictionary = NSDictionary
/// A mutable query dictionary.
public typealias CFMutableDictionary = NSMutableDictionary
/// An array of results.
public typealias CFArray = NSArray
/// The bytes of a secret.
public typealias CFData = NSData
/// A result of `SecItemCopyMatching`: a Foundation object (`NSData`, `NSDictionary`,
/// `NSArray`, `NSNull`).
public typealias CFTypeRef = AnyObject
/// A Boolean value of a query: an `NSNumber`, as `kCFBooleanTrue` is on Apple platforms.
public typealias CFBoolean = NSNumber
/// A number value of a query: an `NSNumber`.
public typealias CFNumber = NSNumber
/// A count or an index, as CoreFoundation's.
public typealias CFIndex = Int
/// The result code of every keychain call: `errSecSuccess` (0), or a negative code with a
/// message (``SecCopyErrorMessageString(_:_:)``).
public typealias OSStatus = Int32

/// The Boolean true of a query, `kCFBooleanTrue`. Implicitly unwrapped, as on Apple
/// platforms, so that both `kCFBooleanTrue` and `kCFBooleanTrue!` compile.
public let kCFBooleanTrue: CFBoolean! = NSNumber(value: true)
/// The Boolean false of a query, `kCFBooleanFalse`.
public let kCFBooleanFalse: CFBoolean! = NSNumber(value: false)

/// The one error AppGroups throws.
///
/// Every error has a ``Code`` you can match in a `catch` clause, a message in
/// plain words that names the thing it was given and the reason it failed,
/// and, where a lower layer failed, the underlying ``cause``.
///
/// ```swift
/// do {
///   let shared = try GroupDefaults(
///     suiteName: "group.com.example.shared", identity: try .current(), root: .default)
///   shared.set(3, forKey: "unreadCount")
/// } catch AppGroupsError.Code.notEntitled {
///   // show the user what to grant: `groupctl grant BUNDLE-ID group.com.example.shared`
/// } catch {
///   print(error)  // the message names the suite, the manifest and the reason
/// }
/// ```
public struct AppGroupsError: Error, Sendable, CustomStringConvertible {
  /// What kind of failure this is. New codes may be added; match the ones you handle.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    fileprivate enum Kind: String, Hashable, Sendable {
      case invalidName
      case notEntitled
      case reservedSuiteName
      case executableMismatch
      case invalidManifest
      case outsideRoot
      case corruptPreferences
      case lockTimeout
      case unsupportedValue
      case sizeLimitExceeded
      case forcedValue
      case notFound
      case outOfRange
      case migrationFailed
      case io
      case sandboxUnavailable
      case outsideContainer
      case presenterTimeout
      case presenterRefused
      case cancelled
      case protectedDataUnavailable
    }
    fileprivate let kind: Kind

    /// A suite, group, bundle identifier or key is empty, too long, or has
    /// characters that cannot name a file.
    public static let invalidName = Code(kind: .invalidName)
    /// The identity is not entitled to the application group it asked for.
    public static let notEntitled = Code(kind: .notEntitled)
    /// The suite name is reserved: the app's own bundle identifier or `NSGlobalDomain`.
    public static let reservedSuiteName = Code(kind: .reservedSuiteName)
    /// The process claims a bundle identifier that the manifest binds to another executable.
    public static let executableMismatch = Code(kind: .executableMismatch)
    /// The entitlement manifest cannot be read or has an entry of the wrong shape.
    public static let invalidManifest = Code(kind: .invalidManifest)
    /// A path would lead outside the root (a symbolic link out of it).
    public static let outsideRoot = Code(kind: .outsideRoot)
    /// A preferences file could not be parsed; it was moved aside, not deleted.
    public static let corruptPreferences = Code(kind: .corruptPreferences)
    /// Another process held a suite's lock for longer than the bound.
    public static let lockTimeout = Code(kind: .lockTimeout)
    /// A value is not a property-list value.
    public static let unsupportedValue = Code(kind: .unsupportedValue)
    /// A write would make a domain larger than its size limit.
    public static let sizeLimitExceeded = Code(kind: .sizeLimitExceeded)
    /// The key is forced by a managed (administrator) value and cannot be written.
    public static let forcedValue = Code(kind: .forcedValue)
    /// A file, key or entry that was asked for does not exist.
    public static let notFound = Code(kind: .notFound)
    /// A value is outside the range a ``PreferenceKey`` declares with the `.reject` policy.
    public static let outOfRange = Code(kind: .outOfRange)
    /// A step of a ``PreferenceSchema``'s migration threw; nothing of the migration was committed.
    public static let migrationFailed = Code(kind: .migrationFailed)
    /// A system call failed.
    public static let io = Code(kind: .io)
    /// The process cannot be confined as asked: the kernel offers no Landlock, or other
    /// threads already run and the kernel cannot restrict them all at once.
    public static let sandboxUnavailable = Code(kind: .sandboxUnavailable)
    /// A file coordination was asked for an item that is not in a container of a root, or
    /// not a file URL.
    public static let outsideContainer = Code(kind: .outsideContainer)
    /// A file presenter did not answer a coordinated access within the bound: its app is
    /// suspended or stopped, or its callback never called the completion handler.
    public static let presenterTimeout = Code(kind: .presenterTimeout)
    /// A file presenter's callback refused a coordinated access (it passed an error).
    public static let presenterRefused = Code(kind: .presenterRefused)
    /// A coordinated access was cancelled (``NSFileCoordinator/cancel()``) before it began.
    public static let cancelled = Code(kind: .cancelled)
    /// The device state makes the data unavailable now: a suite's file before the first
    /// unlock, a file whose protection class is unavailable while the device is locked.
    public static let protectedDataUnavailable = Code(kind: .protectedDataUnavailable)

    public var description: String { kind.rawValue }

    /// Matches an error against a code, so that `catch AppGroupsError.Code.notEntitled` works.
    public static func ~= (code: Code, error: any Error) -> Bool {
      (error as? AppGroupsError)?.code == code
    }
  }

  /// What kind of failure this is.
  public let code: Code
  /// A sentence that names what was given and why it failed.
  public let message: String
  /// The lower-level error that caused this one, if any.
  public let cause: (any Error & Sendable)?

  /// Creates an error.
  public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
    self.code = code
    self.message = message
    self.cause = cause
  }

  /// The message, then the cause in brackets unless the message already says it (the
  /// package's own errors put the failed call and its errno text in the message).
  public var description: String {
    guard let cause else { return message }
    let said = "\(cause)"
    return message.contains(said) ? message : "\(message) (\(said))"
  }
}

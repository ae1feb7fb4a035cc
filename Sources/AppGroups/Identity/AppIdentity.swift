import Foundation

/// Who a process is: a bundle identifier, and the executable it runs.
///
/// The manifest entitles bundle identifiers to application groups, and may
/// bind a bundle identifier to an executable, so that a process cannot
/// claim another app's identity by setting `APPGROUPS_BUNDLE_ID`.
///
/// ```swift
/// let me = try AppIdentity.current()                       // this process
/// let widget = try AppIdentity(bundleIdentifier: "com.example.widget")  // for a tool or test
/// ```
public struct AppIdentity: Sendable, Hashable, CustomStringConvertible {
  /// The environment variable that sets the current process's bundle
  /// identifier: `APPGROUPS_BUNDLE_ID`.
  public static let environmentVariable = "APPGROUPS_BUNDLE_ID"

  /// The bundle identifier, such as `com.example.app`.
  public let bundleIdentifier: String

  /// The running executable's path (`realpath(3)` of `/proc/self/exe`) when
  /// this identity is the current process's; `nil` for an identity made up
  /// by a tool or test. A manifest's executable binding is checked against it.
  public let executablePath: String?

  /// An identity with the given bundle identifier and, optionally, the
  /// executable it claims to run.
  ///
  /// - Throws: `.invalidName` when the bundle identifier is empty, longer
  ///   than 255 bytes, has characters other than `A-Z a-z 0-9 . _ -`, starts
  ///   with `.` or `-`, or contains `..`.
  public init(bundleIdentifier: String, executablePath: String? = nil) throws(AppGroupsError) {
    try Names.validateBundleIdentifier(bundleIdentifier)
    self.bundleIdentifier = bundleIdentifier
    self.executablePath = executablePath
  }

  /// The current process's identity.
  ///
  /// The bundle identifier is `APPGROUPS_BUNDLE_ID` when it is set and not
  /// empty; else `fallback` when given; else the executable's file name, as
  /// a process without a bundle is named on Apple platforms. The executable
  /// path is `realpath(3)` of `/proc/self/exe`.
  ///
  /// Inside a test scoped by `AppGroupsTesting`, the test's own identity.
  ///
  /// - Parameter fallback: the bundle identifier to use when the
  ///   environment does not set one, such as an example app's own.
  /// - Throws: `.invalidName` when the chosen bundle identifier is not a
  ///   valid name; the message says where it came from.
  public static func current(fallback: String? = nil) throws(AppGroupsError) -> AppIdentity {
    if let scoped = ScopedEnvironment.identity { return scoped }
    return try current(
      environment: ProcessInfo.processInfo.environment,
      executablePath: Paths.realPath("/proc/self/exe"),
      fallback: fallback)
  }

  /// The identity `environment`, `executablePath` and `fallback` choose, as
  /// ``current(fallback:)`` does; separate so that it can be tested.
  static func current(
    environment: [String: String], executablePath: String?, fallback: String?
  ) throws(AppGroupsError) -> AppIdentity {
    let name: String
    let source: String
    if let value = environment[environmentVariable], !value.isEmpty {
      name = value
      source = environmentVariable
    } else if let fallback {
      name = fallback
      source = "the fallback"
    } else if let executablePath {
      name = (executablePath as NSString).lastPathComponent
      source = "the executable's name, \(executablePath)"
    } else {
      throw AppGroupsError(
        .invalidName,
        "cannot tell who this process is: \(environmentVariable) is not set, no fallback "
          + "was given, and /proc/self/exe cannot be resolved")
    }
    do {
      return try AppIdentity(bundleIdentifier: name, executablePath: executablePath)
    } catch {
      throw AppGroupsError(
        .invalidName, "\(error.message) (from \(source)); set \(environmentVariable)")
    }
  }

  /// The bundle identifier, followed by the executable path when known.
  public var description: String {
    if let executablePath { return "\(bundleIdentifier) (\(executablePath))" }
    return bundleIdentifier
  }

  /// Whether this identity runs `executable`, as a manifest binds it: an
  /// absolute path compared with the executable path (the binding's own
  /// links resolved when it exists). A bare file name, from an older
  /// manifest, names no file and matches nothing. An identity with no
  /// executable path matches every binding.
  func runs(_ executable: String) -> Bool {
    guard let executablePath else { return true }
    guard executable.hasPrefix("/") else { return false }
    if executablePath == executable { return true }
    return Paths.realPath(executable) == executablePath
  }
}

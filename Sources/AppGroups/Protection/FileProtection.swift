public import Foundation

/// Protection classes for files in containers, with Apple's spelling: the class comes from
/// `Data.WritingOptions` (`.completeFileProtection`, `.completeFileProtectionUnlessOpen`,
/// `.completeFileProtectionUntilFirstUserAuthentication`, `.noFileProtection`) or is set as
/// `FileAttributeKey.protectionKey` with a `FileProtectionType`, and a read or an open through
/// these calls fails as Apple's does while the device state keeps the class away.
///
/// ```swift
/// let url = container.appendingPathComponent("token.json")
/// try FileProtection.write(data, to: url, options: [.atomic, .completeFileProtection])
/// // Locked, past the grace:
/// do { _ = try FileProtection.read(contentsOf: url) }
/// catch let error as CocoaError where error.code == .fileReadNoPermission { /* 257, EPERM */ }
/// ```
///
/// swift-corelibs-foundation has these names and ignores them: `Data.write(to:options:)`
/// accepts the options and records nothing, `FileManager.setAttributes` accepts the key and
/// `attributesOfItem` never returns it. The calls here are the ones that mean it.
///
/// **Where the class lives.** In the file's extended attribute `user.appgroups.protection`
/// (``attributeName``), holding the `FileProtectionType` raw value. ``write(_:to:options:root:)``
/// sets it on the temporary file before the rename, so an atomic replacement never shows a
/// file without its class. A file with no class of its own takes its folder's (the nearest
/// one up to the root that has one), else iOS's default for app files,
/// `completeUntilFirstUserAuthentication`. A file replaced by something that ignores the
/// library (Foundation's own `.atomic` write, `mv`, an editor) loses its attribute and reads
/// as its folder's class or the default.
///
/// **Who enforces it.** The library, for every process that reads through these calls,
/// sandboxed or not. Nothing else: the kernel does not know the classes (Landlock's rules are
/// fixed when a sandbox starts, and the files are not encrypted), so a process that reads the
/// file with `open(2)` or Foundation reads it whatever the device state. A file already open
/// stays readable through its descriptor; iOS also cuts a class `complete` file that is open
/// when its key goes, which the library cannot do. The device is asked at every call, so a
/// process that outlived `groupctl device reboot` is refused from the reboot on; what it read
/// before stays in its memory.
public enum FileProtection {
  /// The extended attribute holding a file's (or folder's) class.
  public static let attributeName = "user.appgroups.protection"

  /// The class of a file that has none of its own and no folder's: iOS's default for the
  /// files an app writes.
  public static let defaultType = FileProtectionType.completeUntilFirstUserAuthentication

  /// The protection class `type` stands for; `nil` for a value Apple does not define.
  public static func protectionClass(_ type: FileProtectionType) -> ProtectionClass? {
    // (`FileProtectionType` is not `Equatable` in swift-corelibs-foundation: by raw value.)
    switch type.rawValue {
    case FileProtectionType.complete.rawValue: .complete
    case FileProtectionType.completeUnlessOpen.rawValue: .completeUnlessOpen
    case FileProtectionType.completeUntilFirstUserAuthentication.rawValue:
      .completeUntilFirstUserAuthentication
    case FileProtectionType.none.rawValue: ProtectionClass.none
    default: nil
    }
  }

  /// The `FileProtectionType` of `protectionClass`.
  public static func type(_ protectionClass: ProtectionClass) -> FileProtectionType {
    switch protectionClass {
    case .complete: .complete
    case .completeUnlessOpen: .completeUnlessOpen
    case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
    case .none: .none
    }
  }

  /// The class the protection bits of `options` ask for; `nil` when they ask none.
  static func type(in options: Data.WritingOptions) -> FileProtectionType? {
    switch options.intersection(.fileProtectionMask) {
    case .completeFileProtection: .complete
    case .completeFileProtectionUnlessOpen: .completeUnlessOpen
    case .completeFileProtectionUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
    case .noFileProtection: FileProtectionType.none
    default: nil
    }
  }

  // MARK: Reading

  /// The contents of the file at `url`, when the device state makes its class available.
  ///
  /// Class `complete` and `completeUnlessOpen` files open while the device is unlocked and
  /// for the grace after a lock; `completeUntilFirstUserAuthentication` from the first unlock
  /// on; `none` always.
  ///
  /// - Throws: `CocoaError(.fileReadNoPermission)` (257), its underlying error
  ///   `POSIXError(.EPERM)` and a reason in `NSLocalizedFailureReasonErrorKey`, as Apple's
  ///   `Data(contentsOf:)` fails on a protected file; Foundation's own errors for a missing
  ///   or unreadable file; `AppGroupsError.outsideRoot` for a file outside `root`.
  public static func read(contentsOf url: URL, root: ContainerRoot = .default) throws -> Data {
    try requireReadable(url, root: root)
    return try Data(contentsOf: url)
  }

  /// Opens the file at `url` for reading, when the device state makes its class available
  /// (see ``read(contentsOf:root:)``). The handle stays readable after a lock.
  ///
  /// - Throws: As ``read(contentsOf:root:)``.
  public static func open(forReadingFrom url: URL, root: ContainerRoot = .default) throws
    -> FileHandle
  {
    try requireReadable(url, root: root)
    return try FileHandle(forReadingFrom: url)
  }

  /// Refuses a read of `url` the device state does not allow now.
  static func requireReadable(_ url: URL, root: ContainerRoot) throws {
    let path = try inside(root, url)
    let type = try effectiveType(ofPath: path, root: root)
    let state = DeviceState.current(root: root)
    guard let protectionClass = protectionClass(type),
      let reason = state.unavailabilityReason(for: protectionClass)
    else { return }
    throw CocoaError(
      .fileReadNoPermission,
      userInfo: [
        NSFilePathErrorKey: path, NSUnderlyingErrorKey: POSIXError(.EPERM),
        NSLocalizedFailureReasonErrorKey:
          "\(path) is of class \(protectionClass), unavailable now: \(reason)",
      ])
  }

  // MARK: Writing

  /// Writes `data` to `url` atomically and durably (a temporary file, `fsync(2)`,
  /// `rename(2)`), with the class the protection bits of `options` ask for; without one, the
  /// class the file had, else its folder's or the default.
  ///
  /// A file of class `complete`, or `completeUntilFirstUserAuthentication` before the first
  /// unlock, cannot be written while its class is unavailable (iOS has no key to write it
  /// with); class `completeUnlessOpen` can be created while locked, as on iOS, but not
  /// replaced; class `none` always.
  ///
  /// - Throws: `CocoaError(.fileWriteNoPermission)` (513, underlying `EPERM`) while the class
  ///   is unavailable; otherwise Foundation's code for the failed call (`.fileNoSuchFile`,
  ///   `.fileWriteOutOfSpace`, …) with the call and its errno text;
  ///   `AppGroupsError.outsideRoot` for a file outside `root`. The file there is left as it
  ///   was.
  public static func write(
    _ data: Data, to url: URL, options: Data.WritingOptions = [], root: ContainerRoot = .default
  ) throws {
    let path = try inside(root, url)
    let exists = FileStatus(atPath: path) != nil
    let chosen = try type(in: options) ?? effectiveType(ofPath: path, root: root)
    guard let protectionClass = protectionClass(chosen) else {
      throw unknownClass(chosen, path)
    }
    let state = DeviceState.current(root: root)
    let creatingUnlessOpen = protectionClass == .completeUnlessOpen && !exists
    if !creatingUnlessOpen, let reason = state.unavailabilityReason(for: protectionClass) {
      throw CocoaError(
        .fileWriteNoPermission,
        userInfo: [
          NSFilePathErrorKey: path, NSUnderlyingErrorKey: POSIXError(.EPERM),
          NSLocalizedFailureReasonErrorKey:
            "\(path) would be of class \(protectionClass), unavailable now: \(reason)",
        ])
    }
    do throws(SystemCallError) {
      // The temporary file gets the class before its contents and before the rename.
      try FileSystem.writeAtomically(
        data, to: path,
        attribute: FileSystem.ExtendedAttribute(name: attributeName, value: chosen.rawValue))
    } catch {
      let code: CocoaError.Code =
        switch error.code {
        case .noSuchFileOrDirectory, .notDirectory: .fileNoSuchFile
        case .permissionDenied, .notPermitted: .fileWriteNoPermission
        case .noSpace, .diskQuotaExceeded: .fileWriteOutOfSpace
        case .readOnlyFileSystem: .fileWriteVolumeReadOnly
        default: .fileWriteUnknown
        }
      throw CocoaError(
        code,
        userInfo: [
          NSFilePathErrorKey: path,
          NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: error.errno) ?? .EIO),
          NSLocalizedFailureReasonErrorKey: "\(error)",
        ])
    }
  }

  // MARK: Classes

  /// Records `type` as the class of the file or folder at `url` (a folder's is the class of
  /// the files in it that have none of their own).
  ///
  /// - Throws: `AppGroupsError` `.invalidName` for a type Apple does not define, `.notFound`
  ///   when nothing is at `url`, `.outsideRoot`, `.io` (a file system without extended
  ///   attributes says `ENOTSUP`).
  public static func setProtection(
    _ type: FileProtectionType, ofItemAt url: URL, root: ContainerRoot = .default
  ) throws {
    let path = try inside(root, url)
    guard protectionClass(type) != nil else { throw unknownClass(type, path) }
    guard FileStatus(atPath: path) != nil else {
      throw AppGroupsError(.notFound, "\(path) does not exist; its protection was not set")
    }
    do throws(SystemCallError) {
      try FileSystem.setExtendedAttribute(
        FileSystem.ExtendedAttribute(name: attributeName, value: type.rawValue), ofPath: path)
    } catch {
      throw AppGroupsError(io: error, "recording the protection class of \(path)")
    }
  }

  /// The class of the file at `url`: its own, else its folder's, else ``defaultType``.
  ///
  /// - Throws: `AppGroupsError.outsideRoot` for a file outside `root`; `.invalidName` when the
  ///   recorded class is not one Apple defines (the attribute was written by hand).
  public static func protection(ofItemAt url: URL, root: ContainerRoot = .default) throws
    -> FileProtectionType
  {
    let path = try inside(root, url)
    return try effectiveType(ofPath: path, root: root)
  }

  /// `FileManager.setAttributes(_:ofItemAtPath:)`, with `.protectionKey` recorded (a
  /// `FileProtectionType`, or its raw value as a `String`); the other attributes go to
  /// `FileManager`.
  public static func setAttributes(
    _ attributes: [FileAttributeKey: Any], ofItemAtPath path: String,
    root: ContainerRoot = .default
  ) throws {
    var others = attributes
    if let value = others.removeValue(forKey: .protectionKey) {
      let type: FileProtectionType
      if let given = value as? FileProtectionType {
        type = given
      } else if let text = value as? String {
        type = FileProtectionType(rawValue: text)
      } else {
        throw AppGroupsError(
          .unsupportedValue,
          "the protection of \(path) must be a FileProtectionType, not \(Swift.type(of: value))")
      }
      try setProtection(type, ofItemAt: URL(fileURLWithPath: path), root: root)
    }
    if !others.isEmpty { try FileManager.default.setAttributes(others, ofItemAtPath: path) }
  }

  /// `FileManager.attributesOfItem(atPath:)`, with `.protectionKey` (the file's class, as
  /// ``protection(ofItemAt:root:)`` says).
  public static func attributesOfItem(atPath path: String, root: ContainerRoot = .default) throws
    -> [FileAttributeKey: Any]
  {
    var attributes = try FileManager.default.attributesOfItem(atPath: path)
    attributes[.protectionKey] = try protection(ofItemAt: URL(fileURLWithPath: path), root: root)
    return attributes
  }

  // MARK: Helpers

  /// The class recorded on `path`, else on the nearest folder up to the root, else the default.
  static func effectiveType(ofPath path: String, root: ContainerRoot) throws -> FileProtectionType {
    var current = path
    while current == path || ContainerRoot.isStrictlyInside(current, root.path) {
      if let recorded = recordedType(ofPath: current) {
        guard protectionClass(recorded) != nil else { throw unknownClass(recorded, current) }
        return recorded
      }
      current = FileSystem.folder(of: current)
    }
    return defaultType
  }

  /// The class recorded on `path`; `nil` when there is none (or no such file).
  package static func recordedType(ofPath path: String) -> FileProtectionType? {
    FileSystem.extendedAttribute(attributeName, ofPath: path, maximumLength: 127).map(
      FileProtectionType.init(rawValue:))
  }

  /// Writes `text` as the attribute of `path`, as a tool outside the library could: for tests
  /// of damaged attributes. Returns whether it was written.
  package static func writeRawAttribute(_ text: String, ofPath path: String) -> Bool {
    (try? FileSystem.setExtendedAttribute(
      FileSystem.ExtendedAttribute(name: attributeName, value: text), ofPath: path)) != nil
  }

  /// The standardized path of `url`, which must be inside `root`.
  private static func inside(_ root: ContainerRoot, _ url: URL) throws(AppGroupsError) -> String {
    let path = ContainerRoot.lexicallyStandardized(
      url.path, currentDirectory: Paths.currentDirectory())
    guard ContainerRoot.isStrictlyInside(path, root.path) else {
      throw AppGroupsError(
        .outsideRoot,
        "\(path) is not inside the root \(root.path): protection classes are for files in its"
          + " containers")
    }
    return path
  }

  private static func unknownClass(_ type: FileProtectionType, _ path: String) -> AppGroupsError {
    AppGroupsError(
      .invalidName,
      "\(type.rawValue.debugDescription) (for \(path)) is not a protection class; use"
        + " complete, completeUnlessOpen, completeUntilFirstUserAuthentication or none")
  }
}

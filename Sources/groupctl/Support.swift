import AppGroups
import Foundation
import Synchronization

/// A failed operation: `groupctl` prints "groupctl: <message>" on stderr and
/// exits with 1. The message names what it was given and why it failed.
struct CommandFailure: Error, CustomStringConvertible {
  var message: String

  init(_ message: String) {
    self.message = message
  }

  var description: String { message }
}

/// SIGINT and SIGTERM during a command that writes a suite (`write`, `delete`, `rename`,
/// `import`): taken, not left to end the process, so that the exit status still tells whether
/// the write is on disk (0) or not (1). The write is bounded (the lock's wait, 10 s) and ends
/// first; `groupctl` then says it was interrupted. Left to the library, the signal landed the
/// write and then ended the process (status 143): a script would retry a write that was on
/// disk.
enum WriteInterruption {
  /// Records SIGINT and SIGTERM from now on, before a suite is opened (the library then
  /// leaves them alone).
  static func take() { Processes.recordInterruptAndTerminate() }

  /// Whether SIGINT or SIGTERM came while taken: looked at when the command has ended.
  static var happened: Bool { Processes.wasInterrupted }
}

/// That a command whose product is a change (a passcode set, an item deleted, a device locked),
/// not what it prints, has made it: recorded by the command once the change is durable, before
/// it prints its confirmation. A confirmation that then cannot all be written (`> /dev/full`, a
/// full disk) is said on stderr with the recorded words, and the exit status stays the
/// command's (0): told 1, a script would take the change for not made, or make it again.
///
/// A command whose output is its product (`read`, `export`, `list`, `keychain dump`) records
/// none: its output cut short fails it (exit 1), as `read > file` must not exit 0 over a
/// truncated file. See ``Groupctl/flushingOutput(_:)`` and ``ImmediateLines/finish()``.
enum ChangeMade {
  private static let words = Mutex<String?>(nil)

  /// What a message adds for a change made and on disk.
  static let onDisk = "the change is made and on disk"

  /// Records that the command's change is made and durable; `what` is said when its
  /// confirmation cannot all be written (``onDisk``, or what stands when nothing needed
  /// changing: "the device was already locked; nothing was changed").
  static func record(_ what: String = onDisk) { words.withLock { $0 = what } }

  /// The words recorded, or `nil` when the command vouches for no change: its output is its
  /// product, or its change is not made.
  static var recorded: String? { words.withLock { $0 } }
}

extension GlobalOptions {
  /// The root: `--root`, else `APPGROUPS_ROOT`, else the library's default.
  var containerRoot: ContainerRoot {
    root.map { ContainerRoot(path: $0) } ?? .default
  }

  /// The identity given with `--as`, or `nil` for the administrator.
  ///
  /// - Throws: The library's `.invalidName` for a bad bundle id.
  func appIdentity() throws(AppGroupsError) -> AppIdentity? {
    try identity.map { bundleID throws(AppGroupsError) in
      try AppIdentity(bundleIdentifier: bundleID)
    }
  }

  /// Refuses `--as` for a command that only an administrator runs.
  func requireAdministrator(_ command: String) throws(ValidationError) {
    guard let identity else { return }
    throw ValidationError(
      "\(command) is an administrator's command; --as \(identity) does not apply to it")
  }
}

/// A DOMAIN resolved for whoever runs the command: the administrator (no
/// `--as`: any domain) or an app (`--as`: what the manifest entitles it to).
struct ResolvedDomain {
  let domain: DomainArgument
  let location: SuiteLocation
  /// The identity of `--as`, `nil` for the administrator.
  let identity: AppIdentity?

  /// Resolves `domain`. Creates nothing on disk.
  ///
  /// - Parameter readsData: Whether the command reads or writes the suite's values as the
  ///   app: then, for `--as`, the device's data protection applies (before the first unlock
  ///   an app can neither read nor write a suite's file). `explain`, `report` and `watch`
  ///   say so instead.
  /// - Throws: The library's refusal (`.notEntitled`, `.invalidName`, …), or
  ///   a ``CommandFailure`` when an app asks for another app's suite, or when `readsData` and
  ///   the device state keeps the suite's file from the app.
  init(_ domain: DomainArgument, globals: GlobalOptions, readsData: Bool = true) throws {
    self.domain = domain
    identity = try globals.appIdentity()
    location = try Self.location(of: domain, for: identity, root: globals.containerRoot)
    if readsData, let identity, let reason = protectedDataUnavailability {
      throw CommandFailure(
        "\(domain) cannot be read or written as \(identity.bundleIdentifier): protected data"
          + " is unavailable (\(reason)); an app sees none of its values until the first unlock"
          + " ('groupctl device unlock'); nothing was read or written")
    }
  }

  private static func location(
    of domain: DomainArgument, for identity: AppIdentity?, root: ContainerRoot
  ) throws -> SuiteLocation {
    guard let identity else {
      return try SuiteResolver.administratorLocation(for: domain, root: root)
    }
    let resolver = SuiteResolver(identity: identity, root: root)
    switch domain {
    case .global:
      // Every app reads the global domain; check the identity all the same.
      _ = try resolver.resolve(suiteName: nil)
      return resolver.globalDomain()
    case .group(let groupID):
      return try resolver.resolve(suiteName: groupID)
    case .standard(let bundleID) where bundleID == identity.bundleIdentifier:
      return try resolver.resolve(suiteName: nil)
    case .privateSuite(let bundleID, let name) where bundleID == identity.bundleIdentifier:
      return try resolver.resolve(suiteName: name)
    case .standard(let bundleID), .privateSuite(let bundleID, _):
      throw CommandFailure(
        "\(identity.bundleIdentifier) cannot open \(domain): it belongs to \(bundleID); an app"
          + " opens only its own domain (\(identity.bundleIdentifier)), its private suites"
          + " (\(identity.bundleIdentifier):SUITE), the groups it is entitled to, and"
          + " NSGlobalDomain")
    }
  }

  /// Why an app cannot read the suite's file now (before the device's first unlock), or
  /// `nil`.
  var protectedDataUnavailability: String? {
    DeviceState.current(root: location.root)
      .unavailabilityReason(for: .completeUntilFirstUserAuthentication)
  }

  /// The suite's file.
  var path: String { location.fileURL.path }

  /// The values in the suite's file and its journal, read without opening the suite (so
  /// nothing is created and an unreadable file is left as it is), as an app reads them: a
  /// value that cannot be read is left out and said on stderr, the other keys are read.
  /// `nil` when there is no file.
  ///
  /// - Throws: ``CommandFailure`` naming the file when it cannot be read or parsed.
  func storedValues() throws -> [String: PropertyListValue]? {
    // A link on the way to the suite's folder is refused as an app's open refuses it.
    if let refusal = location.root.linkRefusal(onTheWayTo: location.fileURL.deletingLastPathComponent().path) {
      throw CommandFailure("\(domain): \(refusal.message)")
    }
    do {
      guard let suite = try StoredSuite.read(plistAt: path) else { return nil }
      if !suite.skipped.isEmpty {
        printError(
          "\(domain): \(suite.skipped.count) value(s) in \(path) cannot be read and are left out:"
            + " \(suite.skipped.joined(separator: ", ")); the other keys are read, as an app reads"
            + " them (see 'groupctl doctor')")
      }
      if let problem = suite.journalOfAnotherVersion {
        printError("\(domain): \(problem) (see 'groupctl doctor')")
      }
      if let problem = suite.journalGone {
        printError("\(domain): \(problem) (see 'groupctl doctor')")
      }
      if let damage = suite.journalDamage {
        let next =
          suite.journalRecordsRead
          ? "what could be read of it is shown; the next write (or the next app that opens the"
            + " suite) folds that into the plist and moves the journal aside"
          : "nothing of it is read; the next write (or the next app that opens the suite) moves"
            + " it aside"
        printError(
          "\(domain): \(path).journal, the suite's last small commits, cannot be read whole"
            + " (\(damage)); \(next) (see 'groupctl doctor')")
      }
      return suite.values
    } catch where error.code == .io {
      throw CommandFailure("\(domain): cannot read \(path): \(error.message)")
    } catch {
      throw unreadable(error.message)
    }
  }

  private func unreadable(_ reason: String) -> CommandFailure {
    CommandFailure(
      "\(domain): \(path) cannot be read (\(reason)); it was left as it is; an app that opens"
        + " the suite moves it aside (see 'groupctl doctor')")
  }

  /// The suite's values; a missing or empty suite fails as `defaults` does.
  ///
  /// - Throws: ``CommandFailure``: "Domain DOMAIN does not exist".
  func existingValues() throws -> [String: PropertyListValue] {
    guard let values = try storedValues(), !values.isEmpty else {
      throw CommandFailure("Domain \(domain) does not exist")
    }
    return values
  }

  /// The value stored for `key`.
  ///
  /// - Throws: ``CommandFailure``: "The domain/default pair of (DOMAIN, KEY)
  ///   does not exist", with a hint when an administrator forces the key.
  func storedValue(forKey key: String) throws -> PropertyListValue {
    if let value = try storedValues()?[key] { return value }
    var message = "The domain/default pair of (\(domain), \(key)) does not exist"
    if let managed = try? SuiteResolver.managedValues(for: location), managed[key] != nil {
      message += "; an administrator forces it: see 'groupctl explain \(domain) \(key)'"
    }
    throw CommandFailure(message)
  }

  /// Opens the suite through the library: as the administrator without an
  /// entitlement check, or as the app of `--as`. The suite's container is
  /// created if it is missing.
  ///
  /// The argument domain is emptied: `groupctl`'s own command line is not
  /// the app's.
  func open() throws -> GroupDefaults {
    let defaults: GroupDefaults
    // A person waiting for one write: wait for the lock's turn longer than an app's
    // background commit does (1 s), and still say so when it never comes.
    let options = GroupDefaults.Options(lockTimeout: Self.lockTimeout)
    if let identity, location.kind != .global {
      let suiteName = location.kind == .standard ? nil : location.domain
      defaults = try GroupDefaults(
        suiteName: suiteName, identity: identity, root: location.root, options: options)
    } else {
      defaults = try GroupDefaults(administering: location, options: options)
    }
    defaults.setVolatileDomain([:], forName: GroupDefaults.argumentDomain)
    return defaults
  }

  /// The managed file of the domain: `<root>/Managed/<domain>.plist`.
  var managedPath: String {
    location.root.managedPreferencesURL(forDomain: location.domain).path
  }

  /// How long a command waits for a suite's lock before it says the write did not land.
  static let lockTimeout: Duration = .seconds(10)

  /// Fails when an administrator forces `key`, naming the managed file.
  func requireNotForced(_ key: String) throws {
    guard try SuiteResolver.managedValues(for: location)[key] != nil else { return }
    throw forced(key)
  }

  func forced(_ key: String) -> CommandFailure {
    CommandFailure(
      "\(domain): \(quotedIfNeeded(key)) is forced by an administrator (\(managedPath)) and"
        + " cannot be changed; 'groupctl unforce \(domain) \(quotedIfNeeded(key))' lifts it")
  }

  /// Waits until the changes made through `defaults` are on disk.
  /// Exit 0 means on disk; a failure means not written, and says why.
  func synchronize(_ defaults: GroupDefaults) throws {
    do {
      try defaults.synchronizeOrThrow()
    } catch {
      // Not written: it must not land later either (at exit), or the exit status would lie.
      // A retry already in flight ends first; if it landed everything, the write is on disk.
      if defaults.discardPendingChanges() { return }
      // The library's words are for a process that goes on ("stay pending", retried while it
      // runs); groupctl exits and retries nothing.
      throw CommandFailure(
        "\(domain): not written: \(error.message); groupctl retries nothing: none of this"
          + " write is on disk")
    }
  }
}

/// Every domain with a preferences file that whoever runs the command may
/// open, sorted by name, with its values (`nil` when the file cannot be
/// read: that is reported on stderr). Empty domains are left out, as
/// `defaults` leaves out a deleted one.
struct DomainScan {
  var domains: [(resolved: ResolvedDomain, values: [String: PropertyListValue]?)] = []

  /// Whether a file could not be read; the command then exits with 1.
  var hadUnreadableFile: Bool { domains.contains { $0.values == nil } }

  /// The domains whose values could be read.
  var readable: [(resolved: ResolvedDomain, values: [String: PropertyListValue])] {
    domains.compactMap { entry in entry.values.map { (entry.resolved, $0) } }
  }

  /// - Throws: ``CommandFailure`` when the command runs as an app (`--as`) before the
  ///   device's first unlock: no domain's values can be read then, and an empty answer
  ///   would say there are none.
  init(globals: GlobalOptions) throws {
    let root = globals.containerRoot
    warnIfMissing(root)
    if let identity = try globals.appIdentity(),
      let reason = DeviceState.current(root: root)
        .unavailabilityReason(for: .completeUntilFirstUserAuthentication)
    {
      throw CommandFailure(
        "no domain can be read as \(identity.bundleIdentifier): protected data is unavailable"
          + " (\(reason)); an app sees none of its values until the first unlock"
          + " ('groupctl device unlock'); nothing was read")
    }
    for name in SuiteResolver.domainsWithPreferences(root: root) {
      guard let resolved = try? ResolvedDomain(name, globals: globals) else {
        continue
      }
      do {
        if let values = try resolved.storedValues(), !values.isEmpty {
          domains.append((resolved, values))
        }
      } catch {
        printError("groupctl: \(Groupctl.describe(error))")
        domains.append((resolved, nil))
      }
    }
  }

  /// Fails with status 1 (the reasons are already on stderr) when a file
  /// could not be read.
  func finish() throws {
    if hadUnreadableFile { throw ExitCode.failure }
  }
}

/// Says on stderr that the root does not exist, for commands that look
/// through the whole root and would otherwise just print nothing.
func warnIfMissing(_ root: ContainerRoot) {
  guard !FileManager.default.fileExists(atPath: root.path) else { return }
  printError(
    "groupctl: there is no root at \(root.path) (choose one with --root or"
      + " \(ContainerRoot.environmentVariable))")
}

/// The reason a file could not be read, without Foundation's boilerplate.
func describeFileError(_ error: any Error) -> String {
  let nsError = error as NSError
  if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
    underlying.domain == NSPOSIXErrorDomain
  {
    return Errno(rawValue: Int32(underlying.code)).description
  }
  if nsError.domain == NSPOSIXErrorDomain { return Errno(rawValue: Int32(nsError.code)).description }
  switch CocoaError.Code(rawValue: nsError.code) {
  case .fileReadNoSuchFile, .fileNoSuchFile: return "No such file or directory"
  case .fileReadNoPermission, .fileWriteNoPermission: return "Permission denied"
  case .fileWriteOutOfSpace: return "No space left on device"
  default: return nsError.localizedDescription
  }
}

/// The most ``readInput(_:)`` reads: a property list to import (a domain holds at most 4 MiB)
/// or an entitlements file is far smaller, and a file or standard input that goes on past it
/// (`/dev/zero`, `yes |`, a sparse file) is refused, not read until memory runs out.
let maximumInputBytes = 64 << 20

/// Reads a whole file, or standard input for `-`, of ``maximumInputBytes`` at most.
///
/// - Throws: ``CommandFailure`` naming the path and the reason.
func readInput(_ path: String) throws -> Data {
  let data: Data
  if path == "-" {
    data = Data(try StandardInput.allBytes(atMost: maximumInputBytes))
  } else {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
      isDirectory.boolValue
    {
      throw CommandFailure("cannot read \(path): it is a folder")
    }
    // Read through a handle: Data(contentsOf:) refuses a character device or a pipe
    // (/dev/null, <(…)) with a misleading "Permission denied".
    do {
      let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
      defer { try? handle.close() }
      data = try handle.read(upToCount: maximumInputBytes + 1) ?? Data()
    } catch {
      throw CommandFailure("cannot read \(path): \(describeFileError(error))")
    }
  }
  guard data.count <= maximumInputBytes else {
    throw CommandFailure(
      "cannot read \(path == "-" ? "standard input" : path): it holds more than"
        + " \(maximumInputBytes) bytes (64 MiB), the most a property list read here may hold")
  }
  return data
}

/// Writes data to standard output as it is (for binary property lists).
///
/// - Throws: ``CommandFailure`` when standard output refuses it (a full disk): the command
///   must not exit 0 over a truncated file.
func writeOut(_ data: Data) throws {
  fflush(nil)
  do {
    try FileHandle.standardOutput.write(contentsOf: data)
  } catch {
    throw CommandFailure("cannot write to standard output: \(describeFileError(error))")
  }
}

/// Lines of data written to standard output at once, unbuffered: a note written to stderr
/// after one follows it wherever both go (one file, one pipe, a terminal), where `print`'s
/// buffer held the lines back until the exit. A reader gone or a closed standard output ends
/// the lines, never the notes: ``finish()`` says it once they are written.
struct ImmediateLines {
  private var failure: AppGroupsError?

  /// Writes `line` and a newline, unless an earlier line could not be written.
  mutating func write(_ line: String) {
    guard failure == nil else { return }
    do {
      try StandardOutput.writeHoldingOffPipeSignal(line + "\n")
    } catch {
      failure = error
    }
  }

  /// Says on stderr that a line did not reach standard output (a full disk, a closed
  /// descriptor), and that the command's change is made when it recorded one
  /// (``ChangeMade``): the lines were its confirmation, and the command succeeds.
  ///
  /// - Throws: ``CommandFailure`` when a line did not reach standard output and the command
  ///   recorded no change: the lines were its product. A reader that closed the pipe early is
  ///   no failure of the command, as for ``LineWriter``.
  func finish() throws {
    guard let failure, failure.systemErrno != Errno.brokenPipe.rawValue else { return }
    let message = Groupctl.incompleteOutput(failure.message)
    guard ChangeMade.recorded != nil else { throw CommandFailure(message) }
    printError("groupctl: \(message)")
  }
}

/// Writes whole lines to standard output at once, unbuffered, from any thread (a watch's
/// changes, a presenter's callbacks); a closed pipe ends the process quietly, as it does for
/// `yes | head`; any other failure to write (a full disk) ends it with 1, saying why.
final class LineWriter: Sendable {
  private let lock = Mutex(())

  func write(_ line: String) {
    lock.withLock { _ in
      do {
        try StandardOutput.write(line + "\n")
      } catch {
        let failure = error as? AppGroupsError
        guard failure?.systemErrno != Errno.brokenPipe.rawValue else { exit(0) }
        printError("groupctl: \(failure?.message ?? "\(error)"); stopped")
        exit(ExitCode.failure.code)
      }
    }
  }
}

extension Duration {
  /// A number of seconds given to `option` on the command line (`--grace 2.5`): decimal
  /// digits with an optional fraction, from `lowest` to `highest`, kept to the millisecond
  /// (rounded up, so a positive number never becomes zero).
  ///
  /// - Throws: A ``ValidationError`` naming the option and the text for anything else: a
  ///   sign, an exponent, a hexadecimal number (`0x10`, which `Double` reads), `inf`, `nan`,
  ///   spaces, or a number out of range.
  static func seconds(
    _ text: String, of option: String, from lowest: Int, upTo highest: Int,
    excludingLowest: Bool = false
  ) throws(ValidationError) -> Duration {
    let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
    let isDecimal =
      !text.isEmpty && text != "." && parts.count <= 2
      && parts.allSatisfy { $0.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } }
    guard isDecimal, let seconds = Double(text),
      excludingLowest ? seconds > Double(lowest) : seconds >= Double(lowest),
      seconds <= Double(highest)
    else {
      let range = excludingLowest ? "more than \(lowest) and at most \(highest)" : "from \(lowest) to \(highest)"
      throw ValidationError("\(option) '\(text)' is not a number of seconds \(range)")
    }
    return .milliseconds(Int64((seconds * 1000).rounded(.up)))
  }
}

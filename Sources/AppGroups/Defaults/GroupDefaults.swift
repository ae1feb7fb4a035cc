public import Foundation
internal import Synchronization

/// A UserDefaults-style preferences suite that cooperating processes share
/// through an application group, with Apple's semantics on Linux.
///
/// ```swift
/// let shared = GroupDefaults(suiteName: "group.com.example.shared")  // nil when not entitled
/// shared?.register(defaults: ["theme": "system"])
/// shared?.set(3, forKey: "unreadCount")          // in memory at once, on disk soon after
/// shared?.integer(forKey: "unreadCount")         // 3
/// ```
///
/// Reads go through the search list, first match wins: managed (forced by
/// an administrator, read-only) → argument (`-key value` on the command
/// line) → this suite → the global domain → registration (volatile, per
/// process). ``source(forKey:)`` says which one supplied a value.
///
/// Writes change memory at once and reach the disk asynchronously: a burst
/// of writes costs a few file writes. Each commit takes the suite's lock for
/// milliseconds, merges this process's changes key by key into what is on
/// disk, writes a temporary file, `fsync`s and renames it, and moves the
/// suite's last-update token. Pending changes are written at normal exit and
/// on SIGTERM/SIGINT (see ``handlesTerminationSignals``); ``synchronize()`` waits for them.
///
/// `GroupDefaults` is `Sendable`. Every instance for one suite in a process
/// shares one store.
public final class GroupDefaults: Sendable {
  /// Where a value came from: one layer of the search list.
  public enum Domain: String, Sendable, Hashable, CaseIterable {
    /// Forced by an administrator (`<root>/Managed/<domain>.plist`); the app cannot change it.
    case managed
    /// `-key value` on the command line; volatile.
    case argument
    /// The suite itself: the app's standard suite, a group suite or a private suite.
    case application
    /// The device-wide global domain (`NSGlobalDomain`).
    case global
    /// Fallbacks from ``register(defaults:)``; volatile, per process.
    case registration
  }

  /// One key whose effective value changed.
  public struct Change: Sendable, Hashable {
    /// The suite's domain name.
    public let suiteName: String
    public let key: String
    public let oldValue: PropertyListValue?
    public let newValue: PropertyListValue?
    /// Whether this process or another one (or an outside edit) made the change.
    public let origin: ChangeOrigin
  }

  /// Posted (never from inside the call that made the change; coalesced per burst, at most
  /// once every 2 ms while the changes keep coming) when
  /// effective values of a suite change, and once for each ``setPersistentDomain(_:forName:)``
  /// and ``removePersistentDomain(forName:)`` call, as Foundation posts it (see
  /// ``replacePersistentDomain(_:with:)``). The object is the `GroupDefaults`;
  /// `userInfo` holds ``suiteNameKey``, ``changedKeysKey``, ``originKey`` and ``changesKey``.
  /// Changes heard from other processes are posted on the change monitor's thread, once it
  /// has called the observers (`observe(_:handler:)`) of every suite its batch of events
  /// changed; a handler added with no queue runs there: keep it short, as an observer, or
  /// give it a queue. (Such a handler may read, write, `synchronize()` and open suites.)
  public static let didChangeNotification = Notification.Name("GroupDefaultsDidChangeNotification")
  /// Posted when a write was refused because the domain would pass its size limit.
  public static let sizeLimitExceededNotification = Notification.Name(
    "GroupDefaultsSizeLimitExceededNotification")
  /// `userInfo` key of ``didChangeNotification``: the suite's domain name (`String`); for
  /// a persistent-domain call on another domain, that domain's name.
  public static let suiteNameKey = "suiteName"
  /// `userInfo` key of ``didChangeNotification``: the changed keys (`[String]`, sorted); for
  /// a persistent-domain call on another domain, that domain's keys whose stored value
  /// changed (empty when the domain was already as asked).
  public static let changedKeysKey = "changedKeys"
  /// `userInfo` key of ``didChangeNotification``: `"thisProcess"` or `"otherProcess"`.
  public static let originKey = "origin"

  /// The name used for the global domain, as on Apple platforms.
  public static let globalDomain = Names.globalDomain
  /// The registration domain's name, for ``volatileDomain(forName:)``.
  public static let registrationDomain = "NSRegistrationDomain"
  /// The argument domain's name, for ``volatileDomain(forName:)``.
  public static let argumentDomain = "NSArgumentDomain"

  /// Whether the library commits pending changes on SIGTERM and SIGINT and then ends the
  /// process as the signal would (default `true`).
  ///
  /// The library takes over only a signal still at its default disposition, when the
  /// process first changes a value (a process that only reads is left alone). An app that
  /// waits for these signals itself (with `sigwait(3)` or a signal source) sets this to
  /// `false` before it writes, and calls ``synchronizeAll()`` before it exits; pending
  /// changes are still written at a normal exit. Setting it after the first change changes
  /// nothing.
  public static var handlesTerminationSignals: Bool {
    get { SuiteStore.handlesTerminationSignals.withLock { $0 } }
    set { SuiteStore.handlesTerminationSignals.withLock { $0 = newValue } }
  }

  /// Where this suite lives.
  public let location: SuiteLocation
  /// The identity this suite was opened for (`nil` when opened by an administrator tool).
  public let identity: AppIdentity?
  @usableFromInline let view: SuiteView

  // MARK: Opening

  /// The current app's standard suite, in its own container under the default root.
  ///
  /// The app is `APPGROUPS_BUNDLE_ID`, else the executable's name; the root is
  /// `APPGROUPS_ROOT`, else `Containers` in the current directory. Inside a test scoped by
  /// `AppGroupsTesting`, the test's own identity and root.
  ///
  /// Stops the process when the suite cannot be opened (a bundle identifier that is not a
  /// valid name, an executable the manifest binds to another one): there is no suite to
  /// return, and Apple's `UserDefaults.standard` cannot fail either.
  public static var standard: GroupDefaults {
    if ScopedEnvironment.root != nil || ScopedEnvironment.identity != nil {
      return openStandard()
    }
    return standardInstance.withLock { cached in
      if let cached { return cached }
      let made = openStandard()
      cached = made
      return made
    }
  }

  private static func openStandard() -> GroupDefaults {
    do {
      return try GroupDefaults(suiteName: nil, identity: AppIdentity.current(), root: .default)
    } catch {
      Diagnostics.report("the standard suite could not be opened: \(error)")
      preconditionFailure("GroupDefaults.standard: \(error)")
    }
  }
  private static let standardInstance = Mutex<GroupDefaults?>(nil)

  /// Opens a suite for the current process (`APPGROUPS_BUNDLE_ID` and the
  /// default root), or returns `nil` when it is refused.
  ///
  /// - `nil`: the app's standard suite.
  /// - `group.…`: the group container's suite, if the manifest entitles the
  ///   app to that group; otherwise `nil`. (Apple gives an unentitled group
  ///   name a private, unshared suite; refusing it makes the mistake show at once.)
  /// - the app's own bundle identifier or `NSGlobalDomain`: `nil`, as on Apple platforms.
  /// - any other valid name: a private suite in the app's own container.
  /// - an invalid name (empty, `/`, `..`, control characters, over 255 bytes): `nil`.
  ///
  /// The reason for a `nil` is written once to stderr; ``init(suiteName:identity:root:options:)``
  /// throws it instead.
  public convenience init?(suiteName: String?) {
    do {
      try self.init(suiteName: suiteName, identity: AppIdentity.current(), root: .default)
    } catch {
      Diagnostics.reportOnce("\(error)")
      return nil
    }
  }

  /// Tunables for tests and tools.
  public struct Options: Sendable, Hashable {
    /// How long a commit waits for another process's lock while its holder makes no
    /// progress (stopped, or asleep and never woken, its process idle) before it keeps its changes
    /// pending and retries (default 1 s). A holder that is running or writing to disk is
    /// waited for, up to 30 s.
    public var lockTimeout: Duration = .seconds(1)
    /// The largest size of the domain in bytes (default 4 MiB, as iOS), at most
    /// ``maximumSizeLimit``: a larger value is taken as that one.
    public var sizeLimit: Int = 4 * 1024 * 1024
    /// The most ``sizeLimit`` can be, 64 MiB: a quarter of the 256 MiB a preferences file is
    /// read for (a larger file is unreadable, and moved aside unread), so that no domain this
    /// package writes is one it will not read back.
    public static let maximumSizeLimit = 64 << 20
    public init(lockTimeout: Duration = .seconds(1), sizeLimit: Int = 4 * 1024 * 1024) {
      self.lockTimeout = lockTimeout
      self.sizeLimit = sizeLimit
    }
  }

  /// Opens a suite for an explicit identity and root, throwing the reason
  /// when it is refused (see ``init(suiteName:)`` for the rules).
  ///
  /// - Throws: `.invalidName`, `.notEntitled`, `.reservedSuiteName`,
  ///   `.executableMismatch`, `.invalidManifest`, `.outsideRoot`, or `.io`.
  public convenience init(
    suiteName: String?, identity: AppIdentity, root: ContainerRoot = .default,
    options: Options = Options()
  ) throws(AppGroupsError) {
    let resolver = SuiteResolver(identity: identity, root: root)
    let location = try resolver.resolve(suiteName: suiteName)
    try self.init(location: location, identity: identity, options: options)
  }

  /// Opens the suite at `location` without an entitlement check: for tools
  /// acting as the device's administrator (`groupctl` without `--as`).
  ///
  /// - Throws: `.outsideRoot` or `.io` when the container cannot be prepared.
  package convenience init(administering location: SuiteLocation, options: Options = Options()) throws(AppGroupsError) {
    try self.init(location: location, identity: nil, options: options)
  }

  private init(location: SuiteLocation, identity: AppIdentity?, options: Options) throws(AppGroupsError) {
    let root = location.root
    try root.prepareContainer(atPath: location.containerPath)
    let global = SuiteResolver.globalLocation(root: root)
    var globalPath: String? = nil
    if location.kind != .global {
      try root.prepareContainer(atPath: global.containerPath)
      globalPath = global.filePath
    }
    do {
      try FileSystem.makeDirectory(root.managedPreferencesDirectoryPath, within: root.path)
    } catch {
      throw AppGroupsError(io: error, "creating the managed preferences folder of \(root.path)")
    }
    let managedPath = root.managedPreferencesPath(forDomain: location.domain)
    // A suite's folder removed under a running process is made again, inside the root only.
    var storeOptions = SuiteStore.Options(
      lockTimeout: options.lockTimeout, sizeLimit: min(options.sizeLimit, Options.maximumSizeLimit),
      makeFolder: root.path)
    // An app's suites follow the device's data protection; an administrator reads the files.
    // The device's monitor starts first: the store's gate reads the page it maps.
    var monitor: DeviceMonitor? = nil
    if identity != nil {
      ProtectedSuites.installGate()
      storeOptions.protectionScope = root.path
      monitor = DeviceMonitor.shared(root: root)
    }
    self.location = location
    self.identity = identity
    self.view = try SuiteView.shared(
      domain: location.domain, suitePath: location.filePath, globalPath: globalPath,
      managedPath: managedPath, options: storeOptions)
    view.attach(self)
    ProtectedSuites.wait(for: view.suite, monitor: monitor)
    if let global = view.openedGlobal { ProtectedSuites.wait(for: global, monitor: monitor) }
    ProtectedSuites.reportIfUnavailable(location.domain, view.suite)
    // An app's commits are kept out of its suspensions (see AppLifecycle).
    if let identity { AppLifecycle.start(identity: identity, root: root) }
  }

  deinit { view.detach(self) }

  /// The suite's domain name: the bundle id, group id or suite name.
  public var suiteName: String { location.domain }

  // MARK: Reading

  /// The effective value of `key` and the domain that supplied it, from one read of the
  /// search list, or `nil`.
  package func lookup(forKey key: String) -> (value: PropertyListValue, domain: Domain)? {
    if case .found(let value, let domain) = view.lookup(key) { return (value, domain) }
    return nil
  }

  /// The effective value of `key` as a ``PropertyListValue``, or `nil` when no layer of the
  /// search list has it.
  public func value(forKey key: String) -> PropertyListValue? {
    view.lookup(key).value
  }

  /// Which layer of the search list supplied `key`'s value, or `nil` when none has it.
  ///
  /// Before the device's first unlock the suite's file cannot be read (``unavailableReason``):
  /// a key it may hold then answers for the layers that can be read (the registration domain,
  /// or `nil`), which says nothing of what the file holds.
  public func source(forKey key: String) -> Domain? { lookup(forKey: key)?.domain }

  /// Why this suite's stored values cannot be read now, or `nil` when they can.
  ///
  /// A suite's file is of class `completeUntilFirstUserAuthentication`: from a restart of a
  /// device with a passcode until its first unlock, it cannot be read. Meanwhile the suite
  /// reads as registered defaults or nil, ``dictionaryRepresentation()`` holds no stored key,
  /// writes stay in this process's memory and ``synchronize()`` returns `false`; at the first
  /// unlock the file is read, the writes land key by key (merged with what other processes
  /// wrote, never replacing the domain), and observers hear every key whose effective value
  /// changed. Said once on stderr when the suite opens. An app waits for
  /// ``ProtectedData/didBecomeAvailableNotification`` before it trusts a missing value.
  ///
  /// A suite open when the device restarts (a process that outlived `groupctl device reboot`,
  /// which no device allows) becomes such a suite when the process hears the reboot, and says
  /// so once on stderr; a commit under way then is refused under the suite's lock, just before
  /// its write. The values it had read stay in this process's memory and keep answering reads;
  /// changes on disk are not read until the first unlock.
  public var unavailableReason: String? {
    if let reason = view.suite.unavailabilityReason { return reason }
    return view.openedGlobal?.unavailabilityReason
  }

  /// The value for `key` as a Foundation object (`String`, `Int`, `Double`,
  /// `Bool`, `Date`, `Data`, `[Any]`, `[String: Any]`), or `nil`.
  public func object(forKey key: String) -> Any? { value(forKey: key)?.foundationValue }

  /// Every effective key and value across the search list.
  public func dictionaryRepresentation() -> [String: Any] {
    view.dictionaryRepresentation().mapValues(\.foundationValue)
  }

  /// Whether an administrator forces `key` (a managed value): the app cannot change it.
  public func objectIsForced(forKey key: String) -> Bool { view.isForced(key) }

  /// Whether an administrator forces `key` in the domain `domain`.
  public func objectIsForced(forKey key: String, inDomain domain: String) -> Bool {
    if domain == location.domain { return view.isForced(key) }
    let path = location.root.managedPreferencesPath(forDomain: domain)
    guard let data = FileManager.default.contents(atPath: path) else { return false }
    // Read as the domain's store reads it: a key whose value cannot be read, or would be
    // misread, is not held, and so is not forced either.
    if case .dictionary(let values)? = try? PropertyListValue(propertyListData: data) {
      return values[key] != nil
    }
    return (try? PropertyListValue.salvaging(propertyListData: data))?.values[key] != nil
  }

  // MARK: Writing

  /// Stores `value` for `key` in this suite; `nil` removes it.
  ///
  /// The change is visible to reads at once and reaches the disk soon after.
  /// Writing the value already there does nothing. A value that is not a
  /// property-list value, an empty key, a key forced by an administrator, or
  /// a write past the size limit is refused: the refusal is reported on
  /// stderr (and, for the size limit, ``sizeLimitExceededNotification`` is
  /// posted), the value already there stays, and the process keeps running.
  /// ``stage(_:forKey:)`` throws the reason instead.
  public func set(_ value: Any?, forKey key: String) {
    do {
      guard let value else {
        try stage(nil, forKey: key)
        return
      }
      guard let converted = PropertyListValue(value) else {
        throw AppGroupsError(
          .unsupportedValue,
          "\(suiteName): cannot store a value of type \(type(of: value)) for key \(key.debugDescription): only property-list values (String, Int, Double, Bool, Date, Data, URL, arrays and string-keyed dictionaries of them) can be stored")
      }
      try stage(converted, forKey: key)
    } catch {
      Diagnostics.report("\(error)")
    }
  }

  /// Stores a URL as its absolute string (`url(forKey:)` reads it back).
  public func set(_ url: URL?, forKey key: String) {
    set(url.map { $0.absoluteString } as Any?, forKey: key)
  }

  /// Stores an integer for `key`, as `UserDefaults.set(_:forKey:)` does; the same as
  /// passing it as `Any?`, without the conversion.
  public func set(_ value: Int, forKey key: String) { store(.integer(value), forKey: key) }

  /// Stores a double for `key`, as `UserDefaults.set(_:forKey:)` does.
  public func set(_ value: Double, forKey key: String) { store(.real(value), forKey: key) }

  /// Stores a float for `key`, as `UserDefaults.set(_:forKey:)` does: a 4-byte real on
  /// disk, read back as the same `Float` (``string(forKey:)`` of 12.34 gives `"12.34"`).
  public func set(_ value: Float, forKey key: String) { store(.float(value), forKey: key) }

  /// Stores a Boolean for `key`, as `UserDefaults.set(_:forKey:)` does.
  public func set(_ value: Bool, forKey key: String) { store(.bool(value), forKey: key) }

  /// ``stage(_:forKey:)``, with a refusal reported on stderr as the `Any?` setter does.
  private func store(_ value: PropertyListValue, forKey key: String) {
    do { try stage(value, forKey: key) } catch { Diagnostics.report("\(error)") }
  }

  /// Removes the suite's value for `key` (a registered or global value may then show through).
  public func removeObject(forKey key: String) {
    do { try stage(nil, forKey: key) } catch { Diagnostics.report("\(error)") }
  }

  /// Stages `value` for `key`, or its removal when `nil`, throwing the reason for a refusal:
  /// ``set(_:forKey:)-(Any?,_)`` that throws.
  ///
  /// Like every setter, it changes the suite in memory: reads in this process see the value
  /// at once, and the disk has it after the next commit, moments later;
  /// ``synchronize()`` waits for that and says whether it landed.
  ///
  /// - Throws: `.invalidName` for an empty key, `.forcedValue` when an
  ///   administrator forces the key, `.sizeLimitExceeded` past the size limit.
  public func stage(_ value: PropertyListValue?, forKey key: String) throws(AppGroupsError) {
    guard !key.isEmpty else {
      throw AppGroupsError(.invalidName, "\(suiteName): a key cannot be empty")
    }
    let stored: Bool
    do {
      stored = try view.setUnlessForced(value, forKey: key)
    } catch {
      if error.code == .sizeLimitExceeded {
        NotificationCenter.default.post(name: Self.sizeLimitExceededNotification, object: self)
      }
      throw error
    }
    guard stored else {
      throw AppGroupsError(
        .forcedValue,
        "\(suiteName): \(key.debugDescription) is forced by an administrator (\(location.root.managedPreferencesPath(forDomain: suiteName))) and cannot be changed")
    }
  }

  /// Adds fallback values to the registration domain: volatile, per process,
  /// shared by every suite, never written to disk. Call it at every launch.
  /// A value that is not a property-list value is reported and skipped.
  public func register(defaults registrationDictionary: [String: Any]) {
    var values: [String: PropertyListValue] = [:]
    for (key, value) in registrationDictionary {
      if let converted = PropertyListValue(value) {
        values[key] = converted
      } else {
        Diagnostics.report(
          "register(defaults:): the value for \(key.debugDescription) (\(type(of: value))) is not a property-list value; skipped")
      }
    }
    SuiteView.processLayerChanged(.registration, ProcessDomains.register(values))
  }

  /// Waits until this suite's pending changes are on disk, then picks up
  /// changes other processes made.
  /// - Returns: `true` when every change landed; `false` when another
  ///   process held the lock past the bound or the disk failed (the changes
  ///   stay pending and are retried), or when protected data is unavailable
  ///   (``unavailableReason``: the changes stay in memory and land at the first unlock).
  @discardableResult
  public func synchronize() -> Bool {
    // Before the first unlock: the suite stays unloaded and its changes in memory (`false`).
    view.suite.retryProtectedLoad()
    view.openedGlobal?.retryProtectedLoad()
    var landed = view.suite.flush()
    if let global = view.openedGlobal, global.hasPendingChanges {
      landed = global.flush() && landed
    }
    view.suite.refresh()
    view.openedGlobal?.refresh()
    view.managed?.refresh()
    return landed
  }

  /// Waits until this suite's pending changes are on disk, and says why when they are not.
  ///
  /// For tools that must tell the truth about one write: on failure the changes stay pending
  /// (and are retried) unless ``discardPendingChanges()`` forgets them.
  /// - Throws: `.lockTimeout` when another process held the lock past the bound; `.io` naming
  ///   the system call, the path and the errno text when the disk refused the write.
  package func synchronizeOrThrow() throws(AppGroupsError) {
    try view.suite.commitPending(timeout: view.suite.options.lockTimeout)
    if let global = view.openedGlobal, global.hasPendingChanges {
      try global.commitPending(timeout: global.options.lockTimeout)
    }
    view.suite.refresh()
  }

  /// How long this suite's last commit waited for the suite's lock, in nanoseconds: for the
  /// benchmark's measure of contention.
  package var lastLockWaitNanoseconds: UInt64 { view.suite.lastLockWait.load(ordering: .relaxed) }

  /// Forgets this suite's changes that are not on disk yet, so that they never land (not even
  /// when the process exits): for a tool that reported a failed write. A commit in flight
  /// ends first.
  /// - Returns: `true` when a commit in flight had landed every change after all.
  @discardableResult
  package func discardPendingChanges() -> Bool {
    let suiteLanded = view.suite.discardPendingChanges()
    let globalLanded = view.openedGlobal?.discardPendingChanges() ?? true
    return suiteLanded && globalLanded
  }

  /// Waits until every suite open in this process has landed its changes.
  @discardableResult
  public static func synchronizeAll() -> Bool { SuiteStore.flushAll() }

  /// Waits until every suite open in this process whose file is in `root` has landed its
  /// changes: what the removal of a test's temporary root does first, so that no commit
  /// writes into the root as it goes.
  /// - Returns: `true` when every such change is on disk.
  @discardableResult
  package static func synchronizeAll(in root: ContainerRoot) -> Bool {
    let prefix = root.path.hasSuffix("/") ? root.path : root.path + "/"
    return SuiteStore.flushAll { $0.hasPrefix(prefix) }
  }

  // MARK: Domains

  private func store(forDomain name: String) throws(AppGroupsError) -> SuiteStore {
    if name == location.domain { return view.suite }
    if name == Self.globalDomain, let global = view.global { return global }
    guard let identity else {
      throw AppGroupsError(.notFound, "\(name) is not this suite's domain (\(suiteName)) nor the global domain")
    }
    return try GroupDefaults(suiteName: name, identity: identity, root: location.root).view.suite
  }

  /// The values stored in a persistent domain: this suite's name, `NSGlobalDomain`,
  /// or another suite this identity may open. `nil` when it is refused or empty.
  public func persistentDomain(forName domainName: String) -> [String: Any]? {
    guard let store = try? store(forDomain: domainName) else { return nil }
    let values = store.values()
    return values.isEmpty ? nil : values.mapValues(\.foundationValue)
  }

  /// Replaces every value of a persistent domain at once; values other
  /// processes wrote there are replaced too. A value that is not a
  /// property-list value makes the whole call a no-op, reported on stderr.
  ///
  /// The call posts ``didChangeNotification`` (see ``replacePersistentDomain(_:with:)``).
  public func setPersistentDomain(_ domain: [String: Any], forName domainName: String) {
    do {
      guard case .dictionary(let values)? = PropertyListValue(domain) else {
        throw AppGroupsError(.unsupportedValue, "setPersistentDomain(_:forName: \(domainName)): the dictionary holds a value that is not a property-list value; nothing was changed")
      }
      try replacePersistentDomain(domainName, with: values)
    } catch {
      Diagnostics.report("\(error)")
    }
  }

  /// Removes every value of a persistent domain. The call posts ``didChangeNotification``
  /// (see ``replacePersistentDomain(_:with:)``).
  public func removePersistentDomain(forName domainName: String) {
    do { try replacePersistentDomain(domainName, with: [:]) } catch { Diagnostics.report("\(error)") }
  }

  /// Replaces every value of a persistent domain (this suite's name, `NSGlobalDomain`, or
  /// another suite this identity may open), throwing the reason for a refusal, and posts
  /// ``didChangeNotification`` for the call, as Foundation does.
  ///
  /// - For this suite's own domain and the global domain, both layers of this suite's
  ///   search list, the notification is the usual one: the effective values that changed
  ///   (none when a managed or argument value masks every changed key).
  /// - For any other domain, and whenever the call changed nothing, one notification is
  ///   posted for the call, with this object as its object: ``suiteNameKey`` names the
  ///   domain that was replaced, ``changedKeysKey`` holds that domain's keys whose stored
  ///   value the call added, changed or removed (empty when the domain was already as
  ///   asked), ``changesKey`` those stored values, old and new, and ``originKey`` is
  ///   `"thisProcess"`. These changes are of the domain's stored values, not of this
  ///   suite's effective ones: the other domain is not in its search list.
  ///
  /// - Throws: `.notFound` for another domain when this suite was opened without an
  ///   identity, what opening that suite throws (`.notEntitled`, `.invalidName`, …),
  ///   `.unsupportedValue` or `.sizeLimitExceeded`; then nothing changes and nothing is posted.
  public func replacePersistentDomain(
    _ domainName: String, with values: [String: PropertyListValue]
  ) throws(AppGroupsError) {
    let target = try store(forDomain: domainName)
    let changes = SuiteValues.changes(from: target.values(), to: values)
    try target.replaceAll(with: values)
    let inSearchList = target === view.suite || target === view.global
    if inSearchList && !changes.isEmpty { return }
    SuiteView.postDomainReplaced(domain: domainName, changes: changes, by: self)
  }

  /// A volatile domain's values: `NSRegistrationDomain`, `NSArgumentDomain`, or one set with ``setVolatileDomain(_:forName:)``.
  public func volatileDomain(forName domainName: String) -> [String: Any] {
    (ProcessDomains.volatileDomain(domainName) ?? [:]).mapValues(\.foundationValue)
  }

  /// Sets a volatile domain (per process, never on disk). Setting
  /// `NSRegistrationDomain` or `NSArgumentDomain` replaces that layer of the search list.
  public func setVolatileDomain(_ domain: [String: Any], forName domainName: String) {
    guard case .dictionary(let values)? = PropertyListValue(domain) else {
      Diagnostics.report("setVolatileDomain(_:forName: \(domainName)): the dictionary holds a value that is not a property-list value; nothing was changed")
      return
    }
    switch domainName {
    case Self.registrationDomain:
      SuiteView.processLayerChanged(.registration, ProcessDomains.replaceRegistration(values))
    case Self.argumentDomain:
      SuiteView.processLayerChanged(.argument, ProcessDomains.setArguments(values))
    default:
      ProcessDomains.setVolatileDomain(values, name: domainName)
    }
  }

  /// Removes a volatile domain (for the registration or argument domain: empties it).
  public func removeVolatileDomain(forName domainName: String) {
    switch domainName {
    case Self.registrationDomain:
      SuiteView.processLayerChanged(.registration, ProcessDomains.replaceRegistration([:]))
    case Self.argumentDomain:
      SuiteView.processLayerChanged(.argument, ProcessDomains.setArguments([:]))
    default:
      ProcessDomains.removeVolatileDomain(domainName)
    }
  }

  /// The names of the volatile domains.
  public var volatileDomainNames: [String] { ProcessDomains.volatileDomainNames }
}

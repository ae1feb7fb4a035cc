import Foundation
internal import Synchronization

/// A suite's last-update token: monotonic and persistent. It moves with
/// every commit and with an outside edit of the suite's file, and reads
/// without parsing the property list.
///
/// It is `RawRepresentable`: store ``rawValue`` with what a consumer shows, and make the
/// token again with ``init(rawValue:)`` when it resumes. (`Codable` encodes it as that one
/// number.)
public struct ChangeToken: RawRepresentable, Sendable, Hashable, Comparable, Codable,
  CustomStringConvertible
{
  /// The token's value; larger is later.
  public let rawValue: UInt64
  /// The token whose value is `rawValue`, as ``rawValue`` gave it.
  public init(rawValue: UInt64) { self.rawValue = rawValue }
  public static func < (a: ChangeToken, b: ChangeToken) -> Bool { a.rawValue < b.rawValue }
  public var description: String { String(rawValue) }
}

extension GroupDefaults {
  /// `userInfo` key of ``didChangeNotification``: the changes themselves
  /// (`[GroupDefaults.Change]`, with old and new values). A burst that mixes
  /// origins is posted as two notifications, this process's first, so every
  /// change in one notification has the origin that ``originKey`` names.
  public static let changesKey = "changes"

  // MARK: Token and resume

  /// The suite's current last-update token (a read of shared memory and one
  /// `stat(2)`; no parsing). It describes the file in place: read in an
  /// observer, it is the token of the change the observer was told of.
  ///
  /// When a commit of another process is between putting its file in place and moving the
  /// token (a moment, or longer on a loaded machine), this waits for that commit's token, for
  /// a second at most. It answers the older token (which only makes a consumer read again)
  /// when that process is stopped or gone, or when the commit in flight is this process's own
  /// and its thread is asleep.
  public var changeToken: ChangeToken { ChangeToken(rawValue: view.suite.token()) }

  /// Whether the suite changed on disk since `token` was read, without parsing. A consumer
  /// records ``changeToken`` with what it shows and, when it resumes, re-reads only if this
  /// is `true`.
  ///
  /// - A commit of any process shows at once: it moves the token, which this reads from
  ///   shared memory.
  /// - An edit that does not take the suite's lock (a tool that rewrites the plist, or
  ///   removes it or its folder) moves no token: while a kernel watch covers the suite's
  ///   folder, it shows once this process's change monitor has read its event from the
  ///   kernel (usually well within a millisecond; an observer hears of it then too).
  ///   Without a kernel watch (the folder is polled or gone), it shows at once.
  ///
  /// When nothing changed and a kernel watch covers the folder, this makes no system call;
  /// otherwise, and just after the monitor heard of a change, one `stat(2)`, as
  /// ``changeToken`` does.
  public func hasChanged(since token: ChangeToken) -> Bool {
    view.hasChanged(since: token.rawValue)
  }

  /// For a consumer that was suspended: re-reads the suite only if its
  /// token or file moved since this process last read or wrote it, and
  /// tells observers what changed. When nothing moved it costs a token read from shared
  /// memory per open layer (suite, managed, and global once a read reached it), and no
  /// system call while a kernel watch covers their folders (else a `stat(2)` each).
  ///
  /// ```swift
  /// // on resume (SIGCONT, a lifecycle event)
  /// if shared.refreshIfChanged() { reloadTimeline() }
  /// ```
  ///
  /// The change monitor usually re-reads first, as soon as inotify reports
  /// the change; this call then finds nothing left to do and returns `false`.
  /// - Returns: `true` when it re-read a layer and found values that changed.
  @discardableResult
  public func refreshIfChanged() -> Bool {
    view.refreshIfChanged()
  }

  // MARK: Observation

  /// Calls `handler` with the keys whose effective value changed, from this
  /// process or another one. With `keys`, only changes of those keys are
  /// delivered. The handler runs on the thread that made or noticed the
  /// change; keep it short.
  ///
  /// The first observer a process adds pays what the first change it hears would otherwise
  /// pay (the runtime's first look-ups of a notification's posting): it posts, once per
  /// process, a notification named `AppGroups.notificationPostingPrepared` with this suite as
  /// its object and no `userInfo`, which only an observer of every notification sees.
  /// - Returns: a handle; the observer stops when it is cancelled or released.
  public func observe(
    _ keys: [String]? = nil, handler: @escaping @Sendable ([Change]) -> Void
  ) -> Observation {
    let view = self.view
    SuiteView.prepareNotificationPosting(for: self)
    let id = view.addObserver(keys: keys.map(Set.init), handler)
    return Observation { view.removeObserver(id) }
  }

  /// The changes of this suite (of `keys`, when given) as an asynchronous sequence.
  public func changes(for keys: [String]? = nil) -> AsyncStream<Change> {
    let (stream, continuation) = AsyncStream.makeStream(of: Change.self, bufferingPolicy: .unbounded)
    let observation = observe(keys) { changes in
      for change in changes { continuation.yield(change) }
    }
    continuation.onTermination = { _ in observation.cancel() }
    return stream
  }

  // MARK: Cross-process atomic update

  /// Reads `key`'s current value from disk under the suite's lock, lets
  /// `body` compute the new value (`nil` removes it), and commits it before
  /// the lock is released: no other process can interleave. Use it for
  /// counters, lists and compare-and-set.
  ///
  /// ```swift
  /// try shared.update(forKey: "recent") { current in
  ///   var list = current.flatMap { if case .array(let a) = $0 { a } else { nil } } ?? []
  ///   list.append(.string("item"))
  ///   return .array(list.suffix(10))
  /// }
  /// ```
  ///
  /// `body` sees this process's pending change of `key`, if any, on top of
  /// what is on disk. It must be short (every other writer of the suite, in
  /// every process, waits for it) and must not call back into this store:
  /// reads inside it work, but a nested `update`, `increment` or
  /// `synchronize()` cannot take the lock this call holds (the first two
  /// throw `.lockTimeout` at once, the last returns `false`).
  /// - Returns: the value `body` returned.
  /// - Throws: `.lockTimeout` when another process held the lock past the
  ///   bound, `.forcedValue` for a forced key, `.sizeLimitExceeded` when the
  ///   new value would pass the size limit, or what `body` throws; then the
  ///   key is not changed. (`body`'s own error passes through as it is, which is why this
  ///   call's throws are not typed; ``increment(forKey:by:)`` throws `AppGroupsError` only.)
  @discardableResult
  public func update(
    forKey key: String, _ body: (PropertyListValue?) throws -> PropertyListValue?
  ) throws -> PropertyListValue? {
    guard !key.isEmpty else { throw AppGroupsError(.invalidName, "\(suiteName): a key cannot be empty") }
    if view.isForced(key) {
      throw AppGroupsError(.forcedValue, "\(suiteName): \(key.debugDescription) is forced by an administrator")
    }
    return try view.suite.update(key: key, timeout: view.suite.options.lockTimeout, body)
  }

  /// Reads every value from disk under the suite's lock, lets `body` compute a change set for
  /// any number of keys (`nil` removes a key), and commits it before the lock is released, as
  /// one write: the changes land together or not at all, and no other process's commit comes
  /// between what `body` read and what it wrote (`groupctl rename` moves a value so).
  ///
  /// `body` sees this process's pending changes on top of what is on disk, and has the limits
  /// of ``update(forKey:_:)``'s.
  /// - Throws: `.invalidName` for an empty key and `.forcedValue` for a forced key of the
  ///   change set, what the suite's transaction throws (`.lockTimeout`, `.io`,
  ///   `.sizeLimitExceeded`, …), or what `body` throws; then nothing is changed.
  package func transaction(
    _ body: ([String: PropertyListValue]) throws -> [String: PropertyListValue?]
  ) throws {
    try view.suite.transaction(timeout: view.suite.options.lockTimeout) { current in
      let change = try body(current)
      for key in change.keys {
        if key.isEmpty { throw AppGroupsError(.invalidName, "\(suiteName): a key cannot be empty") }
        if view.isForced(key) {
          throw AppGroupsError(.forcedValue, "\(suiteName): \(key.debugDescription) is forced by an administrator")
        }
      }
      return change
    }
  }

  /// Atomically adds `amount` to the integer at `key` across processes
  /// (a missing value counts as 0; a real number counts as its integer part).
  /// Returns the new value.
  ///
  /// - Throws: `.unsupportedValue` when the value is not a number, is a real
  ///   number that is not finite or does not fit an `Int`, or the sum would
  ///   overflow (nothing is changed then); and what ``update(forKey:_:)`` throws.
  @discardableResult
  public func increment(forKey key: String, by amount: Int = 1) throws(AppGroupsError) -> Int {
    let result: PropertyListValue?
    do {
      result = try update(forKey: key) { current throws(AppGroupsError) in
        try Self.incremented(current, by: amount, key: key)
      }
    } catch let error as AppGroupsError {
      throw error
    } catch {
      // The body throws AppGroupsError only, and the store nothing else.
      throw AppGroupsError(.io, "\(suiteName): incrementing \(key.debugDescription): \(error)")
    }
    if case .integer(let v)? = result { return v }
    return 0
  }

  /// `current` plus `amount`, as ``increment(forKey:by:)`` stores it.
  private static func incremented(
    _ current: PropertyListValue?, by amount: Int, key: String
  ) throws(AppGroupsError) -> PropertyListValue {
    let base: Int
    switch current {
    case .integer(let v)?: base = v
    case .real(let v)?: base = try Self.wholePart(v, key: key)
    case .float(let v)?: base = try Self.wholePart(Double(v), key: key)
    case .unsignedInteger(let v)?:
      throw AppGroupsError(
        .unsupportedValue,
        "\(key.debugDescription) holds the unsigned integer \(v), which does not fit an integer")
    case nil: base = 0
    case let other?:
      throw AppGroupsError(
        .unsupportedValue, "\(key.debugDescription) holds a \(other.typeName), not a number")
    }
    let (sum, overflow) = base.addingReportingOverflow(amount)
    if overflow {
      throw AppGroupsError(
        .unsupportedValue,
        "\(key.debugDescription): \(base) + \(amount) overflows an integer; the value was not"
          + " changed")
    }
    return .integer(sum)
  }

  /// The integer part of a real number being incremented.
  private static func wholePart(_ v: Double, key: String) throws(AppGroupsError) -> Int {
    // Int(_:) traps on NaN, infinities and values out of range.
    guard let whole = Int(exactly: v.rounded(.towardZero)) else {
      throw AppGroupsError(
        .unsupportedValue, "\(key.debugDescription) holds the real number \(v), which is not finite or does not fit an integer")
    }
    return whole
  }
}

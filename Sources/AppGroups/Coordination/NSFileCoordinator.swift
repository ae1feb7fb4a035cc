public import Foundation
internal import Synchronization

/// Foundation's error out-parameter, as Apple platforms spell it (Foundation on Linux has
/// none): a pointer to an optional `NSError` that a call fills in when it fails.
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?

/// Coordinates reading, writing, moving and deleting files and folders in containers among
/// the processes of the simulated device, and the presenters they registered: Foundation's
/// `NSFileCoordinator`, which Foundation on Linux does not have.
///
/// ```swift
/// let coordinator = NSFileCoordinator(filePresenter: nil)
/// var error: NSError?
/// coordinator.coordinate(writingItemAt: notesURL, options: [], error: &error) { url in
///   try? data.write(to: url)
/// }
/// if let error { print(error.localizedDescription) }
/// ```
///
/// A coordinated access, in this process or any other process of the root:
///
/// 1. waits until no other access holds a conflicting claim on the item: readers share an
///    item, a writer excludes everyone (a move or deletion of a folder also waits for the
///    accesses inside it); a writer that waits keeps later readers behind it;
/// 2. asks the item's presenters (except this coordinator's own), one at a time in the order
///    they registered, to save (reads; writes `.forMerging`), to relinquish the item to the
///    reader or writer, and to accommodate a deletion (`.forDeleting`, `.forReplacing`);
///    a folder's presenters are asked about the deletion of an item inside it;
/// 3. runs the accessor;
/// 4. tells those presenters to reacquire, and what happened: `presentedItemDidChange`,
///    `presentedItemDidMove(to:)` (after ``item(at:didMoveTo:)``), and the sub-item callbacks
///    of the folders above the item; then lets its claim go.
///
/// The claims are byte-range locks the kernel holds (and releases when their process dies);
/// presenters are asked through their process's inbox in the container. A sandboxed app
/// takes part with only its containers: everything lives in the container's
/// `Library/Coordination` folder.
///
/// Where it differs from Apple's: every wait is bounded. A presenter that does not answer
/// within ``presenterTimeout`` (its app is suspended or stopped, or it never called its
/// completion handler) fails the access with an error that names the app and the item, and
/// the line is appended to `<root>/Run/lifecycle.log` (or, for an app in its sandbox, to the
/// container's `Library/Coordination/log`); iOS waits, which is the deadlock Apple's
/// technical note TN2408 describes. A claim held by another access for longer than
/// ``accessTimeout`` fails the same way. Items must be in a container of a root
/// (`<root>/Shared/AppGroup/<group>/…` or an app's own container). Only file URLs.
open class NSFileCoordinator: NSObject, @unchecked Sendable {
  /// How a read is coordinated.
  public struct ReadingOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Presenters are not asked to save their changes first.
    public static let withoutChanges = ReadingOptions(rawValue: 1 << 0)
    /// A symbolic link at the URL is resolved, and its target read.
    public static let resolvesSymbolicLink = ReadingOptions(rawValue: 1 << 1)
    /// Accepted for source compatibility: there is nothing to download here.
    public static let immediatelyAvailableMetadataOnly = ReadingOptions(rawValue: 1 << 2)
    /// Accepted for source compatibility: the item is read in place.
    public static let forUploading = ReadingOptions(rawValue: 1 << 3)
  }

  /// How a write is coordinated. Apple asks for one option at a time.
  ///
  /// A deletion, move or replacement of the container itself, of its `Library` folder or of
  /// `Library/Coordination` is refused (`.outsideContainer`) before anything runs: those
  /// hold the container's coordination state.
  public struct WritingOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// The item will be deleted: its presenters (and those of the items inside a folder)
    /// are asked to accommodate the deletion, and a folder's presenter the deletion of an
    /// item inside it.
    public static let forDeleting = WritingOptions(rawValue: 1 << 0)
    /// The item will be moved: a folder's move also waits for the accesses inside it.
    public static let forMoving = WritingOptions(rawValue: 1 << 1)
    /// Presenters are asked to save their changes first.
    public static let forMerging = WritingOptions(rawValue: 1 << 2)
    /// The item will be replaced by another: as `.forDeleting` for the item there now.
    public static let forReplacing = WritingOptions(rawValue: 1 << 3)
    /// Only metadata that does not depend on the contents changes; coordinated as a write.
    public static let contentIndependentMetadataOnly = WritingOptions(rawValue: 1 << 4)
  }

  /// The presenter on whose behalf this coordinator acts: it is neither asked nor told about
  /// this coordinator's accesses.
  public let filePresenter: (any NSFilePresenter)?

  /// Identifies the coordinator's accesses; a new UUID string unless set.
  open var purposeIdentifier: String = UUID().uuidString

  /// How long a presenter has to answer (save, relinquish, accommodate) before the access
  /// fails with ``AppGroupsError/Code/presenterTimeout``: 5 seconds unless set. Not in
  /// Apple's API, where the wait has no end.
  public var presenterTimeout: Duration {
    get { settings.withLock { $0.presenterTimeout } }
    set { settings.withLock { $0.presenterTimeout = newValue } }
  }

  /// How long an access waits for other accesses' claims on its items before it fails with
  /// ``AppGroupsError/Code/lockTimeout``: 30 seconds unless set. Not in Apple's API.
  public var accessTimeout: Duration {
    get { settings.withLock { $0.accessTimeout } }
    set { settings.withLock { $0.accessTimeout = newValue } }
  }

  struct Settings {
    var presenterTimeout: Duration = .seconds(5)
    var accessTimeout: Duration = .seconds(30)
  }
  let settings = Mutex(Settings())
  /// Moves on at each ``cancel()``: an access that began before it gives up.
  let cancellations = Atomic<UInt64>(0)
  /// The accesses running on each thread, for nested ones and ``item(at:didMoveTo:)``.
  let running = Mutex<[RunningAccess]>([])

  /// A coordinator acting for `filePresenterOrNil`, which does not hear of its accesses.
  public init(filePresenter filePresenterOrNil: (any NSFilePresenter)?) {
    filePresenter = filePresenterOrNil
    super.init()
  }

  /// A coordinator acting for no presenter.
  public convenience override init() {
    self.init(filePresenter: nil)
  }

  // MARK: Presenters

  /// Registers `filePresenter`: from now on it is asked and told about the coordinated
  /// accesses of its item, by every process of the device. Adding it twice does nothing.
  ///
  /// A presenter whose item is not in a container, or whose identity is not entitled to
  /// it, hears nothing; the reason is written to stderr
  /// (``addFilePresenter(_:throwing:)`` throws it).
  open class func addFilePresenter(_ filePresenter: any NSFilePresenter) {
    do {
      try addFilePresenter(filePresenter, throwing: ())
    } catch {
      Diagnostics.report("file presenter not registered: \(error.message)")
    }
  }

  /// Registers `filePresenter`, as ``addFilePresenter(_:)``, throwing the reason it cannot
  /// be registered in its item's container. Not in Apple's API.
  ///
  /// - Throws: `.outsideContainer` when its item is not a file in a container;
  ///   `.notEntitled` (and the manifest's other refusals) when this process's identity may
  ///   not use the container; `.io` when its registration or inbox cannot be written.
  public class func addFilePresenter(
    _ filePresenter: any NSFilePresenter, throwing: Void
  ) throws(AppGroupsError) {
    try PresenterHost.shared.add(filePresenter, identity: FileCoordination.identity())
  }

  /// Unregisters `filePresenter`: it hears nothing more. Call it before the presenter goes.
  open class func removeFilePresenter(_ filePresenter: any NSFilePresenter) {
    PresenterHost.shared.remove(filePresenter)
  }

  /// The presenters this process registered, in the order they were added.
  open class var filePresenters: [any NSFilePresenter] { PresenterHost.shared.presenters }

  // MARK: Coordinated access (Apple's forms)

  /// Reads the item at `url` as a coordinated read (see ``NSFileCoordinator``): `reader`
  /// runs once every conflicting access has ended and the item's presenters have
  /// relinquished it. On failure `reader` is not called and `outError` says why.
  open func coordinate(
    readingItemAt url: URL, options: ReadingOptions = [], error outError: NSErrorPointer,
    byAccessor reader: (URL) -> Void
  ) {
    report(outError, url) { () throws(AppGroupsError) in
      try perform([.read(url, options)]) { urls in reader(urls[0]) }
    }
  }

  /// Writes the item at `url` as a coordinated write (see ``NSFileCoordinator``).
  open func coordinate(
    writingItemAt url: URL, options: WritingOptions = [], error outError: NSErrorPointer,
    byAccessor writer: (URL) -> Void
  ) {
    report(outError, url) { () throws(AppGroupsError) in
      try perform([.write(url, options)]) { urls in writer(urls[0]) }
    }
  }

  /// Reads one item and writes another (or the same) in one coordinated access.
  open func coordinate(
    readingItemAt readingURL: URL, options readingOptions: ReadingOptions = [],
    writingItemAt writingURL: URL, options writingOptions: WritingOptions = [],
    error outError: NSErrorPointer, byAccessor readerWriter: (URL, URL) -> Void
  ) {
    report(outError, readingURL) { () throws(AppGroupsError) in
      try perform([.read(readingURL, readingOptions), .write(writingURL, writingOptions)]) {
        urls in readerWriter(urls[0], urls[1])
      }
    }
  }

  /// Writes two items in one coordinated access: a move (`.forMoving` and `.forReplacing`),
  /// a copy, an exchange.
  open func coordinate(
    writingItemAt url1: URL, options options1: WritingOptions = [],
    writingItemAt url2: URL, options options2: WritingOptions = [],
    error outError: NSErrorPointer, byAccessor writer: (URL, URL) -> Void
  ) {
    report(outError, url1) { () throws(AppGroupsError) in
      try perform([.write(url1, options1), .write(url2, options2)]) { urls in
        writer(urls[0], urls[1])
      }
    }
  }

  /// Performs the accesses `intents` name as one coordinated access, on a thread of the
  /// library's, then runs `accessor` on `queue` (with `nil`, or the error that kept the
  /// access from beginning) and holds the claims until it returns.
  open func coordinate(
    with intents: [NSFileAccessIntent], queue: OperationQueue,
    byAccessor accessor: @escaping @Sendable ((any Error)?) -> Void
  ) {
    let requests = intents.map { intent -> AccessRequest in
      intent.isWriting
        ? .write(intent.url, intent.writingOptions) : .read(intent.url, intent.readingOptions)
    }
    let box = UncheckedBox(value: self)
    // Who acts is decided here: a thread of its own does not see the caller's task-local scope.
    let identity = try? FileCoordination.identity()
    Thread.detachNewThread {
      do throws(AppGroupsError) {
        try box.value.perform(requests, as: identity) { _ in
          let done = DispatchSemaphore(value: 0)
          queue.addOperation {
            accessor(nil)
            done.signal()
          }
          done.wait()
        }
      } catch {
        let reported = error.cocoaError(path: intents.first?.url.path)
        queue.addOperation { accessor(reported) }
      }
    }
  }

  /// Announces, inside a coordinated write of `oldURL` (`.forMoving`), that the item is about
  /// to move to `newURL`. Nothing to do here; kept for source compatibility.
  open func item(at oldURL: URL, willMoveTo newURL: URL) {}

  /// Announces, inside a coordinated write of `oldURL` (`.forMoving`) and usually of
  /// `newURL`, that the item moved to `newURL`: once the access ends, its presenters (and
  /// those of the items inside a moved folder) are told `presentedItemDidMove(to:)` and
  /// follow it, and the presenters of the folders around both places hear of it.
  open func item(at oldURL: URL, didMoveTo newURL: URL) {
    guard let old = try? CoordinatedItem.resolve(oldURL),
      let new = try? CoordinatedItem.resolve(newURL)
    else { return }
    let thread = Threads.Identity.current
    running.withLock { running in
      guard let index = running.lastIndex(where: { $0.thread == thread }) else { return }
      running[index].moves.append((old, new))
    }
  }

  /// Cancels the accesses of this coordinator that are waiting (for a claim or a presenter):
  /// their accessors do not run, and they fail with ``AppGroupsError/Code/cancelled``
  /// (`NSUserCancelledError`). An accessor already running is not stopped.
  open func cancel() {
    cancellations.add(1, ordering: .relaxed)
  }

  // MARK: Swift-shaped forms

  /// Reads the item at `url` as a coordinated read and returns what `reader` returns. Not in
  /// Apple's API: the error out-parameter becomes a `throw`.
  ///
  /// - Throws: ``AppGroupsError`` when the access could not begin (`.outsideContainer`,
  ///   `.notEntitled`, `.lockTimeout`, `.presenterTimeout`, `.presenterRefused`,
  ///   `.cancelled`, `.io`), else what `reader` throws.
  public func coordinate<Result>(
    readingItemAt url: URL, options: ReadingOptions = [],
    byAccessor reader: (URL) throws -> Result
  ) throws -> Result {
    try rethrowing([.read(url, options)]) { urls in try reader(urls[0]) }
  }

  /// Writes the item at `url` as a coordinated write and returns what `writer` returns. Not
  /// in Apple's API: the error out-parameter becomes a `throw`.
  ///
  /// - Throws: As ``coordinate(readingItemAt:options:byAccessor:)``.
  public func coordinate<Result>(
    writingItemAt url: URL, options: WritingOptions = [],
    byAccessor writer: (URL) throws -> Result
  ) throws -> Result {
    try rethrowing([.write(url, options)]) { urls in try writer(urls[0]) }
  }

  // MARK: Helpers

  /// Runs `body` with the accessor's error carried through the access.
  private func rethrowing<Result>(
    _ requests: [AccessRequest], _ body: ([URL]) throws -> Result
  ) throws -> Result {
    var outcome: Swift.Result<Result, any Error>?
    try perform(requests) { urls in outcome = Swift.Result { try body(urls) } }
    guard let outcome else { preconditionFailure("the accessor did not run") }
    return try outcome.get()
  }

  private func report(
    _ outError: NSErrorPointer, _ url: URL, _ body: () throws(AppGroupsError) -> Void
  ) {
    do {
      try body()
    } catch {
      outError?.pointee = error.cocoaError(path: url.path)
    }
  }
}

/// An item and how it will be accessed, for ``NSFileCoordinator/coordinate(with:queue:byAccessor:)``.
open class NSFileAccessIntent: NSObject, @unchecked Sendable {
  /// The item. Apple updates it when the item moves while the access waits; here it stays.
  open var url: URL
  let isWriting: Bool
  let readingOptions: NSFileCoordinator.ReadingOptions
  let writingOptions: NSFileCoordinator.WritingOptions

  init(
    url: URL, isWriting: Bool, reading: NSFileCoordinator.ReadingOptions,
    writing: NSFileCoordinator.WritingOptions
  ) {
    self.url = url
    self.isWriting = isWriting
    readingOptions = reading
    writingOptions = writing
    super.init()
  }

  /// A coordinated read of `url`.
  open class func readingIntent(
    with url: URL, options: NSFileCoordinator.ReadingOptions = []
  ) -> NSFileAccessIntent {
    NSFileAccessIntent(url: url, isWriting: false, reading: options, writing: [])
  }

  /// A coordinated write of `url`.
  open class func writingIntent(
    with url: URL, options: NSFileCoordinator.WritingOptions = []
  ) -> NSFileAccessIntent {
    NSFileAccessIntent(url: url, isWriting: true, reading: [], writing: options)
  }
}

/// The name this package's vocabulary uses for Foundation's `NSFileCoordinator`.
public typealias FileCoordinator = NSFileCoordinator

extension NSFileCoordinator {
  /// The app this process's coordinators and presenters act as: the one set here (an app
  /// that chose its identity with a fallback, a tool acting as an app), else the one
  /// ``AppLifecycle/start(identity:root:)`` was given (opening a ``GroupDefaults`` starts it;
  /// inside a test scoped by `AppGroupsTesting`, the test's identity comes first), else
  /// ``AppIdentity/current(fallback:)``. Its entitlements decide which containers the
  /// process may coordinate in. Not in Apple's API.
  public static var appIdentity: AppIdentity? {
    get { FileCoordination.override.withLock { $0 } }
    set { FileCoordination.override.withLock { $0 = newValue } }
  }
}

/// Settings of file coordination for the whole process.
enum FileCoordination {
  static let override = Mutex<AppIdentity?>(nil)

  /// Who this process's coordinators and presenters act as (see
  /// ``NSFileCoordinator/appIdentity``).
  static func identity() throws(AppGroupsError) -> AppIdentity {
    if let identity = override.withLock({ $0 }) { return identity }
    if let scoped = ScopedEnvironment.identity { return scoped }
    if let identity = Lifecycle.shared.startedIdentity { return identity }
    return try AppIdentity.current()
  }
}

extension AppGroupsError {
  /// The error as Foundation's coordinator gives it: `NSCocoaErrorDomain` with the code
  /// Foundation uses for such a failure, the message as its description, the file's path,
  /// and this error underneath. A presenter's own error keeps its domain and code.
  func cocoaError(path: String?) -> NSError {
    var info: [String: Any] = [NSLocalizedDescriptionKey: message]
    if let path { info[NSFilePathErrorKey] = path }
    if let presenter = cause as? NSError, code == .presenterRefused {
      info[NSUnderlyingErrorKey] = presenter
      return NSError(domain: presenter.domain, code: presenter.code, userInfo: info)
    }
    info[NSUnderlyingErrorKey] = self as NSError
    let cocoa: CocoaError.Code
    switch code {
    case .cancelled: cocoa = .userCancelled
    case .lockTimeout, .presenterTimeout: cocoa = .fileLocking
    case .outsideContainer: cocoa = .fileReadUnsupportedScheme
    case .notEntitled, .executableMismatch: cocoa = .fileReadNoPermission
    default: cocoa = .fileWriteUnknown
    }
    return NSError(domain: NSCocoaErrorDomain, code: cocoa.rawValue, userInfo: info)
  }
}

public import Foundation

/// An object that presents a file or folder of a container to the user, and is asked before
/// and told after other processes read, change, move or delete it: Foundation's
/// `NSFilePresenter`, across the processes of the simulated device.
///
/// Register it with ``NSFileCoordinator/addFilePresenter(_:)``; every coordinated access of
/// the item by another coordinator, in this process or any other, then calls it on its
/// ``presentedItemOperationQueue``:
///
/// ```swift
/// final class NotesPresenter: NSObject, NSFilePresenter {
///   let presentedItemURL: URL?
///   let presentedItemOperationQueue: OperationQueue = {
///     let queue = OperationQueue()
///     queue.maxConcurrentOperationCount = 1
///     return queue
///   }()
///   init(url: URL) { presentedItemURL = url }
///
///   func presentedItemDidChange() { reload() }
///   func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
///     closeDatabase()
///     writer { openDatabase() }                  // called when the writer is done
///   }
/// }
/// NSFileCoordinator.addFilePresenter(NotesPresenter(url: databaseURL))
/// ```
///
/// Every callback has a default that does nothing and answers at once, as an unimplemented
/// optional method does on Apple platforms. The item is read from ``presentedItemURL`` when
/// the presenter is added and follows ``presentedItemDidMove(to:)``; a presenter that points
/// elsewhere otherwise removes itself and adds itself again. A presenter that presents a
/// folder hears of the items inside it through the sub-item callbacks.
///
/// A callback with a completion handler must call it: a coordinator waits for it a bounded
/// time (``NSFileCoordinator/presenterTimeout``), then fails with an error that names the app
/// and the item. A presenter in an app that is suspended cannot answer: remove presenters in
/// ``AppLifecycle/onSuspend(_:)`` and add them again in ``AppLifecycle/onResume(_:)``, as
/// Apple asks of an app moving to the background.
///
/// A coordinated access made on the presenter's own queue (a read in
/// `presentedItemDidChange()`) waits behind a writer that holds its claim and is asking this
/// very presenter to relinquish, on that queue: the two wait for each other until the
/// writer's ``NSFileCoordinator/presenterTimeout`` fails the write. Make it on another queue.
public protocol NSFilePresenter: NSObjectProtocol {
  /// The file or folder presented; `nil` presents nothing.
  var presentedItemURL: URL? { get }
  /// The queue every callback runs on. A queue of one operation at a time keeps them in order.
  var presentedItemOperationQueue: OperationQueue { get }
  /// The item this one's item accompanies (Apple's sidecar files); kept for source
  /// compatibility, not used.
  var primaryPresentedItemURL: URL? { get }

  /// Another coordinator is about to read the item. Stop writing it, then call `reader`,
  /// passing a block to run when the reader is done (or `nil`).
  func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void)
  /// Another coordinator is about to write the item. Stop using it, then call `writer`,
  /// passing a block to run when the writer is done (or `nil`).
  func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void)
  /// Save unsaved changes to the item now; call `completionHandler` with `nil`, or with the
  /// error that makes the coordinated access fail.
  func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void)
  /// The item is about to be deleted: close it (and usually remove the presenter); an error
  /// passed to `completionHandler` makes the deletion's coordinated write fail.
  func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void)
  /// The item was moved to `newURL` by a coordinated write.
  func presentedItemDidMove(to newURL: URL)
  /// The item's contents or attributes were changed by a coordinated write (or, seen by the
  /// library's watch, by a process that did not coordinate; a change made after a coordinated
  /// access ended and before this presenter was told of it is heard too, after the access's
  /// callbacks).
  func presentedItemDidChange()
  /// An item inside the presented folder is about to be deleted.
  func accommodatePresentedSubitemDeletion(
    at url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void)
  /// An item appeared inside the presented folder.
  func presentedSubitemDidAppear(at url: URL)
  /// An item inside the presented folder moved.
  func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL)
  /// An item inside the presented folder changed.
  func presentedSubitemDidChange(at url: URL)
}

extension NSFilePresenter {
  public var primaryPresentedItemURL: URL? { nil }

  public func relinquishPresentedItem(
    toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void
  ) {
    reader(nil)
  }

  public func relinquishPresentedItem(
    toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void
  ) {
    writer(nil)
  }

  public func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
    completionHandler(nil)
  }

  public func accommodatePresentedItemDeletion(
    completionHandler: @escaping @Sendable ((any Error)?) -> Void
  ) {
    completionHandler(nil)
  }

  public func presentedItemDidMove(to newURL: URL) {}

  public func presentedItemDidChange() {}

  public func accommodatePresentedSubitemDeletion(
    at url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void
  ) {
    completionHandler(nil)
  }

  public func presentedSubitemDidAppear(at url: URL) {}

  public func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {}

  public func presentedSubitemDidChange(at url: URL) {}
}

/// The name this package's vocabulary uses for Foundation's `NSFilePresenter`.
public typealias FilePresenter = NSFilePresenter

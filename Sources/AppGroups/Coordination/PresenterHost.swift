import Foundation
internal import Synchronization

/// A value handed to another thread as is: a presenter (an `NSObjectProtocol` object that is
/// not `Sendable`, called only on its own operation queue, as Foundation calls it).
struct UncheckedBox<Value>: @unchecked Sendable {
  let value: Value
}

/// True once: a completion handler that a presenter may call twice acts the first time.
final class OnceFlag: Sendable {
  private let done = Atomic<Bool>(false)

  /// Whether this is the first call.
  func claim() -> Bool { !done.exchange(true, ordering: .acquiringAndReleasing) }
}

/// This process's presenters: their registrations in their containers, and their side of the
/// protocol (an ask runs their callbacks on their queues and answers; a tell reacquires and
/// tells them what happened).
final class PresenterHost: @unchecked Sendable {
  static let shared = PresenterHost()

  /// One added presenter.
  final class Entry: @unchecked Sendable {
    let presenter: any NSFilePresenter
    /// The registration's name, `<pid>-<start time>-<number>`.
    let name: String
    let bundleIdentifier: String
    let registered: Int64
    // Read and written under the host's lock.
    var item: CoordinatedItem?
    var isFolder = false
    var watch: Observation?

    init(presenter: any NSFilePresenter, name: String, bundleIdentifier: String, registered: Int64) {
      self.presenter = presenter
      self.name = name
      self.bundleIdentifier = bundleIdentifier
      self.registered = registered
    }
  }

  /// A relinquish given to an asker, until its tell says to reacquire.
  private struct Pending {
    var reacquirer: (@Sendable () -> Void)?
    /// The presenter has called the relinquish block.
    var relinquished = false
    /// The asker said to reacquire (or ended) before the presenter relinquished.
    var ended = false
  }

  private let lock = NSLock()
  // Read and written only under `lock`.
  private var entries: [String: Entry] = [:]
  private var order: [String] = []
  private var pending: [String: Pending] = [:]
  private var number: UInt64 = 0
  private var registryWatches: Set<String> = []

  private init() {}

  // MARK: Adding and removing

  /// Adds `presenter`, registering it in its item's container for `identity`.
  ///
  /// - Throws: The refusals of ``CoordinatedItem/resolve(_:)`` and
  ///   ``CoordinationSpace/admit(_:)``; `.io` when the registration cannot be written. The
  ///   presenter is added in this process all the same (it hears this process's coordinators
  ///   of its item, when there is one), and not again when it already was.
  func add(_ presenter: any NSFilePresenter, identity: AppIdentity?) throws(AppGroupsError) {
    let entry: Entry? = lock.withLock {
      guard !entries.values.contains(where: { $0.presenter === presenter }) else { return nil }
      number &+= 1
      let entry = Entry(
        presenter: presenter, name: "\(ThisProcess.key)-\(number)",
        bundleIdentifier: identity?.bundleIdentifier ?? "", registered: FileSystem.nowNanoseconds())
      entries[entry.name] = entry
      order.append(entry.name)
      return entry
    }
    guard let entry else { return }
    guard let url = presenter.presentedItemURL else { return }
    try register(entry, at: url, identity: identity)
  }

  /// Registers `entry` as presenting `url` (and its watch of the item), replacing an earlier
  /// registration.
  private func register(_ entry: Entry, at url: URL, identity: AppIdentity?) throws(AppGroupsError) {
    let item = try CoordinatedItem.resolve(url)
    guard let identity else {
      throw AppGroupsError(.notEntitled, "no identity to present \(item.path) as")
    }
    try item.space.admit(identity)
    _ = try Courier.shared.inbox(in: item.space)
    let isFolder = FileStatus(atPath: item.path)?.kind == .folder
    let previous: CoordinatedItem? = lock.withLock {
      let previous = entry.item
      entry.item = item
      entry.isFolder = isFolder
      return previous
    }
    if let previous, previous.space != item.space { previous.space.registry.remove(entry.name) }
    try item.space.registry.write(record(entry, item: item, isFolder: isFolder))
    UncoordinatedChanges.watch(entry)
    watchRegistry(of: item.space)
  }

  /// Watches `space`'s presenters folder and this process's inbox there (once): when the
  /// folder is removed under the running process, or a registration of this process or its
  /// inbox goes or is replaced, they are made again. (Without its inbox, every coordinator
  /// skips the presenters of this process as gone.)
  private func watchRegistry(of space: CoordinationSpace) {
    let first = lock.withLock { registryWatches.insert(space.container).inserted }
    guard first else { return }
    do {
      _ = try ChangeMonitor.shared.addListener(directory: space.registry.folder, prefix: "") { _ in
        PresenterHost.shared.restoreRegistrations(in: space)
      }
      _ = try ChangeMonitor.shared.addListener(
        directory: space.inboxFolder, prefix: ThisProcess.key
      ) { _ in
        do throws(AppGroupsError) {
          _ = try Courier.shared.inbox(in: space)
        } catch {
          Diagnostics.report(
            "\(error.message): coordinators in other processes do not ask the presenters of"
              + " this process in \(space.container)")
        }
      }
    } catch {
      Diagnostics.report(
        "cannot watch \(space.registry.folder) (\(error.message)): a registration or inbox"
          + " removed under this process is not made again")
    }
  }

  func record(_ entry: Entry, item: CoordinatedItem, isFolder: Bool) -> PresenterRegistry.Record {
    PresenterRegistry.Record(
      name: entry.name, item: item.relativePath, isFolder: isFolder,
      bundleIdentifier: entry.bundleIdentifier, process: ThisProcess.key,
      registered: entry.registered)
  }

  /// Removes `presenter`: its registration goes, and it hears nothing more.
  func remove(_ presenter: any NSFilePresenter) {
    let entry: Entry? = lock.withLock {
      guard let (name, entry) = entries.first(where: { $0.value.presenter === presenter }) else {
        return nil
      }
      entries[name] = nil
      order.removeAll { $0 == name }
      return entry
    }
    guard let entry else { return }
    let (item, watch): (CoordinatedItem?, Observation?) = lock.withLock {
      defer { entry.watch = nil }
      return (entry.item, entry.watch)
    }
    watch?.cancel()
    UncoordinatedChanges.forget(entry.name)
    item?.space.registry.remove(entry.name)
  }

  /// Removes every presenter (the process is exiting).
  func removeAll() {
    for presenter in presenters { remove(presenter) }
  }

  /// The presenters added, in the order they were added.
  var presenters: [any NSFilePresenter] {
    lock.withLock { order.compactMap { entries[$0]?.presenter } }
  }

  /// The registration name of `presenter`, when it was added.
  func name(of presenter: any NSFilePresenter) -> String? {
    lock.withLock { entries.values.first { $0.presenter === presenter }?.name }
  }

  func entry(named name: String) -> Entry? { lock.withLock { entries[name] } }

  /// When the calling code runs on the `presentedItemOperationQueue` of a presenter of this
  /// process: that presenter's item (`""` when it has none yet); `nil` otherwise. The
  /// presenters' queues are asked outside the host's lock.
  func presentedPathOfCurrentQueue() -> String? {
    let presenters = lock.withLock { entries.values.map { ($0.presenter, $0.item?.path ?? "") } }
    guard !presenters.isEmpty, let queue = OperationQueue.current else { return nil }
    return presenters.first { $0.0.presentedItemOperationQueue === queue }?.1
  }

  /// The item `entry` presents now.
  func currentItem(of entry: Entry) -> CoordinatedItem? { lock.withLock { entry.item } }

  /// Keeps `watch` (the entry's watch of its item), cancelling the one it replaces.
  func setWatch(_ watch: Observation?, of entry: Entry) {
    let old: Observation? = lock.withLock {
      let old = entry.watch
      entry.watch = watch
      return old
    }
    old?.cancel()
  }

  /// The entries whose registration is gone from `space`'s folder (removed under the running
  /// process) or no longer reads as a registration (overwritten, damaged), registered again:
  /// a registration that does not read is skipped by every coordinator.
  func restoreRegistrations(in space: CoordinationSpace) {
    // What each presenter of this process in `space` has registered now, where no registration
    // reads at its name. One that reads is left as it is: a coordinator that moved the item
    // rewrote it with the new path before this process hears of the move.
    func unwritten() -> [PresenterRegistry.Record] {
      let expected: [PresenterRegistry.Record] = lock.withLock {
        entries.values.compactMap { entry in
          guard let item = entry.item, item.space == space else { return nil }
          return record(entry, item: item, isFolder: entry.isFolder)
        }
      }
      return expected.filter { space.registry.record(named: $0.name) == nil }
    }
    guard !unwritten().isEmpty else { return }
    // A removal still under way (`rm -rf` of the coordination folder) may take a folder made
    // here a moment ago, and then says nothing more: the folder it removed last is watched by
    // nobody. So the folders, the inbox and the registration are made again until they hold,
    // a few times; a removal that goes on longer than that is a removal of the container.
    for _ in 0..<8 {
      do throws(AppGroupsError) {
        try space.prepareFolders()
        _ = try Courier.shared.inbox(in: space)
        for record in unwritten() { try space.registry.write(record) }
        if unwritten().isEmpty { return }
      } catch {
        continue
      }
    }
    Diagnostics.report(
      "the presenters of \(space.container) could not be registered again after their"
        + " registrations or their folder were removed or damaged: coordinators in other"
        + " processes do not ask them")
  }

  // MARK: Messages

  /// Handles an ask or a tell the courier read (on the courier's thread: nothing here waits).
  func receive(_ message: CoordinationMessage) {
    let key = message.from + "#" + String(message.id) + "#" + message.presenter
    guard let entry = entry(named: message.presenter) else {
      if message.verb == .ask {
        var answer = reply(to: message)
        answer.flags = 2  // unknown: a stale registration
        _ = Courier.shared.send(answer, to: message.from)
      }
      return
    }
    switch message.verb {
    case .ask:
      let ask = CoordinationMessage.Ask(rawValue: message.flags)
      let subitem = message.paths.count > 1 ? URL(fileURLWithPath: message.paths[1]) : nil
      let asker = FileSystem.lastComponent(of: message.from)
      run(ask, subitem: subitem, on: entry, key: key, asker: asker) { error in
        var answer = self.reply(to: message)
        if let error {
          let ns = error as NSError
          answer.flags = 1
          answer.errorDomain = ns.domain
          answer.errorCode = ns.code
          answer.text = ns.localizedDescription
        }
        if Courier.shared.isMine(message.from) {
          Courier.shared.deliverLocally(answer)
        } else {
          _ = Courier.shared.send(answer, to: message.from)
        }
      }
    case .tell:
      TestHooks.beforeTell?(message.paths.first ?? "")
      apply(
        CoordinationMessage.Tell(rawValue: message.flags), paths: message.paths,
        seen: UncoordinatedChanges.Seen(carried: message.text), to: entry, key: key)
    case .answer:
      break
    }
  }

  private func reply(to message: CoordinationMessage) -> CoordinationMessage {
    CoordinationMessage(
      verb: .answer, id: message.id, from: message.from, presenter: message.presenter, flags: 0,
      paths: [])
  }

  /// Runs the callbacks `ask` names on the presenter's queue, in order (save, relinquish,
  /// accommodate), each after the previous one's completion, then `finish` (with the first
  /// error a callback passed).
  private func run(
    _ ask: CoordinationMessage.Ask, subitem: URL?, on entry: Entry, key: String, asker: String,
    finish: @escaping @Sendable ((any Error)?) -> Void
  ) {
    let presenter = UncheckedBox(value: entry.presenter)
    let queue = entry.presenter.presentedItemOperationQueue
    typealias Step = @Sendable (@escaping @Sendable ((any Error)?) -> Void) -> Void
    var steps: [Step] = []
    if ask.contains(.save) {
      steps.append { done in presenter.value.savePresentedItemChanges(completionHandler: done) }
    }
    if ask.contains(.relinquishToReader) || ask.contains(.relinquishToWriter) {
      let toWriter = ask.contains(.relinquishToWriter)
      lock.withLock { pending[key] = Pending() }
      UncoordinatedChanges.coordinated(entry.name, begins: true, path: nil)
      Courier.shared.whenEnded(asker) {
        self.reacquire(key, entry: entry, queue: queue, askerGone: true)
      }
      steps.append { done in
        let relinquished: @Sendable ((@Sendable () -> Void)?) -> Void = { reacquirer in
          self.relinquished(key, reacquirer: reacquirer, queue: queue)
          done(nil)
        }
        if toWriter {
          presenter.value.relinquishPresentedItem(toWriter: relinquished)
        } else {
          presenter.value.relinquishPresentedItem(toReader: relinquished)
        }
      }
    }
    if ask.contains(.accommodateDeletion) {
      steps.append { done in presenter.value.accommodatePresentedItemDeletion(completionHandler: done) }
    }
    if ask.contains(.accommodateSubitemDeletion), let subitem {
      steps.append { done in
        presenter.value.accommodatePresentedSubitemDeletion(at: subitem, completionHandler: done)
      }
    }
    let all = steps
    @Sendable func step(_ index: Int) {
      guard index < all.count else { return finish(nil) }
      queue.addOperation {
        let answered = OnceFlag()
        let run = all[index]
        run { error in
          guard answered.claim() else { return }
          if let error { return finish(error) }
          step(index + 1)
        }
      }
    }
    step(0)
  }

  private func relinquished(_ key: String, reacquirer: (@Sendable () -> Void)?, queue: OperationQueue) {
    let runNow: (@Sendable () -> Void)? = lock.withLock {
      guard var state = pending[key] else { return nil }
      state.relinquished = true
      state.reacquirer = reacquirer
      if state.ended {
        pending[key] = nil
        return reacquirer
      }
      pending[key] = state
      return nil
    }
    if let runNow { queue.addOperation(runNow) }
  }

  /// The asker is done (or gone): the presenter's reacquirer runs, on its queue.
  ///
  /// The asker's tell carried what it saw of the item at `seen.path` when its access ended:
  /// the presenter's watch takes it as what it last saw of its item when that is the item's
  /// path, and looks for itself otherwise (see ``UncoordinatedChanges``).
  ///
  /// An asker gone before it told what happened (killed in its access) cannot say whether it
  /// changed the item: the item is then compared with what the presenter last saw, and a
  /// change is heard as one made without coordination (`presentedItemDidChange()`, or the
  /// deletion), after the reacquirer.
  private func reacquire(
    _ key: String, entry: Entry, queue: OperationQueue, askerGone: Bool = false,
    seen: (what: UncoordinatedChanges.Seen, path: String)? = nil
  ) {
    var told = true
    let reacquirer: (@Sendable () -> Void)? = lock.withLock {
      guard var state = pending[key] else { return nil }
      told = false
      defer {
        let path = askerGone ? nil : entry.item?.path
        let carried = seen.flatMap { $0.path == path ? $0.what : nil }
        UncoordinatedChanges.coordinated(entry.name, begins: false, path: path, seen: carried)
      }
      if !state.relinquished {
        state.ended = true
        pending[key] = state
        return nil
      }
      pending[key] = nil
      return state.reacquirer
    }
    if let reacquirer { queue.addOperation(reacquirer) }
    if askerGone, !told { UncoordinatedChanges.lookAgain(entry.name) }
  }

  /// Handles a tell: follows a move, reacquires (the watch takes what the coordinator `seen`
  /// of the item), runs the tell's callbacks on the presenter's queue, then looks at the item:
  /// a change made since the coordinator saw it is heard after them.
  private func apply(
    _ tell: CoordinationMessage.Tell, paths: [String], seen: UncoordinatedChanges.Seen?,
    to entry: Entry, key: String
  ) {
    let queue = entry.presenter.presentedItemOperationQueue
    let presenter = UncheckedBox(value: entry.presenter)
    let extra = Array(paths.dropFirst()).map { URL(fileURLWithPath: $0) }
    if tell.contains(.didMove), let destination = extra.first {
      moved(entry, to: destination)
    }
    if tell.contains(.reacquire) {
      // The coordinator looked at the item where the tell says it is now.
      let seenAt = tell.contains(.didMove) ? paths.dropFirst().first : paths.first
      reacquire(
        key, entry: entry, queue: queue, seen: seen.flatMap { seen in seenAt.map { (seen, $0) } })
    }
    queue.addOperation {
      let presenter = presenter.value
      if tell.contains(.didMove), let destination = extra.first {
        presenter.presentedItemDidMove(to: destination)
      }
      if tell.contains(.didChange) { presenter.presentedItemDidChange() }
      if tell.contains(.subitemDidChange), let url = extra.first { presenter.presentedSubitemDidChange(at: url) }
      if tell.contains(.subitemDidMove), extra.count >= 2 {
        presenter.presentedSubitem(at: extra[0], didMoveTo: extra[1])
      }
      if tell.contains(.subitemDidAppear), let url = extra.first { presenter.presentedSubitemDidAppear(at: url) }
    }
    if tell.contains(.reacquire) { UncoordinatedChanges.lookAgain(entry.name) }
  }

  /// Follows a move of the presented item: the entry (and its registration, when the item
  /// went to another container; the mover rewrote it in the same container) names the new path.
  private func moved(_ entry: Entry, to destination: URL) {
    guard let item = try? CoordinatedItem.resolve(destination) else { return }
    TestHooks.lookAcrossMove?.moveBegins()
    defer { TestHooks.lookAcrossMove?.moveEnded() }
    let previous: CoordinatedItem? = lock.withLock {
      let previous = entry.item
      entry.item = item
      return previous
    }
    if let previous, previous.space != item.space {
      previous.space.registry.remove(entry.name)
      let identity = try? AppIdentity(bundleIdentifier: entry.bundleIdentifier)
      try? register(entry, at: destination, identity: identity)
    } else {
      UncoordinatedChanges.watch(entry)
    }
  }
}

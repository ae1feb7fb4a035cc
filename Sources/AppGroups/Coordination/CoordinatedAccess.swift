import Foundation
internal import Synchronization

/// One item of a coordinated access and how it is accessed.
enum AccessRequest: Sendable {
  case read(URL, NSFileCoordinator.ReadingOptions)
  case write(URL, NSFileCoordinator.WritingOptions)

  var url: URL {
    switch self {
    case .read(let url, _), .write(let url, _): url
    }
  }

  var isWrite: Bool {
    if case .write = self { return true }
    return false
  }
}

/// A coordinated access running its accessor on a thread.
struct RunningAccess: @unchecked Sendable {
  let thread: Threads.Identity
  let claims: [Claim]
  /// ``NSFileCoordinator/item(at:didMoveTo:)`` calls made in the accessor.
  var moves: [(from: CoordinatedItem, to: CoordinatedItem)] = []
}

extension NSFileCoordinator {
  /// One coordinated access of `requests`' items: claims, asks, the accessor, tells (see
  /// ``NSFileCoordinator``).
  func perform(
    _ requests: [AccessRequest], as given: AppIdentity? = nil, accessor: ([URL]) -> Void
  ) throws(AppGroupsError) {
    let identity: AppIdentity
    if let given { identity = given } else { identity = try FileCoordination.identity() }
    let cancelledAt = cancellations.load(ordering: .relaxed)
    let cancelled = { self.cancellations.load(ordering: .relaxed) != cancelledAt }
    let (presenterTimeout, accessTimeout) = settings.withLock { ($0.presenterTimeout, $0.accessTimeout) }

    // The items, as claims.
    var claims: [Claim] = []
    var urls: [URL] = []
    for request in requests {
      var url = request.url
      if case .read(_, let options) = request, options.contains(.resolvesSymbolicLink) {
        url = url.resolvingSymlinksInPath()
      }
      let item = try CoordinatedItem.resolve(url)
      try item.space.admit(identity)
      urls.append(url)
      var whole = false
      if case .write(_, let options) = request,
        !options.isDisjoint(with: [.forMoving, .forDeleting, .forReplacing])
      {
        try item.refuseRemovingCoordinationState(options)
        whole = FileStatus(atPath: item.path)?.kind == .folder
      }
      claims.append(Claim(item: item, exclusive: request.isWrite, subtree: whole))
    }

    // Nested in an access of this coordinator on this thread that already claims it all.
    let thread = Threads.Identity.current
    let nested = running.withLock { running in
      running.contains { access in
        access.thread == thread
          && claims.allSatisfy { claim in access.claims.contains { $0.covers(claim) } }
      }
    }
    if nested { return accessor(urls) }
    Self.reportIfOnPresenterQueue(claims)

    let lock: ClaimLock
    do throws(ClaimLock.Failure) {
      lock = try ClaimLock.acquire(
        claims, deadline: FileSystem.deadline(after: accessTimeout), cancelled: cancelled)
    } catch {
      throw accessFailure(error, claims: claims, after: accessTimeout)
    }
    defer { lock.release() }
    ClaimLock.recordNames(claims)

    let session = AskSession(
      coordinator: self, identity: identity, requests: requests, claims: claims,
      timeout: presenterTimeout, cancelled: cancelled)
    let existedBefore = claims.map { Paths.exists($0.item.path) }
    try session.askPresenters()

    // The coordinator's own presenter hears nothing of the access, its watch of the item
    // included.
    if let own = session.own {
      UncoordinatedChanges.coordinated(own, begins: true, path: nil)
    }
    running.withLock { $0.append(RunningAccess(thread: thread, claims: claims)) }
    accessor(urls)
    if let own = session.own, let entry = PresenterHost.shared.entry(named: own) {
      let path = PresenterHost.shared.currentItem(of: entry)?.path
      UncoordinatedChanges.coordinated(own, begins: false, path: path)
    }
    let moves = running.withLock { running -> [(from: CoordinatedItem, to: CoordinatedItem)] in
      guard let index = running.lastIndex(where: { $0.thread == thread }) else { return [] }
      return running.remove(at: index).moves
    }
    session.tellPresenters(moves: moves, existedBefore: existedBefore)
  }

  /// Says once, for a coordinated access made on a presenter's `presentedItemOperationQueue`,
  /// why that can end in a writer's failure (Apple's documentation warns against it too): a
  /// writer elsewhere that holds its claim asks the presenter to relinquish on that queue,
  /// which is busy with this access, while this access waits for the writer's claim.
  private static func reportIfOnPresenterQueue(_ claims: [Claim]) {
    guard let presented = PresenterHost.shared.presentedPathOfCurrentQueue() else { return }
    let kind = claims.contains { $0.exclusive } ? "write" : "read"
    let items = claims.map(\.item.path).joined(separator: ", ")
    let presenter = presented.isEmpty ? "a file presenter" : "the file presenter of \(presented)"
    Diagnostics.reportOnce(
      "a coordinated \(kind) of \(items) was made on the presentedItemOperationQueue of"
        + " \(presenter): a writer that holds its claim asks that presenter to relinquish on that"
        + " queue, while an access on the queue waits for the writer's claim, so the writer fails"
        + " when its presenter timeout runs out; make coordinated accesses on another queue")
  }

  /// The error for a claim that could not be taken, naming who holds the items.
  private func accessFailure(
    _ failure: ClaimLock.Failure, claims: [Claim], after bound: Duration
  ) -> AppGroupsError {
    let items = claims.map(\.item.path).joined(separator: " and ")
    switch failure {
    case .cancelled:
      return AppGroupsError(.cancelled, "the coordinated access of \(items) was cancelled")
    case .suspending:
      return AppGroupsError(
        .lockTimeout,
        "the coordinated access of \(items) did not begin: this app was being suspended until"
          + " the bound (\(bound))")
    case .failed(let error):
      return AppGroupsError.coordinationFiles(error, "taking the coordination claim of \(items)")
    case .timedOut:
      let holders = CoordinationStatus.holders(of: claims)
      let who =
        holders.isEmpty
        ? "another access held it" : holders.map(\.description).joined(separator: "; ")
      return AppGroupsError(
        .lockTimeout,
        "the coordinated access of \(items) waited \(bound) for other accesses and did not"
          + " begin: \(who)")
    }
  }
}

/// The presenters one access asks before its accessor and tells after it.
final class AskSession {
  let coordinator: NSFileCoordinator
  let identity: AppIdentity
  let requests: [AccessRequest]
  let claims: [Claim]
  let timeout: Duration
  let cancelled: () -> Bool
  /// The presenters asked, with their inbox, in order.
  private(set) var asked: [(record: PresenterRegistry.Record, space: CoordinationSpace)] = []
  private var id: UInt64 = 0
  /// The registration name of the coordinator's own presenter, which is neither asked nor told.
  let own: String?

  init(
    coordinator: NSFileCoordinator, identity: AppIdentity, requests: [AccessRequest],
    claims: [Claim], timeout: Duration, cancelled: @escaping () -> Bool
  ) {
    self.coordinator = coordinator
    self.identity = identity
    self.requests = requests
    self.claims = claims
    self.timeout = timeout
    self.cancelled = cancelled
    own = coordinator.filePresenter.flatMap { PresenterHost.shared.name(of: $0) }
  }

  /// Every live presenter of the access's containers but the coordinator's own.
  private func presenters() -> [(record: PresenterRegistry.Record, space: CoordinationSpace)] {
    var spaces: [CoordinationSpace] = []
    for claim in claims where !spaces.contains(claim.item.space) { spaces.append(claim.item.space) }
    return spaces.flatMap { space in
      space.registry.records().filter { $0.name != own }.map { ($0, space) }
    }
  }

  /// What the access asks `record`'s presenter, and about which item inside it.
  private func ask(
    _ record: PresenterRegistry.Record, in space: CoordinationSpace
  ) -> (CoordinationMessage.Ask, String?) {
    var ask: CoordinationMessage.Ask = []
    var subitem: String?
    let presented = space.item(record.item)
    for (request, claim) in zip(requests, claims) where claim.item.space == space {
      switch request {
      case .read(_, let options):
        guard presented == claim.item else { continue }
        ask.insert(.relinquishToReader)
        if !options.contains(.withoutChanges) { ask.insert(.save) }
      case .write(_, let options):
        // Something is there to delete (a move's destination often has nothing).
        let deleting =
          !options.isDisjoint(with: [.forDeleting, .forReplacing]) && Paths.exists(claim.item.path)
        if presented == claim.item || (claim.subtree && presented.isInside(claim.item)) {
          ask.insert(.relinquishToWriter)
          if options.contains(.forMerging) { ask.insert(.save) }
          if deleting { ask.insert(.accommodateDeletion) }
        } else if record.isFolder, claim.item.isInside(presented), deleting, subitem == nil {
          ask.insert(.accommodateSubitemDeletion)
          subitem = claim.item.path
        }
      }
    }
    return (ask, subitem)
  }

  /// Asks the presenters, one at a time in registration order.
  ///
  /// - Throws: `.presenterTimeout` when one did not answer in time, `.presenterRefused` when
  ///   one passed an error, `.cancelled`; the presenters asked before are told to reacquire.
  func askPresenters() throws(AppGroupsError) {
    let candidates = presenters()
    guard !candidates.isEmpty else { return }
    for (record, space) in candidates {
      let (flags, subitem) = ask(record, in: space)
      guard !flags.isEmpty else { continue }
      if id == 0 { id = Courier.shared.expectAnswers() }
      let from: String
      do {
        from = try Courier.shared.inbox(in: space)
      } catch {
        abort()
        throw error
      }
      let message = CoordinationMessage(
        verb: .ask, id: id, from: from, presenter: record.name, flags: flags.rawValue,
        paths: [space.item(record.item).path] + (subitem.map { [$0] } ?? []))
      let inbox = space.inboxFolder + "/" + record.process
      switch Courier.shared.send(message, to: inbox) {
      case .gone:
        space.registry.removeStale([record])
        continue
      case .failed(let reason):
        abort()
        throw AppGroupsError(.io, "asking the presenter of \(space.item(record.item).path): \(reason)")
      case .full:
        asked.append((record, space))
        throw unanswered(record, space: space, flags: flags, waited: .zero)
      case .sent:
        asked.append((record, space))
      }
      let deadline = FileSystem.deadline(after: timeout)
      // A presenter's process that dies before answering is not waited for.
      let gone = { !ThisProcess.isAlive(record.process) }
      guard
        let answer = Courier.shared.awaitAnswer(
          id, presenter: record.name, until: deadline, cancelled: { cancelled() || gone() })
      else {
        if !cancelled(), gone() {
          asked.removeLast()
          space.registry.removeStale([record])
          continue
        }
        if cancelled() {
          abort()
          throw AppGroupsError(
            .cancelled, "the coordinated access of \(claims.map(\.item.path).joined(separator: " and ")) was cancelled")
        }
        throw unanswered(record, space: space, flags: flags, waited: timeout)
      }
      switch answer.flags {
      case 0: continue
      case 2:
        // A registration its process does not know: stale (removed meanwhile).
        asked.removeLast()
        space.registry.remove(record.name)
      default:
        abort()
        let underlying = NSError(
          domain: answer.errorDomain.isEmpty ? NSCocoaErrorDomain : answer.errorDomain,
          code: answer.errorCode, userInfo: [NSLocalizedDescriptionKey: answer.text])
        throw AppGroupsError(
          .presenterRefused,
          "\(PrintedText.shown(record.bundleIdentifier)) (\(record.pid)), which presents"
            + " \(PrintedText.shown(space.item(record.item).path)), refused the coordinated \(verb)"
            + " by \(identity.bundleIdentifier) (\(Processes.currentID)):"
            + " \(PrintedText.shown(answer.text))",
          cause: underlying)
      }
    }
  }

  private var verb: String {
    requests.contains(where: \.isWrite) ? "write" : "read"
  }

  /// The error for a presenter that did not answer, after telling the presenters asked to
  /// reacquire; also appended to the device's lifecycle log.
  private func unanswered(
    _ record: PresenterRegistry.Record, space: CoordinationSpace,
    flags: CoordinationMessage.Ask, waited: Duration
  ) -> AppGroupsError {
    abort()
    let pid = record.pid
    let state: String
    if let status = ProcessStatus(pid: pid), ThisProcess.isAlive(record.process) {
      if status.isStopped {
        let suspended = Device(root: space.containerRoot).liveRecord(pid: pid)?.isSuspended == true
        state = suspended ? "it is suspended" : "it is stopped (SIGSTOP, a debugger, or job control)"
      } else {
        state = "it is running, and its presenter has not called the completion handler"
      }
    } else {
      state = "it ended"
    }
    let asked =
      flags.contains(.relinquishToWriter)
      ? "relinquish-to-writer" : flags.contains(.relinquishToReader) ? "relinquish-to-reader"
      : flags.contains(.accommodateSubitemDeletion) ? "accommodate-subitem-deletion" : "save"
    let within = waited == .zero ? "its inbox is full" : "within \(waited)"
    let line =
      "\(PrintedText.shown(record.bundleIdentifier)) (\(pid)) presents"
      + " \(PrintedText.shown(space.item(record.item).path)) in"
      + " \(space.owner) and did not answer \(asked) for \(identity.bundleIdentifier)"
      + " (\(Processes.currentID)) \(within): \(state); the coordinated \(verb) was not made"
    CoordinationLog.append("unanswered: " + line, space: space)
    return AppGroupsError(.presenterTimeout, line)
  }

  /// Tells every presenter asked so far to reacquire: the access will not happen.
  private func abort() {
    guard id != 0 else { return }
    for (record, space) in asked {
      send(.reacquire, to: record, in: space, paths: [])
    }
    asked.removeAll()
    Courier.shared.forget(id)
  }

  private func send(
    _ tell: CoordinationMessage.Tell, to record: PresenterRegistry.Record,
    in space: CoordinationSpace, paths: [String]
  ) {
    guard let from = try? Courier.shared.inbox(in: space) else { return }
    if id == 0 { id = Courier.shared.expectAnswers() }
    let presented = space.item(record.item).path
    var message = CoordinationMessage(
      verb: .tell, id: id, from: from, presenter: record.name, flags: tell.rawValue,
      paths: [presented] + paths)
    // What the presenter's item (at its new path, when it moved) looks like now that the access
    // is over (or will not be), its claim still held: what the presenter takes as last seen
    // when it reacquires, so that a change made after the access and before it handles this
    // tell is heard (see ``UncoordinatedChanges``). Left out of a message it would make too
    // long.
    if tell.contains(.reacquire) {
      let item = tell.contains(.didMove) ? paths.first ?? presented : presented
      message.text = UncoordinatedChanges.Seen(lookingAt: item)?.carried ?? ""
      if message.encoded() == nil { message.text = "" }
    }
    _ = Courier.shared.send(message, to: space.inboxFolder + "/" + record.process)
  }

  /// After the accessor: tells the presenters what happened (see ``NSFileCoordinator``),
  /// and moves the registrations of presenters whose item moved.
  func tellPresenters(
    moves: [(from: CoordinatedItem, to: CoordinatedItem)], existedBefore: [Bool]
  ) {
    let askedNames = Set(asked.map(\.record.name))
    var tells: [String: (CoordinationMessage.Tell, [String])] = [:]
    for (record, _) in asked { tells[record.name] = (.reacquire, []) }

    let candidates = presenters()
    for (record, space) in candidates {
      let presented = space.item(record.item)
      var (tell, paths) = tells[record.name] ?? ([], [])
      // Moves: the presenter follows its item, or hears of the move inside its folder.
      var movedTo: CoordinatedItem?
      for move in moves where move.from.space == space && move.from.contains(presented) {
        movedTo = move.from.moved(presented, to: move.to)
      }
      if let movedTo {
        tell.insert(.didMove)
        paths = [movedTo.path]
        if movedTo.space == space {
          var updated = record
          updated.item = movedTo.relativePath
          try? space.registry.write(updated)
        } else {
          space.registry.remove(record.name)
        }
      } else if record.isFolder,
        let move = moves.first(where: {
          ($0.from.space == space && $0.from.isInside(presented))
            || ($0.to.space == space && $0.to.isInside(presented))
        })
      {
        tell.insert(.subitemDidMove)
        paths = [move.from.path, move.to.path]
      }
      // Writes: the presenter of the item, and the folders above it.
      if movedTo == nil {
        for (index, (request, claim)) in zip(requests, claims).enumerated()
        where request.isWrite && claim.item.space == space {
          let exists = Paths.exists(claim.item.path)
          if presented == claim.item, askedNames.contains(record.name), exists {
            tell.insert(.didChange)
          } else if record.isFolder, claim.item.isInside(presented), paths.isEmpty,
            !moves.contains(where: { $0.from == claim.item || $0.to == claim.item })
          {
            if exists && !existedBefore[index] {
              tell.insert(.subitemDidAppear)
              paths = [claim.item.path]
            } else if exists {
              tell.insert(.subitemDidChange)
              paths = [claim.item.path]
            }
          }
        }
      }
      if !tell.isEmpty { tells[record.name] = (tell, paths) }
    }
    for (record, space) in candidates {
      guard let (tell, paths) = tells[record.name] else { continue }
      send(tell, to: record, in: space, paths: paths)
    }
    if id != 0 { Courier.shared.forget(id) }
  }
}

/// Where a coordination's reports go: `<root>/Run/lifecycle.log`, as the lifecycle's, when
/// this process may write it; else (an app in its sandbox) the container's
/// `Library/Coordination/log`. `groupctl ps` shows both.
enum CoordinationLog {
  static func append(_ line: String, space: CoordinationSpace) {
    let stamp = ISO8601DateFormatter().string(from: Date())
    let text = "\(stamp) \(line)\n"
    let run = space.root + "/Run/lifecycle.log"
    if Paths.exists(space.root + "/Run"), FileSystem.append(text, to: run) { return }
    FileSystem.append(text, to: space.folder + "/" + CoordinationLayout.logFile)
  }
}

import Foundation

/// This process's mail for file coordination: one inbox per container it takes part in, a
/// FIFO at `Library/Coordination/inbox/<pid>-<start time>`, read by one thread of its own.
///
/// A FIFO, because a sandboxed app can make and open one in its group container (Landlock
/// scopes abstract sockets and signals to the sandbox, not files), a write of a message of at
/// most `PIPE_BUF` bytes arrives whole, and the kernel tells a sender at once when nobody
/// reads an inbox any more: `open(2)` with `O_NONBLOCK` fails with `ENXIO`, so a crashed
/// presenter is skipped, never waited for. The owner keeps its inbox open for reading and
/// writing, so that it never reads an end of file.
///
/// The thread hands asks and tells to ``PresenterHost`` (which runs presenters on their own
/// queues, never on this thread) and answers to the access waiting for them; it also hears,
/// through a pidfd, when a process that asked a presenter here to relinquish ends without
/// telling it to reacquire.
final class Courier: @unchecked Sendable {
  static let shared = Courier()

  /// How a message went.
  enum Delivery: Equatable {
    case sent
    /// Nobody reads the inbox: its process is gone (or the inbox is).
    case gone
    /// The inbox is full: its process has not read it for a long while (stopped).
    case full
    case failed(String)
  }

  private let condition = NSCondition()
  // Everything below is read and written only while `condition` is locked.
  private var inboxes: [String: CInt] = [:]
  private var partial: [CInt: [UInt8]] = [:]
  private var waiting: Set<UInt64> = []
  private var answers: [UInt64: [CoordinationMessage]] = [:]
  private var exitWatches: [CInt: (key: String, handlers: [@Sendable () -> Void])] = [:]
  private var nextID: UInt64 = 1
  private var eventFD: CInt = -1
  private var started = false

  private init() {}

  // MARK: Inboxes

  /// This process's inbox in `space`, made (a FIFO, mode 0600) and opened on first use, and
  /// again when it was removed under the running process.
  func inbox(in space: CoordinationSpace) throws(AppGroupsError) -> String {
    let path = space.inboxFolder + "/" + ThisProcess.key
    let known: CInt? = condition.withLock { inboxes[path] }
    if let known, Fifos.isStillAtPath(known, path) { return path }
    try space.prepareFolders()
    let fd: CInt
    do throws(SystemCallError) {
      // A FIFO already there is this process's inbox from an earlier open.
      fd = try Fifos.makeAndOpenForReading(path)
    } catch {
      throw AppGroupsError(io: error, "opening this process's coordination inbox \(path)")
    }
    let first: Bool = condition.withLock {
      if let old = inboxes[path] {
        partial[old] = nil
        FileSystem.close(old)
      }
      inboxes[path] = fd
      return inboxes.count == 1
    }
    if first { Processes.atExit { Courier.shared.removeInboxes() } }
    startIfNeeded()
    wake()
    removeLeftovers(in: space)
    return path
  }

  /// Removes the inboxes and registrations that processes which are gone left in `space`
  /// (a process killed before it could remove its own).
  private func removeLeftovers(in space: CoordinationSpace) {
    for name in FileSystem.entryNames(in: space.inboxFolder)
    where name != ThisProcess.key && ThisProcess.parse(name) != nil && !ThisProcess.isAlive(name) {
      try? FileSystem.remove(space.inboxFolder + "/" + name)
    }
    space.registry.removeStale(space.registry.scan())
  }

  /// Removes this process's inboxes and registrations (at its normal exit): nothing is left
  /// for others to find stale.
  func removeInboxes() {
    PresenterHost.shared.removeAll()
    let paths: [String] = condition.withLock { Array(inboxes.keys) }
    for path in paths { try? FileSystem.remove(path) }
  }

  /// Whether `inbox` is one of this process's.
  func isMine(_ inbox: String) -> Bool {
    FileSystem.lastComponent(of: inbox) == ThisProcess.key
  }

  // MARK: Sending

  /// Writes `message` whole to `inbox`, without waiting.
  ///
  /// The corresponding system calls are `open(2)` with `O_NONBLOCK` (`ENXIO`: no reader) and
  /// `write(2)`, with `SIGPIPE` held off the calling thread (a reader that closes meanwhile
  /// makes the write fail with `EPIPE` instead of ending the process).
  func send(_ message: CoordinationMessage, to inbox: String) -> Delivery {
    guard let bytes = message.encoded() else {
      return .failed("the message about \(message.paths.first ?? "") is longer than \(CoordinationMessage.maximumSize) bytes")
    }
    switch Fifos.send(bytes, to: inbox) {
    case .sent: return .sent
    case .gone: return .gone
    case .full: return .full
    case .short: return .failed("a short write to \(inbox)")
    case .failed(let error): return .failed("\(error)")
    }
  }

  // MARK: Answers

  /// A new number for an access's messages, and the courier's attention to its answers.
  func expectAnswers() -> UInt64 {
    condition.withLock {
      let id = nextID
      nextID &+= 1
      waiting.insert(id)
      return id
    }
  }

  /// Waits for the answer of `presenter` to the ask `id`, until `deadline` at most, looking at
  /// `cancelled` every tenth of a second; `nil` when none came.
  func awaitAnswer(
    _ id: UInt64, presenter: String, until deadline: UInt64, cancelled: () -> Bool
  ) -> CoordinationMessage? {
    condition.lock()
    defer { condition.unlock() }
    while true {
      if let index = answers[id]?.firstIndex(where: { $0.presenter == presenter }) {
        return answers[id]?.remove(at: index)
      }
      let now = FileSystem.monotonicNanoseconds()
      if now >= deadline || cancelled() { return nil }
      let wait = min(deadline - now, 100_000_000)
      _ = condition.wait(until: Date(timeIntervalSinceNow: Double(wait) / 1e9))
    }
  }

  /// Stops waiting for the answers of `id`; one that comes later is dropped.
  func forget(_ id: UInt64) {
    condition.withLock {
      waiting.remove(id)
      answers[id] = nil
    }
  }

  /// Delivers an answer from this very process (a presenter of this process answered).
  func deliverLocally(_ answer: CoordinationMessage) {
    condition.withLock {
      guard waiting.contains(answer.id) else { return }
      answers[answer.id, default: []].append(answer)
      condition.broadcast()
    }
  }

  // MARK: Exits

  /// Calls `handler` (on the courier's thread: keep it short) when the process `key`
  /// (`<pid>-<start time>`) has ended; at once when it already has.
  func whenEnded(_ key: String, _ handler: @escaping @Sendable () -> Void) {
    guard let (pid, _) = ThisProcess.parse(key), ThisProcess.isAlive(key) else { return handler() }
    let added: Bool = condition.withLock {
      if let (fd, _) = exitWatches.first(where: { $0.value.key == key }) {
        exitWatches[fd]?.handlers.append(handler)
        return true
      }
      guard let fd = Fifos.processDescriptor(pid) else { return false }
      // The pid may have been reused between the check and the open: check again.
      guard ThisProcess.isAlive(key) else {
        FileSystem.close(fd)
        return false
      }
      exitWatches[fd] = (key, [handler])
      return true
    }
    if !added { return handler() }
    startIfNeeded()
    wake()
  }

  // MARK: The thread

  private func startIfNeeded() {
    let start: Bool = condition.withLock {
      guard !started else { return false }
      eventFD = Fifos.makeWakeEvent() ?? -1
      started = eventFD >= 0
      return started
    }
    guard start else { return }
    let thread = Thread { [unowned self] in self.run() }
    thread.name = "appgroups.coordination"
    thread.start()
  }

  private func wake() {
    let fd = condition.withLock { eventFD }
    guard fd >= 0 else { return }
    Fifos.signal(fd)
  }

  private func run() {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
      let (event, inboxFDs, exitFDs) = condition.withLock {
        (eventFD, Array(inboxes.values), Array(exitWatches.keys))
      }
      let descriptors = [event] + inboxFDs + exitFDs
      guard let ready = Fifos.waitUntilReadable(descriptors) else { continue }
      if ready[0] { Fifos.drain(event) }
      var messages: [CoordinationMessage] = []
      for (fd, isReady) in zip(inboxFDs, ready.dropFirst()) where isReady {
        let count = Fifos.readAvailable(fd, into: &buffer)
        guard count > 0 else { continue }
        messages += condition.withLock { () -> [CoordinationMessage] in
          guard inboxes.values.contains(fd) else { return [] }
          var bytes = partial[fd] ?? []
          bytes += buffer[..<count]
          var found: [CoordinationMessage] = []
          while let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) {
            if let message = CoordinationMessage(line: bytes[..<newline]) { found.append(message) }
            bytes.removeSubrange(...newline)
          }
          // No message is longer: what is left is another process's bytes, dropped (the
          // next message's first newline would end them anyway).
          if bytes.count > CoordinationMessage.maximumSize { bytes = [] }
          partial[fd] = bytes
          return found
        }
      }
      var ended: [@Sendable () -> Void] = []
      for (fd, isReady) in zip(exitFDs, ready.dropFirst(1 + inboxFDs.count)) where isReady {
        condition.withLock {
          if let watch = exitWatches.removeValue(forKey: fd) { ended += watch.handlers }
        }
        FileSystem.close(fd)
      }
      for message in messages {
        switch message.verb {
        case .answer:
          condition.withLock {
            guard waiting.contains(message.id) else { return }
            answers[message.id, default: []].append(message)
            condition.broadcast()
          }
        case .ask, .tell:
          PresenterHost.shared.receive(message)
        }
      }
      for handler in ended { handler() }
    }
  }
}

public import Foundation

/// A running child process with line-based handshakes over its stdin and
/// stdout: tests wait for a line (with a deadline), never for a time.
public final class ChildProcess: @unchecked Sendable {
  public let process = Process()
  private var exit: ExitSignal?
  private let input = Spawn.pipe()
  private let output = Spawn.pipe()
  private let errors = Spawn.pipe()
  private let condition = NSCondition()
  private var lines: [String] = []
  private var partial = Data()
  private var closed = false
  private var errorData = Data()
  private var errorClosed = false
  /// Guards the write end of the child's stdin, which is closed when the child exits.
  private let inputLock = NSLock()

  /// Starts the built product `name` (see ``Product/url(_:)``).
  public convenience init(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws {
    try self.init(executable: Product.url(name), arguments, environment: environment)
  }

  /// Starts the program at `executable` (`/bin/sh` for a script of several products).
  public init(executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws {
    // Writing to a child that has died must fail, not kill the test process.
    Glibc.signal(SIGPIPE, SIG_IGN)
    process.executableURL = executable
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    // The write end of the child's stdin is closed when the child exits, not when this object
    // goes: one test process runs hundreds of children (see `Spawn.drain`).
    exit = try process.startWatchingExit { [input, inputLock] in
      inputLock.lock()
      try? input.fileHandleForWriting.close()
      inputLock.unlock()
    }
    // Each pipe is read by a thread of its own with blocking reads until its end. Not a
    // Dispatch readability handler: a handler's source is cancelled asynchronously, and
    // closing its descriptor meanwhile (a child's pipes are closed when the child's object
    // goes) while another test opens a descriptor of the same number crashed Dispatch's
    // event loop when tests started and dropped many children at once.
    Spawn.drain(output.fileHandleForReading) { [weak self] data in self?.received(data) }
    Spawn.drain(errors.fileHandleForReading) { [weak self] data in self?.receivedError(data) }
  }

  private func receivedError(_ data: Data) {
    condition.lock()
    errorData.append(data)
    if data.isEmpty { errorClosed = true }
    condition.broadcast()
    condition.unlock()
  }

  private func received(_ data: Data) {
    condition.lock()
    defer { condition.unlock() }
    if data.isEmpty {
      closed = true
      if !partial.isEmpty { lines.append(String(decoding: partial, as: UTF8.self)) }
      partial.removeAll()
      condition.broadcast()
      return
    }
    partial.append(data)
    while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
      lines.append(String(decoding: partial[partial.startIndex..<newline], as: UTF8.self))
      partial.removeSubrange(partial.startIndex...newline)
    }
    condition.broadcast()
  }

  /// Waits for the next stdout line that satisfies `matching` (earlier lines
  /// are consumed), or returns `nil` at the deadline or end of output.
  public func waitForLine(
    timeout: TimeInterval = 20, where matching: (String) -> Bool = { _ in true }
  ) -> String? {
    let deadline = Date().addingTimeInterval(timeout)
    condition.lock()
    defer { condition.unlock() }
    while true {
      while !lines.isEmpty {
        let line = lines.removeFirst()
        if matching(line) { return line }
      }
      if closed { return nil }
      if !condition.wait(until: deadline) { return nil }
    }
  }

  /// Waits for a line equal to `text`.
  public func waitFor(_ text: String, timeout: TimeInterval = 20) -> Bool {
    waitForLine(timeout: timeout) { $0 == text } != nil
  }

  /// Waits until the child has written a whole stderr line that satisfies
  /// `matching` (stderr is not consumed), or returns `nil` at the deadline
  /// or when stderr ends without one.
  public func waitForErrorLine(
    timeout: TimeInterval = 20, where matching: (String) -> Bool
  ) -> String? {
    let deadline = Date().addingTimeInterval(timeout)
    condition.lock()
    defer { condition.unlock() }
    while true {
      let text = String(decoding: errorData, as: UTF8.self)
      var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
      if !errorClosed { lines.removeLast() }  // the unfinished line
      if let line = lines.first(where: matching) { return line }
      if errorClosed { return nil }
      if !condition.wait(until: deadline) { return nil }
    }
  }

  /// Waits for a stderr line equal to `text`.
  public func waitForError(_ text: String, timeout: TimeInterval = 20) -> Bool {
    waitForErrorLine(timeout: timeout) { $0 == text } != nil
  }

  /// Writes one line to the child's stdin.
  public func send(_ line: String) {
    // A child that has exited cannot read it; that shows in what the test waits for next.
    inputLock.lock()
    defer { inputLock.unlock() }
    try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
  }

  /// Sends a signal to the child.
  public func signal(_ number: Int32) { kill(process.processIdentifier, number) }

  /// What the child wrote to stderr so far.
  public var standardError: String {
    condition.lock()
    defer { condition.unlock() }
    return String(decoding: errorData, as: UTF8.self)
  }

  /// Waits for the child to exit (bounded), returning its status, or `nil`
  /// if it is still running at the deadline (it is then killed).
  @discardableResult
  public func wait(timeout: TimeInterval = 20) -> Int32? {
    let deadline = Date().addingTimeInterval(timeout)
    // Both outputs to their end first: a test that reads stderr after this sees all of it.
    condition.lock()
    while !(closed && errorClosed) {
      if !condition.wait(until: deadline) { break }
    }
    condition.unlock()
    guard let exit else { return nil }
    if !exit.wait(timeout: max(deadline.timeIntervalSinceNow, 0.1)) {
      Self.printStacks(of: process.processIdentifier)
      kill(process.processIdentifier, SIGKILL)
      _ = exit.wait(timeout: 60)
      return nil
    }
    return process.terminationStatus
  }

  /// Prints every thread's stack of a child that did not exit in time (when gdb is there):
  /// the test's output then says where it hung.
  static func printStacks(of pid: Int32) {
    let gdb = "/usr/bin/gdb"
    guard FileManager.default.isExecutableFile(atPath: gdb) else { return }
    let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? "gone"
    print("child \(pid) did not exit in time; /proc/\(pid)/stat: \(state)")
    let dump = Process()
    dump.executableURL = URL(fileURLWithPath: gdb)
    dump.arguments = ["-p", String(pid), "-batch", "-ex", "thread apply all bt 30"]
    let output = Spawn.pipe()
    dump.standardOutput = output
    dump.standardError = output
    guard let exited = try? dump.startWatchingExit() else { return }
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    _ = exited.wait(timeout: 60)
    print("child \(pid) did not exit; its threads:\n\(text)")
  }

  deinit {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  }
}

/// A child's exit, which a test waits for with a bound.
public final class ExitSignal: Sendable {
  private let exited = DispatchSemaphore(value: 0)
  fileprivate init() {}
  fileprivate func signal() { exited.signal() }

  /// Waits until the child has exited; `false` when it is still running after `timeout`.
  public func wait(timeout: TimeInterval) -> Bool {
    guard exited.wait(timeout: .now() + timeout) == .success else { return false }
    exited.signal()  // later waits return at once
    return true
  }
}

extension Process {
  /// Starts the process (through ``Spawn/run(_:)``); the returned signal is
  /// told of its exit by the termination handler.
  ///
  /// No thread waits for the exit: a `waitUntilExit()` per child on a
  /// Dispatch queue held one of the few threads of the global pool for the
  /// child's whole life, and with enough long-lived children the pool had
  /// none left for the exits and the pipe handlers of the others.
  /// - Parameter exited: Called once the process has exited, before the signal is given.
  public func startWatchingExit(_ exited: (@Sendable () -> Void)? = nil) throws -> ExitSignal {
    let exit = ExitSignal()
    terminationHandler = { _ in
      exited?()
      exit.signal()
    }
    try Spawn.run(self)
    return exit
  }
}

/// How the test process starts children: one at a time, with pipes that no
/// other child inherits.
///
/// Foundation's `Process.run()` on Linux makes a socket pair whose other end
/// the child keeps (the parent learns of the exit when that end closes), and
/// closes in the child only the descriptors that were open when it looked.
/// A pipe or socket pair made by another test between that look and the
/// spawn leaks into the child: a long-lived child then holds another child's
/// output (whose reader never sees its end) or its exit socket (whose exit is
/// never noticed, though the process is gone). Tests run in parallel, so every
/// pipe is made close-on-exec, and every pipe and every spawn happens under
/// one lock.
public enum Spawn {
  private static let lock = NSLock()

  /// A pipe whose two ends are close-on-exec: a child gets only the end
  /// `Process` duplicates onto its standard input, output or error.
  public static func pipe() -> Pipe {
    lock.lock()
    defer { lock.unlock() }
    let pipe = Pipe()
    for descriptor in [pipe.fileHandleForReading.fileDescriptor, pipe.fileHandleForWriting.fileDescriptor] {
      _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
    }
    return pipe
  }

  /// Starts `process`, with no other pipe or spawn in this process meanwhile.
  public static func run(_ process: Process) throws {
    lock.lock()
    defer { lock.unlock() }
    try process.run()
  }

  /// Reads `handle` to its end on a new thread, passing each chunk and then an empty one.
  /// The thread keeps the handle (and so its descriptor) open until the end is read, and
  /// then closes it.
  public static func drain(_ handle: FileHandle, _ deliver: @escaping @Sendable (Data) -> Void) {
    let thread = Thread {
      var buffer = [UInt8](repeating: 0, count: 65_536)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 {
          // Closed here, at its end, not when the last object holding it goes: a test
          // process that ran hundreds of children kept their pipes' read ends open (over
          // 1,300 in a whole run), and with that many Foundation's `Process.run()` on this
          // toolchain reads past the end of its listing of /proc/self/fd and crashes
          // (swift-corelibs-foundation #5472).
          try? handle.close()
          deliver(Data())
          return
        }
        deliver(Data(buffer[0..<count]))
      }
    }
    thread.start()
  }
}
extension ChildProcess {
  /// Starts the built product `name` with standard input opened by the shell from `path`:
  /// what a test's pipe cannot be (`/dev/zero`, a folder). With `addressSpaceKiB`, the product
  /// runs under that bound (`ulimit -v`): a test of a bound on reading never fills the host's
  /// memory when the bound does not hold.
  public static func withStandardInput(
    from path: String, _ name: String, _ arguments: [String],
    addressSpaceKiB: Int? = nil, environment: [String: String] = [:]
  ) throws -> ChildProcess {
    let limit = addressSpaceKiB.map { "ulimit -v \($0); " } ?? ""
    return try ChildProcess(
      executable: URL(fileURLWithPath: "/bin/sh"),
      ["-c", limit + "exec \"$0\" \"$@\" < '\(path)'", Product.url(name).path] + arguments,
      environment: environment)
  }
}

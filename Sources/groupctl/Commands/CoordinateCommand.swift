import AppGroups
import Foundation

/// `groupctl coordinate --as BUNDLE-ID --read|--write PATH [options] -- COMMAND [ARGS...]`
struct CoordinateCommand: ParsableCommand {
  static let read = Argument.option("--read", value: "PATH", help: "A coordinated read of PATH.")
  static let write = Argument.option("--write", value: "PATH", help: "A coordinated write of PATH.")
  static let withoutChanges = Argument.flag(
    "--without-changes", help: "Presenters are not asked to save (a read).")
  static let delete = Argument.flag("--delete", help: "The write deletes PATH.")
  static let merge = Argument.flag("--merge", help: "Presenters are asked to save first (a write).")
  static let replace = Argument.flag("--replace", help: "The write replaces PATH.")
  static let moveTo = Argument.option(
    "--move-to", value: "NEW-PATH", help: "COMMAND moves PATH to NEW-PATH.")
  static let timeoutSeconds = Argument.option(
    "--timeout", value: "SECONDS",
    help: "The bound of each wait (default: 5 per presenter, 30 for a claim).")
  static let commandWords = Argument.passthrough("COMMAND")

  static let configuration = CommandConfiguration(
    commandName: "coordinate",
    abstract: "Run a command inside a coordinated read or write of a file, as an app.",
    arguments: [
      read, write, withoutChanges, delete, merge, replace, moveTo, timeoutSeconds, commandWords,
    ],
    usage: """
      coordinate --as BUNDLE-ID --read PATH [--without-changes] [--timeout SECONDS] -- COMMAND [ARGS...]
      coordinate --as BUNDLE-ID --write PATH [--delete|--merge|--replace|--move-to NEW-PATH] [--timeout SECONDS] -- COMMAND [ARGS...]
      """,
    discussion: """
      Runs COMMAND inside a coordinated access of PATH (NSFileCoordinator), as the app \
      --as names: first every conflicting access ends (readers share PATH, a writer \
      has it alone) and PATH's presenters, in every process, are asked to save and to \
      relinquish it; then COMMAND runs, with this process's standard input, output and \
      error; then the presenters are told to reacquire, and what happened (did-change; \
      did-move with --move-to; the folders above PATH hear of it too).

        --without-changes   a read that does not ask presenters to save first
        --delete            a write that deletes PATH: presenters accommodate the
                            deletion
        --merge             a write that asks presenters to save first
        --replace           a write that replaces PATH with another item
        --move-to NEW-PATH  PATH is moved to NEW-PATH by COMMAND (say, mv): both are
                            written; once COMMAND succeeded and PATH is at NEW-PATH,
                            its presenters are told did-move and follow it
        --timeout SECONDS   how long each presenter has to answer (default 5), and
                            the wait for other accesses (default 30), at most

      A presenter that does not answer in time (its app is suspended, or its callback \
      never calls back) or refuses makes the access fail: COMMAND does not run, and \
      the error names the app and PATH. A presenter that did not answer is also \
      recorded in <root>/Run/lifecycle.log (a refusal is its app's answer, and is \
      not). COMMAND must not coordinate PATH itself: it would wait for this access.

      The exit status is COMMAND's (128 + the signal when a signal ended it); 1 when \
      the access could not begin.
      """
  )

  let arguments: Arguments
  let path: String
  let isWrite: Bool
  let readingOptions: NSFileCoordinator.ReadingOptions
  typealias WritingOptions = NSFileCoordinator.WritingOptions
  let writingOptions: NSFileCoordinator.WritingOptions
  let destination: String?
  let timeout: Duration?
  let command: [String]

  init(arguments: Arguments) throws {
    self.arguments = arguments
    let (read, write) = (arguments[Self.read], arguments[Self.write])
    var reading: NSFileCoordinator.ReadingOptions = []
    if arguments[Self.withoutChanges] { reading.insert(.withoutChanges) }
    var writing: NSFileCoordinator.WritingOptions = []
    if arguments[Self.delete] { writing.insert(.forDeleting) }
    if arguments[Self.merge] { writing.insert(.forMerging) }
    if arguments[Self.replace] { writing.insert(.forReplacing) }
    destination = arguments[Self.moveTo]
    if destination != nil { writing.insert(.forMoving) }
    timeout = try arguments[Self.timeoutSeconds].map { text throws(ValidationError) in
      try .seconds(text, of: "--timeout", from: 0, upTo: 3600, excludingLowest: true)
    }
    switch (read, write) {
    case (let path?, nil):
      self.path = path
      isWrite = false
    case (nil, let path?):
      self.path = path
      isWrite = true
    case (nil, nil):
      throw ValidationError("coordinate needs --read PATH or --write PATH")
    default:
      throw ValidationError("--read and --write are two accesses; give one")
    }
    readingOptions = reading
    writingOptions = writing
    guard arguments.hasTerminator else { throw ValidationError("missing '--' before COMMAND") }
    command = arguments[Self.commandWords]
    guard !command.isEmpty else { throw ValidationError("missing COMMAND after '--'") }
  }

  func validate() throws {
    guard globals.identity != nil else {
      throw ValidationError("coordinate needs --as BUNDLE-ID: the app whose access it is")
    }
    if !isWrite, !writingOptions.isEmpty || destination != nil {
      throw ValidationError("--delete, --merge, --replace and --move-to are for --write")
    }
    if isWrite, !readingOptions.isEmpty {
      throw ValidationError("--without-changes is for --read")
    }
    let chosen = [WritingOptions.forDeleting, .forMerging, .forReplacing, .forMoving]
      .filter { writingOptions.contains($0) }
    if chosen.count > 1 {
      throw ValidationError("--delete, --merge, --replace and --move-to: give one")
    }
  }

  func run() throws {
    guard let identity = try globals.appIdentity() else { return }
    NSFileCoordinator.appIdentity = identity
    let executable = try RunCommand.locate(command[0])
    let url = URL(fileURLWithPath: path).standardizedFileURL
    let coordinator = NSFileCoordinator(filePresenter: nil)
    if let timeout {
      coordinator.presenterTimeout = timeout
      coordinator.accessTimeout = timeout
    }
    var status: Int32 = 0
    var failure: (any Error)?
    let body = { (urls: [URL]) in
      do {
        status = try Self.spawn(executable, arguments: Array(command.dropFirst()))
      } catch {
        failure = error
        return
      }
      if let destination = urls.count > 1 ? urls[1] : nil, status == 0,
        FileManager.default.fileExists(atPath: destination.path),
        !FileManager.default.fileExists(atPath: urls[0].path)
      {
        coordinator.item(at: urls[0], didMoveTo: destination)
      }
    }
    var error: NSError?
    if let destination {
      let target = URL(fileURLWithPath: destination).standardizedFileURL
      coordinator.coordinate(
        writingItemAt: url, options: .forMoving, writingItemAt: target, options: .forReplacing,
        error: &error
      ) { from, to in body([from, to]) }
    } else if isWrite {
      coordinator.coordinate(writingItemAt: url, options: writingOptions, error: &error) { url in
        body([url])
      }
    } else {
      coordinator.coordinate(readingItemAt: url, options: readingOptions, error: &error) { url in
        body([url])
      }
    }
    if let error { throw CommandFailure(error.localizedDescription) }
    if let failure { throw CommandFailure("cannot run \(command[0]): \(failure)") }
    throw ExitCode(status)
  }

  /// Runs `executable` with this process's standard streams and waits for it: its exit
  /// status, or 128 + the signal that ended it. It is killed, with every process it started,
  /// if groupctl ends first (`timeout`, `kill`, even SIGKILL), and what it left running is
  /// killed when it exits: a process of COMMAND's left running would go on writing PATH after
  /// the access ended and the next one began (see ``Processes/runTied(_:arguments:environment:)``).
  static func spawn(_ executable: String, arguments: [String]) throws -> Int32 {
    try Processes.runTied(
      executable, arguments: [executable] + arguments,
      environment: ProcessInfo.processInfo.environment)
  }
}

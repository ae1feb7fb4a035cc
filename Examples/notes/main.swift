// notes: an app that keeps its notes in a SQLite database (WAL mode) in its group container,
// through the system's libsqlite3, and a widget that shows them. The app writes inside a
// coordinated write of the database (NSFileCoordinator); the widget presents the database
// (NSFilePresenter) and shows each new note when it is told the database changed.
//
//   notes add TEXT                      adds a note: "added #N: TEXT"
//   notes list                          every note, "#N TEXT", or "(no notes)"
//                                       (add, list and watch print a TEXT with a control
//                                       character or a backslash quoted, those escaped:
//                                       \n, \\, \U001b, so that a line is one note)
//   notes watch [--count N]             the widget: the notes so far, "ready", then a line
//                                       "note #N: TEXT" per new note, until N new notes were
//                                       shown, or SIGTERM/SIGINT; a database replaced
//                                       (a backup restored) is shown whole again after
//                                       "the notes were replaced: N in the database now"
//   notes hold [--release-on-suspend]   opens a write transaction (adds a note in it), prints
//                                       the database's files and "ready", and keeps it open
//                                       until SIGTERM/SIGINT, then commits: "committed #N";
//                                       a commit that cannot be made (its coordinated write
//                                       did not begin) is rolled back: "note #N was not
//                                       added: ...", exit 1
//   --group GROUP-ID                    the group whose container holds
//                                       Library/Notes/notes.sqlite (default:
//                                       group.com.example.shared)
//
// hold is the bad citizen: suspended with its transaction open, it holds SQLite's locks on
// notes.sqlite and notes.sqlite-shm, and is terminated with 0xdead10cc. With
// --release-on-suspend it is the fixed app: told it is about to be suspended
// (AppLifecycle.onSuspend), it commits in a background activity, checkpoints the WAL into the
// database and closes its connection ("committed #N and closed PATH for the suspension"),
// holding no lock while suspended; on resume it opens the database and begins a new write
// transaction ("began a write transaction again after the resume").
//
// Data protection: the simulator enforces protection classes only where the library does the
// I/O (the suites, FileProtection); notes.sqlite is a plain file read and written by
// libsqlite3, which no protection class guards. The example checks for itself, through the
// library's public API (DeviceState.unavailabilityReason(for:)), that the database's class,
// completeUntilFirstUserAuthentication (iOS's default), is available before each open: add,
// list and hold are refused before the device's first unlock after a restart ("cannot open
// PATH: before first unlock: ..."), and so is watch when it starts (later, it says it cannot
// read the notes). An app that skips the check is not stopped.
//
// Exit status: 0 on success (and on SIGTERM/SIGINT for watch and hold; add and list end as
// the signal ends a program, having written nothing), 64 usage error, 1 refused or failed.
// Identity: APPGROUPS_BUNDLE_ID, else com.example.notes (watch: com.example.notes.widget).
// Root: APPGROUPS_ROOT, else Containers/ in the current directory.
import AppGroups
import CommandLineText
import Foundation
import Synchronization

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String, status: Int32 = 1) -> Never {
  FileHandle.standardError.write(Data("notes: \(message)\n".utf8))
  exit(status)
}

let usage = """
  usage: notes add TEXT | list | watch [--count N] | hold [--release-on-suspend] \
  [--group GROUP-ID]
  """

struct Options {
  var command = ""
  var text: String?
  var count: Int?
  var releaseOnSuspend = false
  var group = "group.com.example.shared"
}

func parse(_ list: [String]) -> Options {
  var options = Options()
  var arguments = list[...]
  guard let command = arguments.popFirst() else { fail("no command\n\(usage)", status: 64) }
  if command == "--help" || command == "-h" {
    say(usage)
    exit(0)
  }
  guard ["add", "list", "watch", "hold"].contains(command) else {
    fail("unknown command \(command.debugDescription)\n\(usage)", status: 64)
  }
  options.command = command
  while let argument = arguments.popFirst() {
    switch argument {
    case "--group":
      guard let value = arguments.popFirst() else { fail("--group needs a GROUP-ID", status: 64) }
      options.group = value
    case "--count" where command == "watch":
      guard let text = arguments.popFirst(), let value = Int(text), value > 0 else {
        fail("--count needs a number above 0", status: 64)
      }
      options.count = value
    case "--release-on-suspend" where command == "hold":
      options.releaseOnSuspend = true
    default:
      guard command == "add", options.text == nil, !argument.hasPrefix("--") else {
        fail("unexpected argument \(argument.debugDescription)\n\(usage)", status: 64)
      }
      options.text = argument
    }
  }
  if command == "add", options.text == nil { fail("add needs the TEXT of a note", status: 64) }
  return options
}
// Swift turns bytes that are not UTF-8 into U+FFFD in CommandLine.arguments: a value stored
// from them would not be the one typed. Refused, as groupctl refuses them.
if let problem = CommandLineText.nonUTF8Input(
  environment: [ContainerRoot.environmentVariable, AppIdentity.environmentVariable])
{
  fail(problem, status: 64)
}
let options = parse(Array(CommandLine.arguments.dropFirst()))

// SIGTERM and SIGINT end a watch or a hold, which wait for them (sigwait) and then finish
// cleanly (a hold commits first): blocked here, before any other thread exists, so that every
// thread inherits the mask and none is ended by them. add and list take their default action:
// a signal while they wait for their coordinated access ends them, and nothing is written.
// Unblocked for those, since a program inherits its parent's mask (Foundation's Process passes
// on a Dispatch worker's, which blocks every signal).
var stopSignals = sigset_t()
sigemptyset(&stopSignals)
sigaddset(&stopSignals, SIGTERM)
sigaddset(&stopSignals, SIGINT)
let waitsForStop = options.command == "watch" || options.command == "hold"
pthread_sigmask(waitsForStop ? SIG_BLOCK : SIG_UNBLOCK, &stopSignals, nil)
// The database's files are the app's alone: mode 0600, as every file of a container.
umask(0o077)

let identity: AppIdentity
let databaseURL: URL
do {
  identity = try AppIdentity.current(
    fallback: options.command == "watch" ? "com.example.notes.widget" : "com.example.notes")
  let container = try SuiteResolver(identity: identity, root: .default)
    .container(forSecurityApplicationGroupIdentifier: options.group)
  let folder = container.appendingPathComponent("Library/Notes", isDirectory: true)
  try FileManager.default.createDirectory(
    at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
  databaseURL = folder.appendingPathComponent("notes.sqlite")
  // The coordinators and the presenter act as the app chosen above (its fallback included).
  NSFileCoordinator.appIdentity = identity
} catch {
  fail("refused: \(error)")
}
let path = databaseURL.path

/// Waits for SIGTERM or SIGINT (blocked in every thread above).
func waitForStop() {
  var signals = sigset_t()
  sigemptyset(&signals)
  sigaddset(&signals, SIGTERM)
  sigaddset(&signals, SIGINT)
  var number: Int32 = 0
  sigwait(&signals, &number)
}

switch options.command {
case "add":
  do {
    let id = try NSFileCoordinator(filePresenter: nil).coordinate(writingItemAt: databaseURL) { url in
      let database = try Database(path: url.path)
      defer { database.close() }
      return try database.insert(options.text ?? "")
    }
    say("added #\(id): \(PrintedText.shown(options.text ?? ""))")
  } catch {
    fail("\(error)")
  }

case "list":
  do {
    let notes = try NSFileCoordinator(filePresenter: nil).coordinate(readingItemAt: databaseURL) { url in
      let database = try Database(path: url.path)
      defer { database.close() }
      return try database.notes()
    }
    if notes.isEmpty { say("(no notes)") }
    for note in notes { say("#\(note.id) \(PrintedText.shown(note.text))") }
  } catch {
    fail("\(error)")
  }

case "watch":
  let watcher = NotesWatcher(url: databaseURL, limit: options.count)
  do {
    try watcher.showNew()
    try NSFileCoordinator.addFilePresenter(watcher, throwing: ())
  } catch {
    fail("\(error)")
  }
  say("ready")
  let stopper = Thread {
    waitForStop()
    watcher.finished.signal()
  }
  stopper.start()
  watcher.finished.wait()
  NSFileCoordinator.removeFilePresenter(watcher)

case "hold":
  let holder = TransactionHolder(path: path)
  do {
    try holder.begin()
  } catch {
    fail("\(error)")
  }
  say("holding a write transaction on \(path)")
  say("  locked by SQLite: notes.sqlite, notes.sqlite-shm; written: notes.sqlite-wal")
  var observations: [Observation] = []
  if options.releaseOnSuspend {
    AppLifecycle.start(identity: identity)
    observations.append(
      AppLifecycle.onSuspend { notice in
        let grace = notice.deadline.timeIntervalSince(notice.received)
        say("suspension notice: \(Int(grace.rounded(.up))) s to get ready")
        let activity = AppLifecycle.beginBackgroundActivity(named: "close the notes")
        DispatchQueue.global().async {
          do {
            let id = try holder.commitAndClose(coordinated: databaseURL)
            say("committed #\(id) and closed \(path) for the suspension")
          } catch {
            say("cannot close \(path): \(error)")
          }
          activity.end()
        }
      })
    observations.append(
      AppLifecycle.onResume {
        do {
          try holder.begin()
          say("began a write transaction again after the resume")
        } catch {
          say("cannot begin a transaction after the resume: \(error)")
        }
      })
  }
  say("ready")
  waitForStop()
  do {
    let id = try holder.commitAndClose(coordinated: databaseURL)
    say("committed #\(id)")
  } catch {
    fail("\(error)")
  }

default:
  fail(usage, status: 64)
}
exit(0)

/// The widget: presents the database, and shows the notes it has not shown yet when told the
/// database changed. It keeps no connection open between changes (an open WAL connection
/// holds a lock on notes.sqlite-shm, which would get a suspended widget terminated).
final class NotesWatcher: NSObject, NSFilePresenter, @unchecked Sendable {
  let presentedItemURL: URL?
  let presentedItemOperationQueue: OperationQueue
  let finished = DispatchSemaphore(value: 0)
  /// What was shown: the last note's id, in the database of that generation (see
  /// ``Database/generation()``) and that file (its identity, see ``Database/fileIdentity()``);
  /// `reset` when the file was deleted or replaced since (a backup copied over it keeps its
  /// generation, its inode and ids below the last shown): the next read shows every note.
  private let shown = Mutex<Shown>(Shown())
  private struct Shown {
    var started = false
    var reset = false
    var generation: Int64?
    var file: Database.FileIdentity?
    var last: Int64 = 0
    var count = 0
  }
  private let limit: Int?
  /// Where the reads after a change run, one at a time: not on the presenter's queue, which
  /// must stay free to answer the next writer's relinquish (see ``presentedItemDidChange()``).
  private let reader = DispatchQueue(label: "notes.watch.reader")

  init(url: URL, limit: Int?) {
    presentedItemURL = url
    self.limit = limit
    presentedItemOperationQueue = OperationQueue()
    presentedItemOperationQueue.maxConcurrentOperationCount = 1
  }

  /// Reads the notes after the last shown (a coordinated read, as this presenter) and prints
  /// them; the first call prints every note, as the widget's first timeline. A database that is
  /// not the one the last notes were shown from (deleted or replaced since, another file,
  /// another generation, or its last id below the last shown: a backup restored over it) is
  /// shown as it is now, every note in it, after a line that says so: no note in it is skipped.
  func showNew() throws {
    let (first, reset, seen) = shown.withLock { shown in
      defer { (shown.started, shown.reset) = (true, false) }
      return (!shown.started, shown.reset, shown)
    }
    let url = presentedItemURL ?? URL(fileURLWithPath: "/")
    let read: (generation: Int64?, file: Database.FileIdentity, notes: [(id: Int64, text: String)], replaced: Bool)
    do {
      read = try NSFileCoordinator(filePresenter: self).coordinate(readingItemAt: url) { url in
        let database = try Database(path: url.path)
        defer { database.close() }
        let generation = try database.generation()
        let file = try database.fileIdentity()
        let wentBack = try database.lastID() < seen.last
        let replaced = !first && (reset || generation != seen.generation || file != seen.file || wentBack)
        return (generation, file, try database.notes(after: first || replaced ? 0 : seen.last), replaced)
      }
    } catch {
      // Not read: the next read still shows the whole database.
      if reset { shown.withLock { $0.reset = true } }
      throw error
    }
    let (generation, file, notes, replaced) = read
    shown.withLock { shown in
      if replaced { shown.last = 0 }
      (shown.generation, shown.file) = (generation, file)
    }
    if first {
      say("notes: \(notes.count)")
      for note in notes { say("#\(note.id) \(PrintedText.shown(note.text))") }
      shown.withLock { $0.last = notes.last?.id ?? 0 }
      return
    }
    if replaced { say("the notes were replaced: \(notes.count) in the database now") }
    for note in notes {
      say("note #\(note.id): \(PrintedText.shown(note.text))")
      let done = shown.withLock { shown in
        shown.last = note.id
        shown.count += 1
        return limit.map { shown.count >= $0 } ?? false
      }
      if done { finished.signal() }
    }
  }

  /// Reads on ``reader``, never on the presenter's queue: the read is coordinated, so it waits
  /// behind a writer that already holds its claim, and that writer waits for this presenter to
  /// answer its relinquish, on this very queue. Read here, the two would wait for each other
  /// until the writer's presenter timeout failed it (two `notes add` at once: one failed).
  func presentedItemDidChange() {
    reader.async { [self] in
      do {
        try showNew()
      } catch {
        say("cannot read the notes: \(error)")
      }
    }
  }

  func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
    // Deleted, or about to be replaced (`.forReplacing` asks the same): whatever is there
    // next is shown whole, even a copy that shares this one's generation and ids.
    shown.withLock { $0.reset = true }
    say("the notes were deleted")
    completionHandler(nil)
  }
}

/// `hold`'s connection and its open write transaction.
final class TransactionHolder: @unchecked Sendable {
  let path: String
  private let lock = NSLock()
  private var database: Database?
  private var pending: Int64 = 0

  init(path: String) {
    self.path = path
  }

  /// Opens the database and a write transaction (BEGIN IMMEDIATE: SQLite's write lock is
  /// taken now), with a note added in it.
  func begin() throws {
    try lock.withLock {
      let database = try Database(path: path)
      try database.execute("BEGIN IMMEDIATE")
      pending = try database.insert("written in a transaction held open")
      self.database = database
    }
  }

  /// Commits inside a coordinated write of the database (the widget is told), checkpoints
  /// the WAL into the database, and closes the connection; the note's id.
  ///
  /// - Throws: ``NoteNotAdded`` when the coordinated write cannot begin or the commit fails:
  ///   the transaction is then rolled back and the connection closed, nothing written. An
  ///   error of the checkpoint after the commit (the note is in) as it is.
  func commitAndClose(coordinated url: URL) throws -> Int64 {
    var committed = false
    do {
      return try NSFileCoordinator(filePresenter: nil).coordinate(writingItemAt: url) { _ in
        try lock.withLock {
          guard let database else { return pending }
          defer {
            database.close()
            self.database = nil
          }
          try database.execute("COMMIT")
          committed = true
          try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
          return pending
        }
      }
    } catch where !committed {
      // Closed with its transaction open, the connection rolls it back; said and done here.
      let id = lock.withLock {
        try? database?.execute("ROLLBACK")
        database?.close()
        database = nil
        return pending
      }
      throw NoteNotAdded(id: id, cause: error)
    }
  }

  /// A held note whose commit failed: rolled back, so it is not in the database.
  struct NoteNotAdded: Error, CustomStringConvertible {
    let id: Int64
    let cause: any Error
    var description: String {
      "note #\(id) was not added: its transaction was rolled back, nothing was written: \(cause)"
    }
  }
}

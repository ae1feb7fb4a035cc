// widget: the example app's widget. It shows a one-line "timeline entry"
// with the values it reads from the group suite group.com.example.shared and
// the suite's last-update token:
//
//   entry #2 unread=3 theme=dark greeting="hi" read=[] token=1747… account=signed-in (change)
//
// The account is whether the app signed in, read from the keychain (Account.swift):
// signed-in, signed-out, or locked when the device's state keeps the token closed.
//
// It renders once at start, then whenever what it shows would change: on a
// change of the suite (from any process, seen through inotify), on the app's
// reload notification (com.example.widget.reload), and on resume after
// SIGSTOP/SIGCONT, when it compares the token it last rendered with the
// current one and re-reads only if it moved. A trigger that would render the
// same values again renders nothing, so a write followed by its reload
// notification gives one new entry, and a burst of writes and posts made
// while it was stopped gives exactly one.
//
//   widget [--watch]       long-running (the default); prints "ready" on stdout
//                          once it is watching, after the first entry
//   widget --renders N     as --watch, but exits 0 after the Nth entry
//   widget --once          renders one entry and exits
//
// Launched before the device's first unlock (`groupctl run --background`, as iOS launches a
// widget's extension to refresh it), the suite cannot be read yet: the widget renders
//
//   entry #1 waiting for first unlock (protected data unavailable)
//
// and never the registered defaults as if they were the user's data; at the unlock
// (ProtectedData.didBecomeAvailable) it registers its schema and renders the real entry.
//
// Every line goes to stdout: entries; "ready"; "reload: entry #N is current"
// for a reload notification with nothing new to show; "resumed: …" after
// SIGCONT, saying whether the token moved and whether it re-read; and
// "stopped by SIGINT|SIGTERM after N entries" before a clean exit 0.
// Refusals go to stderr. Exit status: 0 done, 64 usage error, 1 refused (an
// identity the manifest does not entitle to the group, for example
// APPGROUPS_BUNDLE_ID=com.example.intruder) or failed.
//
// Identity: APPGROUPS_BUNDLE_ID, else com.example.widget. Root: APPGROUPS_ROOT,
// else Containers/ in the current directory.
import AppGroups
import CommandLineText
import ExampleSchema
import Foundation

// Block the signals the widget waits for before any other thread exists:
// every thread inherits the mask, and the main thread takes them with sigwait(3).
// The widget handles SIGINT and SIGTERM itself, so the library leaves them alone
// (it has nothing pending to write, and exits cleanly).
GroupDefaults.handlesTerminationSignals = false
func watchedSignals() -> sigset_t {
  var set = sigset_t()
  sigemptyset(&set)
  for number in [SIGINT, SIGTERM, SIGCONT] { sigaddset(&set, number) }
  return set
}
var blocked = watchedSignals()
pthread_sigmask(SIG_BLOCK, &blocked, nil)

let group = ExampleSchema.group
let reloadNotification = "com.example.widget.reload"
let shownKeys = ExampleSchema.schema.keys.map(\.name)

let usage = "usage: widget [--watch] [--renders N] | --once"

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String, status: Int32 = 1) -> Never {
  FileHandle.standardError.write(Data("widget: \(message)\n".utf8))
  exit(status)
}

// MARK: Arguments

struct Options {
  var once = false
  /// Exit 0 after this many entries.
  var renderLimit: Int?
}

func parse(_ list: [String]) -> Options {
  var options = Options()
  var arguments = list[...]
  while let argument = arguments.popFirst() {
    switch argument {
    case "--watch": options.once = false
    case "--once": options.once = true
    case "--renders":
      guard let text = arguments.popFirst(), let count = Int(text), count > 0 else {
        fail("--renders needs a count of 1 or more\n\(usage)", status: 64)
      }
      options.renderLimit = count
    case "--help", "-h":
      say(usage)
      exit(0)
    default:
      fail("unknown argument \(argument.debugDescription)\n\(usage)", status: 64)
    }
  }
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

// MARK: Opening the group

let shared: GroupDefaults
let center: GroupNotificationCenter
do {
  let identity = try AppIdentity.current(fallback: "com.example.widget")
  shared = try GroupDefaults(suiteName: group, identity: identity)
  center = try GroupNotificationCenter(groupIdentifier: group, identity: identity)
} catch {
  fail("refused: \(error)")
}
// The same schema as the app's (Examples/ExampleSchema): its defaults are registered (per
// process, never on disk) and, if the suite is below its version, migrated once.
do {
  try shared.register(ExampleSchema.schema)
} catch {
  // Before the first unlock the migration waits for the data (see "unlock" below).
  if error.code != .protectedDataUnavailable { fail("\(error)") }
}

// MARK: Rendering

/// Why an entry was rendered.
enum Reason: String { case start, change, reload, resume, unlock }

/// The widget's state; touched only on `renderQueue`.
final class Timeline: @unchecked Sendable {
  var entries = 0
  /// The values of the last entry.
  var lastValues: String?
  /// The token the widget last read: at its last render or render attempt.
  var lastToken: ChangeToken?
}
let timeline = Timeline()
let renderQueue = DispatchQueue(label: "widget.render")

/// What an entry shows, and the token. The token is read before the values:
/// the values are then at least as new as the token, never older.
func read() -> (values: String, token: ChangeToken) {
  let token = shared.changeToken
  // What the suite holds cannot be read yet: say so, rather than show the defaults as data.
  if shared.unavailableReason != nil {
    return ("waiting for first unlock (protected data unavailable)", token)
  }
  let values =
    "unread=\(shared[PreferenceKeys.unreadCount]) theme=\(shared[PreferenceKeys.theme].rawValue) "
    + "greeting=\(shared[PreferenceKeys.greeting].debugDescription) "
    + "read=[\(shared[PreferenceKeys.readItems].joined(separator: ","))]"
  return (values, token)
}

/// Renders an entry unless it would show the same values as the last one.
/// On `renderQueue`.
/// - Returns: whether a new entry was rendered.
@discardableResult
func render(_ reason: Reason) -> Bool {
  let (values, token) = read()
  timeline.lastToken = token
  // The account's state, from the keychain (Account.swift), shown after the token.
  let account = Account.state()
  guard values + account != timeline.lastValues else { return false }
  timeline.entries += 1
  timeline.lastValues = values + account
  say("entry #\(timeline.entries) \(values) token=\(token) account=\(account) (\(reason.rawValue))")
  if let limit = options.renderLimit, timeline.entries >= limit { exit(0) }
  return true
}

/// After SIGCONT: re-read only if the token moved since the last entry.
func resume() {
  let now = shared.changeToken
  guard let seen = timeline.lastToken, now != seen else {
    say("resumed: token unchanged (\(now)), nothing re-read")
    return
  }
  // The change monitor may have re-read already while resuming; then there
  // is nothing left to re-read here, and the entry is rendered from memory.
  let reread = shared.refreshIfChanged()
  say("resumed: token \(seen) -> \(now), \(reread ? "re-read" : "already re-read by the change monitor")")
  render(.resume)
}

renderQueue.sync { _ = render(.start) }
if options.once { exit(0) }

// MARK: Watching

let changes = shared.observe(shownKeys) { _ in renderQueue.async { render(.change) } }
let reloads: Observation
do {
  reloads = try center.observe(reloadNotification) { _ in
    renderQueue.async {
      // The post follows the write, but make sure the values are current.
      shared.refreshIfChanged()
      if !render(.reload) { say("reload: entry #\(timeline.entries) is current") }
    }
  }
} catch {
  fail("cannot observe \(reloadNotification): \(error)")
}

// The first unlock: the suite can be read now (the library read it before telling).
let unlocks = ProtectedData.observe { event in
  guard event.kind == .didBecomeAvailable else { return }
  renderQueue.async {
    _ = try? shared.register(ExampleSchema.schema)
    render(.unlock)
  }
}

// The device's other changes (a lock, a reboot) may change what the account shows (Account.swift).
let deviceChanges = Account.observeDevice { renderQueue.async { render(.change) } }

// Anything that changed while the observers were being set up.
renderQueue.async {
  render(.change)
  say("ready")
}

// The main thread waits for the signals (blocked in every thread since the
// top of main, so none is lost or taken by another thread).
var waitedFor = watchedSignals()
while true {
  var number: CInt = 0
  guard sigwait(&waitedFor, &number) == 0 else { continue }
  if number == SIGCONT {
    renderQueue.async { resume() }
    continue
  }
  renderQueue.sync {
    say("stopped by \(number == SIGINT ? "SIGINT" : "SIGTERM") after \(timeline.entries) entries")
  }
  changes.cancel()
  reloads.cancel()
  unlocks.cancel()
  deviceChanges.cancel()
  exit(0)
}

// app: the example app. It shares settings with its widget through the
// application group group.com.example.shared, and asks the widget to reload
// its timeline with a named notification after every write.
//
//   app set KEY VALUE     store the string VALUE for KEY in the group suite
//   app unread N          set the unread count (a whole number, 0 or more)
//   app theme NAME        set the theme: light, dark or system
//   app read ITEM         mark ITEM read: add it to readItems, unread goes down by one
//   app reload            only ask the widget to reload
//   app show              print the values the widget shows, and the suite's token
//   app reset             remove every value of the group suite (and its schema marker:
//                         the next launch sees a new suite and records the schema version)
//   app launch [--naive]  what the app does when it is launched, by the user or in the
//                         background (`groupctl run --background`, as iOS prewarms it): on its
//                         first launch (no "hasLaunched" yet) it writes its first-launch
//                         values (theme=system, unread=0); then it waits until protected data
//                         is available (the user opens the app), lands what it wrote, prints
//                         what it sees and exits. Before the first unlock, it first waits for
//                         ProtectedData.didBecomeAvailable and only then reads: the user's
//                         choices stay. With --naive it reads at once, as apps do that get
//                         the prewarm bug: before the first unlock it reads nothing, takes it
//                         for a first launch, and its first-launch values land over the
//                         user's choices at the unlock.
//   app sign-in TOKEN [--accessible afterFirstUnlock]
//                         keep the refresh token in the keychain's shared access group
//                         (never in the suite); app sign-out removes it (Account.swift)
//
// The keys and the schema (version 2: "unread" became "unreadCount") are declared once, in
// Examples/ExampleSchema, for the app and the widget. Every command but reset registers the
// schema first; the process that finds the suite below version 2 migrates it, once (the
// library says so on stderr: "appgroups: schema: event=migrated …").
//
// Every write lands on disk (synchronize) before com.example.widget.reload is
// posted, with the suite's new token as the notification's state.
//
// Identity: APPGROUPS_BUNDLE_ID, else com.example.app. Root: APPGROUPS_ROOT,
// else Containers/ in the current directory. Exit status: 0 done, 64 usage
// error, 1 refused or failed (the reason is on stderr).
import AppGroups
import CommandLineText
import ExampleSchema
import Foundation

let group = ExampleSchema.group
let reloadNotification = "com.example.widget.reload"

let usage = """
  usage: app set KEY VALUE | unread N | theme light|dark|system | read ITEM | reload | show
             | reset | launch [--naive]
         app sign-in TOKEN [--accessible whenUnlocked|afterFirstUnlock] | sign-out
  Writes into the group suite \(group), then posts \(reloadNotification).
  Environment: APPGROUPS_ROOT (default ./Containers), APPGROUPS_BUNDLE_ID (default com.example.app).
  """

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String, status: Int32 = 1) -> Never {
  FileHandle.standardError.write(Data("app: \(message)\n".utf8))
  exit(status)
}

func usageError(_ message: String) -> Never {
  fail("\(message)\n\(usage)", status: 64)
}

// MARK: Arguments

enum Command {
  case set(key: String, value: String)
  case unread(Int)
  case theme(Theme)
  case read(String)
  case reload, show, reset
  case launch(naive: Bool)
}

func parse(_ arguments: [String]) -> Command {
  guard let name = arguments.first else { usageError("missing command") }
  let rest = Array(arguments.dropFirst())
  func expect(_ count: Int, _ shape: String) {
    if rest.count != count { usageError("\(name) takes \(shape)") }
  }
  switch name {
  case "help", "--help", "-h":
    say(usage)
    exit(0)
  case "set":
    expect(2, "KEY VALUE")
    if rest[0].isEmpty { usageError("the key cannot be empty") }
    return .set(key: rest[0], value: rest[1])
  case "unread":
    expect(1, "a count N")
    guard let count = Int(rest[0]), count >= 0 else {
      usageError("unread needs a whole number 0 or more, not \(rest[0].debugDescription)")
    }
    return .unread(count)
  case "theme":
    expect(1, "a theme name")
    guard let theme = Theme(rawValue: rest[0]) else {
      usageError("unknown theme \(rest[0].debugDescription); use light, dark or system")
    }
    return .theme(theme)
  case "read":
    expect(1, "an ITEM")
    if rest[0].isEmpty { usageError("the item cannot be empty") }
    return .read(rest[0])
  case "reload":
    expect(0, "no arguments")
    return .reload
  case "show":
    expect(0, "no arguments")
    return .show
  case "reset":
    expect(0, "no arguments")
    return .reset
  case "launch":
    if rest.count > 1 || (rest.count == 1 && rest[0] != "--naive") {
      usageError("launch takes no arguments but --naive")
    }
    return .launch(naive: rest == ["--naive"])
  default:
    usageError("unknown command \(name.debugDescription)")
  }
}

// The account commands (sign-in, sign-out) keep the token in the keychain: Account.swift.
// Swift turns bytes that are not UTF-8 into U+FFFD in CommandLine.arguments: a value stored
// from them would not be the one typed. Refused, as groupctl refuses them; a token given to
// sign-in is a secret, refused by its place, its bytes never shown.
if let problem = CommandLineText.nonUTF8Input(
  environment: [ContainerRoot.environmentVariable, AppIdentity.environmentVariable],
  mayBeSecret: { words, index in words[1..<index].contains("sign-in") })
{
  fail(problem, status: 64)
}
if Account.run(Array(CommandLine.arguments.dropFirst())) { exit(0) }
let command = parse(Array(CommandLine.arguments.dropFirst()))

// MARK: Opening the group

let shared: GroupDefaults
let center: GroupNotificationCenter
do {
  let identity = try AppIdentity.current(fallback: "com.example.app")
  shared = try GroupDefaults(suiteName: group, identity: identity)
  center = try GroupNotificationCenter(groupIdentifier: group, identity: identity)
} catch {
  fail("refused: \(error)")
}
// Registration is per process and never written to disk; the migration, if one is due, is
// one commit. A reset needs neither: it removes the marker too. A launch registers when it
// can read the suite (before the first unlock the migration has to wait).
switch command {
case .reset, .launch: break
default:
  do {
    try shared.register(ExampleSchema.schema)
  } catch {
    fail("\(error)")
  }
}

// MARK: Running

/// Makes the write land, then asks the widget to reload.
func landAndPost(_ what: String) {
  guard shared.synchronize() else { fail("\(what): the write could not land yet (see above)") }
  do {
    try center.post(reloadNotification, state: shared.changeToken.rawValue)
  } catch {
    fail("\(what) landed, but posting \(reloadNotification) failed: \(error)")
  }
  say("app: \(what); posted \(reloadNotification)")
}

func write<Value>(_ value: Value, _ key: PreferenceKey<Value>) {
  do {
    try shared.write(value, for: key)
  } catch {
    fail("cannot set \(key.name): \(error)")
  }
}

switch command {
case .set(let key, let value):
  do {
    try shared.stage(.string(value), forKey: key)
  } catch {
    fail("cannot set \(key): \(error)")
  }
  landAndPost("\(key) = \(value.debugDescription)")
case .unread(let count):
  write(count, PreferenceKeys.unreadCount)
  landAndPost("unread = \(count)")
case .theme(let theme):
  write(theme, PreferenceKeys.theme)
  landAndPost("theme = \(theme.rawValue)")
case .read(let item):
  // Two atomic read-modify-writes across processes: no other writer can
  // interleave inside either one.
  var added = false
  do {
    try shared.update(forKey: PreferenceKeys.readItems.name) { current in
      var items: [PropertyListValue] = []
      if case .array(let existing)? = current { items = existing }
      if !items.contains(.string(item)) {
        items.append(.string(item))
        added = true
      }
      return .array(items)
    }
    if added {
      let fallback = shared[PreferenceKeys.unreadCount]
      try shared.update(forKey: PreferenceKeys.unreadCount.name) { current in
        var count = fallback
        if case .integer(let stored)? = current { count = stored }
        return .integer(max(0, count - 1))
      }
    }
  } catch {
    fail("cannot mark \(item.debugDescription) read: \(error)")
  }
  landAndPost(added ? "read \(item)" : "\(item) was already read")
case .reload:
  landAndPost("reload requested")
case .show:
  say(
    "unread=\(shared[PreferenceKeys.unreadCount]) theme=\(shared[PreferenceKeys.theme].rawValue) "
      + "greeting=\(shared[PreferenceKeys.greeting].debugDescription) "
      + "read=[\(shared[PreferenceKeys.readItems].joined(separator: ","))] token=\(shared.changeToken)")
case .reset:
  shared.removePersistentDomain(forName: group)
  landAndPost("reset")
case .launch(let naive):
  launch(naive: naive)
}

/// A launch: the first-launch values when there is no sign of an earlier one, then a wait
/// until protected data is available (the user opens the app), then what it sees.
func launch(naive: Bool) -> Never {
  let available = DispatchSemaphore(value: 0)
  let watching = ProtectedData.observe { event in
    if event.kind == .didBecomeAvailable { available.signal() }
  }
  if AppLifecycle.isPrewarmed { say("app: launched in the background (prewarmed)") }
  if !naive, let reason = shared.unavailableReason {
    // The fix: nothing read before the first unlock means nothing, so wait for it.
    say("app: protected data is unavailable (\(reason)); waiting for it before reading")
    while shared.unavailableReason != nil { available.wait() }
  }
  _ = try? shared.register(ExampleSchema.schema)  // the migration waits for the data
  if shared.bool(forKey: "hasLaunched") {
    say("app: welcome back: theme=\(shared[PreferenceKeys.theme].rawValue) unread=\(shared[PreferenceKeys.unreadCount])")
  } else {
    write(Theme.system, PreferenceKeys.theme)
    write(0, PreferenceKeys.unreadCount)
    shared.set(true, forKey: "hasLaunched")
    say("app: first launch: wrote the first-launch values theme=system unread=0")
  }
  while shared.unavailableReason != nil || !ProtectedData.isAvailable { available.wait() }
  watching.cancel()
  landAndPost("launched: theme=\(shared[PreferenceKeys.theme].rawValue) unread=\(shared[PreferenceKeys.unreadCount])")
  exit(0)
}

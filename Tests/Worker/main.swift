// appgroups-worker: a real process for the multi-process, fault and fuzz tests.
//
//   appgroups-worker write-keys SUITE PREFIX COUNT     set PREFIX-0 … PREFIX-(COUNT-1), synchronize
//                                                      (again while it returns false), print
//                                                      "sync-retries N" and "synced"; then read the
//                                                      expected total
//                                                      on stdin and wait (driven by change events,
//                                                      never by synchronize) until that many keys
//                                                      with a '-' are visible: "visible N"
//   appgroups-worker increment SUITE KEY TIMES         atomic increments of one counter; retries a
//                                                      lock timeout; "done TIMEOUTS"
//   appgroups-worker set SUITE KEY VALUE [--no-sync]   one string value; "set" once synchronize
//                                                      returned true (exit 1 if it returned false);
//                                                      with --no-sync, exit must land it
//   appgroups-worker acked-sets SUITE PREFIX COUNT [PAUSE_AT]
//                                                      PREFIX-i = i, each synchronized: "acked i" or
//                                                      "nack i REASON"; "paused" (waits for a line)
//                                                      before i = PAUSE_AT; "done NACKS"
//   appgroups-worker acked-increments SUITE KEY TIMES [PAUSE_AT]
//                                                      "got N" per increment, "error …" per failure
//                                                      (no retry); pauses the same way; "done FAILURES"
//   appgroups-worker get SUITE KEY                     prints the value's text, or "(nil)"
//   appgroups-worker hold SUITE SECONDS MODE           an atomic update of "held" whose closure
//                                                      prints "holding", then, SECONDS under the
//                                                      lock: spins (MODE busy), sleeps (idle),
//                                                      sleeps in naps of 20 ms (naps: woken
//                                                      often, on a CPU for far less than a clock
//                                                      tick a second), or waits, never woken, for
//                                                      another thread that spins (handoff);
//                                                      "released" once committed
//   appgroups-worker write-loop SUITE PREFIX [SLOTS]   for n = 0, 1, 2, …: PREFIX-(n % SLOTS) = n
//                                                      and PREFIX-pad = a string of varying length,
//                                                      synchronize, "synced n" when it returned
//                                                      true; until killed (SLOTS defaults to 1)
//   appgroups-worker migrate SUITE [KEY VALUE]         registers the worker's schema (version 2:
//                                                      "unread" -> "unreadCount", every "item-N"
//                                                      string -> "entry-N" integer) and prints
//                                                      "migrated FROM TO", "up-to-date V" or
//                                                      "newer V"; then, with KEY VALUE, sets that
//                                                      string, synchronizes (again while it
//                                                      returns false) and prints "set"; a lock
//                                                      timeout of the migration is retried
//                                                      APPGROUPS_WORKER_KILL_AT_ITEM=N: SIGKILLs
//                                                      itself inside the migration's transaction,
//                                                      before converting the Nth item (sorted);
//                                                      APPGROUPS_WORKER_KILL_AFTER_MIGRATE=1: right
//                                                      after the migration returned
//   appgroups-worker repl SUITE                        commands on stdin, one per line (below)
//   appgroups-worker observe SUITE                     the repl, and every change an observer
//                                                      hears as "changed KEY TEXT" (TEXT is
//                                                      "(nil)" for a removal)
//   appgroups-worker probe                             opens suites and manifests on request (below)
//   appgroups-worker fs-check OP PATH [OP PATH]…       tries each file operation and prints
//                                                      "OP PATH ok" or "OP PATH ERRNO-NAME"
//                                                      (fs-check operations below); no wait
//   appgroups-worker restrict-self OP PATH…            AppSandbox.restrictCurrentProcess for
//                                                      APPGROUPS_BUNDLE_ID first thing in main:
//                                                      "restricted abi N" or "refused CODE MESSAGE"
//                                                      (exit 1), then the operations as fs-check
//   appgroups-worker restrict-self-late OP PATH…       the same after starting a thread first
//   appgroups-worker listen-and-run PROGRAM ARGS…      runs PROGRAM with a listening Unix socket
//                                                      and a socket pair's end (DescriptorModes.swift)
//
// SUITE "-" is the standard suite.
//
// Environment: APPGROUPS_ROOT and APPGROUPS_BUNDLE_ID choose the root and identity;
// APPGROUPS_WORKER_LOCK_TIMEOUT_MS sets GroupDefaults.Options.lockTimeout;
// APPGROUPS_WORKER_DIAGNOSTICS=stdout sends every diagnostic to stdout as "diag MESSAGE" (and
// still to stderr), so that a test can wait for one.
//
// The worker prints "ready" and waits for a line on stdin before it starts (so tests can start
// all workers at once), unless APPGROUPS_WORKER_NO_WAIT=1 (repl and probe never wait).
//
// repl commands (answers on stdout, one line each):
//   set KEY STRING        "ok"                       seti KEY INT       "ok"
//   get KEY               "value TEXT" or "value (nil)", then "took MS"
//   sync                  "sync true|false MS"       refresh            "refresh true|false MS"
//   pending               "pending true|false"       increment KEY      "incremented N" or "error CODE"
//   wait KEY TEXT SECONDS "seen KEY" once KEY reads TEXT (woken by change events), or "timeout KEY TEXT"
//   block-next-change     the next change delivered to an observer blocks the thread that
//                         delivers it (the inotify thread, for another process's change) after
//                         printing "blocked", until "release"; answers "armed"
//   release               "released"
//   noise DIR COUNT       COUNT IN_CLOSE_WRITE events in DIR on two alternating files; "noise done"
//   diag-has TEXT         "diag-has true|false": whether a diagnostic so far contained TEXT
//   quit                  exits normally (pending changes land at exit)
//
// probe commands:
//   open NAME             opens suite NAME (a fresh store; released afterwards):
//                         "values BASE64" (a binary property list of the suite's own values)
//                         or "refused CODE MESSAGE"; diagnostics come first as "diag …"
//   manifest PATH         EntitlementManifest.load: "manifest ok BASE64" (an XML property list
//                         of bundle id → groups) or "manifest refused CODE MESSAGE"
//   quit
import AppGroups
import Foundation
import Glibc

// restrict-self confines the process here, before anything can start a thread: Landlock
// restricts only the calling thread and those it starts later. restrict-self-late starts one first.
if CommandLine.arguments.count > 1, CommandLine.arguments[1].hasPrefix("restrict-self") {
  if CommandLine.arguments[1] == "restrict-self-late" {
    let started = DispatchSemaphore(value: 0)
    Thread {
      started.signal()
      while true { sleep(60) }
    }.start()
    started.wait()
  }
  do {
    let abi = try AppSandbox.restrictCurrentProcess(identity: .current())
    say("restricted abi \(abi)")
  } catch {
    say("refused \(error.code) \(error.message)")
    exit(1)
  }
}

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("appgroups-worker: \(message)\n".utf8))
  exit(1)
}

/// One line on stdout, written with one write(2) so lines from threads never interleave.
func say(_ line: String) {
  let bytes = Array((line + "\n").utf8)
  bytes.withUnsafeBytes { buffer in
    var offset = 0
    while offset < buffer.count, let base = buffer.baseAddress {
      let n = write(STDOUT_FILENO, base + offset, buffer.count - offset)
      if n <= 0 { return }
      offset += n
    }
  }
}

func milliseconds(since start: ContinuousClock.Instant) -> Int {
  let elapsed = ContinuousClock.now - start
  let (seconds, attoseconds) = elapsed.components
  return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
}

let environment = ProcessInfo.processInfo.environment
let args = Array(CommandLine.arguments.dropFirst())
guard let mode = args.first else { fail("usage: see the comment in Tests/Worker/main.swift") }

let options: GroupDefaults.Options = {
  var options = GroupDefaults.Options()
  if let text = environment["APPGROUPS_WORKER_LOCK_TIMEOUT_MS"] {
    guard let ms = Int(text), ms >= 0 else { fail("APPGROUPS_WORKER_LOCK_TIMEOUT_MS: \(text)") }
    options.lockTimeout = .milliseconds(ms)
  }
  return options
}()
/// Every diagnostic this process reported, when APPGROUPS_WORKER_DIAGNOSTICS=stdout.
final class DiagnosticLog: @unchecked Sendable {
  private let lock = NSLock()
  private var messages: [String] = []
  func append(_ message: String) { lock.withLock { messages.append(message) } }
  func contains(_ text: String) -> Bool { lock.withLock { messages.contains { $0.contains(text) } } }
}
let diagnostics = DiagnosticLog()
if environment["APPGROUPS_WORKER_DIAGNOSTICS"] == "stdout" {
  Diagnostics.setHandler { message in
    diagnostics.append(message)
    say("diag \(message.replacingOccurrences(of: "\n", with: " "))")
    FileHandle.standardError.write(Data("appgroups: \(message)\n".utf8))
  }
}

let identity: AppIdentity
do {
  identity = try AppIdentity.current()
} catch {
  fail("\(error)")
}

func open(_ suiteName: String?) -> GroupDefaults {
  do {
    return try GroupDefaults(suiteName: suiteName, identity: identity, options: options)
  } catch {
    fail("\(error)")
  }
}

func waitForGo() {
  if environment["APPGROUPS_WORKER_NO_WAIT"] != "1" {
    say("ready")
    _ = readLine()
  }
}

func suiteArgument() -> String? {
  guard args.count >= 2 else { fail("\(mode): missing SUITE") }
  return args[1] == "-" ? nil : args[1]
}

/// Waits until `done()` holds, woken by the suite's change events (never by polling the file).
func waitForChanges(_ defaults: GroupDefaults, seconds: Double, until done: () -> Bool) -> Bool {
  let changed = DispatchSemaphore(value: 0)
  let observation = defaults.observe { _ in changed.signal() }
  defer { observation.cancel() }
  let deadline = DispatchTime.now() + seconds
  while !done() {
    if changed.wait(timeout: deadline) == .timedOut { return done() }
  }
  return true
}

switch mode {
case "write-keys":
  guard args.count == 4, let count = Int(args[3]) else { fail("write-keys SUITE PREFIX COUNT") }
  let defaults = open(suiteArgument())
  waitForGo()
  let prefix = args[2]
  for i in 0..<count {
    defaults.set(i, forKey: "\(prefix)-\(i)")
  }
  // Under heavy contention a synchronize may pass its bound (false: the changes stay pending
  // and are retried); call it again until everything landed.
  var retries = 0
  while !defaults.synchronize() {
    retries += 1
    if retries == 120 { fail("synchronize returned false \(retries) times") }
  }
  say("sync-retries \(retries)")
  say("synced")
  if let line = readLine(), let expected = Int(line) {
    func visible() -> Int {
      defaults.dictionaryRepresentation().keys.filter { $0.contains("-") }.count
    }
    _ = waitForChanges(defaults, seconds: 30) { visible() >= expected }
    say("visible \(visible())")
  }

case "increment":
  guard args.count == 4, let times = Int(args[3]) else { fail("increment SUITE KEY TIMES") }
  let defaults = open(suiteArgument())
  waitForGo()
  var timeouts = 0
  var done = 0
  while done < times {
    do {
      try defaults.increment(forKey: args[2])
      done += 1
    } catch AppGroupsError.Code.lockTimeout {
      timeouts += 1  // nothing was written: try again
    } catch {
      fail("\(error)")
    }
  }
  say("done \(timeouts)")

case "acked-sets":
  // acked-sets SUITE PREFIX COUNT [PAUSE_AT]: for each i, PREFIX-i = i and synchronize();
  // "acked i" when it returned true, "nack i REASON" when not; after acking PAUSE_AT - 1,
  // "paused" and a line on stdin before going on; "done NACKS" at the end.
  guard args.count >= 4, let count = Int(args[3]) else { fail("acked-sets SUITE PREFIX COUNT [PAUSE_AT]") }
  let pauseAt = args.count > 4 ? Int(args[4]) : nil
  let defaults = open(suiteArgument())
  waitForGo()
  var nacks = 0
  for i in 0..<count {
    if i == pauseAt {
      say("paused")
      _ = readLine()
    }
    defaults.set(i, forKey: "\(args[2])-\(i)")
    do {
      try defaults.synchronizeOrThrow()
      say("acked \(i)")
    } catch {
      nacks += 1
      say("nack \(i) \(error.message)")
    }
  }
  say("done \(nacks)")

case "acked-increments":
  // acked-increments SUITE KEY TIMES [PAUSE_AT]: atomic increments, "got N" for each value
  // returned, "error MESSAGE" for each failure (lock timeouts included); pauses as acked-sets.
  guard args.count >= 4, let times = Int(args[3]) else { fail("acked-increments SUITE KEY TIMES [PAUSE_AT]") }
  let pauseAt = args.count > 4 ? Int(args[4]) : nil
  let defaults = open(suiteArgument())
  waitForGo()
  var failures = 0
  for i in 0..<times {
    if i == pauseAt {
      say("paused")
      _ = readLine()
    }
    do {
      say("got \(try defaults.increment(forKey: args[2]))")
    } catch {
      failures += 1
      say("error \(error)")
    }
  }
  say("done \(failures)")

case "set":
  guard args.count >= 4 else { fail("set SUITE KEY VALUE [--no-sync]") }
  let defaults = open(suiteArgument())
  waitForGo()
  defaults.set(args[3], forKey: args[2])
  if !args.contains("--no-sync") {
    guard defaults.synchronize() else {
      say("sync-failed")
      exit(1)
    }
  }
  say("set")

case "hold":
  let modes = ["busy", "idle", "naps", "handoff"]
  guard args.count >= 4, let seconds = Double(args[2]), modes.contains(args[3]) else {
    fail("hold SUITE SECONDS busy|idle|naps|handoff")
  }
  let defaults = open(suiteArgument())
  waitForGo()
  do {
    _ = try defaults.update(forKey: "held") { _ in
      say("holding")
      let end = Date().addingTimeInterval(seconds)
      if args[3] == "idle" {
        Thread.sleep(until: end)
      } else if args[3] == "naps" {
        var nap = timespec(tv_sec: 0, tv_nsec: 20_000_000)
        while Date() < end { nanosleep(&nap, nil) }
      } else if args[3] == "handoff" {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
          var spins = 0
          while Date() < end { spins &+= 1 }
          done.signal()
        }
        done.wait()
      } else {
        var spins = 0
        while Date() < end { spins &+= 1 }
      }
      return .string("held")
    }
    say("released")
  } catch {
    fail("\(error)")
  }

case "get":
  guard args.count >= 3 else { fail("get SUITE KEY [-key value]…") }
  let defaults = open(suiteArgument())
  waitForGo()
  say(defaults.string(forKey: args[2]) ?? "(nil)")

case "dump":
  // dump SUITE PREFIX: "entry KEY VALUE" for each key starting with PREFIX, then "dumped N".
  guard args.count >= 3 else { fail("dump SUITE PREFIX") }
  let defaults = open(suiteArgument())
  waitForGo()
  let entries = defaults.dictionaryRepresentation().filter { $0.key.hasPrefix(args[2]) }
  for (key, value) in entries.sorted(by: { $0.key < $1.key }) { say("entry \(key) \(value)") }
  say("dumped \(entries.count)")

case "write-loop":
  guard args.count >= 3 else { fail("write-loop SUITE PREFIX [SLOTS]") }
  let slots = args.count > 3 ? Int(args[3]) ?? 1 : 1
  let defaults = open(suiteArgument())
  waitForGo()
  let prefix = args[2]
  var n = 0
  while true {
    defaults.set(n, forKey: "\(prefix)-\(n % slots)")
    defaults.set(String(repeating: "x", count: (n * 37) % 700), forKey: "\(prefix)-pad")
    if defaults.synchronize() { say("synced \(n)") }
    n += 1
  }

case "migrate":
  let defaults = open(suiteArgument())
  waitForGo()
  // As an app would: a lock held past the bound (a slow fsync of another process's commit,
  // on a loaded machine) is retried.
  var attempt: MigrationReport?
  while attempt == nil {
    do {
      attempt = try defaults.register(workerSchema())
    } catch AppGroupsError.Code.lockTimeout {
      say("lock-timeout-retried")
    } catch {
      fail("\(error)")
    }
  }
  guard let report = attempt else { fail("no migration report") }
  if environment["APPGROUPS_WORKER_KILL_AFTER_MIGRATE"] == "1" { raise(SIGKILL) }
  switch report.outcome {
  case .migrated: say("migrated \(report.fromVersion) \(report.toVersion)")
  case .upToDate: say("up-to-date \(report.toVersion)")
  case .newerSchema: say("newer \(report.fromVersion)")
  }
  if args.count >= 4 {
    defaults.set(args[3], forKey: args[2])
    // synchronize() is false while another process holds the lock past the bound; the
    // change stays pending and is retried.
    var retries = 0
    while !defaults.synchronize() {
      retries += 1
      if retries > 30 {
        say("sync-failed")
        exit(1)
      }
    }
    say("set")
  }

case "repl":
  let defaults = open(suiteArgument())
  runRepl(defaults)

case "observe":
  let defaults = open(suiteArgument())
  runRepl(defaults, printingChanges: true)

case "probe":
  runProbe()

case "fs-check", "restrict-self", "restrict-self-late":
  runFileChecks(Array(args.dropFirst()))

case "class-key":
  runClassKeys(Array(args.dropFirst()))

case "keyring-tamper" where args.count == 2:
  runKeyringTamper(args[1])

case "device-watch":
  runDeviceWatch()

case "present-and-write", "coordinate-loop":
  guard args.count == 2 else { fail("\(mode) needs a PATH") }
  if mode == "present-and-write" { runPresentAndWrite(args[1]) }
  runCoordinateLoop(args[1])
case "stop-after-open":
  runStopAfterOpen(suiteArgument())
case "listen-and-run":
  runListenAndRun(Array(args.dropFirst()))

case "protected-read":
  guard args.count == 2 else { fail("protected-read takes a PATH") }
  runProtectedRead(args[1])

default:
  fail("unknown mode \(mode)")
}

// MARK: repl

/// The gate `block-next-change` arms: the next observer call blocks until `release`.
final class Gate: @unchecked Sendable {
  private let lock = NSLock()
  private var armed = false
  private let released = DispatchSemaphore(value: 0)

  func arm() { lock.withLock { armed = true } }

  func passIfArmed() {
    let block = lock.withLock { () -> Bool in
      defer { armed = false }
      return armed
    }
    guard block else { return }
    say("blocked")
    released.wait()
  }

  func release() { released.signal() }
}

func runRepl(_ defaults: GroupDefaults, printingChanges: Bool = false) {
  let gate = Gate()
  let observation = defaults.observe { changes in
    if printingChanges {
      for change in changes {
        say("changed \(change.key) \(change.newValue.map { "\($0.foundationValue)" } ?? "(nil)")")
      }
    }
    gate.passIfArmed()
  }
  defer { observation.cancel() }
  say("ready")
  while let line = readLine() {
    let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
    guard let command = words.first else { continue }
    switch (command, words.count) {
    case ("set", 3):
      defaults.set(words[2], forKey: words[1])
      say("ok")
    case ("seti", 3):
      defaults.set(Int(words[2]) ?? 0, forKey: words[1])
      say("ok")
    case ("get", 2):
      let start = ContinuousClock.now
      let value = defaults.object(forKey: words[1]).map { "\($0)" } ?? "(nil)"
      let ms = milliseconds(since: start)
      say("value \(value)")
      say("took \(ms)")
    case ("sync", 1):
      let start = ContinuousClock.now
      let landed = defaults.synchronize()
      say("sync \(landed) \(milliseconds(since: start))")
    case ("refresh", 1):
      let start = ContinuousClock.now
      let changed = defaults.refreshIfChanged()
      say("refresh \(changed) \(milliseconds(since: start))")
    case ("pending", 1):
      // Pending changes are not public; a zero-wait synchronize would take the lock. The
      // token does not move while changes are pending, so compare the file with memory.
      say("pending \(hasPendingChanges(defaults))")
    case ("increment", 2):
      do {
        say("incremented \(try defaults.increment(forKey: words[1]))")
      } catch {
        say("error \(error.code)")
      }
    case ("wait", 4):
      let key = words[1]
      let text = words[2]
      let seconds = Double(words[3]) ?? 10
      let seen = waitForChanges(defaults, seconds: seconds) {
        defaults.object(forKey: key).map { "\($0)" } == text
      }
      say(seen ? "seen \(key)" : "timeout \(key) \(text)")
    case ("block-next-change", 1):
      gate.arm()
      say("armed")
    case ("release", 1):
      gate.release()
      say("released")
    case ("noise", 3):
      makeNoise(in: words[1], count: Int(words[2]) ?? 0)
      say("noise done")
    case ("diag-has", _) where words.count > 1:
      let text = words.dropFirst().joined(separator: " ")
      say("diag-has \(diagnostics.contains(text))")
    case ("quit", 1):
      return
    default:
      say("error unknown command \(line)")
    }
  }
}

/// Whether the suite's file lacks a value this process holds: a change still pending.
func hasPendingChanges(_ defaults: GroupDefaults) -> Bool {
  guard let data = try? Data(contentsOf: defaults.location.fileURL),
    let onDisk = try? PropertyListSerialization.propertyList(from: data, format: nil)
      as? [String: Any]
  else { return true }
  let mine = defaults.persistentDomain(forName: defaults.suiteName) ?? [:]
  for (key, value) in mine {
    guard let other = onDisk[key], PropertyListValue(other) == PropertyListValue(value) else {
      return true
    }
  }
  return false
}

/// `count` IN_CLOSE_WRITE events in `directory`, alternating two names so that the kernel
/// cannot merge consecutive events.
func makeNoise(in directory: String, count: Int) {
  let names = [directory + "/noise-a", directory + "/noise-b"]
  for i in 0..<count {
    let fd = Glibc.open(names[i & 1], O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
    if fd >= 0 { Glibc.close(fd) }
  }
}

// MARK: probe

func runProbe() {
  say("ready")
  while let line = readLine() {
    guard let space = line.firstIndex(of: " ") else {
      if line == "quit" { return }
      say("error unknown command \(line)")
      continue
    }
    let command = line[..<space]
    let argument = String(line[line.index(after: space)...])
    switch command {
    case "open":
      probeSuite(argument)
    case "manifest":
      probeManifest(argument)
    default:
      say("error unknown command \(line)")
    }
  }
}

func probeSuite(_ name: String) {
  do {
    let defaults = try GroupDefaults(suiteName: name, identity: identity, options: options)
    let values = defaults.persistentDomain(forName: name) ?? [:]
    let data = try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
    say("values \(data.base64EncodedString())")
  } catch let error as AppGroupsError {
    say("refused \(error.code) \(error.message.replacingOccurrences(of: "\n", with: " "))")
  } catch {
    say("refused encoding \(error)")
  }
}

func probeManifest(_ path: String) {
  do {
    let manifest = try EntitlementManifest.load(from: URL(fileURLWithPath: path))
    var groups: [String: [String]] = [:]
    for (bundleIdentifier, entry) in manifest.entries {
      groups[bundleIdentifier] = entry.applicationGroups
    }
    let data = try PropertyListSerialization.data(fromPropertyList: groups, format: .xml, options: 0)
    say("manifest ok \(data.base64EncodedString())")
  } catch let error as AppGroupsError {
    say("manifest refused \(error.code) \(error.message.replacingOccurrences(of: "\n", with: " "))")
  } catch {
    say("manifest refused encoding \(error)")
  }
}

// MARK: fs-check

// fs-check operations, each on one PATH:
//   read      open(O_RDONLY) and read(2) a file     list     open a folder, read an entry
//   write     open(O_WRONLY | O_APPEND) a file      create   a new file (O_EXCL), then unlink it
//   mkdir     create a folder, then remove it       rename   to PATH.renamed and back
//   exec      run PATH (a program) with no arguments and wait for it
//   shell     run /bin/sh -c PATH (a command line) and wait: "ok" or "exit-N" / "signal-N"
//   link      hard-link PATH into $TMPDIR, then unlink the link
//   signal    kill(PATH, 0): PATH is a process id
func runFileChecks(_ words: [String]) {
  guard words.count % 2 == 0 else { fail("fs-check: operations come in pairs OP PATH") }
  for index in stride(from: 0, to: words.count, by: 2) {
    let (operation, path) = (words[index], words[index + 1])
    let code = fileCheck(operation, path)
    let outcome =
      switch code {
      case 0: "ok"
      case ..<(-1000): "signal-\(-code - 1000)"
      case ..<0: "exit-\(-code)"
      default: errnoName(code)
      }
    say("\(operation) \(path) \(outcome)")
  }
}

/// Runs one operation; returns 0 or the errno it failed with.
func fileCheck(_ operation: String, _ path: String) -> Int32 {
  func failed<T: BinaryInteger>(_ result: T) -> Bool { result < 0 }
  switch operation {
  case "read", "write":
    let fd = Glibc.open(path, operation == "read" ? O_RDONLY : O_WRONLY | O_APPEND)
    if fd < 0 { return errno }
    defer { close(fd) }
    if operation == "read" {
      var byte: UInt8 = 0
      if failed(read(fd, &byte, 1)) { return errno }
    }
    return 0
  case "list":
    guard let folder = opendir(path) else { return errno }
    defer { closedir(folder) }
    errno = 0
    _ = readdir(folder)
    return errno
  case "create":
    let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    if fd < 0 { return errno }
    close(fd)
    unlink(path)
    return 0
  case "mkdir":
    if failed(mkdir(path, 0o700)) { return errno }
    rmdir(path)
    return 0
  case "rename":
    if failed(rename(path, path + ".renamed")) { return errno }
    rename(path + ".renamed", path)
    return 0
  case "exec":
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup(path), nil]
    defer { free(argv[0]) }
    let result = posix_spawn(&pid, path, nil, nil, argv, environ)
    if result != 0 { return result }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return 0
  case "shell":
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("sh"), strdup("-c"), strdup(path), nil]
    defer { for pointer in argv { free(pointer) } }
    let result = posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ)
    if result != 0 { return result }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    if status & 0x7f != 0 { return -(1000 + (status & 0x7f)) }
    return -((status >> 8) & 0xff)
  case "link":
    let link = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/worker-link-\(getpid())"
    if failed(Glibc.link(path, link)) { return errno }
    unlink(link)
    return 0
  case "signal":
    guard let pid = pid_t(path) else { fail("fs-check: signal needs a process id, not \(path)") }
    if failed(kill(pid, 0)) { return errno }
    return 0
  default:
    fail("fs-check: unknown operation \(operation)")
  }
}

func errnoName(_ code: Int32) -> String {
  switch code {
  case EACCES: "EACCES"
  case EPERM: "EPERM"
  case ENOENT: "ENOENT"
  case EEXIST: "EEXIST"
  case ELOOP: "ELOOP"
  case EXDEV: "EXDEV"
  default: "errno-\(code)"
  }
}

// MARK: migrate

/// The schema of `migrate`: version 2 renames "unread" to "unreadCount" and converts every
/// "item-N" string into an "entry-N" integer, one key at a time, so that a migration cut off
/// halfway would show (it cannot: it is one commit).
func workerSchema() -> PreferenceSchema {
  let killAt = environment["APPGROUPS_WORKER_KILL_AT_ITEM"].flatMap { Int($0) }
  let unreadCount = PreferenceKey<Int>("unreadCount", default: 0)
  return PreferenceSchema(
    version: 2, keys: [unreadCount],
    migrations: [
      Migration(
        to: 2,
        [
          .rename("unread", to: unreadCount),
          .custom("items to entries") { tx in
            let items = tx.values.keys.filter { $0.hasPrefix("item-") }.sorted()
            for (index, key) in items.enumerated() {
              if index == killAt { raise(SIGKILL) }
              guard case .string(let text)? = tx[key], let number = Int(text) else {
                throw AppGroupsError(.unsupportedValue, "\(key) is not a number as text")
              }
              tx[key] = nil
              tx["entry-" + key.dropFirst(5)] = .integer(number)
            }
          },
        ]),
    ])
}

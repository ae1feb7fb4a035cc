// appgroups-worker: a real process for the multi-process tests.
//
//   appgroups-worker write-keys SUITE PREFIX COUNT     set PREFIX-0 … PREFIX-(COUNT-1), synchronize,
//                                                      then wait until every expected key is visible
//   appgroups-worker increment SUITE KEY TIMES         atomic increments of one counter
//   appgroups-worker set SUITE KEY VALUE [--no-sync]   one string value; exits without synchronize
//                                                      when --no-sync (exit must still land it)
//   appgroups-worker get SUITE KEY                     prints the value's text, or "(nil)"
//   appgroups-worker write-loop SUITE KEY              sets KEY to 0, 1, 2, … with synchronize,
//                                                      printing "synced N" after each, until killed
//
// Environment: APPGROUPS_ROOT and APPGROUPS_BUNDLE_ID choose the root and identity.
// The worker prints "ready" and waits for a line on stdin before it starts
// (so tests can start all workers at once), unless APPGROUPS_WORKER_NO_WAIT=1.
// It prints "expect KEYS..." lines as: "visible N" when done.
import AppGroups
import Foundation

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("appgroups-worker: \(message)\n".utf8))
  exit(1)
}

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let args = Array(CommandLine.arguments.dropFirst())
guard let mode = args.first, args.count >= 3 else { fail("usage: see the comment in Tests/Worker/main.swift") }
let suiteName = args[1] == "-" ? nil : args[1]
let identity: AppIdentity
do {
  identity = try AppIdentity.current()
} catch {
  fail("\(error)")
}
let defaults: GroupDefaults
do {
  defaults = try GroupDefaults(suiteName: suiteName, identity: identity)
} catch {
  fail("\(error)")
}

if ProcessInfo.processInfo.environment["APPGROUPS_WORKER_NO_WAIT"] != "1" {
  say("ready")
  _ = readLine()
}

switch mode {
case "write-keys":
  guard args.count == 4, let count = Int(args[3]) else { fail("write-keys SUITE PREFIX COUNT") }
  let prefix = args[2]
  for i in 0..<count {
    defaults.set(i, forKey: "\(prefix)-\(i)")
  }
  guard defaults.synchronize() else { fail("synchronize returned false") }
  say("synced")
  // Then wait (bounded) until the keys of every writer are visible: the
  // test tells us the full expected count on stdin.
  if let line = readLine(), let expected = Int(line) {
    let deadline = Date().addingTimeInterval(20)
    var visible = 0
    repeat {
      defaults.synchronize()
      visible = defaults.dictionaryRepresentation().keys.filter { $0.contains("-") }.count
      if visible >= expected { break }
      usleep(2_000)
    } while Date() < deadline
    say("visible \(visible)")
  }
case "increment":
  guard args.count == 4, let times = Int(args[3]) else { fail("increment SUITE KEY TIMES") }
  for _ in 0..<times {
    do {
      try defaults.increment(args[2])
    } catch {
      fail("\(error)")
    }
  }
  say("done")
case "set":
  defaults.set(args[3], forKey: args[2])
  if !args.contains("--no-sync") { defaults.synchronize() }
  say("set")
case "get":
  say(defaults.string(forKey: args[2]) ?? "(nil)")
case "write-loop":
  var n = 0
  while true {
    defaults.set(n, forKey: args[2])
    defaults.set(String(repeating: "x", count: n % 500), forKey: "padding")
    if defaults.synchronize() { say("synced \(n)") }
    n += 1
  }
default:
  fail("unknown mode \(mode)")
}

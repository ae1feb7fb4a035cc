// appgroups-keychain-worker: a real process for the keychain's multi-process tests. It calls
// the keychain as an app does, through SecItemAdd/CopyMatching/Update/Delete, as the identity
// APPGROUPS_BUNDLE_ID in the root APPGROUPS_ROOT.
//
//   appgroups-keychain-worker [--sandbox] OP KEY=VALUE…      one call; "status N" then, for a
//                                                            copy, the result (below)
//   appgroups-keychain-worker [--sandbox] race OP KEY=VALUE… "ready", waits for a line, makes the
//                                                            call: "status N"
//   appgroups-keychain-worker [--sandbox] repl               one call per line, "OP KEY=VALUE…"
//                                                            (update: "update QUERY… -- CHANGES…"),
//                                                            answered as above, then "end"; "quit"
//   appgroups-keychain-worker update-loop SERVICE ACCOUNT    SecItemUpdate of the item's secret
//                                                            to "value-N" for N = 1, 2, …, printing
//                                                            "updated N" (or "failed N STATUS");
//                                                            until killed
//   appgroups-keychain-worker nested-locks OUTER INNER PROBE  starts the app's lifecycle, locks
//                                                            the lock file OUTER ("holding"); once
//                                                            a suspension closed the barrier (a
//                                                            thread's lock of PROBE is refused), locks
//                                                            INNER on the same thread: "inner locked"
//                                                            or "inner timed out", then lets both go
//                                                            ("released")
//   appgroups-keychain-worker hold-lock PATH                  starts the app's lifecycle, locks the
//                                                            lock file PATH through the library
//                                                            ("holding") and never lets it go
//   appgroups-keychain-worker store save|load|delete SERVICE ACCOUNT [VALUE]
//                                                            the iOS KeychainStore pattern:
//                                                            "saved", "loaded VALUE", "none",
//                                                            "deleted" or "error STATUS"
//
// OP is add, copy, update or delete. A VALUE is typed by its key: v_Data and gena are data
// (UTF-8), port, crtr and type integers, r_*, m_CaseInsensitive, nleg, invi and nega Booleans
// (true/false), sync a Boolean or "syna"; anything else a string. A prefix forces a type:
// str:, int:, bool:, data:, date: (seconds since 2001), real:, array:, nil.
//
// A result prints as "null", "data TEXT", "attrs K=V,K=V…" (sorted; data as its text), or
// "count N" followed by one such line per item.
//
// --sandbox confines the process first (AppSandbox.restrictCurrentProcess) and prints
// "restricted abi N".
import AppGroups
import AppGroupsKeychain
import ExampleKeychain
import Foundation
import Glibc

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--sandbox" {
  arguments.removeFirst()
  do {
    let abi = try AppSandbox.restrictCurrentProcess(identity: .current())
    say("restricted abi \(abi)")
  } catch {
    say("refused \(error.code) \(error.message)")
    exit(1)
  }
}

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

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("appgroups-keychain-worker: \(message)\n".utf8))
  exit(2)
}

let booleans: Set<String> = [
  "r_Data", "r_Attributes", "r_Ref", "r_PersistentRef", "m_CaseInsensitive", "nleg", "invi", "nega",
]
let integers: Set<String> = ["port", "crtr", "type"]

/// A `KEY=VALUE` word's value, typed by its key or its prefix.
func value(_ key: String, _ text: String) -> Any {
  func prefixed(_ prefix: String) -> String? {
    text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : nil
  }
  if let rest = prefixed("str:") { return rest }
  if let rest = prefixed("int:") { return Int(rest) ?? 0 }
  if let rest = prefixed("bool:") { return rest == "true" }
  if let rest = prefixed("data:") { return Data(rest.utf8) }
  if let rest = prefixed("date:") { return Date(timeIntervalSinceReferenceDate: Double(rest) ?? 0) }
  if let rest = prefixed("real:") { return Double(rest) ?? 0 }
  if let rest = prefixed("array:") { return rest.split(separator: ",").map(String.init) }
  if text == "nil" { return String?.none as Any }
  if key == "v_Data" || key == "gena" { return Data(text.utf8) }
  if integers.contains(key) { return Int(text) ?? 0 }
  if booleans.contains(key) { return text == "true" }
  if key == "sync" { return text == "syna" ? text : (text == "true") as Any }
  return text
}

func dictionary(_ words: ArraySlice<String>) -> [String: Any] {
  var result: [String: Any] = [:]
  for word in words {
    guard let equals = word.firstIndex(of: "=") else { fail("not KEY=VALUE: \(word)") }
    let key = String(word[..<equals])
    result[key] = value(key, String(word[word.index(after: equals)...]))
  }
  return result
}

func describe(_ object: AnyObject?) -> [String] {
  guard let object else { return ["null"] }
  if object is NSNull { return ["null"] }
  if let data = object as? Data { return ["data " + String(decoding: data, as: UTF8.self)] }
  if let items = object as? [AnyObject] {
    return ["count \(items.count)"] + items.flatMap { describe($0) }
  }
  if let attributes = object as? [String: Any] {
    let pairs = attributes.keys.sorted().map { key -> String in
      let value = attributes[key]
      if let data = value as? Data { return "\(key)=\(String(decoding: data, as: UTF8.self))" }
      if let date = value as? Date {
        return "\(key)=date" + (date.timeIntervalSinceNow < 60 ? "" : "?")
      }
      return "\(key)=\(value.map { "\($0)" } ?? "nil")"
    }
    return ["attrs " + pairs.joined(separator: ",")]
  }
  return ["object \(type(of: object))"]
}

/// Makes one call; returns its lines.
func call(_ words: [String]) -> [String] {
  guard let operation = words.first else { return ["error no operation"] }
  let rest = words.dropFirst()
  switch operation {
  case "add":
    var result: AnyObject?
    let status = SecItemAdd(dictionary(rest) as CFDictionary, &result)
    return ["status \(status)"] + (status == 0 && result != nil ? describe(result) : [])
  case "copy":
    var result: AnyObject?
    let status = SecItemCopyMatching(dictionary(rest) as CFDictionary, &result)
    return ["status \(status)"] + (status == 0 ? describe(result) : [])
  case "update":
    let split = rest.firstIndex(of: "--") ?? rest.endIndex
    let query = dictionary(rest[..<split])
    let changes = split < rest.endIndex ? dictionary(rest[(split + 1)...]) : [:]
    return ["status \(SecItemUpdate(query as CFDictionary, changes as CFDictionary))"]
  case "delete":
    return ["status \(SecItemDelete(dictionary(rest) as CFDictionary))"]
  default:
    return ["error unknown operation \(operation)"]
  }
}

guard let mode = arguments.first else {
  fail("usage: see the comment in Tests/KeychainWorker/main.swift")
}

switch mode {
case "add", "copy", "update", "delete":
  for line in call(arguments) { say(line) }

case "race":
  say("ready")
  _ = readLine()
  for line in call(Array(arguments.dropFirst())) { say(line) }

case "repl":
  say("ready")
  while let line = readLine() {
    let words = line.split(separator: " ").map(String.init)
    if words.first == "quit" { break }
    for answer in call(words) { say(answer) }
    say("end")
  }

case "update-loop":
  guard arguments.count == 3 else { fail("update-loop SERVICE ACCOUNT") }
  let query: [String: Any] = [
    kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: arguments[1],
    kSecAttrAccount as String: arguments[2],
  ]
  var n = 0
  while true {
    n += 1
    let changes: [String: Any] = [kSecValueData as String: Data("value-\(n)".utf8)]
    let status = SecItemUpdate(query as CFDictionary, changes as CFDictionary)
    say(status == errSecSuccess ? "updated \(n)" : "failed \(n) \(status)")
  }

case "nested-locks":
  // A keychain update's shape: a lock held (the access group's) when a suspension is being
  // prepared, and a second one (the device's) asked for on the same thread after that.
  guard arguments.count == 4 else { fail("nested-locks OUTER INNER PROBE") }
  func opened(_ path: String) -> LockedFile {
    do {
      return try LockedFile(path: path)
    } catch {
      fail("opening \(path): \(error)")
    }
  }
  let (outer, inner, probe) = (opened(arguments[1]), opened(arguments[2]), opened(arguments[3]))
  do {
    AppLifecycle.start(identity: try AppIdentity.current())
  } catch {
    fail("who this process is: \(error.message)")
  }
  let noticed = DispatchSemaphore(value: 0)
  let observation = AppLifecycle.onSuspend { _ in noticed.signal() }
  defer { withExtendedLifetime(observation) {} }
  do {
    try outer.lock(until: FileSystem.deadline(after: .seconds(5)))
  } catch {
    fail("locking \(arguments[1]): \(error)")
  }
  say("holding")
  guard noticed.wait(timeout: .now() + 30) == .success else { fail("no suspension notice") }
  // Closed when another thread, holding nothing, is refused the free PROBE at once.
  let closed = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    let end = FileSystem.deadline(after: .seconds(30))
    while FileSystem.monotonicNanoseconds() < end {
      guard (try? probe.lock(until: 0)) != nil else {
        closed.signal()
        return
      }
      probe.unlock()
      sched_yield()
    }
  }
  guard closed.wait(timeout: .now() + 30) == .success else { fail("the barrier never closed") }
  do {
    try inner.lock(until: FileSystem.deadline(after: .seconds(5)))
    say("inner locked")
    inner.unlock()
  } catch {
    say("inner timed out")
  }
  outer.unlock()
  say("released")
  while readLine() != nil {}

case "hold-lock":
  // A library lock held past any suspension's grace: the drain runs out of time.
  guard arguments.count == 2 else { fail("hold-lock PATH") }
  let held: LockedFile
  do {
    held = try LockedFile(path: arguments[1])
    AppLifecycle.start(identity: try AppIdentity.current())
    try held.lock(until: FileSystem.deadline(after: .seconds(5)))
  } catch {
    fail("locking \(arguments[1]): \(error)")
  }
  say("holding")
  while readLine() != nil {}
  withExtendedLifetime(held) {}

case "store":
  guard arguments.count >= 4 else { fail("store save|load|delete SERVICE ACCOUNT [VALUE]") }
  let (service, account) = (arguments[2], arguments[3])
  do {
    switch arguments[1] {
    case "save":
      guard arguments.count == 5 else { fail("store save SERVICE ACCOUNT VALUE") }
      try KeychainStore.save(arguments[4], service: service, account: account)
      say("saved")
    case "load":
      if let value = try KeychainStore.load(service: service, account: account) {
        say("loaded \(value)")
      } else {
        say("none")
      }
    case "delete":
      try KeychainStore.delete(service: service, account: account)
      say("deleted")
    default:
      fail("store: unknown action \(arguments[1])")
    }
  } catch let error as KeychainStore.Failure {
    say("error \(error.status)")
    exit(1)
  }

default:
  fail("unknown mode \(mode)")
}

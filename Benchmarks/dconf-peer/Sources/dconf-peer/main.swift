// dconf-peer: the GNOME dconf side of the AppGroups benchmark, measured on a
// private session bus started for the run.
//
//   dconf-peer round keys=… fill=… sizes=1000:20,10000:10 notify=60 watchers=32 fanout=50
//     batch=0.1 batches=5
//
// One round: starts `dbus-daemon --session` in a temporary HOME/XDG_RUNTIME_DIR (the
// session bus activates dconf-service from there), runs each measure in a fresh child
// process, prints `sample <label> <series> <nanoseconds>` lines for the benchmark's
// coordinator, then `done`, and stops the bus and the service.
//
// The measures, as the AppGroups and Foundation sides have them:
//   P1  `dconf_client_read` of an integer key, the thread's CPU time per call
//   P2  `fill` distinct `dconf_client_write_fast` calls, then `dconf_client_sync`
//   P3/P4  one `dconf_client_write_sync` into a folder of 1,000 / 10,000 keys
//   P5/P8  `dconf_client_write_fast` → the "changed" signal in 1 / 32 other processes
import CDconf
import Foundation
import Glibc

let arguments = Array(CommandLine.arguments.dropFirst())
signal(SIGPIPE, SIG_IGN)

// MARK: dconf

func int64Variant(_ n: Int) -> OpaquePointer? { g_variant_new_int64(gint64(n)) }

func readInt(_ client: OpaquePointer?, _ key: String) -> Int? {
  guard let variant = dconf_client_read(client, key) else { return nil }
  defer { g_variant_unref(variant) }
  return Int(g_variant_get_int64(variant))
}

func writeSync(_ client: OpaquePointer?, _ key: String, _ value: Int) {
  var error: UnsafeMutablePointer<GError>? = nil
  guard dconf_client_write_sync(client, key, int64Variant(value), nil, nil, &error) != 0 else {
    fail("dconf_client_write_sync \(key): \(message(error))")
  }
}

func writeFast(_ client: OpaquePointer?, _ key: String, _ value: Int) {
  var error: UnsafeMutablePointer<GError>? = nil
  guard dconf_client_write_fast(client, key, int64Variant(value), &error) != 0 else {
    fail("dconf_client_write_fast \(key): \(message(error))")
  }
}

func message(_ error: UnsafeMutablePointer<GError>?) -> String {
  guard let error, let text = error.pointee.message else { return "unknown error" }
  return String(cString: text)
}

/// A folder of `keys` integers `/bench/<name>/key-N` and `unreadCount` = 42, in one change.
func prepare(_ client: OpaquePointer?, _ folder: String, keys: Int) {
  let changeset = dconf_changeset_new()
  for i in 0..<keys { dconf_changeset_set(changeset, "\(folder)key-\(i)", int64Variant(i)) }
  dconf_changeset_set(changeset, "\(folder)unreadCount", int64Variant(42))
  var error: UnsafeMutablePointer<GError>? = nil
  guard dconf_client_change_sync(client, changeset, nil, nil, &error) != 0 else {
    fail("dconf_client_change_sync: \(message(error))")
  }
  dconf_changeset_unref(changeset)
}

// MARK: Child modes

func child(_ mode: String, _ p: Parameters) {
  let client = dconf_client_new()
  switch mode {
  case "read":
    let key = "/bench/read/unreadCount"
    prepare(client, "/bench/read/", keys: 0)
    guard readInt(client, key) == 42 else { fail("read: unreadCount is not 42") }
    let count = calibrate(seconds: p.double("batch")) { n in
      var sum = 0
      for _ in 0..<n { sum &+= readInt(client, key) ?? 0 }
      blackHole(sum)
    }
    for _ in 0..<p.int("batches") {
      var sum = 0
      let start = threadCPUNanoseconds()
      for _ in 0..<count { sum &+= readInt(client, key) ?? 0 }
      let elapsed = threadCPUNanoseconds() - start
      blackHole(sum)
      emit("sample read \(Double(elapsed) / Double(count))")
    }
  case "fill":
    let folder = "/bench/\(p["name"] ?? "fill")/"
    let keys = (0..<p.int("keys")).map { "\(folder)key-\($0)" }
    let start = monotonicNanoseconds()
    for (i, key) in keys.enumerated() { writeFast(client, key, i) }
    dconf_client_sync(client)
    emit("sample fill \(monotonicNanoseconds() - start)")
    guard readInt(client, keys[keys.count - 1]) == keys.count - 1 else { fail("fill: last key missing") }
  case "setsync":
    let size = p.int("keys")
    let folder = "/bench/\(p["name"] ?? "size")/"
    if readInt(client, "\(folder)unreadCount") != 42 { prepare(client, folder, keys: size) }
    var base = Int(truncatingIfNeeded: monotonicNanoseconds())
    for op in -1..<p.int("ops") {
      let key = "\(folder)key-\((op + 1) * 7919 % max(size, 1))"
      base &+= 1
      let start = monotonicNanoseconds()
      writeSync(client, key, base)
      let elapsed = monotonicNanoseconds() - start
      if op >= 0 { emit("sample setsync \(elapsed)") }
    }
  case "notify":
    notifyDriver(client, p)
  case "watch":
    watch(client)
  default:
    fail("unknown mode \(mode)")
  }
  g_object_unref(UnsafeMutableRawPointer(client))
}

/// P5/P8: this process writes `ping`; `watchers` children report, by CLOCK_MONOTONIC,
/// when their "changed" signal ran. A sample runs from just before the write to the last.
func notifyDriver(_ client: OpaquePointer?, _ p: Parameters) {
  writeSync(client, "/bench/ping/ping", -1)
  let environment = ["DBUS_SESSION_BUS_ADDRESS": ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] ?? ""]
  let watchers = (0..<p.int("watchers")).map { _ in ChildProcess(["watch"], environment: environment) }
  for watcher in watchers {
    guard watcher.expectLine("ready") == "ready" else { fail("notify: a watcher did not start") }
  }
  for i in 0..<p.int("samples") {
    usleep(UInt32(p.int("gapMicros")))
    let start = monotonicNanoseconds()
    writeFast(client, "/bench/ping/ping", i)
    var last: UInt64 = 0
    for watcher in watchers {
      while true {
        let line = watcher.expectLine("change signal for write \(i)", timeout: 30)
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[0] == "got", let v = Int(parts[1]), let at = UInt64(parts[2]) else {
          fail("notify: unexpected watcher line \(line.debugDescription)")
        }
        // dconf may coalesce or repeat: wait for this write's value.
        if v < i { continue }
        last = max(last, at)
        break
      }
    }
    emit("sample notify \(last > start ? last - start : 0)")
  }
  dconf_client_sync(client)
  for watcher in watchers { _ = watcher.finish() }
}

/// A watcher: prints `got <value> <monotonic ns>` on every change of /bench/ping/.
func watch(_ client: OpaquePointer?) {
  dconf_client_watch_sync(client, "/bench/ping/")
  typealias Changed = @convention(c) (
    OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<CChar>?,
    UnsafeMutableRawPointer?
  ) -> Void
  let changed: Changed = { client, _, _, _, _ in
    let at = monotonicNanoseconds()
    if let value = readInt(client, "/bench/ping/ping") { emit("got \(value) \(at)") }
  }
  g_signal_connect_data(
    UnsafeMutableRawPointer(client), "changed", unsafeBitCast(changed, to: GCallback.self), nil, nil,
    GConnectFlags(rawValue: 0))
  // The driver closes our stdin to end the run: watch it from the main loop.
  let channel = g_io_channel_unix_new(0)
  let loop = g_main_loop_new(nil, 0)
  typealias Input = @convention(c) (
    UnsafeMutablePointer<GIOChannel>?, GIOCondition, UnsafeMutableRawPointer?
  ) -> gboolean
  let input: Input = { _, _, loop in
    var byte: UInt8 = 0
    if read(0, &byte, 1) <= 0 { g_main_loop_quit(OpaquePointer(loop)) }
    return 1
  }
  g_io_add_watch(
    channel, GIOCondition(rawValue: G_IO_IN.rawValue | G_IO_HUP.rawValue), input,
    UnsafeMutableRawPointer(loop))
  emit("ready")
  g_main_loop_run(loop)
  g_main_loop_unref(loop)
}

// MARK: A round

/// Starts a private session bus in a temporary folder, runs every measure once in a
/// fresh child, prints its samples under the coordinator's labels, and cleans up.
func round(_ p: Parameters) {
  let temporary = (NSTemporaryDirectory() as NSString).standardizingPath
  var template = Array((temporary + "/dconf-peer-XXXXXX").utf8CString)
  guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
    fail("mkdtemp: \(String(cString: strerror(errno)))")
  }
  let folder = String(cString: made)
  defer { try? FileManager.default.removeItem(atPath: folder) }
  var environment = [
    "HOME": folder, "XDG_CONFIG_HOME": folder + "/config", "XDG_CACHE_HOME": folder + "/cache",
    "XDG_RUNTIME_DIR": folder + "/run",
  ]
  for path in ["config", "cache", "run"] { mkdir(folder + "/" + path, 0o700) }
  for (key, value) in environment { setenv(key, value, 1) }
  unsetenv("DCONF_PROFILE")

  // dbus-daemon prints its address and runs until it is terminated at the end of the round.
  let bus = Process()
  bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
  bus.arguments = ["--session", "--nofork", "--nopidfile", "--print-address=1"]
  let out = Pipe()
  bus.standardOutput = out
  do { try bus.run() } catch { fail("cannot start dbus-daemon: \(error)") }
  let reader = LineReader(fd: out.fileHandleForReading.fileDescriptor)
  guard let address = reader.readLine(timeout: 30), !address.isEmpty else { fail("dbus-daemon printed no address") }
  environment["DBUS_SESSION_BUS_ADDRESS"] = address
  setenv("DBUS_SESSION_BUS_ADDRESS", address, 1)
  defer {
    // dconf-service, activated by the bus, exits when its connection to the bus closes.
    bus.terminate()
    bus.waitUntilExit()
  }

  // Each measure gets a database of its own (as each AppGroups measure gets a suite of
  // its own): a profile naming one user database, `$XDG_CONFIG_HOME/dconf/<label>`, whose
  // name is part of a D-Bus object path (no "-").
  func measure(_ label: String, _ mode: String, _ extra: [String: Any]) {
    let args = [mode] + extra.map { "\($0.key)=\($0.value)" }.sorted()
    let profile = "\(folder)/profile-\(label)"
    let database = label.replacingOccurrences(of: "-", with: "_")
    guard FileManager.default.createFile(atPath: profile, contents: Data("user-db:\(database)\n".utf8)) else {
      fail("cannot write \(profile)")
    }
    var childEnvironment = environment
    childEnvironment["DCONF_PROFILE"] = profile
    for line in runChild(args, environment: childEnvironment) {
      let parts = line.split(separator: " ")
      guard parts.count == 3 else { fail("unexpected line \(line.debugDescription)") }
      emit("\(parts[0]) \(label) \(parts[1]) \(parts[2])")
    }
  }

  measure("P1", "read", ["batch": p.double("batch"), "batches": p.int("batches")])
  measure("P2", "fill", ["keys": p.int("fill"), "name": "fill"])
  for size in (p["sizes"] ?? "").split(separator: ",") {
    let parts = size.split(separator: ":")
    guard parts.count == 2, let keys = Int(parts[0]), let ops = Int(parts[1]) else { fail("bad sizes=") }
    measure("size-\(keys)", "setsync", ["keys": keys, "ops": ops, "name": "size\(keys)"])
  }
  measure("P5", "notify", ["watchers": 1, "samples": p.int("notify"), "gapMicros": 500])
  measure("P8", "notify", ["watchers": p.int("watchers"), "samples": p.int("fanout"), "gapMicros": 2_000])
}

if arguments.first == "__child", arguments.count >= 2 {
  child(arguments[1], Parameters(arguments.dropFirst(2)))
  emit("done")
  exit(0)
}
guard arguments.first == "round" else {
  fail("usage: dconf-peer round fill=N sizes=K:OPS,… notify=N watchers=N fanout=N batch=S batches=N")
}
round(Parameters(arguments.dropFirst()))
emit("done")

/// Finds how many iterations of `body` take about `seconds` of this thread's CPU time.
func calibrate(seconds: Double, _ body: (Int) -> Void) -> Int {
  var n = 1_000
  while true {
    let start = threadCPUNanoseconds()
    body(n)
    let elapsed = Double(threadCPUNanoseconds() - start) / 1e9
    if elapsed >= seconds / 4 || n >= 1 << 30 {
      return max(Int(Double(n) * seconds / max(elapsed, 1e-9)), 1)
    }
    n *= 4
  }
}

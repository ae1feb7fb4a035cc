// keyring-peer: the GNOME Keyring side of the AppGroups benchmark's keychain rows, measured
// through libsecret against a private gnome-keyring-daemon.
//
//   keyring-peer round adds=N batch=S batches=N
//
// One round: makes a temporary HOME (XDG_DATA_HOME, XDG_RUNTIME_DIR in it), starts
// `dbus-daemon --session` there and `gnome-keyring-daemon --unlock --components=secrets` on
// that bus (its login keyring created and unlocked with a password given on its stdin), runs
// each measure in a fresh child process, prints `sample <label> <series> <nanoseconds>` lines
// for the benchmark's coordinator, then `done`, and stops the daemons.
//
// The measures, as the AppGroups side has them:
//   K1  `secret_password_lookup_sync` of one item, warm (the connection and the session
//       opened by a first lookup): wall time per call, in batches
//   K2  `secret_password_store_sync` of a new item: wall time per call (the daemon writes
//       the keyring file before it answers)
import CKeyring
import Foundation
import Glibc

let arguments = Array(CommandLine.arguments.dropFirst())
signal(SIGPIPE, SIG_IGN)

func message(_ error: UnsafeMutablePointer<GError>?) -> String {
  guard let error, let text = error.pointee.message else { return "unknown error" }
  return String(cString: text)
}

func store(_ service: String, _ account: String, _ password: String) {
  var error: UnsafeMutablePointer<GError>? = nil
  guard ckeyring_store(service, account, password, &error) == 1 else {
    fail("secret_password_store_sync \(account): \(message(error))")
  }
}

func lookup(_ service: String, _ account: String) -> Int {
  var error: UnsafeMutablePointer<GError>? = nil
  guard let password = ckeyring_lookup(service, account, &error) else {
    fail("secret_password_lookup_sync \(account): \(error == nil ? "not found" : message(error))")
  }
  defer { secret_password_free(password) }
  return strlen(password)
}

// MARK: Child modes

func child(_ mode: String, _ p: Parameters) {
  switch mode {
  case "lookup":
    store("bench", "token", String(repeating: "s", count: 32))
    guard lookup("bench", "token") == 32 else { fail("lookup: the item is not 32 bytes") }
    let count = calibrate(seconds: p.double("batch")) { n in
      var sum = 0
      for _ in 0..<n { sum &+= lookup("bench", "token") }
      blackHole(sum)
    }
    for _ in 0..<p.int("batches") {
      var sum = 0
      let start = monotonicNanoseconds()
      for _ in 0..<count { sum &+= lookup("bench", "token") }
      let elapsed = monotonicNanoseconds() - start
      blackHole(sum)
      emit("sample lookup \(Double(elapsed) / Double(count))")
    }
  case "store":
    // The connection and the session are opened by a first call, as for K1.
    store("bench-add", "warm-up", "x")
    let round = p["name"] ?? "r"
    for i in 0..<p.int("adds") {
      let start = monotonicNanoseconds()
      store("bench-add", "\(round)-\(i)", String(repeating: "s", count: 32))
      emit("sample store \(monotonicNanoseconds() - start)")
    }
  default:
    fail("unknown mode \(mode)")
  }
}

/// Finds how many calls of `body` take about `seconds` of wall time.
func calibrate(seconds: Double, _ body: (Int) -> Void) -> Int {
  var n = 16
  while true {
    let start = monotonicNanoseconds()
    body(n)
    let elapsed = Double(monotonicNanoseconds() - start) / 1e9
    if elapsed >= seconds / 4 || n >= 1 << 24 {
      return max(Int(Double(n) * seconds / max(elapsed, 1e-9)), 1)
    }
    n *= 4
  }
}

// MARK: A round

/// Starts a private session bus and keyring daemon in a temporary folder, runs every measure
/// once in a fresh child, prints its samples under the coordinator's labels, and cleans up.
func round(_ p: Parameters) {
  let temporary = (NSTemporaryDirectory() as NSString).standardizingPath
  var template = Array((temporary + "/keyring-peer-XXXXXX").utf8CString)
  guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
    fail("mkdtemp: \(String(cString: strerror(errno)))")
  }
  let folder = String(cString: made)
  defer { try? FileManager.default.removeItem(atPath: folder) }
  var environment = [
    "HOME": folder, "XDG_CONFIG_HOME": folder + "/config", "XDG_CACHE_HOME": folder + "/cache",
    "XDG_DATA_HOME": folder + "/data", "XDG_RUNTIME_DIR": folder + "/run",
  ]
  for path in ["config", "cache", "data", "run"] { mkdir(folder + "/" + path, 0o700) }
  for (key, value) in environment { setenv(key, value, 1) }

  let bus = Process()
  bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
  bus.arguments = ["--session", "--nofork", "--nopidfile", "--print-address=1"]
  let out = Pipe()
  bus.standardOutput = out
  bus.standardError = FileHandle.nullDevice
  do { try bus.run() } catch { fail("cannot start dbus-daemon: \(error)") }
  let reader = LineReader(fd: out.fileHandleForReading.fileDescriptor)
  guard let address = reader.readLine(timeout: 30), !address.isEmpty else {
    fail("dbus-daemon printed no address")
  }
  environment["DBUS_SESSION_BUS_ADDRESS"] = address
  setenv("DBUS_SESSION_BUS_ADDRESS", address, 1)

  // The keyring daemon: unlocks (creating) the login keyring with the password on its stdin,
  // and serves org.freedesktop.secrets on the bus until the round ends.
  let keyring = Process()
  keyring.executableURL = URL(fileURLWithPath: "/usr/bin/gnome-keyring-daemon")
  keyring.arguments = ["--foreground", "--unlock", "--components=secrets"]
  let password = Pipe()
  keyring.standardInput = password
  keyring.standardOutput = FileHandle.nullDevice
  keyring.standardError = FileHandle.nullDevice
  do { try keyring.run() } catch { fail("cannot start gnome-keyring-daemon: \(error)") }
  password.fileHandleForWriting.write(Data("benchmark-password".utf8))
  try? password.fileHandleForWriting.close()
  defer {
    keyring.terminate()
    keyring.waitUntilExit()
    bus.terminate()
    bus.waitUntilExit()
  }

  func measure(_ label: String, _ mode: String, _ extra: [String: Any]) {
    let args = [mode] + extra.map { "\($0.key)=\($0.value)" }.sorted()
    for line in runChild(args, environment: environment) {
      let parts = line.split(separator: " ")
      guard parts.count == 3 else { fail("unexpected line \(line.debugDescription)") }
      emit("\(parts[0]) \(label) \(parts[1]) \(parts[2])")
    }
  }

  measure("K1", "lookup", ["batch": p.double("batch"), "batches": p.int("batches")])
  measure("K2", "store", ["adds": p.int("adds"), "name": "r\(getpid())"])
}

if arguments.first == "__child", arguments.count >= 2 {
  child(arguments[1], Parameters(arguments.dropFirst(2)))
  emit("done")
  exit(0)
}
guard arguments.first == "round" else {
  fail("usage: keyring-peer round adds=N batch=S batches=N")
}
round(Parameters(arguments.dropFirst()))
emit("done")

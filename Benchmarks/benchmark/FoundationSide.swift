// The Foundation `UserDefaults` side of every measure, run in a child
// process whose HOME and XDG_CONFIG_HOME point into the benchmark's
// temporary folder (Foundation on Linux keeps a suite at
// `$XDG_CONFIG_HOME/<suite>.plist`), so the real home is never touched.
import Foundation
import Glibc

enum FoundationSide {
  /// The temporary configuration folder; never the real home's.
  static func configHome() -> String {
    let environment = ProcessInfo.processInfo.environment
    guard let config = environment["XDG_CONFIG_HOME"], let home = environment["HOME"],
      config.contains("/appgroups-bench-"), home.contains("/appgroups-bench-")
    else { fail("refusing to run Foundation's UserDefaults outside the benchmark's temporary HOME") }
    return config
  }

  static func open(_ suite: String) -> UserDefaults {
    _ = configHome()
    guard let defaults = UserDefaults(suiteName: suite) else { fail("UserDefaults(suiteName: \(suite)) is nil") }
    return defaults
  }

  static func run(_ mode: String, _ p: Parameters) {
    switch mode {
    case "prepare": prepare(p)
    case "read": cachedRead(p)
    case "fill": fill(p)
    case "setsync": setAndSynchronize(p)
    case "load": load(p)
    case "notify": notifyDriver(p)
    case "watch": watch(p)
    default: fail("unknown Foundation mode \(mode)")
    }
  }

  static func prepare(_ p: Parameters) {
    var values: [String: Any] = [:]
    for i in 0..<p.int("keys") { values["key-\(i)"] = i }
    values["unreadCount"] = 42
    // Written as the file Foundation itself would write (an XML property
    // list at $XDG_CONFIG_HOME/<suite>.plist): its setPersistentDomain
    // takes minutes at 100,000 keys.
    let config = configHome()
    do {
      let data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
      try data.write(to: URL(fileURLWithPath: "\(config)/\(p.suite).plist"))
    } catch {
      fail("prepare: \(error)")
    }
    guard open(p.suite).integer(forKey: "unreadCount") == 42 else { fail("prepare: Foundation does not read the file") }
  }

  static func cachedRead(_ p: Parameters) {
    let defaults = open(p.suite)
    let key = "unreadCount"
    guard defaults.integer(forKey: key) == 42 else { fail("read: unreadCount is not 42") }
    let count = calibrate(seconds: p.double("batch")) { n in
      var sum = 0
      for _ in 0..<n { sum &+= defaults.integer(forKey: key) }
      blackHole(sum)
    }
    for _ in 0..<p.int("batches") {
      var sum = 0
      let start = threadCPUNanoseconds()
      for _ in 0..<count { sum &+= defaults.integer(forKey: key) }
      let elapsed = threadCPUNanoseconds() - start
      blackHole(sum)
      emit("sample read \(Double(elapsed) / Double(count))")
    }
  }

  static func fill(_ p: Parameters) {
    let defaults = open(p.suite)
    guard defaults.object(forKey: "key-0") == nil else { fail("fill: \(p.suite) is not empty") }
    let keys = (0..<p.int("keys")).map { "key-\($0)" }
    let start = monotonicNanoseconds()
    for (i, key) in keys.enumerated() { defaults.set(i, forKey: key) }
    guard defaults.synchronize() else { fail("fill: synchronize() failed") }
    emit("sample fill \(monotonicNanoseconds() - start)")
  }

  static func setAndSynchronize(_ p: Parameters) {
    let defaults = open(p.suite)
    let size = p.int("keys")
    guard defaults.integer(forKey: "key-\(size - 1)") == size - 1 else {
      fail("setsync: \(p.suite) does not hold \(size) keys")
    }
    let ops = p.int("ops")
    var base = Int(truncatingIfNeeded: monotonicNanoseconds())
    for op in -1..<ops {
      let key = "key-\((op + 1) * 7919 % max(size, 1))"
      base &+= 1
      let start = monotonicNanoseconds()
      defaults.set(base, forKey: key)
      guard defaults.synchronize() else { fail("setsync: synchronize() failed") }
      let elapsed = monotonicNanoseconds() - start
      if op >= 0 { emit("sample setsync \(elapsed)") }
    }
  }

  static func load(_ p: Parameters) {
    let start = monotonicNanoseconds()
    let defaults = open(p.suite)
    let value = defaults.integer(forKey: "unreadCount")
    let elapsed = monotonicNanoseconds() - start
    guard value == 42 else { fail("load: unreadCount is \(value), not 42") }
    emit("sample load \(elapsed)")
    emit("value peakKiB \(peakResidentKiB())")
    withExtendedLifetime(defaults) {}
  }

  /// P5 and P8 for Foundation: there is no cross-process change callback.
  /// The driver writes (`set` + `synchronize()`) `samples` times; each
  /// watcher, observing `UserDefaults.didChangeNotification`, then says how
  /// many notifications it got and which value it reads.
  static func notifyDriver(_ p: Parameters) {
    let defaults = open(p.suite)
    defaults.set(-1, forKey: "ping")
    defaults.synchronize()
    let environment = [
      "HOME": ProcessInfo.processInfo.environment["HOME"] ?? "",
      "XDG_CONFIG_HOME": ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"] ?? "",
    ]
    let watchers = (0..<p.int("watchers")).map { _ in
      ChildProcess(["foundation", "watch", "suite=\(p.suite)"], environment: environment)
    }
    for watcher in watchers {
      guard watcher.expectLine("ready") == "ready" else { fail("notify: a watcher did not start") }
    }
    let samples = p.int("samples")
    for i in 0..<samples {
      defaults.set(i, forKey: "ping")
      defaults.synchronize()
    }
    usleep(UInt32(p.double("wait") * 1e6))
    var received = 0
    var stale = 0
    for watcher in watchers {
      watcher.send("report")
      let parts = watcher.expectLine("report").split(separator: " ")
      guard parts.count == 4, let n = Int(parts[1]), let v = Int(parts[3]) else { fail("notify: bad report") }
      received += n
      if v != samples - 1 { stale += 1 }
      watcher.finish()
    }
    emit("value sent \(samples * watchers.count)")
    emit("value received \(received)")
    emit("value stale \(stale)")
    emit("value watchers \(watchers.count)")
  }

  static func watch(_ p: Parameters) {
    let defaults = open(p.suite)
    _ = defaults.integer(forKey: "ping")
    let counter = Counter()
    let token = NotificationCenter.default.addObserver(
      forName: UserDefaults.didChangeNotification, object: nil, queue: nil
    ) { _ in counter.increment() }
    emit("ready")
    let input = LineReader(fd: 0)
    while let line = input.readLine(timeout: 3600) {
      if line == "report" {
        emit("received \(counter.value) value \(defaults.integer(forKey: "ping"))")
      }
    }
    NotificationCenter.default.removeObserver(token)
  }
}

/// A count shared with a notification block.
final class Counter: @unchecked Sendable {
  private let lock = NSLock()
  private var count = 0
  func increment() { lock.withLock { count += 1 } }
  var value: Int { lock.withLock { count } }
}

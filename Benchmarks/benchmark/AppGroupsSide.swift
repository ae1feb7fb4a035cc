// The AppGroups side of every measure, run in a child process of its own.
//
// Each mode prints `sample <series> <nanoseconds>` and `value <name> <number>`
// lines, then `done`. The root comes from BENCH_ROOT; the identity is
// `com.example.bench`, granted every `group.bench.*` suite by the coordinator.
import AppGroups
import Foundation
import Glibc

enum AppGroupsSide {
  static let bundleID = "com.example.bench"

  /// BENCH_ROOT: the root every child works in.
  static func rootPath() -> String {
    guard let rootPath = ProcessInfo.processInfo.environment["BENCH_ROOT"] else { fail("BENCH_ROOT is not set") }
    return rootPath
  }

  static func open(_ suite: String, rootPath: String = rootPath()) -> GroupDefaults {
    do {
      return try GroupDefaults(
        suiteName: suite, identity: AppIdentity(bundleIdentifier: bundleID),
        root: ContainerRoot(path: rootPath))
    } catch {
      fail("cannot open \(suite): \(error)")
    }
  }

  static func run(_ mode: String, _ p: Parameters) {
    switch mode {
    case "prepare": prepare(p)
    case "read": cachedRead(p)
    case "fill": fill(p)
    case "setsync": setAndSynchronize(p)
    case "load": load(p)
    case "resume": resumeCheck(p)
    case "notify": notifyDriver(p)
    case "watch": watch(p)
    case "pings": pings(p)
    case "contend": contendDriver(p)
    case "increments": increments(p)
    case "migrate": migrate(p)
    case "keychain-read": KeychainSide.read(p)
    case "keychain-add": KeychainSide.add(p)
    default: fail("unknown AppGroups mode \(mode)")
    }
  }

  /// A suite holding `keys` integers `key-0` … (untimed setup).
  static func prepare(_ p: Parameters) {
    let defaults = open(p.suite)
    var values: [String: Any] = [:]
    for i in 0..<p.int("keys") { values["key-\(i)"] = i }
    values["unreadCount"] = 42
    defaults.setPersistentDomain(values, forName: p.suite)
    guard defaults.synchronize() else { fail("prepare: synchronize() failed") }
  }

  /// P1: cached `integer(forKey:)`, in batches of about `batch` seconds.
  static func cachedRead(_ p: Parameters) {
    let defaults = open(p.suite)
    let key = "unreadCount"
    guard defaults.integer(forKey: key) == 42 else { fail("read: unreadCount is not 42") }
    let count = calibrate(seconds: p.double("batch")) { n in
      var sum = 0
      for _ in 0..<n { sum &+= defaults.integer(forKey: key) }
      blackHole(sum)
    }
    // P1′: the same read through a typed key (`defaults[key]`), batch for batch.
    let typed = PreferenceKey<Int>(key, default: 0)
    guard defaults[typed] == 42 else { fail("read: the typed unreadCount is not 42") }
    for _ in 0..<p.int("batches") {
      var sum = 0
      let start = threadCPUNanoseconds()
      for _ in 0..<count { sum &+= defaults.integer(forKey: key) }
      let elapsed = threadCPUNanoseconds() - start
      blackHole(sum)
      emit("sample read \(Double(elapsed) / Double(count))")
      var typedSum = 0
      let typedStart = threadCPUNanoseconds()
      for _ in 0..<count { typedSum &+= defaults[typed] }
      let typedElapsed = threadCPUNanoseconds() - typedStart
      blackHole(typedSum)
      emit("sample typed \(Double(typedElapsed) / Double(count))")
    }
  }

  /// P9: migrating a suite of `keys` keys as version 1 left it ("unread" and `keys` "item-N"
  /// strings) to version 2 ("unreadCount" and "entry-N" integers): `register(_:)`, one
  /// commit; then, for comparison, one `set` + `synchronize()` on the migrated suite.
  static func migrate(_ p: Parameters) {
    let defaults = open(p.suite)
    let size = p.int("keys")
    var values: [String: Any] = ["unread": 3]
    for i in 0..<size { values["item-\(i)"] = String(i) }
    defaults.setPersistentDomain(values, forName: p.suite)
    guard defaults.synchronize() else { fail("migrate: synchronize() failed") }
    let unreadCount = PreferenceKey<Int>("unreadCount", default: 0)
    let schema = PreferenceSchema(
      version: 2, keys: [unreadCount],
      migrations: [
        Migration(
          to: 2,
          [
            .rename("unread", to: unreadCount),
            .custom("items to entries") { tx in
              for key in tx.values.keys where key.hasPrefix("item-") {
                guard case .string(let text)? = tx[key], let number = Int(text) else { continue }
                tx[key] = nil
                tx["entry-" + key.dropFirst(5)] = .integer(number)
              }
            },
          ])
      ])
    let start = monotonicNanoseconds()
    let report: MigrationReport
    do {
      report = try defaults.register(schema)
    } catch {
      fail("migrate: \(error)")
    }
    let elapsed = monotonicNanoseconds() - start
    guard report.outcome == .migrated, defaults.integer(forKey: "entry-\(size - 1)") == size - 1 else {
      fail("migrate: the suite was not migrated (\(report))")
    }
    emit("sample migrate \(elapsed)")
    let commitStart = monotonicNanoseconds()
    defaults.set(7, forKey: "entry-0")
    guard defaults.synchronize() else { fail("migrate: synchronize() failed") }
    emit("sample commit \(monotonicNanoseconds() - commitStart)")
  }

  /// P2: `keys` distinct `set`s into an empty suite, then `synchronize()`.
  static func fill(_ p: Parameters) {
    let defaults = open(p.suite)
    guard defaults.dictionaryRepresentation().keys.filter({ $0.hasPrefix("key-") }).isEmpty else {
      fail("fill: \(p.suite) is not empty")
    }
    let keys = (0..<p.int("keys")).map { "key-\($0)" }
    let start = monotonicNanoseconds()
    for (i, key) in keys.enumerated() { defaults.set(i, forKey: key) }
    guard defaults.synchronize() else { fail("fill: synchronize() failed") }
    emit("sample fill \(monotonicNanoseconds() - start)")
  }

  /// P3/P4/P7: one `set` of a new value and `synchronize()` on a prepared suite, `ops` times.
  static func setAndSynchronize(_ p: Parameters) {
    let defaults = open(p.suite)
    let size = p.int("keys")
    guard defaults.integer(forKey: "key-\(size - 1)") == size - 1 || size == 0 else {
      fail("setsync: \(p.suite) does not hold \(size) keys")
    }
    let ops = p.int("ops")
    var base = Int(truncatingIfNeeded: monotonicNanoseconds())
    // One untimed operation first: the first commit of a process opens files.
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

  /// P7: opening a suite written by an earlier process, to the first value read.
  /// Also reports the process's peak resident memory after the load.
  static func load(_ p: Parameters) {
    // The harness's own reading of its environment stays out of the time.
    let rootPath = rootPath()
    let start = monotonicNanoseconds()
    let defaults = open(p.suite, rootPath: rootPath)
    let value = defaults.integer(forKey: "unreadCount")
    let elapsed = monotonicNanoseconds() - start
    guard value == 42 || p.int("keys") == 0 else { fail("load: unreadCount is \(value), not 42") }
    emit("sample load \(elapsed)")
    emit("value peakKiB \(peakResidentKiB())")
    withExtendedLifetime(defaults) {}
  }

  /// P6: the resume check when nothing changed: `refreshIfChanged()` (and,
  /// as a second series, comparing the token with `hasChanged(since:)`).
  static func resumeCheck(_ p: Parameters) {
    let defaults = open(p.suite)
    defaults.synchronize()
    guard !defaults.refreshIfChanged() else { fail("resume: the suite reads as changed") }
    let token = defaults.changeToken
    let refreshCount = calibrate(seconds: p.double("batch")) { n in
      var changed = false
      for _ in 0..<n { changed = defaults.refreshIfChanged() || changed }
      blackHole(changed)
    }
    let tokenCount = calibrate(seconds: p.double("batch")) { n in
      var changed = false
      for _ in 0..<n { changed = defaults.hasChanged(since: token) || changed }
      blackHole(changed)
    }
    for _ in 0..<p.int("batches") {
      var changed = false
      var start = threadCPUNanoseconds()
      for _ in 0..<refreshCount { changed = defaults.refreshIfChanged() || changed }
      emit("sample refresh \(Double(threadCPUNanoseconds() - start) / Double(refreshCount))")
      start = threadCPUNanoseconds()
      for _ in 0..<tokenCount { changed = defaults.hasChanged(since: token) || changed }
      emit("sample token \(Double(threadCPUNanoseconds() - start) / Double(tokenCount))")
      if changed { fail("resume: the suite changed during the measure") }
    }
  }

  /// P5 and P8: this process writes; `watchers` child processes observe the
  /// suite and report, by CLOCK_MONOTONIC, when their change callback ran.
  /// A sample is the time from just before `set` until the last watcher's callback.
  static func notifyDriver(_ p: Parameters) {
    let defaults = open(p.suite)
    defaults.set(-1, forKey: "ping")
    defaults.synchronize()
    let environment = ["BENCH_ROOT": ProcessInfo.processInfo.environment["BENCH_ROOT"] ?? ""]
    let watchers = (0..<p.int("watchers")).map { _ in
      ChildProcess(["appgroups", "watch", "suite=\(p.suite)"], environment: environment)
    }
    for watcher in watchers {
      guard watcher.expectLine("ready") == "ready" else { fail("notify: a watcher did not start") }
    }
    for i in 0..<p.int("samples") {
      // Let the previous round's work (own echo, notifications) settle.
      usleep(UInt32(p.int("gapMicros")))
      let start = monotonicNanoseconds()
      defaults.set(i, forKey: "ping")
      let last = lastTold(watchers, write: i, what: "notify")
      emit("sample notify \(last > start ? last - start : 0)")
    }
    for watcher in watchers {
      guard watcher.finish() == 0 else { fail("notify: a watcher failed") }
    }
  }

  /// For profiling a watcher by hand (`--keep`, then a `watch` child under a profiler): `count`
  /// writes of `ping`, each synchronized, `gapMicros` apart.
  static func pings(_ p: Parameters) {
    let defaults = open(p.suite)
    // Values never written before: writing the value already there does nothing.
    let base = Int(truncatingIfNeeded: monotonicNanoseconds())
    for i in 0..<p.int("count") {
      usleep(UInt32(p.int("gapMicros")))
      defaults.set(base + i, forKey: "ping")
      guard defaults.synchronize() else { fail("pings: synchronize() failed") }
    }
  }

  /// A watcher: reports every change of `ping` that reaches its observer.
  static func watch(_ p: Parameters) {
    let defaults = open(p.suite)
    let observation = defaults.observe(["ping"]) { changes in
      let at = monotonicNanoseconds()
      for change in changes {
        // Told as the floor's watchers tell it (no string building), which P8 is read against.
        guard case .integer(let v)? = change.newValue else { continue }
        if v >= 0 { FanoutFloor.reportGot(UInt64(v), at: at) } else { emit("got \(v) \(at)") }
      }
    }
    emit("ready")
    // Runs until the driver closes our stdin.
    let input = LineReader(fd: 0)
    while input.readLine(timeout: 3600) != nil {}
    observation.cancel()
  }
}

extension AppGroupsSide {
  /// P11: `contenders` child processes increment one counter `count` times each, all at once;
  /// each reports, per increment, how long it waited for the suite's lock and how long the
  /// whole `increment` took.
  static func contendDriver(_ p: Parameters) {
    let environment = ["BENCH_ROOT": ProcessInfo.processInfo.environment["BENCH_ROOT"] ?? ""]
    let children = (0..<p.int("contenders")).map { _ in
      ChildProcess(
        ["appgroups", "increments", "suite=\(p.suite)", "count=\(p.int("count"))"], environment: environment)
    }
    for child in children {
      guard child.expectLine("ready") == "ready" else { fail("contend: a child did not start") }
    }
    for child in children { child.send("go") }
    var timeouts = 0
    for child in children {
      while true {
        let line = child.expectLine("increments", timeout: 300)
        if line == "finished" { break }
        let parts = line.split(separator: " ")
        if parts.first == "timeout" { timeouts += 1; continue }
        guard parts.count == 3, parts[0] == "took", let wait = UInt64(parts[1]), let total = UInt64(parts[2]) else {
          fail("contend: unexpected line \(line.debugDescription)")
        }
        emit("sample lockwait \(wait)")
        emit("sample increment \(total)")
      }
      guard child.finish() == 0 else { fail("contend: a child failed") }
    }
    emit("value timeouts \(timeouts)")
  }

  /// One contender of P11.
  static func increments(_ p: Parameters) {
    let defaults = open(p.suite)
    emit("ready")
    let input = LineReader(fd: 0)
    _ = input.readLine(timeout: 60)
    for _ in 0..<p.int("count") {
      let start = monotonicNanoseconds()
      do {
        try defaults.increment(forKey: "counter")
        emit("took \(defaults.lastLockWaitNanoseconds) \(monotonicNanoseconds() - start)")
      } catch {
        emit("timeout")
      }
    }
    emit("finished")
  }
}

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

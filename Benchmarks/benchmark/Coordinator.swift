// The coordinator: prepares a temporary root (AppGroups) and a temporary
// HOME (Foundation), runs every measure round by round in fresh child
// processes — AppGroups and Foundation alternating, so that load on the
// machine falls on both — and prints the table.
import AppGroups
import Foundation
import Glibc

enum Side: String, CaseIterable {
  case appGroups = "appgroups"
  case foundation = "foundation"
}

struct Configuration {
  var quick: Bool
  var rounds: Int
  /// P1 and P6: seconds per timed batch, batches per round.
  var batchSeconds: Double
  var batches: Int
  /// P2: distinct keys set into an empty suite.
  var fillKeys: Int
  /// P3, P4, P7: suite sizes and `set`+`synchronize()` operations per round.
  var sizes: [(keys: Int, ops: Int)]
  /// P5: samples per round.
  var notifySamples: Int
  /// P8: watching processes and samples per round.
  var fanoutWatchers: Int
  var fanoutSamples: Int
  /// P10: cold starts per side per round (the P7 load at 1,000 keys), sides alternating.
  var coldStarts: Int
  /// P11: contending processes and increments each, per round.
  var contenders: Int = 16
  var contendCount: Int
  /// How long Foundation's watchers are given to hear of a write.
  var foundationWait: Double
  /// Only these measures (P1…P8), when set.
  var only: Set<String>? = nil
  /// Keep the temporary folder (for profiling a child mode by hand).
  var keep = false
  /// The dconf side (Benchmarks/dconf-peer), when it is built; `nil`: not run.
  var dconfPeer: String? = Configuration.builtDconfPeer()
  /// Durable writes per round that measure the disk's floor (temp + fsync + rename + fsync dir).
  var floorSamples = 50
  /// Write back what earlier children left dirty before each measured child starts (`sync(2)`,
  /// outside the time): else a durable write pays for the previous child's data too, since a
  /// file's `fsync(2)` commits the file system's journal with every ordered write in it
  /// (ext4), whichever side wrote it. `--no-settle` measures as earlier runs did.
  var settles = true

  /// Benchmarks/dconf-peer's release build beside this package, when there is one
  /// (`BENCH_DCONF_PEER` names another).
  static func builtDconfPeer() -> String? {
    if let path = ProcessInfo.processInfo.environment["BENCH_DCONF_PEER"] {
      return path.isEmpty ? nil : path
    }
    // <package>/.build/<triple>/release/benchmark → <package>/Benchmarks/dconf-peer/.build/release
    let package = URL(fileURLWithPath: ChildProcess.executable)
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let path = package.appendingPathComponent("Benchmarks/dconf-peer/.build/release/dconf-peer").path
    return FileManager.default.isExecutableFile(atPath: path) ? path : nil
  }

  static let full = Configuration(
    quick: false, rounds: 5, batchSeconds: 0.1, batches: 5, fillKeys: 10_000,
    sizes: [(1_000, 20), (10_000, 10), (100_000, 3)],
    notifySamples: 60, fanoutWatchers: 32, fanoutSamples: 50, coldStarts: 9, contendCount: 50,
    foundationWait: 1.0)

  static let quickRun = Configuration(
    quick: true, rounds: 2, batchSeconds: 0.02, batches: 3, fillKeys: 1_000,
    sizes: [(1_000, 4), (10_000, 2)],
    notifySamples: 25, fanoutWatchers: 32, fanoutSamples: 10, coldStarts: 1, contendCount: 10,
    foundationWait: 0.3)
}

final class Coordinator {
  let configuration: Configuration
  let folder: String
  let root: String
  let environments: [Side: [String: String]]
  var samples: [String: [Double]] = [:]
  private var values: [String: [Double]] = [:]

  init(configuration: Configuration) {
    self.configuration = configuration
    let temporary = (NSTemporaryDirectory() as NSString).standardizingPath
    var template = Array((temporary + "/appgroups-bench-XXXXXX").utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
      fail("mkdtemp: \(String(cString: strerror(errno)))")
    }
    folder = String(cString: made)
    root = folder + "/root"
    let appHome = folder + "/home-appgroups"
    let foundationHome = folder + "/home-foundation"
    for path in [root, appHome + "/.config", foundationHome + "/.config"] {
      do {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
      } catch {
        fail("cannot create \(path): \(error)")
      }
    }
    Self.cleanup = folder
    atexit { if let folder = Coordinator.cleanup { try? FileManager.default.removeItem(atPath: folder) } }
    environments = [
      .appGroups: ["BENCH_ROOT": root, "HOME": appHome, "XDG_CONFIG_HOME": appHome + "/.config"],
      .foundation: ["HOME": foundationHome, "XDG_CONFIG_HOME": foundationHome + "/.config"],
    ]
  }

  /// The temporary folder, removed at exit (also after a failure).
  nonisolated(unsafe) static var cleanup: String?

  /// A suite name for `side`: a group suite for AppGroups, a plain suite for Foundation.
  func suite(_ side: Side, _ name: String) -> String {
    side == .appGroups ? "group.bench.\(name)" : "bench.\(name)"
  }

  private func child(_ side: Side, _ mode: String, _ name: String, _ parameters: [String: Any]) -> [String] {
    let arguments = [side.rawValue, mode, "suite=\(suite(side, name))"]
      + parameters.map { "\($0.key)=\($0.value)" }.sorted()
    return runChild(arguments, environment: environments[side]!)
  }

  /// Writes back what the children before left dirty (see ``Configuration/settles``).
  func settle() {
    if configuration.settles { sync() }
  }

  /// Runs one child and files its `sample` and `value` lines under `label`.
  private func measure(_ side: Side, _ label: String, _ mode: String, _ name: String, _ parameters: [String: Any]) {
    settle()
    for line in child(side, mode, name, parameters) {
      let parts = line.split(separator: " ")
      guard parts.count == 3, let number = Double(parts[2]) else {
        fail("unexpected line from \(side.rawValue) \(mode): \(line.debugDescription)")
      }
      let key = "\(side.rawValue)/\(label)/\(parts[1])"
      switch parts[0] {
      case "sample": samples[key, default: []].append(number)
      case "value": values[key, default: []].append(number)
      default: fail("unexpected line from \(side.rawValue) \(mode): \(line.debugDescription)")
      }
    }
  }

  func samples(_ side: Side, _ label: String, _ series: String) -> [Double] {
    samples["\(side.rawValue)/\(label)/\(series)"] ?? []
  }

  func values(_ side: Side, _ label: String, _ name: String) -> [Double] {
    values["\(side.rawValue)/\(label)/\(name)"] ?? []
  }

  // MARK: Running

  /// Whether measure `id` (P1…P8) is to run.
  func wants(_ id: String) -> Bool { configuration.only?.contains(id) ?? true }

  /// The suite sizes this run needs: P3 needs 1,000 keys, P4 10,000, P7 all.
  var sizes: [(keys: Int, ops: Int)] {
    configuration.sizes.filter { size in
      wants("P7") || (wants("P3") && size.keys == 1_000) || (wants("P4") && size.keys == 10_000)
    }
  }

  func run() {
    let c = configuration
    let started = monotonicNanoseconds()
    let loadBefore = loadAverage()
    // The manifest: the bench identity holds every group suite used.
    var groups = ["read", "empty", "notify", "fanout", "files"] + c.sizes.map { "keys-\($0.keys)" }
    groups += (0..<c.rounds).map { "fill-r\($0)" }
    groups += (0..<c.rounds).map { "migrate-r\($0)" }
    groups += (0..<c.rounds).map { "contend-r\($0)" }
    do {
      try EntitlementManifest.grant(
        AppGroupsSide.bundleID, groups: groups.map { suite(.appGroups, $0) },
        root: ContainerRoot(path: root))
    } catch {
      fail("cannot write the manifest: \(error)")
    }
    progress("preparing suites in \(folder)")
    for side in Side.allCases {
      _ = child(side, "prepare", "read", ["keys": 10])
      if wants("P7") { _ = child(side, "prepare", "empty", ["keys": 0]) }
      for size in sizes { _ = child(side, "prepare", "keys-\(size.keys)", ["keys": size.keys]) }
    }
    let batch: [String: Any] = ["batch": c.batchSeconds, "batches": c.batches]
    for round in 0..<c.rounds {
      progress("round \(round + 1) of \(c.rounds)")
      // Alternate which side goes first, so neither always runs on a warmer machine.
      let order: [Side] = round % 2 == 0 ? [.appGroups, .foundation] : [.foundation, .appGroups]
      if wants("P1") {
        for side in order { measure(side, "P1", "read", "read", batch) }
      }
      if wants("P6") { measure(.appGroups, "P6", "resume", "read", batch) }
      if wants("P9") { measure(.appGroups, "P9", "migrate", "migrate-r\(round)", ["keys": 1_000]) }
      if wants("P2") {
        for side in order { measure(side, "P2", "fill", "fill-r\(round)", ["keys": c.fillKeys]) }
      }
      for size in sizes {
        for side in order {
          measure(side, "size-\(size.keys)", "setsync", "keys-\(size.keys)", ["keys": size.keys, "ops": size.ops])
        }
      }
      if wants("P7") {
        for size in sizes {
          // P10, the load at 1,000 keys, is a few milliseconds a start on either side: several
          // starts a round, so that its median and ratio do not rest on one start a round.
          let starts = size.keys == 1_000 ? c.coldStarts : 1
          for start in 0..<starts {
            for side in start % 2 == 0 ? order : order.reversed() {
              measure(side, "size-\(size.keys)", "load", "keys-\(size.keys)", ["keys": size.keys])
            }
          }
        }
        for side in order { measure(side, "empty", "load", "empty", ["keys": 0]) }
      }
      if wants("P5") {
        measure(.appGroups, "P5", "notify", "notify", ["watchers": 1, "samples": c.notifySamples, "gapMicros": 500])
      }
      if wants("P8") {
        measure(
          .appGroups, "P8", "notify", "fanout",
          ["watchers": c.fanoutWatchers, "samples": c.fanoutSamples, "gapMicros": 2_000])
        measureFanoutFloor()
      }
      if wants("P11") {
        measure(.appGroups, "P11", "contend", "contend-r\(round)", ["contenders": c.contenders, "count": c.contendCount])
      }
      measureKeychain(round)
      if wants("F1") || wants("F2") { measureCoordination() }
      measureFloor()
      if let peer = c.dconfPeer, wants("P1") || wants("P2") || wants("P3") || wants("P4") || wants("P5") || wants("P8") {
        measureDconf(peer)
      }
    }
    // Foundation has no cross-process change callback: check once that nothing arrives.
    if wants("P5") || wants("P8") { progress("checking whether Foundation's writes reach other processes") }
    if wants("P5") {
      measure(.foundation, "P5", "notify", "notify", ["watchers": 1, "samples": 5, "wait": c.foundationWait])
    }
    if wants("P8") {
      measure(
        .foundation, "P8", "notify", "fanout",
        ["watchers": c.fanoutWatchers, "samples": 1, "wait": c.foundationWait])
    }
    if c.keep {
      Self.cleanup = nil
      progress("kept \(folder) (BENCH_ROOT=\(root))")
    }
    let elapsed = Double(monotonicNanoseconds() - started) / 1e9
    printReport(elapsed: elapsed, loadBefore: loadBefore, loadAfter: loadAverage())
  }

  private func progress(_ text: String) { warn(text) }

  /// The disk's floor for a durable commit, in the benchmark's folder: a 4 KiB temporary
  /// file written, `fsync(2)`ed, renamed over the target, and the folder `fsync(2)`ed.
  private func measureFloor() {
    let target = folder + "/floor.bin"
    let temporary = folder + "/floor.bin.tmp"
    let bytes = [UInt8](repeating: 0x5a, count: 4096)
    let directory = open(folder, O_RDONLY | O_DIRECTORY)
    guard directory >= 0 else { fail("open \(folder): \(String(cString: strerror(errno)))") }
    defer { close(directory) }
    settle()
    for _ in 0..<configuration.floorSamples {
      let start = monotonicNanoseconds()
      let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
      guard fd >= 0, write(fd, bytes, bytes.count) == bytes.count, fsync(fd) == 0, close(fd) == 0,
        rename(temporary, target) == 0, fsync(directory) == 0
      else { fail("durable write in \(folder): \(String(cString: strerror(errno)))") }
      samples["floor/floor/commit", default: []].append(Double(monotonicNanoseconds() - start))
    }
  }

  /// One round of the dconf side: it starts its own session bus and prints
  /// `sample <label> <series> <ns>` lines under this coordinator's labels.
  private func measureDconf(_ peer: String) {
    let c = configuration
    let sizes = self.sizes.filter { $0.keys <= 10_000 }.map { "\($0.keys):\($0.ops)" }
    let arguments = [
      "round", "fill=\(c.fillKeys)", "sizes=\(sizes.joined(separator: ","))", "notify=\(c.notifySamples)",
      "watchers=\(c.fanoutWatchers)", "fanout=\(c.fanoutSamples)", "batch=\(c.batchSeconds)",
      "batches=\(c.batches)",
    ]
    settle()
    let child = ChildProcess(executable: peer, arguments, environment: [:])
    while let line = child.output.readLine(timeout: 900) {
      if line == "done" { break }
      let parts = line.split(separator: " ")
      guard parts.count == 4, parts[0] == "sample", let number = Double(parts[3]) else {
        fail("unexpected line from \(peer): \(line.debugDescription)")
      }
      samples["dconf/\(parts[1])/\(parts[2])", default: []].append(number)
    }
    guard child.finish() == 0 else { fail("\(peer) failed (run it by hand: \(peer) \(arguments.joined(separator: " ")))") }
  }
}

// MARK: The keychain rows

extension Coordinator {
  /// Benchmarks/keyring-peer's release build beside this package, when there is one
  /// (`BENCH_KEYRING_PEER` names another; empty: leave GNOME Keyring out).
  static func builtKeyringPeer() -> String? {
    if let path = ProcessInfo.processInfo.environment["BENCH_KEYRING_PEER"] {
      return path.isEmpty ? nil : path
    }
    let package = URL(fileURLWithPath: ChildProcess.executable)
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let path = package.appendingPathComponent("Benchmarks/keyring-peer/.build/release/keyring-peer").path
    return FileManager.default.isExecutableFile(atPath: path) ? path : nil
  }

  /// Durable adds per round (K2).
  var keychainAdds: Int { configuration.quick ? 10 : 50 }

  /// K1 and K2 on both sides, one round.
  func measureKeychain(_ round: Int) {
    let c = configuration
    if wants("K1") {
      measure(.appGroups, "K1", "keychain-read", "read", ["batch": c.batchSeconds, "batches": c.batches])
    }
    if wants("K2") {
      measure(.appGroups, "K2", "keychain-add", "read", ["adds": keychainAdds, "name": "r\(round)"])
    }
    guard wants("K1") || wants("K2"), let peer = Self.builtKeyringPeer() else { return }
    let arguments = ["round", "adds=\(keychainAdds)", "batch=\(c.batchSeconds)", "batches=\(c.batches)"]
    settle()
    let child = ChildProcess(executable: peer, arguments, environment: [:])
    while let line = child.output.readLine(timeout: 900) {
      if line == "done" { break }
      let parts = line.split(separator: " ")
      guard parts.count == 4, parts[0] == "sample", let number = Double(parts[3]) else {
        fail("unexpected line from \(peer): \(line.debugDescription)")
      }
      samples["keyring/\(parts[1])/\(parts[2])", default: []].append(number)
    }
    guard child.finish() == 0 else { fail("\(peer) failed (run it by hand: \(peer) \(arguments.joined(separator: " ")))") }
  }

  /// The keychain's own table: AppGroups beside GNOME Keyring.
  func printKeychainReport() {
    guard wants("K1") || wants("K2") else { return }
    let peer = Self.builtKeyringPeer()
    print("")
    print("Keychain: AppGroups SecItem calls vs GNOME Keyring (libsecret, a private gnome-keyring-daemon per round)")
    print("")
    if peer == nil {
      print("- GNOME Keyring: not built (swift build -c release --package-path Benchmarks/keyring-peer, with libsecret-1-dev, gnome-keyring, dbus)")
      print("")
    }
    print("| measure | AppGroups median | min | max | GNOME Keyring median | min | max | GNOME Keyring / AppGroups |")
    print("| --- | --: | --: | --: | --: | --: | --: | --: |")
    for (id, series, peerSeries, name) in [
      ("K1", "read", "lookup", "K1 warm `SecItemCopyMatching` of one item, secret returned (wall time per call) / `secret_password_lookup_sync`"),
      ("K2", "add", "store", "K2 durable `SecItemAdd` of a new item / `secret_password_store_sync`"),
    ] where wants(id) {
      let a = samples(.appGroups, id, series)
      let g = samples["keyring/\(id)/\(peerSeries)"] ?? []
      let gnome = g.isEmpty ? [peer == nil ? "not built" : "—", "—", "—"] : durations(g)
      let cells = [name] + durations(a) + gnome + [ratio(g, a)]
      print("| " + cells.joined(separator: " | ") + " |")
    }
  }
}

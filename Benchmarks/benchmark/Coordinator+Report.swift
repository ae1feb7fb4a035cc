// The coordinator's report: the table of every measure against its goal, with Foundation's,
// dconf's and GNOME Keyring's columns, and the notes under it.
import AppGroups
import Foundation

extension Coordinator {
  /// The dconf column's median of `label`'s `series` (p50 and p99 for the cross-process
  /// measures), and how many times AppGroups' median it is.
  func dconf(_ label: String, _ series: String, quantiles: Bool = false) -> (String, String) {
    let d = samples["dconf/\(label)/\(series)"] ?? []
    guard !d.isEmpty else { return (configuration.dconfPeer == nil ? "not built" : "—", "—") }
    let a = samples(.appGroups, label, series)
    let text = quantiles
      ? "p50 \(formatDuration(Stats.median(d))), p99 \(formatDuration(Stats.quantile(d, 0.99)))"
      : formatDuration(Stats.median(d))
    return (text, ratio(d, a))
  }

  // MARK: Report

  struct Row {
    var measure: String
    var appGroups: [String]  // median, min, max
    var foundation: [String]
    var ratio: String
    var target: String
    var verdict: String
    /// The dconf side's median (or p50/p99) and its ratio to AppGroups', where it is measured.
    var dconf: (String, String) = ("", "")
  }

  func durations(_ xs: [Double]) -> [String] {
    guard !xs.isEmpty else { return ["—", "—", "—"] }
    return [formatDuration(Stats.median(xs)), formatDuration(xs.min()!), formatDuration(xs.max()!)]
  }

  func ratio(_ foundation: [Double], _ appGroups: [Double]) -> String {
    guard !foundation.isEmpty, !appGroups.isEmpty else { return "—" }
    let r = Stats.median(foundation) / Stats.median(appGroups)
    return r >= 10 ? String(format: "%.0f×", r) : String(format: "%.1f×", r)
  }

  func verdict(_ met: Bool, _ applies: Bool = true, unless reason: String = "quick run") -> String {
    guard applies else { return "n/a (\(reason))" }
    return met ? "met" : "**missed**"
  }

  func printReport(elapsed: Double, loadBefore: String, loadAfter: String) {
    let c = configuration
    var rows: [Row] = []
    func pair(_ label: String, _ series: String) -> ([Double], [Double]) {
      (samples(.appGroups, label, series), samples(.foundation, label, series))
    }

    // P1
    if wants("P1") {
      let (a, f) = pair("P1", "read")
      rows.append(
        Row(
          measure: "P1 cached `integer(forKey:)` (CPU time per call)", appGroups: durations(a), foundation: durations(f),
          ratio: ratio(f, a), target: "≤ 30 ns", verdict: verdict(Stats.median(a) <= 30),
          dconf: dconf("P1", "read")))
    }
    // P1′
    if wants("P1") {
      let typed = samples(.appGroups, "P1", "typed")
      let untyped = samples(.appGroups, "P1", "read")
      let factor = Stats.median(typed) / Stats.median(untyped)
      rows.append(
        Row(
          measure: "P12 the same read through a typed key, `defaults[key]` (CPU time per call)",
          appGroups: durations(typed), foundation: ["no typed keys", "—", "—"],
          ratio: String(format: "%.2f× P1", factor), target: "≤ 30 ns",
          verdict: verdict(Stats.median(typed) <= 30)))
    }
    // P2
    if wants("P2") {
      let (a, f) = pair("P2", "fill")
      rows.append(
        Row(
          measure: "P2 \(formatCount(c.fillKeys)) distinct `set` + `synchronize()`", appGroups: durations(a),
          foundation: durations(f), ratio: ratio(f, a), target: "≤ 15 ms (10,000 keys)",
          verdict: verdict(Stats.median(a) <= 15e6, c.fillKeys == 10_000, unless: "not 10,000 keys"),
          dconf: dconf("P2", "fill")))
    }
    // P3, P4
    for (keys, name, limit, target) in [
      (1_000, "P3", 1.2e6, "≤ 1.2 ms"), (10_000, "P4", 3e6, "≤ 3 ms"),
    ] where wants(name) {
      let (a, f) = pair("size-\(keys)", "setsync")
      rows.append(
        Row(
          measure: "\(name) `set` + `synchronize()`, \(formatCount(keys))-key suite", appGroups: durations(a),
          foundation: durations(f), ratio: ratio(f, a), target: target,
          verdict: verdict(Stats.median(a) <= limit), dconf: dconf("size-\(keys)", "setsync")))
    }
    // The disk's floor, measured round by round beside the rest.
    let floorSamples = samples["floor/floor/commit"] ?? []
    let floor = Stats.median(floorSamples)
    rows.append(
      Row(
        measure: "disk floor: 4 KiB temp + `fsync` + `rename` + `fsync` of the folder (n = \(floorSamples.count))",
        appGroups: quantileCells(floorSamples),
        foundation: ["—", "—", "—"], ratio: "—", target: "report", verdict: ""))
    if wants("P8") {
      rows.append(
        Row(
          measure: fanoutFloorMeasure, appGroups: quantileCells(fanoutFloorSamples), foundation: ["—", "—", "—"],
          ratio: "—", target: "report", verdict: ""))
    }
    // P5
    if wants("P5") {
      let a = samples(.appGroups, "P5", "notify")
      let sent = values(.foundation, "P5", "sent").first ?? 0
      let received = values(.foundation, "P5", "received").first ?? 0
      let p50 = Stats.median(a)
      let p99 = Stats.quantile(a, 0.99)
      rows.append(
        Row(
          measure: "P5 write → change callback in another process (n = \(a.count))",
          appGroups: ["p50 \(formatDuration(p50)), p99 \(formatDuration(p99))", formatDuration(a.min() ?? .nan),
            formatDuration(a.max() ?? .nan)],
          foundation: [
            "never arrives (\(Int(received)) of \(Int(sent)) writes in \(formatSeconds(c.foundationWait)))", "—", "—",
          ],
          ratio: "∞", target: "p50 ≤ floor + 0.15 ms (\(formatDuration(floor + 0.15e6))), p99 ≤ 3 ms",
          verdict: verdict(p50 <= floor + 0.15e6 && p99 <= 3e6, a.count >= 200, unless: "n < 200"),
          dconf: dconf("P5", "notify", quantiles: true)))
    }
    // P6
    if wants("P6") {
      let a = samples(.appGroups, "P6", "refresh")
      let t = samples(.appGroups, "P6", "token")
      rows.append(
        Row(
          measure: "P6 resume check, token unchanged (`refreshIfChanged()`)", appGroups: durations(a),
          foundation: ["no token", "—", "—"], ratio: "—", target: "≤ 100 ns",
          verdict: verdict(Stats.median(a) <= 100)))
      rows.append(
        Row(
          measure: "P6′ token compare (`hasChanged(since:)`)", appGroups: durations(t),
          foundation: ["no token", "—", "—"], ratio: "—", target: "≤ 100 ns",
          verdict: verdict(Stats.median(t) <= 100)))
    }
    // P7
    let growth = growthVerdicts()
    for size in c.sizes where wants("P7") {
      let (a, f) = pair("size-\(size.keys)", "setsync")
      rows.append(
        Row(
          measure: "P7 `set` + `synchronize()`, \(formatCount(size.keys)) keys", appGroups: durations(a),
          foundation: durations(f), ratio: ratio(f, a), target: "linear in size",
          verdict: size.keys == c.sizes.last!.keys ? growth.write : ""))
    }
    for size in c.sizes where wants("P7") {
      let (a, f) = pair("size-\(size.keys)", "load")
      rows.append(
        Row(
          measure: "P7 load (open + first read, new process), \(formatCount(size.keys)) keys (n = \(a.count))",
          appGroups: durations(a), foundation: durations(f), ratio: ratio(f, a), target: "linear in size",
          verdict: size.keys == c.sizes.last!.keys ? growth.load : ""))
    }
    // P10: the 1,000-key load is the cold start of a widget or an extension.
    if wants("P7"), c.sizes.contains(where: { $0.keys == 1_000 }) {
      let (a, f) = pair("size-1000", "load")
      let factor = Stats.median(f) / Stats.median(a)
      rows.append(
        Row(
          measure: "P10 cold start: `GroupDefaults(suiteName:)` + first read, 1,000-key suite, new process (n = \(a.count))",
          appGroups: durations(a), foundation: durations(f), ratio: ratio(f, a), target: "≤ 0.8 ms and ≥ 5× Foundation",
          verdict: verdict(Stats.median(a) <= 0.8e6 && factor >= 5)))
    }
    // P8
    if wants("P8") {
      let a = samples(.appGroups, "P8", "notify")
      let sent = values(.foundation, "P8", "sent").first ?? 0
      let received = values(.foundation, "P8", "received").first ?? 0
      let p99 = Stats.quantile(a, 0.99)
      rows.append(
        Row(
          measure: "P8 one write → \(c.fanoutWatchers) watching processes, last one told (n = \(a.count))",
          appGroups: ["p50 \(formatDuration(Stats.median(a))), p99 \(formatDuration(p99))",
            formatDuration(a.min() ?? .nan), formatDuration(a.max() ?? .nan)],
          foundation: ["never arrives (\(Int(received)) of \(Int(sent)) in \(formatSeconds(c.foundationWait)))", "—", "—"],
          ratio: "∞", target: "p99 ≤ 5 ms" + besideFanoutFloor(a),
          verdict: verdict(p99 <= 5e6, a.count >= 200, unless: "n < 200"),
          dconf: dconf("P8", "notify", quantiles: true)))
    }
    // P11
    if wants("P11") {
      let wait = samples(.appGroups, "P11", "lockwait")
      let whole = samples(.appGroups, "P11", "increment")
      let timeouts = values(.appGroups, "P11", "timeouts").reduce(0, +)
      rows.append(
        Row(
          measure: "P11 lock wait, \(c.contenders) processes incrementing one counter (n = \(wait.count), \(Int(timeouts)) lock timeouts)",
          appGroups: quantileCells(wait),
          foundation: ["no cross-process lock", "—", "—"], ratio: "—", target: "no timeout (bound 1 s)",
          verdict: verdict(timeouts == 0 && !wait.isEmpty)))
      rows.append(
        Row(
          measure: "P11′ whole `increment(_:)` under that contention",
          appGroups: quantileCells(whole),
          foundation: ["—", "—", "—"], ratio: "—", target: "—", verdict: ""))
    }
    // P9
    if wants("P9") {
      let migrate = samples(.appGroups, "P9", "migrate")
      let commit = samples(.appGroups, "P9", "commit")
      let beyond = Stats.median(migrate) - Stats.median(commit)
      rows.append(
        Row(
          measure: "P9 migrating a 1,000-key suite (rename + 1,000 keys converted, one commit)",
          appGroups: durations(migrate), foundation: ["no migrations", "—", "—"],
          ratio: "—", target: "≤ 5 ms + one commit (\(formatDuration(Stats.median(commit))) here)",
          verdict: verdict(beyond <= 5e6)))
    }
    // Memory
    let largest = c.sizes.last!.keys
    let peakA = values(.appGroups, "size-\(largest)", "peakKiB")
    let peakF = values(.foundation, "size-\(largest)", "peakKiB")
    let baseA = values(.appGroups, "empty", "peakKiB")
    let baseF = values(.foundation, "empty", "peakKiB")
    func memory(_ peak: [Double], _ base: [Double]) -> [String] {
      guard !peak.isEmpty, !base.isEmpty else { return ["—", "—", "—"] }
      let m = Stats.median(peak)
      return [
        String(format: "%.1f MiB (+%.1f over an empty suite)", m / 1024, (m - Stats.median(base)) / 1024),
        String(format: "%.1f MiB", peak.min()! / 1024), String(format: "%.1f MiB", peak.max()! / 1024),
      ]
    }
    if wants("P7") {
      let ratio =
        peakA.isEmpty || peakF.isEmpty ? "—" : String(format: "%.1f×", Stats.median(peakF) / Stats.median(peakA))
      rows.append(
        Row(
          measure: "peak memory (VmHWM), process that loads the \(formatCount(largest))-key suite",
          appGroups: memory(peakA, baseA), foundation: memory(peakF, baseF), ratio: ratio,
          target: "≤ +8 MiB over an empty suite (100,000 keys)",
          verdict: peakA.isEmpty || baseA.isEmpty
            ? "" : verdict(Stats.median(peakA) - Stats.median(baseA) <= 8 * 1024, largest == 100_000, unless: "not 100,000 keys")))
    }

    // Print.
    print("")
    print("AppGroups vs Foundation UserDefaults — \(c.quick ? "quick run (smoke test: fewer rounds, smaller sizes)" : "full run")")
    print("")
    print(
      "- rounds: \(c.rounds); each measure in a fresh process per round, sides alternating"
        + " (P10's cold start: \(c.coldStarts) a side a round)")
    print("- P1 and P6: the thread's CPU time per call, in batches of \(formatSeconds(c.batchSeconds)); the rest: wall time (CLOCK_MONOTONIC, across processes for P5 and P8)")
    print("- machine: \(cpuDescription()), \(ProcessInfo.processInfo.activeProcessorCount) cores; load average before \(loadBefore), after \(loadAfter)")
    print("- temporary folder: \((folder as NSString).deletingLastPathComponent) (\(fileSystemType(folder)))")
    print(String(format: "- elapsed: %.1f s", elapsed))
    print("")
    if let peer = c.dconfPeer {
      print("- dconf: \(peer), a private session bus per round, a database per measure")
    } else {
      print("- dconf: not built (swift build -c release --package-path Benchmarks/dconf-peer, with libdconf-dev)")
    }
    print("")
    print("| measure | AppGroups median | min | max | Foundation median | min | max | Foundation / AppGroups | dconf median | dconf / AppGroups | target | |")
    print("| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --- | --- |")
    for row in rows {
      let cells = [row.measure] + row.appGroups + row.foundation + [row.ratio, row.dconf.0, row.dconf.1, row.target, row.verdict]
      print("| " + cells.joined(separator: " | ") + " |")
    }
    printCoordinationReport()
    if wants("P7") {
      print("")
      print(growth.detail)
    }
    printKeychainReport()
  }

  func growthVerdicts() -> (write: String, load: String, detail: String) {
    // Linear means: time per key does not grow with size. Compare the two
    // largest sizes; allow 1.5× for noise and cache effects.
    let sizes = configuration.sizes.map(\.keys)
    guard sizes.count >= 2 else { return ("", "", "") }
    let small = sizes[sizes.count - 2]
    let large = sizes[sizes.count - 1]
    let factor = Double(large) / Double(small)
    var details: [String] = []
    func judge(_ series: String, _ what: String) -> String {
      let a = Stats.median(samples(.appGroups, "size-\(small)", series))
      let b = Stats.median(samples(.appGroups, "size-\(large)", series))
      let growth = b / a
      let perKey = sizes.map { n in
        "\(formatCount(n)): \(formatDuration(Stats.median(samples(.appGroups, "size-\(n)", series)) / Double(n)))/key"
      }
      details.append(
        String(format: "P7 %@: ×%.1f from %@ to %@ keys (linear: ×%.0f); per key %@", what, growth,
          formatCount(small), formatCount(large), factor, perKey.joined(separator: ", ")))
      return growth <= factor * 1.5 ? "met (×\(String(format: "%.1f", growth)) for ×\(Int(factor)) keys)" : "**missed** (×\(String(format: "%.1f", growth)) for ×\(Int(factor)) keys)"
    }
    let write = judge("setsync", "set + synchronize()")
    let load = judge("load", "load")
    return (write, load, details.joined(separator: "\n\n"))
  }
}

func formatSeconds(_ s: Double) -> String {
  s >= 1 ? String(format: "%.0f s", s) : String(format: "%.0f ms", s * 1000)
}

func loadAverage() -> String {
  guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "?" }
  return text.split(separator: " ").prefix(3).joined(separator: " ")
}

func cpuDescription() -> String {
  guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "?" }
  for line in text.split(separator: "\n") where line.hasPrefix("model name") {
    return line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "?"
  }
  return "?"
}

/// The file-system type of the mount holding `path`, from /proc/self/mountinfo.
func fileSystemType(_ path: String) -> String {
  guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return "?" }
  var best = (length: -1, type: "?")
  for line in text.split(separator: "\n") {
    let halves = line.components(separatedBy: " - ")
    let fields = halves[0].split(separator: " ")
    guard halves.count == 2, fields.count > 4 else { continue }
    let mountPoint = String(fields[4])
    let inside = path == mountPoint || path.hasPrefix(mountPoint == "/" ? "/" : mountPoint + "/")
    if inside && mountPoint.count > best.length {
      best = (mountPoint.count, String(halves[1].split(separator: " ").first ?? "?"))
    }
  }
  return best.type
}

// F1 and F2: file coordination (NSFileCoordinator / NSFilePresenter across processes).
//
//   F1   a coordinated write of a small file in the group container against the same write
//        made plainly (open, write 64 bytes, close), in one process, taking turns; and the
//        coordinated write when a presenter in another process is asked and told
//   F2   a presenter in another process told after a coordinated write: from just before
//        `coordinate(writingItemAt:)` until its `presentedItemDidChange()` runs (p50, p99)
//
// The child side is `benchmark __child files MODE`; its identity is the bench's, granted
// `group.bench.files` by the coordinator.
import AppGroups
import Foundation
import Glibc

enum CoordinationSide {
  static let group = "group.bench.files"

  static func run(_ mode: String, _ p: Parameters) {
    let root = ContainerRoot(path: AppGroupsSide.rootPath())
    do {
      NSFileCoordinator.appIdentity = try AppIdentity(bundleIdentifier: AppGroupsSide.bundleID)
    } catch {
      fail("bench identity: \(error)")
    }
    let folder = root.groupContainerURL(for: group).appendingPathComponent("Library/Bench")
    do {
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    } catch {
      fail("cannot create \(folder.path): \(error)")
    }
    let item = folder.appendingPathComponent("item.txt")
    switch mode {
    case "writes": writes(item, p)
    case "presenter": presenter(item)
    default: fail("unknown files mode \(mode)")
    }
  }

  /// Writes `text` to `path` plainly: open, one write, close.
  static func write(_ text: String, to path: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fail("open \(path): \(String(cString: strerror(errno)))") }
    var bytes = Array(text.utf8)
    bytes += [UInt8](repeating: 0x20, count: max(0, 63 - bytes.count)) + [0x0a]
    guard Glibc.write(fd, bytes, bytes.count) == bytes.count else { fail("write \(path)") }
    close(fd)
  }

  /// F1, then F2: `plain` and `coordinated` samples taking turns (`samples` each), then
  /// `presented` (a coordinated write one presenter in another process is asked about) and
  /// `told` (until that presenter heard of it), `told` samples.
  static func writes(_ item: URL, _ p: Parameters) {
    let path = item.path
    let coordinator = NSFileCoordinator(filePresenter: nil)
    write("0", to: path)
    for i in 0..<p.int("samples") {
      var start = monotonicNanoseconds()
      write("\(i)", to: path)
      emit("sample plain \(monotonicNanoseconds() - start)")
      start = monotonicNanoseconds()
      do {
        try coordinator.coordinate(writingItemAt: item) { url in write("\(i)", to: url.path) }
      } catch {
        fail("coordinated write: \(error)")
      }
      emit("sample coordinated \(monotonicNanoseconds() - start)")
    }
    let environment = ["BENCH_ROOT": AppGroupsSide.rootPath()]
    let presenter = ChildProcess(["files", "presenter"], environment: environment)
    guard presenter.expectLine("ready") == "ready" else { fail("files: the presenter did not start") }
    for i in 0..<p.int("told") {
      usleep(200)  // the previous write's tells and callbacks settle
      let start = monotonicNanoseconds()
      do {
        try coordinator.coordinate(writingItemAt: item) { url in write("\(i)", to: url.path) }
      } catch {
        fail("coordinated write with a presenter: \(error)")
      }
      emit("sample presented \(monotonicNanoseconds() - start)")
      while true {
        let line = presenter.expectLine("did-change for write \(i)", timeout: 30)
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[0] == "got", let n = Int(parts[1]), let at = UInt64(parts[2]) else {
          fail("files: unexpected presenter line \(line.debugDescription)")
        }
        if n == i {
          emit("sample told \(at > start ? at - start : 0)")
          break
        }
      }
    }
    guard presenter.finish() == 0 else { fail("files: the presenter failed") }
  }

  /// A presenter of `item`: "got N TIME" when told of a change (N: the number the file holds),
  /// until its stdin ends.
  static func presenter(_ item: URL) {
    let presenter = BenchPresenter(url: item)
    do {
      try NSFileCoordinator.addFilePresenter(presenter, throwing: ())
    } catch {
      fail("files: cannot present \(item.path): \(error)")
    }
    emit("ready")
    let input = LineReader(fd: 0)
    while input.readLine(timeout: 3600) != nil {}
    NSFileCoordinator.removeFilePresenter(presenter)
  }
}

/// F2's presenter: the time it heard of each change.
final class BenchPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
  let presentedItemURL: URL?
  let presentedItemOperationQueue: OperationQueue

  init(url: URL) {
    presentedItemURL = url
    presentedItemOperationQueue = OperationQueue()
    presentedItemOperationQueue.maxConcurrentOperationCount = 1
  }

  func presentedItemDidChange() {
    let at = monotonicNanoseconds()
    let text = (try? String(contentsOf: presentedItemURL!, encoding: .utf8)) ?? ""
    let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    emit("got \(number) \(at)")
  }
}

extension Coordinator {
  /// One round of F1 and F2: a child that writes, with its presenter child for F2.
  func measureCoordination() {
    let quick = configuration.quick
    let lines = runChild(
      ["files", "writes", "samples=\(quick ? 100 : 1_000)", "told=\(quick ? 30 : 200)"],
      environment: ["BENCH_ROOT": root])
    for line in lines {
      let parts = line.split(separator: " ")
      guard parts.count == 3, parts[0] == "sample", let number = Double(parts[2]) else {
        fail("unexpected line from files writes: \(line.debugDescription)")
      }
      samples["appgroups/files/\(parts[1])", default: []].append(number)
    }
  }

  /// The F1 and F2 table, after the main one.
  func printCoordinationReport() {
    func series(_ name: String) -> [Double] { samples["appgroups/files/\(name)"] ?? [] }
    let plain = series("plain")
    let coordinated = series("coordinated")
    let presented = series("presented")
    let told = series("told")
    guard !plain.isEmpty else { return }
    func quantiles(_ xs: [Double]) -> String {
      "p50 \(formatDuration(Stats.median(xs))), p99 \(formatDuration(Stats.quantile(xs, 0.99)))"
    }
    /// `+X` or `−X`: a difference of medians, which noise can make negative.
    func signed(_ ns: Double) -> String { (ns < 0 ? "−" : "+") + formatDuration(abs(ns)) }
    let overhead = Stats.median(coordinated) - Stats.median(plain)
    print("")
    print("File coordination (NSFileCoordinator, a 64-byte file in a group container; wall time)")
    print("")
    print("| measure | p50, p99 | min | max | over a plain write (p50) |")
    print("| --- | --: | --: | --: | --: |")
    let rows: [(String, [Double], String)] = [
      ("F1 plain write: open, write, close (n = \(plain.count))", plain, "—"),
      ("F1 coordinated write, no presenter (n = \(coordinated.count))", coordinated,
       "\(signed(overhead)) (\(String(format: "%.2f×", Stats.median(coordinated) / Stats.median(plain))))"),
      ("F1′ coordinated write, one presenter in another process asked and told (n = \(presented.count))",
       presented, signed(Stats.median(presented) - Stats.median(plain))),
      ("F2 write → the presenter's `presentedItemDidChange` in another process (n = \(told.count))", told, "—"),
    ]
    for (measure, xs, over) in rows where !xs.isEmpty {
      print(
        "| \(measure) | \(quantiles(xs)) | \(formatDuration(xs.min() ?? .nan)) | \(formatDuration(xs.max() ?? .nan)) | \(over) |")
    }
  }
}

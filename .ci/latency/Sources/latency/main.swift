// latency: how long a write in one process takes to reach an observer in
// another, on a small suite (11 keys), through the real path: `set` in memory,
// the background commit (lock, temporary file, fsync, rename, folder fsync,
// token), inotify, the other process's re-read, diff and callback.
//
//   latency [SAMPLES] [FOLDER]    default 300 samples in a new temporary root
//                                 under FOLDER (default: the system's temp folder)
//
// The writer (com.example.app) spawns the observer (com.example.widget, this
// executable with --observe). Each sample: the writer notes CLOCK_MONOTONIC and
// sets it as the value of "probe"; the observer's callback subtracts it from
// its own CLOCK_MONOTONIC and prints the difference; the writer waits for that
// line and for its commit to finish before the next sample, so samples never
// overlap. The first 20 samples are a warm-up and are dropped.
import AppGroups
import Foundation
import Glibc

func monotonic() -> Int {
  var t = timespec()
  clock_gettime(CLOCK_MONOTONIC, &t)
  return t.tv_sec * 1_000_000_000 + t.tv_nsec
}

let group = "group.com.example.shared"
let arguments = CommandLine.arguments

if arguments.count == 3, arguments[1] == "--observe" {
  let root = ContainerRoot(url: URL(fileURLWithPath: arguments[2]))
  let shared = try GroupDefaults(
    suiteName: group, identity: AppIdentity(bundleIdentifier: "com.example.widget"), root: root)
  let observation = shared.observe(["probe"]) { changes in
    let now = monotonic()
    for change in changes where change.origin == .otherProcess {
      if case .integer(let sent)? = change.newValue {
        FileHandle.standardOutput.write(Data("\(now - sent)\n".utf8))
      }
    }
  }
  FileHandle.standardOutput.write(Data("ready\n".utf8))
  while readLine() != nil {}
  observation.cancel()
  exit(0)
}

let samples = arguments.count > 1 ? Int(arguments[1]) ?? 300 : 300
let folder = arguments.count > 2 ? arguments[2] : NSTemporaryDirectory()
let rootURL = URL(fileURLWithPath: folder).appendingPathComponent("latency-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: rootURL, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: rootURL) }
let root = ContainerRoot(url: rootURL)
_ = try EntitlementManifest.grant("com.example.app", groups: [group], root: root)
_ = try EntitlementManifest.grant("com.example.widget", groups: [group], root: root)
let shared = try GroupDefaults(
  suiteName: group, identity: AppIdentity(bundleIdentifier: "com.example.app"), root: root)
for i in 0..<10 { shared.set("value \(i)", forKey: "key\(i)") }
shared.synchronize()

let observer = Process()
observer.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
observer.arguments = ["--observe", rootURL.path]
let input = Pipe()
let output = Pipe()
observer.standardInput = input
observer.standardOutput = output
try observer.run()

final class Lines {
  let handle: FileHandle
  var buffer = Data()
  init(_ handle: FileHandle) { self.handle = handle }
  func next() -> String {
    while true {
      if let newline = buffer.firstIndex(of: 10) {
        let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
        buffer.removeSubrange(buffer.startIndex...newline)
        return line
      }
      let more = handle.availableData
      if more.isEmpty { fatalError("the observer ended") }
      buffer.append(more)
    }
  }
}
let lines = Lines(output.fileHandleForReading)
precondition(lines.next() == "ready")

var latencies: [Int] = []
for _ in 0..<(samples + 20) {
  let sent = monotonic()
  shared.set(sent, forKey: "probe")
  guard let latency = Int(lines.next()) else { fatalError("unexpected line from the observer") }
  latencies.append(latency)
  shared.synchronize()  // the rest of the commit (the folder's fsync) ends before the next sample
  usleep(1000)
}
latencies.removeFirst(20)

// The commit alone: set, then synchronize() until the change is durable.
var commits: [Int] = []
for i in 0..<samples {
  let start = monotonic()
  shared.set(i, forKey: "counter")
  shared.synchronize()
  commits.append(monotonic() - start)
  usleep(1000)
}
try input.fileHandleForWriting.close()
observer.waitUntilExit()

// Resume when nothing changed: refreshIfChanged() compares tokens and stats.
let calls = 100_000
let resumeStart = monotonic()
for _ in 0..<calls { _ = shared.refreshIfChanged() }
let resumeCost = Double(monotonic() - resumeStart) / Double(calls) / 1000

func percentile(_ values: [Int], _ p: Double) -> Double {
  let sorted = values.sorted()
  return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000
}
func summary(_ values: [Int]) -> String {
  String(
    format: "median %.0f µs, p90 %.0f µs, p99 %.0f µs, max %.0f µs",
    percentile(values, 0.5), percentile(values, 0.9), percentile(values, 0.99),
    percentile(values, 1))
}
print("root: \(rootURL.path)")
print("write -> callback in another process (\(latencies.count) samples): \(summary(latencies))")
print("set -> durable commit, synchronize() (\(commits.count) samples): \(summary(commits))")
print(String(format: "refreshIfChanged() with nothing changed: %.2f µs per call", resumeCost))

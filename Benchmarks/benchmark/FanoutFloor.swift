// The fan-out floor: P8's work (one write heard by `watchers` watching processes, until the
// last one knows) done with bare system calls, round by round beside P8, so that P8 reads
// against what this machine can do for the same fan-out at best.
//
//   writer     the coordinator: a small file written in a subfolder the watchers do not watch
//              (as a commit's `.staging`), `fsync`ed, renamed into the watched folder (the one
//              event the watchers hear), then the folder `fsync`ed, as a commit does once the
//              watchers can already hear of it
//   watcher    `benchmark __child floor watch folder=…`, one process each: `inotify` on the
//              folder; per change `poll`, `read` of the events, `open`/`fstat`/`read`/`close`
//              of the file, `clock_gettime` and one `write` of `got <sequence> <nanoseconds>`
//              to the writer: system calls only, no AppGroups, no Foundation, no allocation
//
// A sample runs from just before the temporary file's `open` until the latest watcher's
// timestamp (CLOCK_MONOTONIC), as P8's runs from just before `set` until the last callback.
import Glibc

enum FanoutFloor {
  /// The file the writer replaces and every watcher reads.
  static let fileName = "floor.plist"
  /// The writer's subfolder for the temporary file, which the watchers do not watch.
  static let stagingName = ".staging"
  /// Bytes per version of the file: about P8's one-key suite.
  static let fileSize = 64
  /// What a watcher watches for; the writer's rename is the only event in the folder.
  static let watchMask = UInt32(IN_MOVED_TO | IN_CLOSE_WRITE)

  static func run(_ mode: String, _ p: Parameters) {
    switch mode {
    case "watch":
      guard let folder = p["folder"] else { fail("floor watch: missing folder=") }
      watch(folder)
    default: fail("unknown floor mode \(mode)")
    }
  }

  /// A bare watcher of `folder`: reports every new sequence number that its file holds after
  /// an event, until its stdin ends. Everything it needs is made before it says `ready`.
  static func watch(_ folder: String) {
    let path = Array((folder + "/" + fileName).utf8CString)
    let inotify = inotify_init1(CInt(IN_CLOEXEC))
    guard inotify >= 0, inotify_add_watch(inotify, folder, watchMask) >= 0 else {
      fail("floor watch: inotify on \(folder): \(String(cString: strerror(errno)))")
    }
    let events = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 8)
    let contents = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
    let watched = UnsafeMutablePointer<pollfd>.allocate(capacity: 2)
    watched[0] = pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)
    watched[1] = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
    var status = stat()
    // The writer puts sequence 0 in the file before starting its watchers.
    var last: UInt64 = 0
    emit("ready")
    path.withUnsafeBufferPointer { path in
      while true {
        watched[0].revents = 0
        watched[1].revents = 0
        if poll(watched, 2, -1) < 0 {
          if errno == EINTR { continue }
          fail("floor watch: poll: \(String(cString: strerror(errno)))")
        }
        // The writer closes our stdin when it is done.
        if watched[1].revents != 0 && read(0, contents, 256) <= 0 { return }
        guard watched[0].revents & Int16(POLLIN) != 0 else { continue }
        guard read(inotify, events, 4096) > 0 else {
          if errno == EINTR || errno == EAGAIN { continue }
          fail("floor watch: read of the events: \(String(cString: strerror(errno)))")
        }
        let fd = open(path.baseAddress!, O_RDONLY | O_CLOEXEC)
        guard fd >= 0, fstat(fd, &status) == 0 else { fail("floor watch: cannot open or fstat the file") }
        let count = read(fd, contents, 256)
        close(fd)
        let at = monotonicNanoseconds()
        let sequence = decimal(contents, count)
        guard sequence != last else { continue }
        last = sequence
        reportGot(sequence, at: at)
      }
    }
  }

  /// Writes `got <sequence> <at>` and a newline to standard output in one `write(2)`, with
  /// nothing allocated on the heap: how a watcher tells the writer of a change, P8's and the
  /// floor's alike, so that neither pays for string building the other does not.
  static func reportGot(_ sequence: UInt64, at: UInt64) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
      let line = buffer.baseAddress!
      var length = append("got ", to: line, at: 0)
      length = append(sequence, to: line, at: length)
      line[length] = UInt8(ascii: " ")
      length = append(at, to: line, at: length + 1)
      line[length] = UInt8(ascii: "\n")
      guard write(1, line, length + 1) == length + 1 else { fail("watch: cannot write to the writer") }
    }
  }

  /// The decimal number that `bytes` (`count` of them) start with.
  @inline(__always)
  static func decimal(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> UInt64 {
    var value: UInt64 = 0
    var index = 0
    while index < count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
      value = value &* 10 &+ UInt64(bytes[index] - UInt8(ascii: "0"))
      index += 1
    }
    return value
  }

  /// Writes `value` in decimal into `buffer` at `offset`; returns the offset after it.
  @inline(__always)
  static func append(_ value: UInt64, to buffer: UnsafeMutablePointer<UInt8>, at offset: Int) -> Int {
    var digits = 1
    var rest = value / 10
    while rest > 0 {
      digits += 1
      rest /= 10
    }
    rest = value
    for index in stride(from: offset + digits - 1, through: offset, by: -1) {
      buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
      rest /= 10
    }
    return offset + digits
  }

  /// Writes the ASCII `text` into `buffer` at `offset`; returns the offset after it.
  @inline(__always)
  static func append(_ text: StaticString, to buffer: UnsafeMutablePointer<UInt8>, at offset: Int) -> Int {
    buffer.advanced(by: offset).update(from: text.utf8Start, count: text.utf8CodeUnitCount)
    return offset + text.utf8CodeUnitCount
  }

  /// The file's contents for `sequence`: the number in decimal, padded to ``fileSize``.
  static func contents(_ sequence: Int) -> [UInt8] {
    let digits = Array(String(sequence).utf8)
    return digits + [UInt8](repeating: UInt8(ascii: " "), count: fileSize - digits.count - 1) + [0x0a]
  }
}

extension Coordinator {
  /// The fan-out floor's samples, all rounds so far.
  var fanoutFloorSamples: [Double] { samples["floor/fanout/notify"] ?? [] }

  /// One round of the fan-out floor: P8's watchers, samples and gap, bare (see the file's head).
  func measureFanoutFloor() {
    let c = configuration
    let watched = folder + "/fanout-floor"
    let staging = watched + "/" + FanoutFloor.stagingName
    let target = watched + "/" + FanoutFloor.fileName
    let temporary = staging + "/" + FanoutFloor.fileName + ".tmp"
    for path in [watched, staging] where mkdir(path, 0o700) != 0 && errno != EEXIST {
      fail("fan-out floor: mkdir \(path): \(String(cString: strerror(errno)))")
    }
    let directory = open(watched, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard directory >= 0 else { fail("fan-out floor: open \(watched): \(String(cString: strerror(errno)))") }
    defer { close(directory) }
    // A commit's steps, up to the rename the watchers hear and the folder's `fsync` after it.
    func commit(_ bytes: [UInt8]) {
      let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
      guard fd >= 0, write(fd, bytes, bytes.count) == bytes.count, fsync(fd) == 0, close(fd) == 0,
        rename(temporary, target) == 0, fsync(directory) == 0
      else { fail("fan-out floor: durable write in \(watched): \(String(cString: strerror(errno)))") }
    }
    commit(FanoutFloor.contents(0))
    settle()
    let watchers = (0..<c.fanoutWatchers).map { _ in
      ChildProcess(["floor", "watch", "folder=\(watched)"], environment: [:])
    }
    for watcher in watchers {
      guard watcher.expectLine("ready") == "ready" else { fail("fan-out floor: a watcher did not start") }
    }
    for i in 1...c.fanoutSamples {
      let bytes = FanoutFloor.contents(i)
      // P8's gap, for the previous write's wake-ups to settle.
      usleep(2_000)
      let start = monotonicNanoseconds()
      commit(bytes)
      let last = lastTold(watchers, write: i, what: "fan-out floor")
      samples["floor/fanout/notify", default: []].append(Double(last > start ? last - start : 0))
    }
    for watcher in watchers {
      guard watcher.finish() == 0 else { fail("fan-out floor: a watcher failed") }
    }
  }

  /// p50 and p99, min, max of `xs`: a cross-process measure's cells.
  func quantileCells(_ xs: [Double]) -> [String] {
    [
      "p50 \(formatDuration(Stats.median(xs))), p99 \(formatDuration(Stats.quantile(xs, 0.99)))",
      formatDuration(xs.min() ?? .nan), formatDuration(xs.max() ?? .nan),
    ]
  }

  /// The fan-out floor row's name.
  var fanoutFloorMeasure: String {
    "fan-out floor: bare watchers, \(configuration.fanoutWatchers) processes: a \(FanoutFloor.fileSize)-byte file `fsync`ed in a "
      + "staging folder, `rename`d into theirs → the last one's `inotify` wake, `open` + `read` of it "
      + "(n = \(fanoutFloorSamples.count))"
  }

  /// P8's p50 and p99 as multiples of the fan-out floor's, for P8's target column.
  func besideFanoutFloor(_ p8: [Double]) -> String {
    let floor = fanoutFloorSamples
    guard !floor.isEmpty, !p8.isEmpty else { return "" }
    let p50 = Stats.median(floor)
    let p99 = Stats.quantile(floor, 0.99)
    // One decimal, without Foundation's formatting: this file imports only Glibc.
    func times(_ r: Double) -> String { "\((r * 10).rounded() / 10)×" }
    return "; fan-out floor p50 \(formatDuration(p50)), p99 \(formatDuration(p99)) "
      + "(P8: p50 \(times(Stats.median(p8) / p50)), p99 \(times(Stats.quantile(p8, 0.99) / p99)) the floor's)"
  }
}

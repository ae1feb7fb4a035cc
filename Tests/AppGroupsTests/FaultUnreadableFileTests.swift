import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// A worker that opens suites on request (`appgroups-worker probe`), with its diagnostics on
/// stdout, so that a crash or a hang is the worker's, seen and reported, never the test's.
final class Prober: @unchecked Sendable {
  let root: TestRoot
  private var child: ChildProcess
  private let environment: [String: String]

  init(_ root: TestRoot, environment: [String: String] = [:]) throws {
    self.root = root
    self.environment = root.environment().merging(["APPGROUPS_WORKER_DIAGNOSTICS": "stdout"]) { $1 }
      .merging(environment) { $1 }
    child = try ChildProcess("appgroups-worker", ["probe"], environment: self.environment)
    guard child.waitFor("ready") else { throw ProbeFailure("the prober did not start: \(child.standardError)") }
  }

  struct ProbeFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
  }

  enum Outcome: Equatable {
    case values([String: PropertyListValue])
    case refused(code: String, message: String)
    /// The worker crashed or did not answer in time (it is then restarted).
    case failed(String)
  }

  /// Sends `command` and returns the outcome and the diagnostics reported before it.
  func ask(_ command: String, answer prefixes: [String], timeout: TimeInterval = 20) throws
    -> (answer: String?, diagnostics: [String])
  {
    child.send(command)
    var diagnostics: [String] = []
    while true {
      guard let line = child.waitForLine(timeout: timeout) else {
        let error = child.standardError
        child.signal(SIGKILL)
        _ = child.wait(timeout: 5)
        child = try ChildProcess("appgroups-worker", ["probe"], environment: environment)
        guard child.waitFor("ready") else { throw ProbeFailure("the prober did not restart") }
        return (nil, diagnostics + ["worker failed: \(error.suffix(2000))"])
      }
      if line.hasPrefix("diag ") {
        diagnostics.append(String(line.dropFirst(5)))
      } else if prefixes.contains(where: { line.hasPrefix($0) }) {
        return (line, diagnostics)
      }
    }
  }

  /// Opens suite `name` in the worker.
  func open(_ name: String, timeout: TimeInterval = 20) throws -> (Outcome, diagnostics: [String]) {
    let (answer, diagnostics) = try ask("open \(name)", answer: ["values ", "refused "], timeout: timeout)
    guard let answer else { return (.failed(diagnostics.last ?? ""), diagnostics) }
    if answer.hasPrefix("values ") {
      guard let data = Data(base64Encoded: String(answer.dropFirst(7))),
        let object = try? PropertyListSerialization.propertyList(from: data, format: nil),
        case .dictionary(let values)? = PropertyListValue(object)
      else { return (.failed("undecodable answer \(answer)"), diagnostics) }
      return (.values(values), diagnostics)
    }
    let rest = answer.dropFirst("refused ".count)
    let code = rest.prefix { $0 != " " }
    return (.refused(code: String(code), message: String(rest.dropFirst(code.count + 1))), diagnostics)
  }

  func close() {
    child.send("quit")
    _ = child.wait(timeout: 10)
  }

  /// The Preferences folder of the app's own container, where private suites live.
  var preferences: URL {
    root.root.appContainerURL(for: TestRoot.app).appendingPathComponent("Library/Preferences")
  }

  func file(ofSuite name: String) -> URL {
    preferences.appendingPathComponent("\(name).plist")
  }
}

/// Unreadable preferences files of every kind: each is moved aside byte for byte and
/// reported, and the suite goes on empty. Never a crash, a hang, or a wipe.
@Suite("Fault: unreadable preferences files", .processBound)
struct FaultUnreadableFileTests {
  static func validBinary() -> Data {
    let values: [String: Any] = [
      "name": "a value", "count": 42, "ratio": 0.5, "on": true,
      "list": [1, "two", 3.0], "nested": ["inner": ["deeper": Data([1, 2, 3])]],
    ]
    return (try? PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)) ?? Data()
  }

  /// Every kind of unreadable file, by name.
  static func unreadableFiles() -> [(String, Data)] {
    var random = SeededGenerator(seed: 0x5EED)
    let valid = validBinary()
    var cases: [(String, Data)] = [
      ("random-bytes", Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) })),
      ("random-bytes-with-magic", Data("bplist00".utf8) + Data((0..<512).map { _ in UInt8.random(in: 0...255, using: &random) })),
      ("truncated-half", valid.prefix(valid.count / 2)),
      ("truncated-last-byte", valid.prefix(valid.count - 1)),
      ("truncated-header-only", Data("bplist00".utf8)),
      ("truncated-trailer", valid.prefix(valid.count - 16)),
      ("empty", Data()),
      ("nested-100000-deep", CraftedPropertyList.nested(depth: 100_000)),
      ("nested-600-deep", CraftedPropertyList.nested(depth: 600)),
      ("huge-string-length", CraftedPropertyList.dictionary(withRawValue: CraftedPropertyList.withHugeLength(marker: 0x50, length: 1 << 62))),
      ("huge-utf16-length", CraftedPropertyList.dictionary(withRawValue: CraftedPropertyList.withHugeLength(marker: 0x60, length: 1 << 61))),
      ("huge-data-length", CraftedPropertyList.dictionary(withRawValue: CraftedPropertyList.withHugeLength(marker: 0x40, length: UInt64.max))),
      ("huge-array-count", CraftedPropertyList.dictionary(withRawValue: CraftedPropertyList.withHugeLength(marker: 0xA0, length: 1 << 40))),
      ("huge-dictionary-count", CraftedPropertyList.dictionary(withRawValue: CraftedPropertyList.withHugeLength(marker: 0xD0, length: 1 << 40))),
      ("huge-object-count", CraftedPropertyList.file(objects: [[0xD0]], referenceSize: 1, objectCount: UInt64.max)),
      ("huge-offset-table-offset", CraftedPropertyList.file(objects: [[0xD0]], referenceSize: 1, offsetTableOffset: 1 << 62)),
      ("top-object-out-of-range", CraftedPropertyList.file(objects: [[0xD0]], referenceSize: 1, top: 1 << 40)),
      ("cycle", CraftedPropertyList.cycle),
      ("integer-key", CraftedPropertyList.integerKey),
      ("set-of-integers", CraftedPropertyList.dictionary(withObjects: [[0xC2, 3, 4], [0x10, 1], [0x10, 2]])),
      ("set-of-dictionaries", CraftedPropertyList.dictionary(withObjects: [[0xC1, 3], [0xD0]])),
      ("ordered-set", CraftedPropertyList.dictionary(withObjects: [[0xB1, 1]])),
      ("uid", CraftedPropertyList.dictionary(withObjects: [[0x80, 1]])),
      ("uid-key-in-array", CraftedPropertyList.dictionary(withObjects: [[0xA1, 3], [0xD1, 4, 5], [0x80, 1], [0x10, 1]])),
      ("null", CraftedPropertyList.dictionary(withObjects: [[0x00]])),
      ("nan-date", CraftedPropertyList.dictionary(withObjects: [[0x33] + CraftedPropertyList.bigEndian(Double.nan.bitPattern, size: 8)])),
      ("data-key", CraftedPropertyList.file(objects: [[0xD1, 1, 2], [0x41, 0], [0x10, 1]], referenceSize: 1)),
      ("xml-unterminated", Data("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>k</key><string>v".utf8)),
      ("xml-not-utf8", Data("<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist><dict><key>".utf8) + Data([0xFF, 0xFE, 0xC0]) + Data("</key><true/></dict></plist>".utf8)),
      ("nul-bytes", Data(repeating: 0, count: 1024)),
    ]
    for (name, root) in [("root-array", ["an", "array"] as Any), ("root-string", "text"), ("root-integer", 7)] {
      if let data = try? PropertyListSerialization.data(fromPropertyList: root, format: .binary, options: 0) {
        cases.append((name, data))
      }
    }
    return cases
  }

  @Test func everyKindOfUnreadableFileIsMovedAsideByteForByteAndReported() throws {
    let t = try TestRoot()
    let prober = try Prober(t)
    defer { prober.close() }
    try FileManager.default.createDirectory(at: prober.preferences, withIntermediateDirectories: true)
    let cases = Self.unreadableFiles()
    var checked = 0
    for (kind, bytes) in cases {
      let name = "corrupt-\(kind)"
      let file = prober.file(ofSuite: name)
      try bytes.write(to: file)
      let (outcome, diagnostics) = try prober.open(name)
      #expect(outcome == .values([:]), "\(kind): \(outcome) \(diagnostics)")
      let aside = entries(of: prober.preferences).filter { $0.hasPrefix("\(name).plist.unreadable-") }
      #expect(aside.count == 1, "\(kind): moved aside as \(aside)")
      if let moved = aside.first {
        let movedBytes = FileManager.default.contents(
          atPath: prober.preferences.appendingPathComponent(moved).path)
        #expect(movedBytes == bytes, "\(kind): the bytes moved aside differ from the original")
        #expect(diagnostics.contains { $0.contains(moved) && $0.contains("could not be read") },
          "\(kind): not reported: \(diagnostics)")
      }
      #expect(!FileManager.default.fileExists(atPath: file.path), "\(kind): still in place")
      checked += 1
    }
    print("unreadable files: \(checked) kinds quarantined")
  }

  @Test func aValueThatCannotBeReadBackIsRefusedWhenSetAndTheSuiteStaysReadable() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set("kept", forKey: "other")
    var deep = PropertyListValue.array([])
    for _ in 0..<600 { deep = .array([deep]) }
    #expect(throws: AppGroupsError.self) { try d.stage(deep, forKey: "deep") }
    #expect(throws: AppGroupsError.self) { try d.update(forKey: "deep") { _ in deep } }
    let notANumber = PropertyListValue.date(Date(timeIntervalSinceReferenceDate: .nan))
    #expect(throws: AppGroupsError.self) { try d.stage(.array([notANumber]), forKey: "nan") }
    #expect(d.value(forKey: "deep") == nil)
    #expect(d.synchronize())
    // Another process reads the suite: nothing was moved aside, nothing lost.
    let reader = try Product.run(
      "appgroups-worker", ["get", TestRoot.group, "other"],
      environment: t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(reader.stdout == "kept\n", "\(reader.stderr)")
    #expect(!entries(of: t.groupSuiteFile.deletingLastPathComponent()).contains { $0.contains(".unreadable-") })
    // A value as deep as a reader accepts is kept.
    var allowed = PropertyListValue.string("leaf")
    for _ in 0..<(PropertyListValue.maximumDepth - 2) { allowed = .array([allowed]) }
    try d.stage(allowed, forKey: "allowed")
    #expect(d.synchronize())
    let again = try Product.run(
      "appgroups-worker", ["get", TestRoot.group, "other"],
      environment: t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    #expect(again.stdout == "kept\n", "\(again.stderr)")
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["allowed"] != nil)
  }

  @Test func aFifoOrAFolderInPlaceOfTheFileIsMovedAsideWithoutHanging() throws {
    let t = try TestRoot()
    let prober = try Prober(t)
    defer { prober.close() }
    try FileManager.default.createDirectory(at: prober.preferences, withIntermediateDirectories: true)
    #expect(mkfifo(prober.file(ofSuite: "fifo").path, 0o600) == 0)
    try FileManager.default.createDirectory(
      at: prober.file(ofSuite: "folder"), withIntermediateDirectories: false)
    for name in ["fifo", "folder"] {
      let (outcome, diagnostics) = try prober.open(name, timeout: 10)
      #expect(outcome == .values([:]), "\(name): \(outcome) \(diagnostics)")
      #expect(diagnostics.contains { $0.contains("moved it to") }, "\(name): \(diagnostics)")
      #expect(entries(of: prober.preferences).contains { $0.hasPrefix("\(name).plist.unreadable-") })
    }
  }

  /// A file too large to read (here a sparse terabyte) is moved aside unread, by a process that
  /// opens the suite: read whole, it would end every member for want of memory.
  @Test func aFileOverTheSizeBoundIsMovedAsideUnread() throws {
    let t = try TestRoot()
    let prober = try Prober(t)
    defer { prober.close() }
    try FileManager.default.createDirectory(at: prober.preferences, withIntermediateDirectories: true)
    let file = prober.file(ofSuite: "huge")
    #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
    #expect(truncate(file.path, 1 << 40) == 0)
    let (outcome, diagnostics) = try prober.open("huge", timeout: 10)
    #expect(outcome == .values([:]), "\(outcome) \(diagnostics)")
    #expect(
      diagnostics.contains {
        $0.contains("more than the \(PropertyListFile.maximumBytes) bytes") && $0.contains("moved it to")
      }, "\(diagnostics)")
    let aside = entries(of: prober.preferences).filter { $0.hasPrefix("huge.plist.unreadable-") }
    #expect(aside.count == 1, "\(aside)")
    let size = try aside.first.map {
      try FileManager.default.attributesOfItem(
        atPath: prober.preferences.appendingPathComponent($0).path)[.size] as? Int
    }
    #expect(size == 1 << 40)
  }

  /// A worker, its diagnostics on stdout, that wrote `kept` = `yes` and synchronized it.
  private func readerThatKeptAValue(_ t: TestRoot) throws -> ChildProcess {
    let environment = t.environment().merging(["APPGROUPS_WORKER_DIAGNOSTICS": "stdout"]) { $1 }
    let reader = try ChildProcess("appgroups-worker", ["repl", TestRoot.group], environment: environment)
    #expect(reader.waitFor("ready"), "\(reader.standardError)")
    reader.send("set kept yes")
    reader.send("sync")
    #expect(reader.waitForLine { $0.hasPrefix("sync ") }?.hasPrefix("sync true") == true)
    return reader
  }

  /// A re-read looks at the path once, and the read goes by that look: what it found there is
  /// still screened before anything is opened (a fifo would hang the monitor's thread).
  @Test func aFifoRenamedOverAnOpenSuitesFileIsNotOpenedByTheReRead() throws {
    let t = try TestRoot()
    let reader = try readerThatKeptAValue(t)
    // Another process (not through the library) renames a fifo over the file: the record
    // still names the file read, so the re-read looks at the path and finds another entry.
    let folder = t.groupSuiteFile.deletingLastPathComponent()
    let fifo = folder.appendingPathComponent("outside-fifo").path
    #expect(mkfifo(fifo, 0o600) == 0)
    #expect(rename(fifo, t.groupSuiteFile.path) == 0)
    reader.send("sync")
    #expect(reader.waitForLine { $0.hasPrefix("sync ") } != nil)
    reader.send("get kept")
    #expect(reader.waitForLine { $0.hasPrefix("value ") } == "value yes")
    // Screened, not opened: said as an unreadable file (an open would fail after the fact
    // and say that the file cannot be read again).
    reader.send("diag-has could not be read (it is a fifo, not a regular file)")
    #expect(reader.waitForLine { $0.hasPrefix("diag-has ") } == "diag-has true")
  }

  @Test func aFileThatTurnsUnreadableWhileOpenIsOnlyNotedUntilTheNextCommitMovesItAside() throws {
    let t = try TestRoot()
    let reader = try readerThatKeptAValue(t)
    // An outside edit leaves garbage in place (not through the library: no lock, no rename).
    let garbage = Data("garbage written in place".utf8)
    let handle = try FileHandle(forWritingTo: t.groupSuiteFile)
    try handle.truncate(atOffset: 0)
    try handle.write(contentsOf: garbage)
    try handle.close()
    // synchronize() re-reads whatever the change monitor has not handled yet.
    reader.send("sync")
    #expect(reader.waitForLine { $0.hasPrefix("sync ") } != nil)
    // Noted, not moved: it may be a write in progress. The values read before stay.
    let folder = t.groupSuiteFile.deletingLastPathComponent()
    #expect(!entries(of: folder).contains { $0.contains(".unreadable-") })
    reader.send("get kept")
    #expect(reader.waitForLine { $0.hasPrefix("value ") } == "value yes")
    reader.send("diag-has could not be read")
    #expect(reader.waitForLine { $0.hasPrefix("diag-has ") } == "diag-has true")
    // The next commit, under the lock, moves it aside and writes the values it knows.
    reader.send("set after commit")
    reader.send("sync")
    #expect(reader.waitForLine { $0.hasPrefix("sync ") }?.hasPrefix("sync true") == true)
    let aside = entries(of: folder).filter { $0.contains(".unreadable-") }
    #expect(aside.count == 1)
    if let moved = aside.first {
      #expect(FileManager.default.contents(atPath: folder.appendingPathComponent(moved).path) == garbage)
    }
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["after"] as? String == "commit")
    reader.send("quit")
    #expect(reader.wait() == 0)
  }
}

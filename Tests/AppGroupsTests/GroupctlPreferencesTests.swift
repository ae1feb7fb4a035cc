import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A temporary root with the example identities granted, and the built
/// `groupctl` run against it (`--root`, and `APPGROUPS_ROOT` too, so that
/// nothing can reach the repository's `Containers/`).
struct GroupctlRoot {
  let t: TestRoot

  init(_ name: String = #function, grant: Bool = true) throws {
    t = try TestRoot(name, grant: grant)
  }

  var path: String { t.path }
  var root: ContainerRoot { t.root }

  @discardableResult
  func run(_ args: [String], stdin: Data? = nil) throws -> (
    status: Int32, stdout: String, stderr: String
  ) {
    try Product.run(
      "groupctl", ["--root", t.path] + args, environment: ["APPGROUPS_ROOT": t.path],
      stdin: stdin)
  }

  /// Runs a command that must succeed and returns its stdout.
  @discardableResult
  func ok(_ args: [String], stdin: Data? = nil, sourceLocation: SourceLocation = #_sourceLocation)
    throws -> String
  {
    let result = try run(args, stdin: stdin)
    #expect(
      result.status == 0, "groupctl \(args): \(result.stderr)", sourceLocation: sourceLocation)
    return result.stdout
  }

  func appFile(_ bundleID: String = TestRoot.app, suite: String? = nil) -> URL {
    root.appContainerURL(for: bundleID)
      .appendingPathComponent("Library/Preferences/\(suite ?? bundleID).plist")
  }

  var globalFile: URL { root.globalPreferencesURL }

  func managedFile(_ domain: String) -> URL { root.managedPreferencesURL(forDomain: domain) }

  /// A file's contents, read with Foundation, not with groupctl or AppGroups.
  func plist(_ url: URL) throws -> [String: Any] { try TestRoot.readOnDisk(url) }
}

/// The property-list type of a value decoded by Foundation, named as
/// `defaults read-type` names it. A Boolean decodes as `Bool`; integers and
/// reals as `NSNumber`, told apart by their type encoding.
func plistKind(_ value: Any?) -> String {
  guard let value else { return "nil" }
  if type(of: value) == Bool.self { return "boolean" }
  switch value {
  case is String: return "string"
  case is Date: return "date"
  case is Data: return "data"
  case let number as NSNumber:
    return ["d", "f"].contains(String(cString: number.objCType)) ? "float" : "integer"
  case is [Any]: return "array"
  case is [String: Any]: return "dictionary"
  default: return "\(type(of: value))"
  }
}

/// `plutil -lint` from the toolchain: `nil` when the file passes, else its output.
func plutilLintFailure(_ url: URL) throws -> String? {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/opt/swift/usr/bin/plutil")
  process.arguments = ["-lint", url.path]
  let output = Spawn.pipe()
  process.standardOutput = output
  process.standardError = output
  let exited = try process.startWatchingExit()
  let data = output.fileHandleForReading.readDataToEndOfFile()
  _ = exited.wait(timeout: 60)
  return process.terminationStatus == 0 ? nil : String(decoding: data, as: UTF8.self)
}

/// The permission bits of a file or folder.
func mode(_ url: URL) throws -> Int {
  let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
  return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
}

@Suite("groupctl preferences", .processBound)
struct GroupctlPreferencesTests {
  static let group = TestRoot.group
  static let app = TestRoot.app

  // MARK: write: types on disk

  struct TypeCase: Sendable, CustomTestStringConvertible {
    var words: [String]
    var kind: String
    var check: @Sendable (Any) -> Bool
    var testDescription: String { words.joined(separator: " ") }
  }

  @Test(arguments: [
    TypeCase(words: ["hello"], kind: "string") { $0 as? String == "hello" },
    TypeCase(words: ["-string", "-int"], kind: "string") { $0 as? String == "-int" },
    TypeCase(words: ["-int", "42"], kind: "integer") { $0 as? Int == 42 },
    TypeCase(words: ["-integer", "-7"], kind: "integer") { $0 as? Int == -7 },
    TypeCase(words: ["-float", "1.5"], kind: "float") { $0 as? Double == 1.5 },
    TypeCase(words: ["-float", "2"], kind: "float") { $0 as? Double == 2 },
    TypeCase(words: ["-bool", "yes"], kind: "boolean") { $0 as? Bool == true },
    TypeCase(words: ["-boolean", "0"], kind: "boolean") { $0 as? Bool == false },
    TypeCase(words: ["-date", "2026-11-29T12:00:00Z"], kind: "date") {
      ($0 as? Date)?.timeIntervalSince1970 == 1_795_953_600
    },
    TypeCase(words: ["-data", "0aff"], kind: "data") { $0 as? Data == Data([0x0a, 0xff]) },
    TypeCase(words: ["-array", "a", "-int", "1"], kind: "array") {
      guard let array = $0 as? [Any], array.count == 2 else { return false }
      return array[0] as? String == "a" && plistKind(array[1]) == "integer"
    },
    TypeCase(words: ["-dict", "k", "v", "n", "-bool", "true"], kind: "dictionary") {
      guard let dictionary = $0 as? [String: Any] else { return false }
      return dictionary["k"] as? String == "v" && plistKind(dictionary["n"]) == "boolean"
    },
    TypeCase(words: ["(a, b)"], kind: "array") { ($0 as? [String]) == ["a", "b"] },
    TypeCase(words: ["<integer>5</integer>"], kind: "integer") { $0 as? Int == 5 },
  ])
  func writeStoresTheTypeOnDisk(_ value: TypeCase) throws {
    let g = try GroupctlRoot()
    let result = try g.run(["write", Self.group, "key"] + value.words)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.isEmpty && result.stderr.isEmpty)

    let file = g.t.groupSuiteFile
    let bytes = try Data(contentsOf: file)
    #expect(bytes.starts(with: Array("bplist00".utf8)), "binary, as Apple writes it")
    let stored = try #require(try g.plist(file)["key"])
    #expect(plistKind(stored) == value.kind)
    #expect(value.check(stored), "\(stored)")
    #expect(try plutilLintFailure(file) == nil)
    #expect(try mode(file) == 0o600)

    let readType = try g.ok(["read-type", Self.group, "key"])
    #expect(readType == "Type is \(value.kind)\n")
  }

  @Test func writeReachesAnOpenSuiteInAnotherProcessAtOnce() throws {
    let g = try GroupctlRoot()
    let defaults = try g.t.defaults(Self.group, as: TestRoot.widget)
    let seen = DispatchSemaphore(value: 0)
    let observation = defaults.observe(["greeting"]) { changes in
      if changes.contains(where: { $0.newValue == .string("hello") }) { seen.signal() }
    }
    defer { observation.cancel() }
    try g.ok(["write", Self.group, "greeting", "hello"])
    #expect(seen.wait(timeout: .now() + 10) == .success)
    #expect(defaults.string(forKey: "greeting") == "hello")
  }

  @Test func aLargeSuitesJournaledWritesReadBackAndExport() throws {
    let g = try GroupctlRoot()
    try g.ok(["import", Self.group, "-"], stdin: try TestRoot.largeSuitePlist())
    let plist = try Data(contentsOf: g.t.groupSuiteFile)
    try g.ok(["write", Self.group, "added", "yes"])
    try g.ok(["delete", Self.group, "base-3"])
    // Small commits to a suite this large go to its journal: the plist is as it was.
    #expect(try Data(contentsOf: g.t.groupSuiteFile) == plist)
    #expect(FileManager.default.fileExists(atPath: g.t.groupSuiteFile.path + ".journal"))
    #expect(try g.ok(["read", Self.group, "added"]) == "yes\n")
    let missing = try g.run(["read", Self.group, "base-3"])
    #expect(missing.status != 0)
    #expect(missing.stderr.contains("(\(Self.group), base-3) does not exist"), "\(missing.stderr)")
    let exported = try g.run(["export", Self.group, "-", "--xml"])
    #expect(exported.status == 0, "\(exported.stderr)")
    let values = try PropertyListSerialization.propertyList(from: Data(exported.stdout.utf8), format: nil) as? [String: Any]
    #expect(values?["added"] as? String == "yes")
    #expect(values?["base-3"] == nil)
    #expect(values?.count == TestRoot.largeSuiteCount)
  }

  /// A large suite's journal whose plist was replaced by other bytes of the same size (an
  /// edit of one value, written atomically: a new inode, the size the journal's header names,
  /// another content check) is of another version: it is not read, `read` and `doctor` say
  /// so, and the next commit keeps it aside with its records, never renamed over. It was
  /// ignored without a word and replaced by the next journal: acknowledged writes were lost.
  /// (A plist only touched or copied keeps its journal read: JournalRestoreTests.)
  @Test func aJournalOfAnotherVersionIsSaidAndKeptAside() throws {
    let g = try GroupctlRoot()
    try g.ok(["import", Self.group, "-"], stdin: try TestRoot.largeSuitePlist())
    try g.ok(["write", Self.group, "acknowledged", "kept-value"])
    let journal = g.t.groupSuiteFile.path + ".journal"
    #expect(FileManager.default.fileExists(atPath: journal))
    // One value edited in place of the same length: the same size, other bytes.
    var plist = try Data(contentsOf: g.t.groupSuiteFile)
    let value = try #require(plist.range(of: Data("value-7-of-the-large-base".utf8)))
    plist.replaceSubrange(value, with: Data("value-7-of-the-OTHER-base".utf8))
    try plist.write(to: g.t.groupSuiteFile, options: .atomic)
    #expect(try TestRoot.readPlist(g.t.groupSuiteFile)["base-7"] as? String == "value-7-of-the-OTHER-base")

    // The lock held, as by a commit in flight (a compaction shows the same for a moment): not
    // said, as nothing confirms it. It was said whenever the lock was busy: a false alarm
    // under concurrent writes.
    let fd = open(g.t.groupSuiteFile.path + ".lock", O_RDONLY)
    #expect(fd >= 0)
    #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
    let held = try g.run(["read", Self.group])
    #expect(flock(fd, LOCK_UN) == 0)
    close(fd)
    #expect(!held.stderr.contains("is a journal of another version"), "\(held.stderr)")

    let read = try g.run(["read", Self.group])
    #expect(read.stderr.contains("is a journal of another version of the plist"), "\(read.stderr)")
    let doctor = try g.run(["doctor"])
    #expect(doctor.status == 1 && doctor.stdout.contains("is a journal of another version"), "\(doctor)")

    try g.ok(["write", Self.group, "next", "1"])
    let folder = g.t.groupSuiteFile.deletingLastPathComponent().path
    let aside = try FileManager.default.contentsOfDirectory(atPath: folder).filter {
      $0.hasPrefix("\(Self.group).plist.journal.unreadable-")
    }
    #expect(aside.count == 1, "\(aside)")
    let kept = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + (aside.first ?? "")))
    #expect(kept.range(of: Data("kept-value".utf8)) != nil, "the acknowledged write is in the kept journal")
  }

  /// SIGTERM to a `write` waiting for the suite's lock: the write still ends (when the lock is
  /// free), its status says it is on disk (0), and it says it was interrupted. The library's
  /// handler landed the write and then ended groupctl by the signal (143): a retry would
  /// write twice.
  @Test func aWriteInterruptedWhileWaitingEndsAndItsStatusTellsItIsOnDisk() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.group, "seed", "1"])
    let lockPath = g.t.groupSuiteFile.path + ".lock"
    let fd = open(lockPath, O_RDWR)
    #expect(fd >= 0)
    var held = true
    defer { if held { close(fd) } }
    #expect(flock(fd, LOCK_EX) == 0)
    var s = stat()
    #expect(fstat(fd, &s) == 0)
    let writer = try ChildProcess("groupctl", ["--root", g.path, "write", Self.group, "k", "v"])
    // Blocked in flock(2) on the lock file: a "->" line for its inode in /proc/locks.
    #expect(
      eventually {
        ((try? String(contentsOfFile: "/proc/locks", encoding: .utf8)) ?? "").split(separator: "\n")
          .contains { $0.contains("->") && $0.contains("FLOCK") && $0.contains(":\(s.st_ino) ") }
      }, "\(writer.standardError)")
    writer.signal(SIGTERM)
    close(fd)
    held = false
    #expect(writer.wait(timeout: 60) == 0, "\(writer.standardError)")
    #expect(writer.standardError.contains("interrupted while writing; the write had begun, and it is on disk"))
    #expect(try g.ok(["read", Self.group, "k"]) == "v\n")
  }

  @Test func addAppendsAndMergesUnderTheLock() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "list", "-array-add", "a"])
    try g.ok(["write", Self.app, "list", "-array-add", "b", "-int", "2"])
    try g.ok(["write", Self.app, "map", "-dict", "a", "1", "b", "2"])
    try g.ok(["write", Self.app, "map", "-dict-add", "b", "two", "c", "-bool", "yes"])
    let stored = try g.plist(g.appFile())
    let list = try #require(stored["list"] as? [Any])
    #expect(list.count == 3)
    #expect(list[0] as? String == "a" && list[1] as? String == "b" && list[2] as? Int == 2)
    let map = try #require(stored["map"] as? [String: Any])
    #expect(map["a"] as? String == "1" && map["b"] as? String == "two")
    #expect(map["c"] as? Bool == true)

    for (flag, expected) in [("-array-add", "an array"), ("-dict-add", "a dictionary")] {
      try g.ok(["write", Self.app, "name", "-string", "text"])
      let refused = try g.run(["write", Self.app, "name", flag, "x", "y"])
      #expect(refused.status == 1)
      #expect(
        refused.stderr.contains(
          "\(flag) cannot add to name: it holds a string, not \(expected); nothing was changed"),
        "\(refused.stderr)")
      #expect(try g.plist(g.appFile())["name"] as? String == "text")
    }
  }

  @Test func writeRefusesWhatTheLibraryRefuses() throws {
    let g = try GroupctlRoot()
    let cases: [([String], String)] = [
      (["write", "../etc", "k", "v"], "invalid bundle identifier \"../etc\": contains '/'"),
      (["write", "group.", "k", "v"], "invalid group identifier \"group.\""),
      (["write", "com.example.app:my suite", "k", "v"], "invalid suite name \"my suite\""),
      (["write", Self.app, "", "v"], "a key cannot be empty"),
      (["write", "com.example.app:group.x", "k", "v"], "a name that starts with 'group.'"),
    ]
    for (args, message) in cases {
      let result = try g.run(args)
      #expect(result.status != 0, "\(args)")
      #expect(result.stderr.contains(message), "\(args): \(result.stderr)")
    }
    #expect(!FileManager.default.fileExists(atPath: g.path + "/Data/etc"))
  }

  /// A write past the file size limit (`ulimit -f`) exits 1 and says why, the old value
  /// kept. SIGXFSZ ended groupctl (status 153) before it could say anything.
  @Test func aWritePastTheFileSizeLimitExitsOneAndSaysWhy() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.group, "keep", "yes"])
    let big = String(repeating: "a", count: 40_000)
    // dash counts the limit in blocks of 512 bytes: 16 KiB.
    let child = try ChildProcess(
      executable: URL(fileURLWithPath: "/bin/sh"),
      ["-c", "ulimit -f 32; exec \"$0\" \"$@\"", Product.url("groupctl").path,
       "--root", g.path, "write", Self.group, "big", "-string", big])
    #expect(child.wait(timeout: 60) == 1, "\(child.standardError)")
    #expect(child.standardError.contains("File too large"), "\(child.standardError)")
    #expect(try g.ok(["read", Self.group, "keep"]) == "yes\n")
    #expect(try g.run(["read", Self.group, "big"]).status == 1, "not on disk")
  }

  /// A suite's Preferences folder replaced by a link to a folder outside the root: `read`
  /// and `export`, as an app, refuse it as the app does, saying so. They showed the outside
  /// file's values as the suite's.
  @Test func readRefusesAPreferencesFolderThatLeadsOutsideTheRoot() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.group, "a", "1"])
    let preferences = g.root.groupContainerURL(for: Self.group).appendingPathComponent("Library/Preferences")
    let outside = g.path + "-outside"
    try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: outside) }
    try Data("<plist><dict><key>secret</key><string>outside</string></dict></plist>".utf8)
      .write(to: URL(fileURLWithPath: outside + "/\(Self.group).plist"))
    try FileManager.default.removeItem(at: preferences)
    try FileManager.default.createSymbolicLink(atPath: preferences.path, withDestinationPath: outside)
    for args in [["read", Self.group], ["export", Self.group, "-"], ["--as", Self.app, "read", Self.group]] {
      let result = try g.run(args)
      #expect(result.status == 1, "\(args): \(result)")
      #expect(!result.stdout.contains("outside"), "\(args): \(result.stdout)")
      #expect(result.stderr.contains("is a symbolic link that leads outside the root"), "\(args): \(result.stderr)")
    }
  }

  @Test func aDomainPastTheSizeLimitIsRefused() throws {
    let g = try GroupctlRoot()
    let big = try PropertyListSerialization.data(
      fromPropertyList: ["blob": Data(count: 5 * 1024 * 1024)], format: .binary, options: 0)
    let result = try g.run(["import", Self.app, "-"], stdin: big)
    #expect(result.status == 1)
    #expect(result.stderr.contains("over its limit"), "\(result.stderr)")
  }

  // MARK: read, read-type

  @Test func readPrintsAsDefaultsDoes() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.group, "greeting", "hello world"])
    try g.ok(["write", Self.group, "count", "-int", "3"])
    try g.ok(["write", Self.group, "tags", "-array", "a", "b"])
    try g.ok(["write", "-g", "AppleLocale", "en_US"])
    try g.ok(["write", "\(Self.app):settings", "theme", "dark"])

    #expect(try g.ok(["read", Self.group, "greeting"]) == "\"hello world\"\n")
    #expect(try g.ok(["read", Self.group, "count"]) == "3\n")
    #expect(
      try g.ok(["read", Self.group])
        == "{\n    count = 3;\n    greeting = \"hello world\";\n    tags =     (\n        a,\n"
        + "        b\n    );\n}\n")
    #expect(try g.ok(["read", "NSGlobalDomain"]) == "{\n    AppleLocale = en_US;\n}\n")
    let all = try g.ok(["read"])
    #expect(all.hasPrefix("{\n    NSGlobalDomain =     {\n        AppleLocale = en_US;\n    };\n"))
    #expect(all.contains("    com.example.app:settings =     {\n        theme = dark;\n    };\n"))
    #expect(all.contains("    group.com.example.shared =     {\n        count = 3;\n"))
    #expect(try g.ok(["read-type", "-g", "AppleLocale"]) == "Type is string\n")
  }

  @Test func aMissingKeyOrDomainFailsAsDefaultsDoes() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "present", "1"])
    for command in ["read", "read-type"] {
      let key = try g.run([command, Self.app, "absent"])
      #expect(key.status == 1)
      #expect(key.stdout.isEmpty)
      #expect(
        key.stderr
          == "groupctl: The domain/default pair of (com.example.app, absent) does not exist\n")
    }
    let domain = try g.run(["read", "com.example.nobody"])
    #expect(domain.status == 1)
    #expect(domain.stderr == "groupctl: Domain com.example.nobody does not exist\n")
    // Reading creates nothing.
    #expect(
      !FileManager.default.fileExists(
        atPath: g.root.appContainerURL(for: "com.example.nobody").path))
  }

  @Test func anUnreadableFileFailsAndIsLeftAsItIs() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.group, "k", "v"])
    try g.ok(["write", Self.app, "k", "v"])
    let garbage = Data("not a property list <".utf8)
    try garbage.write(to: g.t.groupSuiteFile)
    for args in [["read", Self.group], ["read", Self.group, "k"], ["export", Self.group, "-"]] {
      let result = try g.run(args)
      #expect(result.status == 1, "\(args)")
      #expect(result.stderr.contains(g.t.groupSuiteFile.path), "\(args): \(result.stderr)")
      #expect(result.stderr.contains("cannot be read"), "\(args): \(result.stderr)")
    }
    // The other domains still print; the status says something failed.
    let all = try g.run(["read"])
    #expect(all.status == 1)
    #expect(all.stdout.contains("com.example.app ="))
    #expect(try Data(contentsOf: g.t.groupSuiteFile) == garbage)
  }

  // MARK: delete, rename

  @Test func deleteRemovesAKeyOrTheDomain() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "a", "1"])
    try g.ok(["write", Self.app, "b", "2"])
    try g.ok(["delete", Self.app, "a"])
    #expect(try g.plist(g.appFile()).keys.sorted() == ["b"])

    let missing = try g.run(["delete", Self.app, "a"])
    #expect(missing.status == 1)
    #expect(
      missing.stderr.contains("The domain/default pair of (com.example.app, a) does not exist"))

    try g.ok(["delete", Self.app])
    #expect(try g.plist(g.appFile()).isEmpty)
    #expect(try g.run(["read", Self.app]).stderr.contains("Domain com.example.app does not exist"))
    #expect(try g.ok(["domains"]).isEmpty)
    let again = try g.run(["delete", Self.app])
    #expect(again.status == 1)
    #expect(again.stderr.contains("Domain com.example.app does not exist"))

    // A mistyped domain or root: refused, and nothing is made on disk.
    let before = try FileManager.default.subpathsOfDirectory(atPath: g.path).sorted()
    for args in [["delete", "group.typo.x", "k"], ["delete", "com.typo.app", "k"]] {
      let typo = try g.run(args)
      #expect(typo.status == 1 && typo.stderr.contains("does not exist"), "\(args): \(typo)")
    }
    #expect(try FileManager.default.subpathsOfDirectory(atPath: g.path).sorted() == before)
    let otherRoot = g.path + "-typo"
    let elsewhere = try Product.run("groupctl", ["--root", otherRoot, "delete", Self.group, "k"])
    #expect(elsewhere.status == 1, "\(elsewhere)")
    #expect(!FileManager.default.fileExists(atPath: otherRoot), "no root is made")
  }

  @Test func renameMovesTheValue() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.group, "old", "-int", "7"])
    try g.ok(["rename", Self.group, "old", "new"])
    let stored = try g.plist(g.t.groupSuiteFile)
    #expect(stored["old"] == nil)
    #expect(stored["new"] as? Int == 7)
    let missing = try g.run(["rename", Self.group, "old", "newer"])
    #expect(missing.status == 1)
    #expect(
      missing.stderr.contains("The domain/default pair of (\(Self.group), old) does not exist"))
  }

  // MARK: force, unforce

  @Test func aForcedKeyCannotBeWrittenDeletedOrRenamed() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.group, "theme", "light"])
    try g.ok(["write", Self.group, "other", "x"])
    try g.ok(["force", Self.group, "theme", "-string", "dark"])

    let managed = g.managedFile(Self.group)
    #expect(try g.plist(managed)["theme"] as? String == "dark")
    #expect(try Data(contentsOf: managed).starts(with: Array("bplist00".utf8)))
    #expect(try plutilLintFailure(managed) == nil)
    #expect(try mode(managed) == 0o600)
    let defaults = try g.t.defaults(Self.group)
    #expect(defaults.objectIsForced(forKey: "theme"))
    #expect(defaults.string(forKey: "theme") == "dark")

    for args in [
      ["write", Self.group, "theme", "blue"], ["delete", Self.group, "theme"],
      ["rename", Self.group, "theme", "colour"], ["rename", Self.group, "other", "theme"],
      ["--as", TestRoot.app, "write", Self.group, "theme", "blue"],
    ] {
      let result = try g.run(args)
      #expect(result.status == 1, "\(args)")
      #expect(
        result.stderr.contains("theme is forced by an administrator (\(managed.path))"),
        "\(args): \(result.stderr)")
    }
    #expect(try g.plist(g.t.groupSuiteFile)["theme"] as? String == "light")
    #expect(try g.plist(g.t.groupSuiteFile)["other"] as? String == "x")

    try g.ok(["unforce", Self.group, "theme"])
    #expect(!FileManager.default.fileExists(atPath: managed.path), "an empty managed file goes")
    let notForced = try g.run(["unforce", Self.group, "theme"])
    #expect(notForced.status == 1)
    #expect(notForced.stderr.contains("theme is not forced in \(Self.group) (\(managed.path))"))
    try g.ok(["write", Self.group, "theme", "blue"])
  }

  @Test func forceTakesEveryTypeAndKeepsOtherForcedKeys() throws {
    let g = try GroupctlRoot()
    try g.ok(["force", "-g", "a", "-int", "1"])
    try g.ok(["force", "-g", "b", "-array", "x", "-bool", "no"])
    try g.ok(["force", "-g", "c", "-dict", "k", "-date", "2026-11-29T12:00:00Z"])
    let managed = try g.plist(g.managedFile("NSGlobalDomain"))
    #expect(plistKind(managed["a"]) == "integer")
    #expect(plistKind(managed["b"]) == "array")
    #expect(plistKind(managed["c"]) == "dictionary")
    try g.ok(["unforce", "-g", "a"])
    #expect(try g.plist(g.managedFile("NSGlobalDomain")).keys.sorted() == ["b", "c"])
  }

  @Test func forceAndUnforceAreTheAdministrators() throws {
    let g = try GroupctlRoot()
    for command in [["force", Self.group, "k", "v"], ["unforce", Self.group, "k"]] {
      let result = try g.run(["--as", TestRoot.app] + command)
      #expect(result.status == 64)
      #expect(result.stderr.contains("is an administrator's command"), "\(result.stderr)")
    }
  }

  @Test func anUnreadableManagedFileIsNotOverwritten() throws {
    let g = try GroupctlRoot()
    try g.ok(["force", Self.group, "k", "v"])
    let garbage = Data("garbage <".utf8)
    try garbage.write(to: g.managedFile(Self.group))
    let result = try g.run(["force", Self.group, "k2", "v"])
    #expect(result.status == 1)
    #expect(result.stderr.contains(g.managedFile(Self.group).path), "\(result.stderr)")
    #expect(try Data(contentsOf: g.managedFile(Self.group)) == garbage)
  }

  // MARK: explain

  @Test func explainShowsEveryLayerAndTheWinner() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.group, "theme", "light"])
    try g.ok(["write", "-g", "theme", "system"])
    let plain = try g.ok(["explain", Self.group, "theme"])
    let lines = plain.split(separator: "\n").map(String.init)
    #expect(
      lines.first
        == "theme in \(Self.group), as the administrator; the first layer that holds it wins:")
    #expect(lines.contains("  1. managed       not set"))
    #expect(lines.contains("                   \(g.managedFile(Self.group).path)"))
    #expect(lines.contains("  2. argument      not set"))
    #expect(lines.contains("  3. application   light   <- wins"))
    #expect(lines.contains("                   \(g.t.groupSuiteFile.path)"))
    #expect(lines.contains("  4. global        system   (shadowed)"))
    #expect(lines.contains("  5. registration  unknown to groupctl"))
    #expect(plain.contains("another process cannot see it"))
    #expect(lines.last == "Result: theme = light, from the application layer.")

    let withArguments = try g.ok(
      ["explain", Self.group, "theme", "--as", TestRoot.widget, "--", "-theme", "(a, b)"])
    #expect(withArguments.hasPrefix("theme in \(Self.group), as \(TestRoot.widget);"))
    #expect(withArguments.contains("  2. argument      (a, b)   <- wins"))
    #expect(withArguments.contains("  3. application   light   (shadowed)"))
    #expect(withArguments.contains("Result: theme = (a, b), from the argument layer."))

    try g.ok(["force", Self.group, "theme", "-bool", "yes"])
    let forced = try g.ok(["explain", Self.group, "theme"])
    #expect(forced.contains("  1. managed       1   <- wins"))
    #expect(forced.contains("Result: theme = 1, from the managed layer."))

    let nowhere = try g.ok(["explain", Self.app, "missing"])
    #expect(nowhere.contains("Result: no layer groupctl can see holds missing"))

    let refused = try g.run(["explain", Self.group, "theme", "--as", "com.example.stranger"])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("com.example.stranger is not entitled to \(Self.group)"))
  }

  // MARK: domains, find

  @Test func domainsListsEveryKindOfDomain() throws {
    let g = try GroupctlRoot()
    #expect(try g.ok(["domains"]).isEmpty)
    try g.ok(["write", Self.app, "k", "v"])
    try g.ok(["write", "\(Self.app):settings", "k", "v"])
    try g.ok(["write", Self.group, "k", "v"])
    try g.ok(["write", "-g", "k", "v"])
    #expect(
      try g.ok(["domains"])
        == "NSGlobalDomain\ncom.example.app\ncom.example.app:settings\ngroup.com.example.shared\n")
    // An app sees its own domains, its groups and the global domain.
    try g.ok(["write", TestRoot.widget, "k", "v"])
    #expect(
      try g.ok(["--as", TestRoot.widget, "domains"])
        == "NSGlobalDomain\ncom.example.widget\ngroup.com.example.shared\n")
  }

  @Test func findSearchesNamesKeysAndValues() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "Greeting", "hello"])
    try g.ok(["write", Self.app, "other", "-array", "x", "Say HELLO"])
    try g.ok(["write", Self.app, "unrelated", "-int", "5"])
    try g.ok(["write", Self.group, "count", "-int", "42"])
    #expect(
      try g.ok(["find", "hello"])
        == "Found 2 keys in domain 'com.example.app': {\n    Greeting = hello;\n"
        + "    other =     (\n        x,\n        \"Say HELLO\"\n    );\n}\n")
    #expect(try g.ok(["find", "42"]).hasPrefix("Found 1 key in domain '\(Self.group)'"))
    #expect(try g.ok(["find", "example.shared"]).contains("count = 42;"))
    #expect(try g.ok(["find", "zebra"]) == "No domain, key, nor value containing 'zebra'\n")
  }

  // MARK: import, export

  @Test func exportAndImportRoundTrip() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.group, "s", "text"])
    try g.ok(["write", Self.group, "d", "-date", "2026-11-29T12:00:00.5Z"])
    try g.ok(["write", Self.group, "b", "-bool", "true"])
    try g.ok(["write", Self.group, "n", "-dict", "k", "-data", "00ff"])

    let binary = g.t.sandbox.url.appendingPathComponent("out.plist")
    try g.ok(["export", Self.group, binary.path])
    #expect(try Data(contentsOf: binary).starts(with: Array("bplist00".utf8)))
    #expect(try plutilLintFailure(binary) == nil)
    let xml = g.t.sandbox.url.appendingPathComponent("out.xml")
    try g.ok(["export", Self.group, xml.path, "--xml"])
    #expect(try String(contentsOf: xml, encoding: .utf8).hasPrefix("<?xml"))
    #expect(try plutilLintFailure(xml) == nil)
    let stdout = try g.run(["export", Self.group, "-"])
    #expect(stdout.status == 0)
    #expect(stdout.stdout.hasPrefix("bplist00"))
    let exported = try g.plist(binary)
    #expect(exported.keys.sorted() == ["b", "d", "n", "s"])
    #expect(plistKind(exported["b"]) == "boolean")

    try g.ok(["import", "\(Self.app):copy", binary.path])
    let copied = try g.plist(g.appFile(suite: "copy"))
    #expect(copied.keys.sorted() == ["b", "d", "n", "s"])
    #expect((copied["d"] as? Date)?.timeIntervalSince1970 == 1_795_953_600.5)

    try g.ok(["write", Self.app, "gone", "1"])
    try g.ok(["import", Self.app, "-"], stdin: try Data(contentsOf: xml))
    #expect(try g.plist(g.appFile()).keys.sorted() == ["b", "d", "n", "s"])

    let missing = try g.run(["export", "com.example.nobody", "-"])
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("Domain com.example.nobody does not exist"))
  }

  @Test func aBadImportChangesNothing() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", Self.app, "keep", "me"])
    let before = try Data(contentsOf: g.appFile())
    let bad = g.t.sandbox.url.appendingPathComponent("bad.plist")
    try Data("<plist><dict><key>a</key></dict></plist>".utf8).write(to: bad)
    let array = g.t.sandbox.url.appendingPathComponent("array.plist")
    try PropertyListSerialization.data(fromPropertyList: ["a"], format: .xml, options: 0)
      .write(to: array)
    let blank = g.t.sandbox.url.appendingPathComponent("blank.plist")
    try Data(" \n\t\r\n".utf8).write(to: blank)
    let marked = g.t.sandbox.url.appendingPathComponent("marked.plist")
    try Data([0xEF, 0xBB, 0xBF, 0x0A]).write(to: marked)
    let sparse = g.t.sandbox.url.appendingPathComponent("sparse.plist")
    #expect(FileManager.default.createFile(atPath: sparse.path, contents: nil))
    #expect(truncate(sparse.path, 1 << 40) == 0)
    let cases: [([String], String)] = [
      (["import", Self.app, bad.path], "cannot import \(bad.path): the 40-byte property list is neither binary nor valid XML"),
      (["import", Self.app, array.path], "its root is an array, not a dictionary"),
      (["import", Self.app, g.path + "/none.plist"], "No such file or directory"),
      (["import", Self.app, g.path], "it is a folder"),
      (["import", Self.app, "-"], "cannot import standard input: it is empty (0 bytes), not a property list"),
      (["import", Self.app, "/dev/null"], "cannot import /dev/null: it is empty (0 bytes), not a property list; \(Self.app) was not changed"),
      // Foundation reads white space as an empty dictionary: the domain was emptied.
      (["import", Self.app, blank.path], "cannot import \(blank.path): it holds nothing but white space, not a property list"),
      (["import", Self.app, marked.path], "cannot import \(marked.path): it holds nothing but white space after a byte-order mark, not a property list"),
      // An input that never ends is refused at 64 MiB, not read until memory runs out.
      (["import", Self.app, "/dev/zero"], "cannot read /dev/zero: it holds more than 67108864 bytes (64 MiB)"),
      (["import", Self.app, sparse.path], "cannot read \(sparse.path): it holds more than 67108864 bytes"),
      (["import-entitlements", Self.app, "/dev/zero"], "cannot read /dev/zero: it holds more than 67108864 bytes"),
    ]
    for (args, message) in cases {
      let result = try g.run(args, stdin: Data())
      #expect(result.status == 1, "\(args)")
      #expect(result.stderr.contains(message), "\(args): \(result.stderr)")
    }
    #expect(try Data(contentsOf: g.appFile()) == before)
  }

  @Test func aMissingRootIsSaidAndANewOneAnnounced() throws {
    let sandbox = try Sandbox()
    let root = sandbox.path + "/new-root"
    func groupctl(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
      try Product.run("groupctl", ["--root", root] + args, environment: ["APPGROUPS_ROOT": root])
    }
    let missing =
      "groupctl: there is no root at \(root) (choose one with --root or APPGROUPS_ROOT)\n"
    for args in [["domains"], ["find", "x"], ["list"]] {
      let result = try groupctl(args)
      #expect(result.status == 0, "\(args)")
      #expect(result.stderr == missing, "\(args)")
    }
    #expect(!FileManager.default.fileExists(atPath: root))
    let created = try groupctl(["write", Self.app, "k", "v"])
    #expect(created.status == 0)
    #expect(
      created.stderr
        == "groupctl: created the root \(root) (choose another with --root or APPGROUPS_ROOT)\n")
    #expect(try groupctl(["write", Self.app, "k", "w"]).stderr.isEmpty)
  }

  // MARK: --as

  @Test func asAnAppTheManifestDecides() throws {
    let g = try GroupctlRoot()
    try g.ok(["--as", TestRoot.widget, "write", Self.group, "k", "v"])
    try g.ok(["--as", TestRoot.widget, "write", TestRoot.widget, "mine", "1"])
    try g.ok(["--as", TestRoot.widget, "write", "\(TestRoot.widget):private", "p", "1"])
    try g.ok(["--as", TestRoot.widget, "write", "-g", "shared", "1"])
    #expect(try g.ok(["read", Self.group, "k", "--as", TestRoot.app]) == "v\n")
    #expect(
      FileManager.default.fileExists(atPath: g.appFile(TestRoot.widget, suite: "private").path))

    let cases: [([String], String)] = [
      (
        ["--as", "com.example.stranger", "read", Self.group],
        "com.example.stranger is not entitled to \(Self.group) (manifest: \(g.root.manifestURL.path))"
      ),
      (
        ["--as", TestRoot.widget, "write", Self.app, "k", "v"],
        "\(TestRoot.widget) cannot open \(Self.app): it belongs to \(Self.app)"
      ),
      (["--as", TestRoot.widget, "read", "\(Self.app):settings"], "it belongs to \(Self.app)"),
      (["--as", "bad/id", "read", Self.group], "invalid bundle identifier \"bad/id\""),
    ]
    for (args, message) in cases {
      let result = try g.run(args)
      #expect(result.status == 1, "\(args)")
      #expect(result.stdout.isEmpty)
      #expect(result.stderr.contains(message), "\(args): \(result.stderr)")
    }
  }
}

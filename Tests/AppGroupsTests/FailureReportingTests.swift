import AppGroups
import AppGroupsTestSupport
import Foundation
import Synchronization
import Testing

/// A write the disk refuses exits non-zero and says why (the system call, the path, the errno
/// text), and the values already there stay; an exit 0 means on disk.
@Suite("Failures say why", .processBound)
struct FailureReportingTests {
  static let isRoot = getuid() == 0
  static let setpriv = "/usr/bin/setpriv"

  @Test func anErrorSaysItsCauseOnce() {
    struct Cause: Error, CustomStringConvertible {
      var description: String { "open(/x): Permission denied" }
    }
    let said = AppGroupsError(.io, "reading /x: open(/x): Permission denied", cause: Cause())
    #expect(said.description == "reading /x: open(/x): Permission denied")
    let unsaid = AppGroupsError(.io, "reading /x", cause: Cause())
    #expect(unsaid.description == "reading /x (open(/x): Permission denied)")
  }

  @Test(
    .enabled(if: isRoot && FileManager.default.isExecutableFile(atPath: setpriv),
      "needs root and setpriv(1) to act as an unprivileged user"))
  func aWriteIntoAReadOnlyFolderExitsNonZeroNamingEACCESAndKeepsTheOldValue() throws {
    let t = try TestRoot()
    let first = try Product.run(
      "groupctl", ["write", TestRoot.group, "k", "old"], environment: ["APPGROUPS_ROOT": t.path])
    #expect(first.status == 0, "\(first.stderr)")
    // The whole root belongs to an unprivileged user, whose Preferences folder is read-only.
    chmod(t.sandbox.path, 0o755)
    let enumerator = FileManager.default.enumerator(atPath: t.path)
    chown(t.path, 65534, 65534)
    while let relative = enumerator?.nextObject() as? String {
      lchown(t.path + "/" + relative, 65534, 65534)
    }
    let folder = t.groupSuiteFile.deletingLastPathComponent().path
    chmod(folder, 0o500)
    defer { chmod(folder, 0o700) }
    let result = try runAsNobody(["write", TestRoot.group, "k", "new"], root: t.path)
    #expect(result.status == 1, "\(result.stderr)")
    #expect(result.stderr.contains("Permission denied"), "\(result.stderr)")
    #expect(result.stderr.contains(folder), "\(result.stderr)")
    #expect(result.stderr.contains("not written"), "\(result.stderr)")
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile)["k"] as? String == "old")
  }

  @Test(.enabled(if: isRoot, "needs root to mount a small tmpfs"))
  func aWriteOntoAFullDiskExitsNonZeroNamingENOSPCAndKeepsTheOldValue() throws {
    let sandbox = try Sandbox()
    let mount = sandbox.path + "/disk"
    try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
    let mounted = try ChildProcess(
      executable: URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=512k", "tmpfs", mount])
    try #require(mounted.wait(timeout: 60) == 0, "mount -t tmpfs: \(mounted.standardError)")
    defer {
      let unmount = try? ChildProcess(executable: URL(fileURLWithPath: "/bin/umount"), [mount])
      _ = unmount?.wait(timeout: 60)
    }
    let root = ContainerRoot(path: mount)
    try EntitlementManifest.grant(TestRoot.app, groups: [TestRoot.group], root: root)
    let environment = ["APPGROUPS_ROOT": mount]
    let first = try Product.run("groupctl", ["write", TestRoot.group, "k", "old"], environment: environment)
    #expect(first.status == 0, "\(first.stderr)")
    // Fill the disk to the last block.
    let filler = open(mount + "/filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
    try #require(filler >= 0)
    let block = [UInt8](repeating: 0xAB, count: 4096)
    while block.withUnsafeBytes({ write(filler, $0.baseAddress, $0.count) }) > 0 {}
    close(filler)
    let big = String(repeating: "x", count: 64 * 1024)
    let result = try Product.run("groupctl", ["write", TestRoot.group, "k", big], environment: environment)
    #expect(result.status == 1, "\(result.stderr)")
    #expect(result.stderr.contains("No space left on device"), "\(result.stderr)")
    #expect(result.stderr.contains("not written"), "\(result.stderr)")
    let file = URL(fileURLWithPath: mount + "/Shared/AppGroup/\(TestRoot.group)/Library/Preferences/\(TestRoot.group).plist")
    #expect(try TestRoot.readOnDisk(file)["k"] as? String == "old")
    // No temporary file is left on the full disk.
    #expect(entries(of: file.deletingLastPathComponent()).filter { $0.contains(".tmp-") } == [])
    // An increment there fails, leaves nothing pending and says no more than that.
    let said = Mutex<[String]>([])
    let defaults = try GroupDefaults(
      suiteName: TestRoot.group, identity: AppIdentity(bundleIdentifier: TestRoot.app), root: root)
    _ = Diagnostics.withHandler({ line in said.withLock { $0.append(line) } }) {
      #expect(throws: AppGroupsError.self) { try defaults.increment(forKey: "counter") }
    }
    let reports = said.withLock { $0 }.filter { $0.contains("No space left on device") }
    #expect(!reports.isEmpty, "\(said.withLock { $0 })")
    #expect(reports.allSatisfy { $0.contains("no change of this process is pending") }, "\(reports)")
    #expect(!reports.contains { $0.contains("are retried") }, "\(reports)")
    #expect(try TestRoot.readOnDisk(file)["counter"] == nil)
  }

  @Test func anEditInPlaceThatKeepsSizeAndModificationTimeIsNotWrittenOver() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set("aaaa", forKey: "k")
    #expect(d.synchronize())
    let path = t.groupSuiteFile.path
    var before = stat()
    #expect(stat(path, &before) == 0)
    // Another tool rewrites the file in place, same size, and sets its modification time back.
    let edited = try PropertyListSerialization.data(
      fromPropertyList: ["k": "bbbb"], format: .binary, options: 0)
    let original = try Data(contentsOf: t.groupSuiteFile)
    try #require(edited.count == original.count)
    let fd = open(path, O_WRONLY | O_CLOEXEC)
    try #require(fd >= 0)
    _ = edited.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    var times = [before.st_atim, before.st_mtim]
    #expect(futimens(fd, &times) == 0)
    close(fd)
    // The next commit must merge on top of the edit, not write the old value back.
    d.set("x", forKey: "other")
    #expect(d.synchronize())
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["k"] as? String == "bbbb")
    #expect(onDisk["other"] as? String == "x")
    #expect(d.string(forKey: "k") == "bbbb")
  }

  @Test func groupctlRefusesArgumentsThatAreNotUTF8NamingThem() throws {
    let t = try TestRoot()
    let groupctl = Product.url("groupctl").path
    // Two keys that differ only in bytes that are not UTF-8 would both become "\u{FFFD}".
    let child = try ChildProcess(
      executable: URL(fileURLWithPath: "/bin/sh"),
      ["-c", "\"$GROUPCTL\" write \(TestRoot.group) \"$(printf 'k\\377')\" v; echo \"exit $?\""],
      environment: ["GROUPCTL": groupctl, "APPGROUPS_ROOT": t.path])
    #expect(child.waitFor("exit 64"), "\(child.standardError)")
    #expect(child.wait() == 0)  // and stderr read to its end
    #expect(child.standardError.contains("argument 3"), "\(child.standardError)")
    #expect(child.standardError.contains("k\\xff"), "\(child.standardError)")
    #expect(child.standardError.contains("not valid UTF-8"), "\(child.standardError)")
    #expect(!FileManager.default.fileExists(atPath: t.groupSuiteFile.path))
    let root = try ChildProcess(
      executable: URL(fileURLWithPath: "/bin/sh"),
      ["-c", "APPGROUPS_ROOT=\"$(printf '/tmp/r\\377')\" \"$GROUPCTL\" list; echo \"exit $?\""],
      environment: ["GROUPCTL": groupctl])
    #expect(root.waitFor("exit 64"), "\(root.standardError)")
    #expect(root.wait() == 0)
    #expect(root.standardError.contains("APPGROUPS_ROOT"), "\(root.standardError)")
  }

  private func runAsNobody(_ arguments: [String], root: String) throws -> (status: Int32, stderr: String) {
    let child = try ChildProcess(
      executable: URL(fileURLWithPath: Self.setpriv),
      ["--reuid=65534", "--regid=65534", "--clear-groups", Product.url("groupctl").path] + arguments,
      environment: ["APPGROUPS_ROOT": root, "HOME": "/nonexistent"])
    let status = child.wait(timeout: 60) ?? -1
    return (status, child.standardError)
  }
}

/// A file another tool wrote with one value this package cannot hold: the other keys stay
/// readable and live, a copy of the whole file is kept before anything is written over it,
/// and the diagnostic says which key and where the copy is.
@Suite("Salvage, don't drop")
struct SalvageTests {
  @Test func aValueTheModelCannotHoldCostsOnlyThatKeyAndTheFileIsKeptAside() throws {
    let t = try TestRoot()
    let file = t.groupSuiteFile
    try FileManager.default.createDirectory(
      at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
    // { "archived": UID(1), "name": "kept", "count": 7 }
    let objects: [[UInt8]] = [
      [0xD3, 1, 2, 3, 4, 5, 6],
      CraftedPropertyList.ascii("archived"), CraftedPropertyList.ascii("name"),
      CraftedPropertyList.ascii("count"), [0x80, 0x01], CraftedPropertyList.ascii("kept"), [0x10, 0x07],
    ]
    let original = CraftedPropertyList.file(objects: objects, referenceSize: 1)
    try original.write(to: file)
    let messages = MessageLog()
    let d = try Diagnostics.withHandler({ messages.append($0) }) { try t.defaults(TestRoot.group) }
    #expect(d.string(forKey: "name") == "kept")
    #expect(d.integer(forKey: "count") == 7)
    #expect(d.object(forKey: "archived") == nil)
    let line = messages.lines.first { $0.contains(file.path) && $0.contains("archived") }
    #expect(line != nil, "\(messages.lines)")
    let folder = file.deletingLastPathComponent()
    let copies = entries(of: folder).filter { $0.hasPrefix("\(TestRoot.group).plist.unreadable-") }
    try #require(copies.count == 1)
    #expect(line?.contains(copies[0]) == true)
    #expect(try Data(contentsOf: folder.appendingPathComponent(copies[0])) == original)
    // A later write keeps the other keys on disk.
    d.set("new", forKey: "added")
    #expect(d.synchronize())
    let onDisk = try TestRoot.readOnDisk(file)
    #expect(onDisk["name"] as? String == "kept")
    #expect(onDisk["count"] as? Int == 7)
    #expect(onDisk["added"] as? String == "new")
  }
}

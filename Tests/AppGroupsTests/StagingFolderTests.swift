@testable import AppGroups
import AppGroupsTestSupport
import Dispatch
import Foundation
import Glibc
import Testing

/// A preferences file's new versions are made and named in its folder's staging folder, which
/// nobody watches, then renamed over it.
@Suite("Staging folder")
struct StagingFolderTests {
  @Test func theStagingFolderIsMadePrivateAndLeftEmpty() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    _ = try PropertyListFile.write(["k": .string("v")], to: path, notBefore: nil)
    let staging = sandbox.path + "/" + PropertyListFile.stagingFolderName
    var info = stat()
    #expect(lstat(staging, &info) == 0)
    #expect(info.st_mode & S_IFMT == S_IFDIR)
    #expect(info.st_mode & 0o777 == 0o700)
    #expect(try FileManager.default.contentsOfDirectory(atPath: staging) == [])
    #expect(try value(at: path) == .string("v"))
  }

  @Test func aTemporaryFileLeftInTheStagingFolderIsRemovedByTheNextWrite() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    let staging = sandbox.path + "/" + PropertyListFile.stagingFolderName
    try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: false)
    // A writer killed between naming its temporary file and renaming it.
    let leftover = staging + "/" + FileSystem.temporaryPrefix(for: "suite.plist") + "99999999-1"
    #expect(FileManager.default.createFile(atPath: leftover, contents: Data("old".utf8)))
    let other = staging + "/" + FileSystem.temporaryPrefix(for: "other.plist") + "99999999-1"
    #expect(FileManager.default.createFile(atPath: other, contents: Data("other".utf8)))

    _ = try PropertyListFile.write(["k": .string("v")], to: path, notBefore: nil)
    #expect(!FileManager.default.fileExists(atPath: leftover))
    // Another file's temporary file is its own writer's to remove.
    #expect(FileManager.default.fileExists(atPath: other))
  }

  @Test func everyLeftoverOfAFullStagingFolderIsRemovedAndNoOtherEntry() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    let staging = sandbox.path + "/" + PropertyListFile.stagingFolderName
    try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: false)
    // More entries than one read of the folder returns (a few kilobytes of names).
    let prefix = FileSystem.temporaryPrefix(for: "suite.plist")
    var kept: [String] = []
    for n in 0..<300 {
      #expect(FileManager.default.createFile(atPath: staging + "/" + prefix + "99999999-\(n)", contents: nil))
      let other = FileSystem.temporaryPrefix(for: "suite.plist.journal") + "99999999-\(n)"
      #expect(FileManager.default.createFile(atPath: staging + "/" + other, contents: nil))
      kept.append(other)
    }
    _ = try PropertyListFile.write(["k": .string("v")], to: path, notBefore: nil)
    #expect(try FileManager.default.contentsOfDirectory(atPath: staging).sorted() == kept.sorted())
    #expect(try value(at: path) == .string("v"))
  }

  @Test func aWriteThatFailsStillRemovesWhatKilledWritersLeftAndKeepsTheFile() throws {
    let sandbox = try Sandbox()
    let (path, staged, named) = try suiteWithLeftovers(in: sandbox)
    #expect(throws: AppGroupsError.self) {
      try PropertyListFile.write(
        ["k": .string("new")], to: path, notBefore: nil,
        beforeRename: { () throws(SystemCallError) in throw SystemCallError(call: "write", path: path, errno: EIO) })
    }
    #expect(!FileManager.default.fileExists(atPath: staged))
    #expect(!FileManager.default.fileExists(atPath: named))
    #expect(try value(at: path) == .string("old"))
    let staging = sandbox.path + "/" + PropertyListFile.stagingFolderName
    #expect(try FileManager.default.contentsOfDirectory(atPath: staging) == [])
  }

  @Test func aWriteThatFindsTheDiskFullIsTriedOnceMoreAfterTheLeftoversAreRemoved() throws {
    let sandbox = try Sandbox()
    let (path, staged, named) = try suiteWithLeftovers(in: sandbox)
    // Full while the leftovers are there: the first attempt fails, the second finds them gone.
    var attempts = 0
    var leftoversAtEachAttempt: [Bool] = []
    _ = try PropertyListFile.write(
      ["k": .string("new")], to: path, notBefore: nil,
      beforeRename: { () throws(SystemCallError) in
        attempts += 1
        let left = FileManager.default.fileExists(atPath: staged) || FileManager.default.fileExists(atPath: named)
        leftoversAtEachAttempt.append(left)
        if left { throw SystemCallError(call: "fsync", path: path, errno: ENOSPC) }
      })
    #expect(attempts == 2)
    #expect(leftoversAtEachAttempt == [true, false])
    #expect(try value(at: path) == .string("new"))
    // A disk that stays full: one more attempt, then the failure, the file as it was.
    var tries = 0
    #expect(throws: AppGroupsError.self) {
      try PropertyListFile.write(
        ["k": .string("newer")], to: path, notBefore: nil,
        beforeRename: { () throws(SystemCallError) in
          tries += 1
          throw SystemCallError(call: "fsync", path: path, errno: ENOSPC)
        })
    }
    #expect(tries == 2)
    #expect(try value(at: path) == .string("new"))
  }

  @Test func aStagingFolderThatARenameWasRefusedFromIsStillCleaned() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    FileSystem.injectRenameAcrossFailure.withLock { _ = $0.insert(path) }
    defer { FileSystem.injectRenameAcrossFailure.withLock { _ = $0.remove(path) } }
    _ = try PropertyListFile.write(["k": .string("x")], to: path, notBefore: nil)
    // Another process, whose renames across are allowed, killed between its name and its rename.
    let staging = sandbox.path + "/" + PropertyListFile.stagingFolderName
    let leftover = staging + "/" + FileSystem.temporaryPrefix(for: "suite.plist") + "99999999-1"
    #expect(FileManager.default.createFile(atPath: leftover, contents: Data("old".utf8)))
    _ = try PropertyListFile.write(["k": .string("v")], to: path, notBefore: nil)
    #expect(!FileManager.default.fileExists(atPath: leftover))
    #expect(try value(at: path) == .string("v"))
  }

  @Test func aRenameAcrossThatIsRefusedNamesTheFileInItsOwnFolderInstead() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    FileSystem.injectRenameAcrossFailure.withLock { _ = $0.insert(path) }
    defer { FileSystem.injectRenameAcrossFailure.withLock { _ = $0.remove(path) } }
    var checks = 0
    _ = try PropertyListFile.write(["k": .string("x")], to: path, notBefore: nil, beforeRename: { checks += 1 })
    // Written again and renamed from the file's own folder (Landlock's first version refuses
    // every rename between folders with EXDEV); the next write goes there at once.
    #expect(checks == 2)
    _ = try PropertyListFile.write(["k": .string("v")], to: path, notBefore: nil, beforeRename: { checks += 1 })
    #expect(checks == 3)
    #expect(try value(at: path) == .string("v"))
    let staging = PropertyListFile.stagingFolderName
    #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.path + "/" + staging) == [])
    #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.path).sorted() == [staging, "suite.plist"])
  }

  @Test func aStagingFolderThatIsALinkIsNeitherWrittenThroughNorCleanedThrough() throws {
    let sandbox = try Sandbox()
    let outside = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    let staging = sandbox.path + "/" + PropertyListFile.stagingFolderName
    #expect(symlink(outside.path, staging) == 0)
    let planted = outside.path + "/" + FileSystem.temporaryPrefix(for: "suite.plist") + "99999999-1"
    #expect(FileManager.default.createFile(atPath: planted, contents: Data("not ours".utf8)))

    var outsideAtRename: [String] = []
    _ = try PropertyListFile.write(
      ["k": .string("v")], to: path, notBefore: nil,
      beforeRename: { outsideAtRename = (try? FileManager.default.contentsOfDirectory(atPath: outside.path)) ?? [] })
    // Named in the file's own folder instead, and nothing beyond the link was touched.
    #expect(outsideAtRename == [FileSystem.lastComponent(of: planted)])
    #expect(FileManager.default.fileExists(atPath: planted))
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: staging) == outside.path)
    #expect(try value(at: path) == .string("v"))
  }
}

/// A sandboxed process (Landlock) commits through the staging folder too: the rename across
/// folders needs the `refer` right, which a container's rule grants; refused, the commit would
/// name its temporary file in the suite's folder, and the watcher below would hear it.
@Suite(
  "Staging folder: sandboxed", .processBound,
  .enabled(if: landlockAvailable, "the kernel offers no Landlock"))
struct StagingFolderSandboxTests {
  @Test func aSandboxedCommitIsHeardOnceByAWatcherOfTheSuitesFolder() throws {
    let s = try SandboxRoot()
    let folder = s.groupPreferences(TestRoot.group)
    let events = AppGroups.Mutex<[DirectoryWatcher.Event]>([])
    let arrived = DispatchSemaphore(value: 0)
    let watcher = DirectoryWatcher { batch in
      events.withLock { $0 += batch }
      arrived.signal()
    }
    defer { watcher.close() }
    let watch = try watcher.watch(directory: folder)
    defer { watch.cancel() }

    let app = try s.run(
      as: TestRoot.app, [], [SandboxRoot.worker, "set", TestRoot.group, "greeting", "hello"],
      environment: ["APPGROUPS_WORKER_NO_WAIT": "1"])
    #expect(app.status == 0, "\(app.stderr)")
    let plist = TestRoot.group + ".plist"
    let deadline = Date(timeIntervalSinceNow: 20)
    while !events.withLock({ $0.contains { $0.name == plist && $0.kind == .movedTo } }) {
      guard arrived.wait(timeout: .now() + deadline.timeIntervalSinceNow) == .success else { break }
    }
    let heard = events.withLock { $0 }
    #expect(heard.contains { $0.name == plist && $0.kind == .movedTo }, "\(heard)")
    #expect(heard.filter { $0.name.contains(".tmp-") } == [], "the temporary file was named in the suite's folder")
    #expect(try s.g.ok(["read", TestRoot.group, "greeting"]) == "hello\n")
  }
}

/// The value of `k` in the property list at `path`.
private func value(at path: String) throws -> PropertyListValue? {
  guard case .values(let values, _) = try PropertyListFile.read(path) else { return nil }
  return values["k"]
}

/// A suite file holding "old" in `sandbox`, and a leftover temporary of a killed writer in
/// each of its folders (the staging folder's and its own): on a full disk, what a retry needs gone.
private func suiteWithLeftovers(in sandbox: Sandbox) throws -> (path: String, staged: String, named: String) {
  let path = sandbox.path + "/suite.plist"
  _ = try PropertyListFile.write(["k": .string("old")], to: path, notBefore: nil)
  let prefix = FileSystem.temporaryPrefix(for: "suite.plist")
  let staged = sandbox.path + "/" + PropertyListFile.stagingFolderName + "/" + prefix + "99999999-1"
  let named = sandbox.path + "/" + prefix + "99999999-2"
  #expect(FileManager.default.createFile(atPath: staged, contents: Data("left".utf8)))
  #expect(FileManager.default.createFile(atPath: named, contents: Data("left".utf8)))
  return (path, staged, named)
}

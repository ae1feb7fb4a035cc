@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// What a read of a preferences file says of something other than a regular file at its path:
/// the open neither follows a link nor waits, and the path is looked at only when the open (or
/// its check) fails, to say what is there.
@Suite("Property-list file read")
struct PropertyListFileReadTests {
  /// `path`'s kind and identity as `lstat(2)` sees them.
  private func looked(_ path: String) throws -> FileSystem.LinkEntry {
    guard let entry = try FileSystem.linkEntry(path) else {
      Issue.record("nothing at \(path)")
      throw CocoaError(.fileNoSuchFile)
    }
    return entry
  }

  private func expectUnreadable(
    _ path: String, _ reason: String, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let entry = try looked(path)
    for indexing in [false, true] {
      guard case .unreadable(let why, let identity) = try PropertyListFile.read(path, indexing: indexing) else {
        Issue.record("\(path) is read, indexing \(indexing)", sourceLocation: sourceLocation)
        continue
      }
      #expect(why == reason, sourceLocation: sourceLocation)
      #expect(identity == entry.identity, sourceLocation: sourceLocation)
      // As when the caller looked first and hands the look on.
      guard case .unreadable(let given, let givenIdentity) = try PropertyListFile.read(
        path, indexing: indexing, looked: entry)
      else {
        Issue.record("\(path) is read with a look given", sourceLocation: sourceLocation)
        continue
      }
      #expect(given == why && givenIdentity == identity, sourceLocation: sourceLocation)
    }
  }

  @Test func aSymbolicLinkIsUnreadableAndNotFollowed() throws {
    let sandbox = try Sandbox()
    let target = sandbox.path + "/target.plist"
    _ = try PropertyListFile.write(["k": .string("v")], to: target, notBefore: nil)
    let path = sandbox.path + "/suite.plist"
    #expect(symlink(target, path) == 0)
    try expectUnreadable(path, "it is a symbolic link, not a regular file")
    // A link to nothing too.
    let dangling = sandbox.path + "/dangling.plist"
    #expect(symlink(sandbox.path + "/nothing.plist", dangling) == 0)
    try expectUnreadable(dangling, "it is a symbolic link, not a regular file")
  }

  @Test func aFifoIsUnreadableWithoutWaitingForAWriter() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    #expect(mkfifo(path, 0o600) == 0)
    // No writer ever opens it: a read that waited for one would never return.
    try expectUnreadable(path, "it is a fifo, not a regular file")
  }

  @Test func aFolderIsUnreadable() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    try expectUnreadable(path, "it is a folder, not a regular file")
  }

  @Test func aFileOverTheBoundIsUnreadableAndNotRead() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    // Sparse: a read of it whole would take a terabyte of memory.
    #expect(FileManager.default.createFile(atPath: path, contents: nil))
    #expect(truncate(path, 1 << 40) == 0)
    try expectUnreadable(
      path, "it holds \(1 << 40) bytes, more than the \(PropertyListFile.maximumBytes) bytes it may hold")
  }

  @Test func aFileOfTheBoundIsReadAndOneByteMoreIsNot() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/bytes"
    try Data(repeating: 7, count: 10).write(to: URL(fileURLWithPath: path))
    #expect(try FileSystem.readFile(path, atMost: 10)?.0 == Data(repeating: 7, count: 10))
    #expect {
      _ = try FileSystem.readFile(path, atMost: 9)
    } throws: { error in
      (error as? SystemCallError)?.reason == "it holds 10 bytes, more than the 9 bytes it may hold"
    }
    // Told no bound, a read takes the package's: a sparse terabyte is refused, unread.
    #expect(truncate(path, 1 << 40) == 0)
    #expect {
      _ = try FileSystem.read(path)
    } throws: { error in
      (error as? SystemCallError)?.isTooLarge == true
    }
  }

  @Test func nothingAtThePathIsMissingAndARegularFileIsRead() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/suite.plist"
    guard case .missing = try PropertyListFile.read(path) else {
      Issue.record("nothing at the path is not missing")
      return
    }
    let written = try PropertyListFile.write(["k": .integer(1)], to: path, notBefore: nil)
    guard case .values(let values, let identity) = try PropertyListFile.read(path) else {
      Issue.record("a regular file is not read")
      return
    }
    #expect(values == ["k": .integer(1)])
    #expect(identity == written)
  }
}

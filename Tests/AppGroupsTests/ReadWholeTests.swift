import AppGroupsTestSupport
import Foundation
import Testing

@testable import AppGroups

/// `FileSystem.read(_:followLinks:)` reads a regular file whole: the size it has, or, for a
/// file that says 0 bytes (`/proc`), until a read returns none, growing its memory meanwhile.
@Suite("Reading whole files")
struct ReadWholeTests {
  @Test func aRegularFileIsReadWholeWhateverItsSize() throws {
    let sandbox = try Sandbox()
    for size in [0, 1, 14, 15, 4096, 100_003] {
      let path = sandbox.path + "/file-\(size)"
      let bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
      #expect(FileManager.default.createFile(atPath: path, contents: bytes))
      let (read, identity) = try #require(try FileSystem.read(path))
      #expect(read == bytes, "size \(size)")
      #expect(identity == (try FileSystem.identity(ofPath: path)))
    }
    #expect(try FileSystem.read(sandbox.path + "/missing") == nil)
  }

  @Test func aFileThatSaysNoSizeIsReadUntilItEnds() throws {
    // The kernel says 0 bytes for it; it holds this process's arguments, NUL after each.
    let path = "/proc/self/cmdline"
    let expected = try #require(FileManager.default.contents(atPath: path))
    #expect(expected.count > 1)
    let (read, _) = try #require(try FileSystem.read(path))
    #expect(read == expected)
  }
}

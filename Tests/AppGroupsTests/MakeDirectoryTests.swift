import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

@testable import AppGroups

/// `FileSystem.makeDirectory(_:within:)` walks a plain path (an ASCII root, then components
/// with single slashes) on its bytes, and any other path over its components: both make the
/// same folders and refuse the same things, naming the same folder.
@Suite("Making folders")
struct MakeDirectoryTests {
  /// What a call did: the error's call, path and errno (or nil), and the folders below `base`.
  struct Outcome: Equatable, CustomStringConvertible {
    var error: String?
    var folders: [String]
    var description: String { "\(error ?? "made") \(folders)" }
  }

  func outcome(_ base: String, _ path: String, within root: String) -> Outcome {
    var failure: String?
    do throws(SystemCallError) {
      try FileSystem.makeDirectory(path, within: root)
    } catch {
      failure = "\(error.call) \(error.path ?? "-") \(error.errno)"
    }
    let found = (try? FileManager.default.subpathsOfDirectory(atPath: base)) ?? []
    let folders = found.filter { name in
      var s = stat()
      return lstat(base + "/" + name, &s) == 0 && s.st_mode & S_IFMT == S_IFDIR
        && s.st_mode & 0o777 == 0o700
    }
    return Outcome(error: failure, folders: folders.sorted())
  }

  /// A fresh tree: `real/` a folder, `file` a regular file, `link` a link to `real`.
  func tree(_ sandbox: Sandbox, _ name: String) throws -> String {
    let base = sandbox.path + "/" + name
    #expect(mkdir(base, 0o700) == 0)
    #expect(mkdir(base + "/real", 0o700) == 0)
    #expect(FileManager.default.createFile(atPath: base + "/file", contents: Data("x".utf8)))
    #expect(symlink(base + "/real", base + "/link") == 0)
    return base
  }

  @Test func aPlainPathIsWalkedAsItsComponentsAre() throws {
    let sandbox = try Sandbox()
    let cases: [(String, String?)] = [
      ("a/b/c", nil), ("real/x", nil), ("real", nil), ("", nil),
      ("link/x", "mkdir ROOT/link \(ELOOP)"), ("link", "mkdir ROOT/link \(ELOOP)"),
      ("file/x", "mkdir ROOT/file \(ENOTDIR)"), ("a/file/../x", nil),
      ("real/../link/y", "mkdir ROOT/real/../link \(ELOOP)"),
    ]
    for (index, (relative, expected)) in cases.enumerated() {
      // The plain shape (walked on its bytes) and the same path with a doubled slash (walked
      // over its components) make the same folders and fail alike.
      let plainBase = try tree(sandbox, "plain\(index)")
      let plainPath = relative.isEmpty ? plainBase : plainBase + "/" + relative
      let plain = outcome(plainBase, plainPath, within: plainBase)
      let walkedBase = try tree(sandbox, "walked\(index)")
      let walkedPath =
        relative.isEmpty ? walkedBase + "/" : walkedBase + "//" + relative.replacingOccurrences(of: "/", with: "//")
      var walked = outcome(walkedBase, walkedPath, within: walkedBase)
      walked.error = walked.error?.replacingOccurrences(of: walkedBase, with: plainBase)
      #expect(plain == walked, "\(relative)")
      #expect(plain.error == expected?.replacingOccurrences(of: "ROOT", with: plainBase), "\(relative)")
    }
  }

  @Test func aRootThatIsNotASCIIIsWalkedOverItsComponents() throws {
    let sandbox = try Sandbox()
    let root = sandbox.path + "/r\u{E9}"
    #expect(mkdir(root, 0o700) == 0)
    try FileSystem.makeDirectory(root + "/a/b", within: root)
    #expect(outcome(root, root, within: root) == Outcome(error: nil, folders: ["a", "a/b"]))
    #expect(symlink(root + "/a", root + "/l") == 0)
    #expect(outcome(root, root + "/l/c", within: root).error == "mkdir \(root)/l \(ELOOP)")
  }
}

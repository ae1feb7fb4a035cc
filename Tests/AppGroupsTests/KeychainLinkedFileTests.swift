import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A symbolic link planted at an access group's `keychain.plist` (any member of the group may
/// write in its folder) is moved aside by the next write, as a file of another format is, and
/// never read or written through: the group's keychain is not blocked until someone removes
/// it, and what the link leads to is left as it is.
@Suite("Keychain: a link at the items file", .processBound)
struct KeychainLinkedFileTests {
  let k: KeychainRoot

  init() throws {
    k = try KeychainRoot()
  }

  var folder: URL { k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared) }

  func groupctl(_ args: [String], stdin: Data? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
    try Product.run(
      "groupctl", ["--root", k.path, "--as", KeychainRoot.app] + args,
      environment: k.environment(), stdin: stdin)
  }

  /// Plants a link at the items file leading to `target`, then adds an item and reads it back.
  func plantThenAdd(leadingTo target: URL) throws {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let file = folder.appendingPathComponent("keychain.plist")
    try FileManager.default.createSymbolicLink(at: file, withDestinationURL: target)
    let add = try groupctl(
      ["keychain", "add-generic-password", "-a", "alice", "-s", "svc", "-w"],
      stdin: Data("pw-alice\n".utf8))
    #expect(add.status == 0, "\(add)")
    #expect(add.stderr.contains("is a symbolic link, not a keychain file; it was moved to"), "\(add.stderr)")
    #expect(!add.stderr.contains("pw-alice"))
    let aside = try FileManager.default.contentsOfDirectory(atPath: folder.path)
      .filter { $0.hasPrefix("keychain.plist.unreadable-") }
    #expect(aside.count == 1, "\(aside)")
    if let name = aside.first {
      let kept = folder.appendingPathComponent(name).path
      #expect(try FileManager.default.destinationOfSymbolicLink(atPath: kept) == target.path)
    }
    let find = try groupctl(["keychain", "find-generic-password", "-a", "alice", "-w"])
    #expect(find.status == 0, "\(find)")
    #expect(find.stdout == "pw-alice\n", "\(find.stdout.count) bytes")
  }

  @Test func aLinkLeadingNowhereIsMovedAsideAndNothingIsMadeWhereItLeads() throws {
    let target = URL(fileURLWithPath: k.path).appendingPathComponent("outside.plist")
    try plantThenAdd(leadingTo: target)
    #expect(!FileManager.default.fileExists(atPath: target.path))
  }

  @Test func aLinkToAnotherFileIsMovedAsideAndThatFileIsLeftAsItIs() throws {
    let target = URL(fileURLWithPath: k.path).appendingPathComponent("other.plist")
    try Data("not yours\n".utf8).write(to: target)
    try plantThenAdd(leadingTo: target)
    #expect(try Data(contentsOf: target) == Data("not yours\n".utf8))
  }

  /// The group's folder replaced by a symbolic link to a folder outside the root holding a
  /// valid copy of its items: a read refuses it as a write does, saying which folder is a
  /// link, and nothing there is read or changed. Reads followed it (and printed the copy's
  /// secret); writes said "Too many levels of symbolic links".
  @Test func aGroupFolderLinkedOutOfTheRootIsNeitherReadNorWrittenThrough() throws {
    let add = try groupctl(
      ["keychain", "add-generic-password", "-a", "alice", "-s", "svc", "-w", "pw-alice"])
    #expect(add.status == 0, "\(add)")
    let outside = FileManager.default.temporaryDirectory
      .appendingPathComponent("keychain-outside-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: outside) }
    try FileManager.default.moveItem(at: folder, to: outside)
    try FileManager.default.createSymbolicLink(at: folder, withDestinationURL: outside)
    func listing() throws -> [String: Data] {
      var files: [String: Data] = [:]
      for name in try FileManager.default.contentsOfDirectory(atPath: outside.path) {
        files[name] = try Data(contentsOf: outside.appendingPathComponent(name))
      }
      return files
    }
    let before = try listing()
    let refusal =
      "\(folder.path) is a symbolic link; the keychain never reads or writes through one"
    for args in [
      ["find-generic-password", "-a", "alice", "-w"],
      ["add-generic-password", "-a", "bob", "-s", "svc", "-w", "pw-bob"],
    ] {
      let result = try groupctl(["keychain"] + args)
      #expect(result.status == 1, "\(args): \(result)")
      #expect(result.stderr.contains(refusal), "\(args): \(result.stderr)")
      #expect(!result.stdout.contains("pw-alice") && !result.stderr.contains("pw-"))
    }
    #expect(try listing() == before, "what the link leads to changed")
  }
}

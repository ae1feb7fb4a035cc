import AppGroups
import AppGroupsKeychain
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// The keychain's bounds: an access group's file, an attribute, and the quoting of what
/// `groupctl keychain` prints.
@Suite("Keychain: bounds on a group's file and an attribute", .processBound)
struct KeychainBoundsTests {
  let k: KeychainRoot

  init() throws {
    k = try KeychainRoot()
  }

  var folder: String { k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared).path }
  var file: String { folder + "/keychain.plist" }

  @discardableResult
  func run(_ args: [String], as bundleID: String? = nil) throws -> (
    status: Int32, stdout: String, stderr: String
  ) {
    try Product.run(
      "groupctl",
      ["--root", k.path] + (bundleID.map { ["--as", $0] } ?? []) + ["keychain"] + args,
      environment: k.environment())
  }

  /// The file's size, and the names of the folder's entries.
  func onDisk() throws -> (size: Int, names: [String]) {
    var s = stat()
    #expect(stat(file, &s) == 0, "\(file): \(String(cString: strerror(errno)))")
    return (Int(s.st_size), try FileManager.default.contentsOfDirectory(atPath: folder).sorted())
  }

  /// A sparse file of `size` bytes as the group's file: no disk and no time to make.
  func plantFile(size: Int) throws {
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    try #require(fd >= 0)
    defer { close(fd) }
    try #require(ftruncate(fd, off_t(size)) == 0)
  }

  /// A group's file over the bound is refused by every call, named with the bound, and left
  /// where it is: not read (a 4 GiB file answers at once, its size taken before a byte is
  /// read), not moved aside, not changed. It was read whole, found not to be a keychain file,
  /// and moved aside: the group started empty.
  @Test func aFileOverTheBoundIsRefusedAndLeftAsItIs() throws {
    let bound = Keychain.maximumAccessGroupBytes
    #expect(bound == 16 << 20)
    for size in [bound + 1, 4 << 30] {
      try plantFile(size: size)
      let find = try run(["find-generic-password", "-s", "s"], as: KeychainRoot.app)
      try #require(find.status == 1, "\(size): \(find)")
      #expect(find.stderr.contains("errSecAllocate (-108)"), "\(find.stderr)")
      #expect(
        find.stderr.contains(file) && find.stderr.contains("\(bound) bytes"), "\(find.stderr)")
      let add = try run(
        ["add-generic-password", "-a", "a", "-s", "s", "-w", "pw-\(size)"], as: KeychainRoot.app)
      #expect(add.status == 1 && add.stderr.contains("errSecAllocate (-108)"), "\(add)")
      #expect(!add.stderr.contains("pw-\(size)"))
      let delete = try run(["delete-generic-password", "-s", "s"], as: KeychainRoot.app)
      #expect(delete.status == 1 && delete.stderr.contains(file), "\(delete)")
      // dump prints the other groups and exits non-zero naming the file.
      let dump = try run(["dump"])
      #expect(dump.status == 1 && dump.stderr.contains(file), "\(dump)")
      try asApp(k, KeychainRoot.app) {
        #expect(copy(genp("s")).0 == errSecAllocate)
        #expect(SecItemAdd(genp("s") as CFDictionary, nil) == errSecAllocate)
        #expect(SecItemDelete(genp("s") as CFDictionary) == errSecAllocate)
        do throws(KeychainError) {
          _ = try Keychain(service: "s", accessGroup: KeychainRoot.shared).get("a")
          Issue.record("read a file of \(size) bytes")
        } catch {
          #expect(error.code == .allocate && error.message.contains(file), "\(error)")
        }
      }
      let after = try onDisk()
      // Only the lock file the writers took is new: nothing moved aside, nothing removed.
      #expect(after.size == size, "\(after.size)")
      #expect(
        after.names.filter { $0 != "keychain.plist.lock" } == ["keychain.plist"],
        "\(after.names)")
    }
  }

  /// An add or an update that would grow the group's file past the bound is refused with
  /// errSecDiskFull and leaves the file as it was, byte for byte; a delete makes room again.
  /// The file grew without end.
  @Test func aWriteThatWouldPassTheBoundIsRefused() throws {
    let megabyte = Data(repeating: 0x5a, count: Keychain.maximumDataBytes)
    try asApp(k, KeychainRoot.app) {
      #expect(
        SecItemAdd(genp("small", [kSecValueData as String: Data("pw".utf8)]) as CFDictionary, nil)
          == errSecSuccess)
      var added = 0
      var status = errSecSuccess
      while status == errSecSuccess && added < 40 {
        status = SecItemAdd(
          genp("big", [kSecAttrAccount as String: "\(added)", kSecValueData as String: megabyte])
            as CFDictionary, nil)
        if status == errSecSuccess { added += 1 }
      }
      #expect(status == errSecDiskFull, "after \(added) items of 1 MiB: \(status)")
      #expect((12...15).contains(added), "\(added)")
      let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
      #expect(bytes.count <= Keychain.maximumAccessGroupBytes)
      // The small item's data grown to 1 MiB passes the bound too.
      #expect(
        SecItemUpdate(
          genp("small") as CFDictionary, [kSecValueData as String: megabyte] as CFDictionary)
          == errSecDiskFull)
      do throws(KeychainError) {
        try Keychain(service: "small", accessGroup: KeychainRoot.shared).set(megabyte, key: "")
        Issue.record("grew the file past the bound")
      } catch {
        #expect(error.code == .diskFull, "\(error)")
        #expect(error.message.contains(file) && error.message.contains("16777216"), "\(error)")
      }
      #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == bytes)
      let (found, data) = copy(genp("small", [kSecReturnData as String: true]))
      #expect(found == errSecSuccess && data as? Data == Data("pw".utf8))
      // A delete makes room.
      #expect(
        SecItemDelete(genp("big", [kSecAttrAccount as String: "0"]) as CFDictionary)
          == errSecSuccess)
      #expect(
        SecItemAdd(
          genp("big", [kSecAttrAccount as String: "again", kSecValueData as String: megabyte])
            as CFDictionary, nil) == errSecSuccess)
    }
  }

  /// An attribute longer than the bound (in bytes, not characters) is refused by SecItemAdd
  /// and SecItemUpdate with errSecParam, storing nothing; a search is not bounded. A 100 KB
  /// account was stored.
  @Test func anAttributeOverTheBoundIsRefused() throws {
    let bound = Keychain.maximumAttributeBytes
    #expect(bound == 16 << 10)
    try asApp(k, KeychainRoot.app) {
      let atBound = String(repeating: "a", count: bound)
      #expect(
        SecItemAdd(genp("s", [kSecAttrAccount as String: atBound]) as CFDictionary, nil)
          == errSecSuccess)
      let over: [(String, Any)] = [
        (kSecAttrAccount as String, String(repeating: "b", count: bound + 1)),
        (kSecAttrAccount as String, String(repeating: "é", count: bound / 2 + 1)),
        (kSecAttrAccount as String, String(repeating: "x", count: 100_000)),
        (kSecAttrLabel as String, String(repeating: "l", count: bound + 1)),
        (kSecAttrComment as String, String(repeating: "c", count: bound + 1)),
        (kSecAttrGeneric as String, Data(count: bound + 1)),
      ]
      for (key, value) in over {
        var attributes: [String: Any] = [kSecAttrAccount as String: "new"]
        attributes[key] = value
        #expect(SecItemAdd(genp("s", attributes) as CFDictionary, nil) == errSecParam, "add \(key)")
        #expect(
          SecItemUpdate(genp("s") as CFDictionary, [key: value] as CFDictionary) == errSecParam,
          "update \(key)")
      }
      let service = String(repeating: "s", count: bound + 1)
      #expect(
        SecItemAdd(genp(service, [kSecAttrAccount as String: "a"]) as CFDictionary, nil)
          == errSecParam)
      // Nothing was stored or changed: one item, its account as it was.
      let (status, found) = copy(
        genp("s", [
          kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
        ]))
      let items = found as? [[String: Any]] ?? []
      #expect(status == errSecSuccess && items.count == 1)
      #expect(items.first?[kSecAttrAccount as String] as? String == atBound)
      #expect(items.first?[kSecAttrLabel as String] == nil)
      // A search by a longer value is a search: nothing matches.
      #expect(
        copy(genp("s", [kSecAttrAccount as String: String(repeating: "b", count: bound + 1)])).0
          == errSecItemNotFound)
    }
    // groupctl names the attribute and the bound, never the value or the password.
    let account = String(repeating: "q", count: bound + 1)
    let secret = "never-printed-\(UUID().uuidString)"
    let add = try run(
      ["add-generic-password", "-a", account, "-s", "s", "-w", secret], as: KeychainRoot.app)
    #expect(add.status == 1, "\(add.stderr)")
    #expect(add.stderr.contains("kSecAttrAccount (acct) holds \(bound + 1) bytes"), "\(add.stderr)")
    #expect(add.stderr.contains("\(bound) bytes (16 KiB)"), "\(add.stderr)")
    #expect(!add.stderr.contains(String(repeating: "q", count: 40)) && !add.stderr.contains(secret))
    #expect(!add.stdout.contains(secret))
  }

  /// find, delete and dump print a value holding `"` or `\` escaped: it cannot end its quotes
  /// early and read as another attribute. They printed `"` and `\` as they are.
  @Test func quotesAndBackslashesPrintEscaped() throws {
    let account = #"x" "svce"<blob>="forged\"#
    let escaped = #"    "acct"<blob>="x\" \"svce\"<blob>=\"forged\\""#
    #expect(
      try run(["add-generic-password", "-a", account, "-s", "q", "-w", "pw"], as: KeychainRoot.app)
        .status == 0)
    let actions = [
      ["dump"], ["find-generic-password", "-s", "q"], ["delete-generic-password", "-s", "q"],
    ]
    for action in actions {
      let result = try run(action, as: KeychainRoot.app)
      #expect(result.status == 0, "\(action): \(result)")
      let lines = result.stdout.split(separator: "\n").map(String.init)
      #expect(lines.contains(escaped), "\(action): \(lines)")
    }
  }
}

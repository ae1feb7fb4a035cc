import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// `groupctl keychain delete-generic-password` deletes as `SecItemDelete` does, opening no
/// secret: an item whose sealed bytes were changed on disk (which `doctor` says to delete),
/// and an item whose class the locked device keeps closed. It found the item to delete with
/// `SecItemCopyMatching`, which opens every item it matches: a damaged item was "not found"
/// (exit 44) and could not be added again (a duplicate), and a locked one was refused.
@Suite("groupctl keychain delete", .processBound)
struct GroupctlKeychainDeleteTests {
  let k: KeychainRoot

  init() throws {
    k = try KeychainRoot()
  }

  @discardableResult
  func groupctl(_ args: [String], as bundleID: String? = KeychainRoot.app, stdin: Data? = nil) throws
    -> (status: Int32, stdout: String, stderr: String)
  {
    try Product.run(
      "groupctl", ["--root", k.path] + (bundleID.map { ["--as", $0] } ?? []) + args,
      environment: k.environment(), stdin: stdin)
  }

  func add(_ account: String, _ secret: String) throws -> Int32 {
    try groupctl(
      ["keychain", "add-generic-password", "-a", account, "-s", "svc", "-w"],
      stdin: Data((secret + "\n").utf8)
    ).status
  }

  /// Flips one bit of the sealed secret of the item of `account`, in place in the file.
  func damage(_ account: String) throws {
    let url = k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared)
      .appendingPathComponent("keychain.plist")
    var bytes = try Data(contentsOf: url)
    let plist = try PropertyListSerialization.propertyList(from: bytes, format: nil)
    let items = (plist as? [String: Any])?["Items"] as? [[String: Any]] ?? []
    let item = try #require(
      items.first { ($0["attributes"] as? [String: Any])?["acct"] as? String == account })
    let sealed = try #require(item["data"] as? Data)
    let range = try #require(bytes.range(of: sealed))
    bytes[range.lowerBound + sealed.count / 2] ^= 0x01
    try bytes.write(to: url)
  }

  @Test func anItemChangedOnDiskIsDeletedAndTheOthersStay() throws {
    for name in ["alice", "bob", "carol"] { #expect(try add(name, "pw-\(name)") == 0) }
    try damage("bob")
    let find = try groupctl(["keychain", "find-generic-password", "-a", "bob", "-w"])
    #expect(find.status == 44, "\(find)")
    // The note names the item by its attributes, never its secret.
    #expect(find.stderr.contains("(genp, acct \"bob\", svce \"svc\") does not open"), "\(find.stderr)")
    #expect(!find.stderr.contains("pw-"))
    let doctor = try groupctl(["doctor"], as: nil)
    #expect(doctor.stdout.contains("does not open with the class key"), "\(doctor.stdout)")
    #expect(doctor.stdout.contains("delete them with groupctl keychain delete-generic-password"))

    // As doctor says: the damaged item is deleted, and can be added again.
    let delete = try groupctl(["keychain", "delete-generic-password", "-a", "bob", "-s", "svc"])
    #expect(delete.status == 0, "\(delete)")
    #expect(delete.stdout.contains("\"acct\"<blob>=\"bob\""), "\(delete.stdout)")
    #expect(delete.stdout.hasSuffix("password has been deleted.\n"), "\(delete.stdout)")
    #expect(!(delete.stdout + delete.stderr).contains("pw-"))
    #expect(try add("bob", "pw-bob-2") == 0)
    for (name, secret) in [("alice", "pw-alice"), ("bob", "pw-bob-2"), ("carol", "pw-carol")] {
      let found = try groupctl(["keychain", "find-generic-password", "-a", name, "-w"])
      #expect(found.stdout == secret + "\n", "\(found)")
    }
    #expect(try groupctl(["doctor"], as: nil).status == 0)
  }

  @Test func anItemSealedOnAnotherDeviceIsReportedKeptAndNamedByAnAdd() throws {
    // Another device seals an item; its group's file is restored into this device's root.
    let other = try KeychainRoot("\(#function)-other")
    let sealed = try Product.run(
      "groupctl",
      ["--root", other.path, "--as", KeychainRoot.app, "keychain", "add-generic-password", "-a",
       "tok", "-s", "svc", "-w"],
      environment: other.environment(), stdin: Data("pw-other\n".utf8))
    #expect(sealed.status == 0, "\(sealed)")
    #expect(try add("mine", "pw-mine") == 0)
    let file = { (root: KeychainRoot) in
      root.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared).appendingPathComponent(
        "keychain.plist")
    }
    try Data(contentsOf: file(other)).write(to: file(k))

    // A search names it on stderr, as it names a damaged item, and returns nothing.
    let find = try groupctl(["keychain", "find-generic-password", "-a", "tok", "-s", "svc", "-w"])
    #expect(find.status == 44, "\(find)")
    #expect(
      find.stderr.contains("(genp, acct \"tok\", svce \"svc\") does not open with this device's keys"),
      "\(find.stderr)")
    // An add over it is -25299 saying why; -U says the same, not "other processes".
    for extra in [[], ["-U"]] {
      let add = try groupctl(
        ["keychain", "add-generic-password", "-a", "tok", "-s", "svc"] + extra + ["-w", "new"])
      #expect(add.status == 1, "\(add)")
      #expect(add.stderr.contains("errSecDuplicateItem (-25299)"), "\(add.stderr)")
      #expect(add.stderr.contains("does not open with this device's keys"), "\(add.stderr)")
      #expect(!add.stderr.contains("other processes"), "\(add.stderr)")
    }
    // doctor says it is a problem, and how to delete it; the item was never deleted.
    let doctor = try groupctl(["doctor"], as: nil)
    #expect(doctor.status != 0, "\(doctor)")
    #expect(doctor.stdout.contains("1 item of keychain access group \(KeychainRoot.shared) does not open with this device's keys"), "\(doctor.stdout)")
    #expect(doctor.stdout.contains("(1 does not open, said above)"), "\(doctor.stdout)")
    #expect(!(find.stderr + doctor.stdout + doctor.stderr).contains("pw-"))
    #expect(try groupctl(["keychain", "delete-generic-password", "-a", "tok", "-s", "svc"]).status == 0)
    let added = try groupctl(["keychain", "add-generic-password", "-a", "tok", "-s", "svc", "-U", "-w", "new"])
    #expect(added.status == 0, "\(added)")
    #expect(try groupctl(["keychain", "find-generic-password", "-a", "tok", "-w"]).stdout == "new\n")
  }

  @Test func anItemIsDeletedWhileTheDeviceIsLocked() throws {
    #expect(try add("alice", "pw-alice") == 0)
    #expect(try add("bob", "pw-bob") == 0)
    #expect(try groupctl(["device", "passcode", "set", "-"], as: nil, stdin: Data("2468\n".utf8)).status == 0)
    #expect(try groupctl(["device", "lock", "--grace", "0"], as: nil).status == 0)
    let find = try groupctl(["keychain", "find-generic-password", "-a", "alice", "-w"])
    #expect(find.stderr.contains("errSecInteractionNotAllowed"), "\(find)")
    let delete = try groupctl(["keychain", "delete-generic-password", "-a", "alice", "-s", "svc"])
    #expect(delete.status == 0, "\(delete)")
    let missing = try groupctl(["keychain", "delete-generic-password", "-a", "nobody", "-s", "svc"])
    #expect(missing.status == 44, "\(missing)")
    #expect(
      try groupctl(["device", "unlock", "--passcode", "-"], as: nil, stdin: Data("2468\n".utf8)).status == 0)
    #expect(try groupctl(["keychain", "find-generic-password", "-a", "alice"]).status == 44)
    #expect(try groupctl(["keychain", "find-generic-password", "-a", "bob", "-w"]).stdout == "pw-bob\n")
  }
}

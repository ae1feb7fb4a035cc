import AppGroups
import AppGroupsKeybag
import AppGroupsKeychain
import AppGroupsTestSupport
import Foundation
import Testing

/// Accessibility from the device's state, each rule checked with real processes beside two
/// CPU-bound ones; the state staged through the device's own API.
@Suite("Keychain: accessibility", .processBound)
struct KeychainAccessibilityTests {
  static let passcode = "2468"

  /// A root whose device has a passcode and is unlocked.
  func deviceWithPasscode(_ name: String = #function) throws -> KeychainRoot {
    let k = try KeychainRoot(name)
    try Keybag(root: k.root).setPasscode(Self.passcode)
    return k
  }

  func lock(_ k: KeychainRoot) throws {
    try Device(root: k.root).lock(grace: .zero)
    #expect(!DeviceState.current(root: k.root).isAvailable(.complete))
  }

  func unlock(_ k: KeychainRoot) throws {
    _ = try Keybag(root: k.root).unlock(passcode: Self.passcode)
  }

  func add(
    _ k: KeychainRoot, _ account: String, _ accessible: String, as app: String = KeychainRoot.app
  ) throws -> Int32? {
    try k.status(
      [
        "add", "class=genp", "svce=s", "acct=\(account)", "v_Data=secret-\(account)",
        "pdmn=\(accessible)",
      ], as: app)
  }

  func read(_ k: KeychainRoot, _ account: String, as app: String = KeychainRoot.widget) throws -> (
    status: Int32?, stdout: String
  ) {
    let run = try k.worker(
      ["copy", "class=genp", "svce=s", "acct=\(account)", "r_Data=true"], as: app)
    return (run.stdout.split(separator: "\n").first.flatMap { Int32($0.dropFirst(7)) }, run.stdout)
  }

  @Test func whenUnlockedItemsCloseWithTheLockEvenForAttributes() throws {
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    let k = try deviceWithPasscode()
    #expect(try add(k, "a", "ak") == errSecSuccess)
    // The default accessibility is WhenUnlocked.
    #expect(
      try k.status(["add", "class=genp", "svce=s", "acct=default", "v_Data=x"]) == errSecSuccess)
    #expect(
      try k.worker(["copy", "class=genp", "svce=s", "acct=default", "r_Attributes=true"]).stdout
        .contains("pdmn=ak"))
    try lock(k)
    #expect(try read(k, "a").status == errSecInteractionNotAllowed)
    #expect(try read(k, "default").status == errSecInteractionNotAllowed)
    // A query for attributes only gets -25308 too, as a device decrypts every row it matches.
    #expect(
      try k.status(
        ["copy", "class=genp", "svce=s", "acct=a", "r_Attributes=true"], as: KeychainRoot.widget)
        == errSecInteractionNotAllowed)
    #expect(
      try k.status(["copy", "class=genp", "svce=s", "acct=a"], as: KeychainRoot.widget)
        == errSecInteractionNotAllowed)
    // Adding and updating need the class key: refused; nothing matching is still -25300.
    #expect(try add(k, "b", "ak") == errSecInteractionNotAllowed)
    #expect(
      try k.status(["update", "class=genp", "svce=s", "acct=a", "--", "labl=x"])
        == errSecInteractionNotAllowed)
    #expect(try read(k, "nobody").status == errSecItemNotFound)
    // ThisDeviceOnly behaves as its sibling.
    try unlock(k)
    #expect(try add(k, "c", "aku") == errSecSuccess)
    #expect(try read(k, "a").stdout == "status 0\ndata secret-a\n")
    try lock(k)
    #expect(try read(k, "c").status == errSecInteractionNotAllowed)
    // A delete needs no key: it works while locked, as on a device.
    #expect(try k.status(["delete", "class=genp", "svce=s", "acct=default"]) == errSecSuccess)
    try unlock(k)
    #expect(try read(k, "default").status == errSecItemNotFound)
  }

  @Test func afterFirstUnlockReadsOnceUnlockedEvenWhenLockedAgain() throws {
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    let k = try deviceWithPasscode()
    #expect(try add(k, "c", "ck") == errSecSuccess)
    #expect(try add(k, "cku", "cku") == errSecSuccess)
    #expect(try add(k, "a", "ak") == errSecSuccess)
    #expect(try add(k, "d", "dk") == errSecSuccess)
    _ = try Device(root: k.root).reboot(grace: .seconds(1))
    #expect(DeviceState.current(root: k.root).lockState == .beforeFirstUnlock)
    // Before the first unlock: class C and A are closed, class D is not.
    #expect(try read(k, "c").status == errSecInteractionNotAllowed)
    #expect(try read(k, "cku").status == errSecInteractionNotAllowed)
    #expect(try read(k, "a").status == errSecInteractionNotAllowed)
    #expect(try read(k, "d").stdout == "status 0\ndata secret-d\n")
    try unlock(k)
    try lock(k)
    // Locked again after the first unlock: class C reads, class A does not.
    #expect(try read(k, "c").stdout == "status 0\ndata secret-c\n")
    #expect(try read(k, "cku").stdout == "status 0\ndata secret-cku\n")
    #expect(try read(k, "a").status == errSecInteractionNotAllowed)
    // A query that matches both is refused as a whole; one that picks class C is answered.
    #expect(
      try k.status(["copy", "class=genp", "svce=s", "m_Limit=m_LimitAll", "r_Attributes=true"])
        == errSecInteractionNotAllowed)
    let classC = try k.worker([
      "copy", "class=genp", "svce=s", "pdmn=ck", "m_Limit=m_LimitAll", "r_Data=true",
    ])
    #expect(classC.stdout == "status 0\ncount 1\ndata secret-c\n")
    // An AfterFirstUnlock item can be added while locked; a WhenUnlocked one cannot.
    #expect(try add(k, "c2", "ck") == errSecSuccess)
    #expect(try add(k, "a2", "ak") == errSecInteractionNotAllowed)
  }

  @Test func whenPasscodeSetNeedsAPasscodeAndGoesWithIt() throws {
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    let k = try KeychainRoot()
    // No passcode: refused as a device refuses it.
    #expect(try add(k, "p", "akpu") == errSecAuthFailed)
    try Keybag(root: k.root).setPasscode(Self.passcode)
    #expect(try add(k, "p", "akpu") == errSecSuccess)
    #expect(try add(k, "keep", "ck") == errSecSuccess)
    #expect(try read(k, "p").stdout == "status 0\ndata secret-p\n")
    try lock(k)
    #expect(try read(k, "p").status == errSecInteractionNotAllowed)
    try unlock(k)
    // The passcode removed: the items of the class are gone, the others stay.
    try Keybag(root: k.root).clearPasscode(current: Self.passcode)
    #expect(try read(k, "p").status == errSecItemNotFound)
    #expect(try read(k, "keep").stdout == "status 0\ndata secret-keep\n")
    let file = k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared).appendingPathComponent(
      "keychain.plist")
    let plist = try #require(
      try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
        as? [String: Any])
    let classes = (plist["Items"] as? [[String: Any]])?.compactMap { $0["pdmn"] as? String }
    #expect(classes == ["ck"])
    // A new passcode makes a new class key: an item of the old one could never come back.
    try Keybag(root: k.root).setPasscode(Self.passcode)
    #expect(try read(k, "p").status == errSecItemNotFound)
    #expect(try add(k, "p", "akpu") == errSecSuccess)
    #expect(try read(k, "p").stdout == "status 0\ndata secret-p\n")
  }

  /// A device state removed or zeroed by hand reads as a new device without a passcode; the
  /// keybag still has the passcode, so the passcode-set items stay (closed until the unlock),
  /// and the device comes back before its first unlock, with its passcode.
  @Test(arguments: ["removed", "zeroed"])
  func aLostDeviceStateKeepsThePasscodeSetItems(_ damage: String) throws {
    let k = try deviceWithPasscode("aLostDeviceStateKeepsThePasscodeSetItems-\(damage)")
    #expect(try add(k, "p", "akpu") == errSecSuccess)
    let state = DeviceStateFile.path(root: k.root)
    if damage == "removed" {
      try FileManager.default.removeItem(atPath: DeviceStateFile.folder(root: k.root))
    } else {
      try Data().write(to: URL(fileURLWithPath: state))
    }
    #expect(try read(k, "p").status == errSecInteractionNotAllowed)
    let shown = try Product.run("groupctl", ["--root", k.path, "device"])
    #expect(shown.stdout.contains("state: before-first-unlock"))
    #expect(shown.stdout.contains("passcode: set"))
    try unlock(k)
    #expect(try read(k, "p").stdout == "status 0\ndata secret-p\n")
  }

  /// A copy of a root (`cp -a`) has the original's device identifier: still two devices,
  /// each with its own keys. A passcode change of the original leaves the copy's passcode-set
  /// items, and a lock of the copy leaves the original's class A open.
  @Test func aCopiedRootIsAnotherDeviceWithKeysOfItsOwn() throws {
    let a = try deviceWithPasscode("aCopiedRootIsAnotherDevice-original")
    let b = try KeychainRoot("aCopiedRootIsAnotherDevice-copy")
    #expect(try add(a, "a", "ak") == errSecSuccess)
    #expect(try add(a, "p", "akpu") == errSecSuccess)
    for name in try FileManager.default.contentsOfDirectory(atPath: b.path) {
      try FileManager.default.removeItem(atPath: b.path + "/" + name)
    }
    let copy = try Product.run("/bin/cp", ["-a", a.path + "/.", b.path])
    try #require(copy.status == 0, "\(copy.stderr)")
    // The copy holds none of the original's unsealed keys: its class A waits for its unlock.
    #expect(try read(b, "a").status == errSecInteractionNotAllowed)
    try unlock(b)
    #expect(try read(b, "p").stdout == "status 0\ndata secret-p\n")
    // The original's passcode cleared and set again: a new passcode-set key, for it alone.
    try Keybag(root: a.root).clearPasscode(current: Self.passcode)
    try Keybag(root: a.root).setPasscode(Self.passcode)
    #expect(try read(a, "p").status == errSecItemNotFound)
    #expect(try read(b, "p").stdout == "status 0\ndata secret-p\n")
    // The copy locked at once: the original, unlocked, still reads its class A.
    try lock(b)
    #expect(try read(b, "a").status == errSecInteractionNotAllowed)
    #expect(try read(a, "a").stdout == "status 0\ndata secret-a\n")
    #expect(try read(b, "p").status == errSecInteractionNotAllowed)
    try unlock(b)
    #expect(try read(b, "p").stdout == "status 0\ndata secret-p\n")
  }

  /// The pdmn of each item of the shared group's file, with its account.
  func stored(_ k: KeychainRoot) throws -> [String] {
    let file = k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared).appendingPathComponent(
      "keychain.plist")
    let plist = try #require(
      try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
        as? [String: Any])
    return ((plist["Items"] as? [[String: Any]]) ?? []).map { item in
      let account = (item["attributes"] as? [String: Any])?["acct"] as? String ?? "?"
      return "\(account):\(item["pdmn"] as? String ?? "?")"
    }.sorted()
  }

  @Test func itemsGoneWithThePasscodeBlockNoAddNorUpdate() throws {
    let k = try deviceWithPasscode()
    for account in ["p", "q", "r", "s"] { #expect(try add(k, account, "akpu") == errSecSuccess) }
    #expect(try add(k, "t", "ak") == errSecSuccess)
    try Keybag(root: k.root).clearPasscode(current: Self.passcode)
    // An add over a gone item adds (the gone one removed), where it said -25299.
    #expect(try add(k, "p", "ak") == errSecSuccess)
    #expect(try read(k, "p").stdout == "status 0\ndata secret-p\n")
    // An update that meets only a gone item is -25300 and removes it; the add after it works.
    #expect(
      try k.status(["update", "class=genp", "svce=s", "acct=q", "--", "v_Data=new"])
        == errSecItemNotFound)
    #expect(try stored(k) == ["p:ak", "r:akpu", "s:akpu", "t:ak"])
    // An update onto a gone item's primary key changes the item and removes the gone one.
    #expect(
      try k.status(["update", "class=genp", "svce=s", "acct=t", "--", "acct=s"]) == errSecSuccess)
    #expect(try stored(k) == ["p:ak", "r:akpu", "s:ak"])
    // Update, else add (Keychain.set, groupctl -U): no false errSecIO.
    let keychain = Keychain(
      service: "s", accessGroup: KeychainRoot.shared,
      identity: try AppIdentity(bundleIdentifier: KeychainRoot.app), root: k.root)
    try keychain.set("fresh", key: "r")
    #expect(try keychain.get("r") == "fresh")
    #expect(try stored(k) == ["p:ak", "r:ak", "s:ak"])
  }

  @Test func theSwiftLayerTellsALockedItemFromAMissingOne() throws {
    let k = try deviceWithPasscode()
    let keychain = Keychain(
      service: "auth", accessGroup: KeychainRoot.shared,
      identity: try AppIdentity(bundleIdentifier: KeychainRoot.app), root: k.root)
    try keychain.set("token", key: "refresh")
    try lock(k)
    do {
      _ = try keychain.get("refresh")
      Issue.record("read a WhenUnlocked item while locked")
    } catch KeychainError.Code.interactionNotAllowed {
    } catch {
      Issue.record("unexpected \(error)")
    }
    #expect(try keychain.get("missing") == nil)
    try unlock(k)
    #expect(try keychain.get("refresh") == "token")
  }
}

import AppGroups
import AppGroupsTestSupport
import AppGroupsTesting
import Foundation
import Synchronization
import Testing

@testable import AppGroupsKeybag

/// A device of its own: a temporary root, its keybag and its device.
struct KeybagRoot {
  let t: TestRoot
  init(_ name: String = #function) throws { t = try TestRoot(name) }
  var root: ContainerRoot { t.root }
  var keybag: Keybag { Keybag(root: root) }
  var device: Device { Device(root: root) }
  var state: DeviceState { DeviceState.current(root: root) }

  /// `groupctl device …` in this root.
  func groupctl(_ args: [String], stdin: String? = nil) throws -> (
    status: Int32, stdout: String, stderr: String
  ) {
    try Product.run(
      "groupctl", ["--root", t.path, "device"] + args, environment: ["APPGROUPS_ROOT": t.path],
      stdin: stdin.map { Data($0.utf8) })
  }

  /// The fingerprint `appgroups-worker class-key` prints for each class, or `refused CODE`,
  /// as another process of the device sees it.
  func keysInAnotherProcess(_ classes: [Keybag.KeyClass]) throws -> [String: String] {
    let run = try Product.run(
      "appgroups-worker", ["class-key"] + classes.map(\.rawValue), environment: t.environment())
    var answers: [String: String] = [:]
    for line in run.stdout.split(separator: "\n") {
      let words = line.split(separator: " ").map(String.init)
      if words.count == 3, words[0] == "key" { answers[words[1]] = words[2] }
      if words.count == 3, words[0] == "refused" { answers[words[1]] = "refused " + words[2] }
    }
    #expect(run.stdout.hasSuffix("done\n"), "class-key: \(run.stderr)")
    return answers
  }

  /// The fingerprint the worker prints for `key`.
  static func fingerprint(_ key: [UInt8]) throws -> String {
    let digest = try Crypto.deriveKey(passcode: key, salt: Array("fingerprint".utf8), iterations: 1)
    return digest.prefix(8).map { String(format: "%02x", $0) }.joined()
  }

  /// Every regular file under the root, with its bytes.
  func files() -> [(path: String, bytes: [UInt8])] {
    var found: [(String, [UInt8])] = []
    let enumerator = FileManager.default.enumerator(atPath: t.path)
    while let relative = enumerator?.nextObject() as? String {
      let path = t.path + "/" + relative
      var isFolder: ObjCBool = false
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder),
        !isFolder.boolValue,
        let data = FileManager.default.contents(atPath: path)
      else { continue }
      found.append((path, [UInt8](data)))
    }
    return found
  }
}

/// Expects `body` to throw a ``KeybagError`` with `code`.
func expectRefusal<T>(
  _ code: KeybagError.Code, sourceLocation: SourceLocation = #_sourceLocation,
  _ body: () throws -> T
) {
  do {
    _ = try body()
    Issue.record("expected a refusal (\(code)), got none", sourceLocation: sourceLocation)
  } catch let error as KeybagError {
    #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
  } catch {
    Issue.record("expected a KeybagError (\(code)), got \(error)", sourceLocation: sourceLocation)
  }
}

/// Whether `needle` occurs in `haystack`.
func occurs(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
  guard !needle.isEmpty, haystack.count >= needle.count else { return false }
  for start in 0...(haystack.count - needle.count)
  where haystack[start] == needle[0] && Array(haystack[start..<start + needle.count]) == needle {
    return true
  }
  return false
}

@Suite("Keybag", .processBound)
struct KeybagTests {
  @Test func aNewDeviceServesEveryClassButThePasscodeSetOne() throws {
    let r = try KeybagRoot()
    #expect(r.state == .newDevice)
    var keys: [Keybag.KeyClass: [UInt8]] = [:]
    for keyClass in [Keybag.KeyClass.complete, .completeUntilFirstUserAuthentication, .none] {
      let key = try r.keybag.classKey(keyClass)
      #expect(key.count == 32)
      #expect(try r.keybag.classKey(keyClass) == key, "a class key is the same at every call")
      keys[keyClass] = key
    }
    #expect(Set(keys.values).count == 3, "each class has a key of its own")
    expectRefusal(.noPasscodeSet) { try r.keybag.classKey(.passcodeSetThisDeviceOnly) }
    #expect(r.state.lockState == .unlocked && !r.state.hasPasscode)
  }

  @Test func classesFollowTheLockWithItsGrace() throws {
    let r = try KeybagRoot()
    let complete = try r.keybag.classKey(.complete)
    try r.keybag.setPasscode("1234")
    #expect(try r.keybag.classKey(.complete) == complete, "setting a passcode keeps the keys")
    let passcodeSet = try r.keybag.classKey(.passcodeSetThisDeviceOnly)

    // Within a long grace, class complete is still there.
    #expect(try r.device.lock(grace: .seconds(60)))
    #expect(!(try r.device.lock(grace: .seconds(60))), "a second lock changes nothing")
    #expect(r.state.lockState == .locked && r.state.isProtectedDataAvailable)
    #expect(try r.keybag.classKey(.complete) == complete)
    try r.keybag.unlock(passcode: "1234")

    // With none, it goes at once; classes C and D stay.
    try r.device.lock(grace: .zero)
    #expect(!r.state.isProtectedDataAvailable)
    expectRefusal(.unavailable) { try r.keybag.classKey(.complete) }
    expectRefusal(.unavailable) { try r.keybag.classKey(.passcodeSetThisDeviceOnly) }
    _ = try r.keybag.classKey(.completeUntilFirstUserAuthentication)
    _ = try r.keybag.classKey(.none)
    // And the kernel dropped the key itself, not only the library's answer.
    let keyring = DeviceKeyring(deviceIdentifier: r.state.deviceIdentifier, rootPath: r.root.path)
    #expect(try keyring.load(name: "complete", session: r.state.bootSession) == nil)

    // Codes that break the rules cannot be the passcode: refused, and not counted.
    for impossible in ["12", " 1234", "12\n34", String(repeating: "9", count: 200)] {
      expectRefusal(.invalidPasscode) { try r.keybag.unlock(passcode: impossible) }
    }
    #expect(try r.keybag.attempts().failed == 0, "an impossible code is not a wrong one")
    expectRefusal(.wrongPasscode) { try r.keybag.unlock(passcode: "4321") }
    #expect(r.state.lockState == .locked, "a wrong passcode changes nothing")
    #expect(try r.keybag.attempts().failed == 1)
    expectRefusal(.passcodeRequired) { try r.keybag.unlock() }
    #expect(try r.keybag.unlock(passcode: "1234"))
    #expect(try r.keybag.classKey(.complete) == complete)
    #expect(try r.keybag.classKey(.passcodeSetThisDeviceOnly) == passcodeSet)
    #expect(try r.keybag.attempts().failed == 0, "a right code resets the count")
  }

  @Test func theKernelExpiresTheCompleteKeyAtTheEndOfTheGrace() throws {
    let r = try KeybagRoot()
    try r.keybag.setPasscode("1234")
    _ = try r.keybag.classKey(.complete)
    try r.device.lock(grace: .seconds(1))
    let keyring = DeviceKeyring(deviceIdentifier: r.state.deviceIdentifier, rootPath: r.root.path)
    // The kernel's timer, not ours: wait for it, bounded.
    let deadline = Date().addingTimeInterval(20)
    var gone = false
    while Date() < deadline {
      if try keyring.load(name: "complete", session: r.state.bootSession) == nil {
        gone = true
        break
      }
      Thread.sleep(forTimeInterval: 0.05)
    }
    #expect(gone, "the complete key is still in the kernel's keyring 20 s after a 1 s grace")
    #expect(
      try keyring.load(name: "completeUntilFirstUserAuthentication", session: r.state.bootSession)
        != nil)
  }

  @Test func aRebootComesBackBeforeFirstUnlock() throws {
    let r = try KeybagRoot()
    let c = try r.keybag.classKey(.completeUntilFirstUserAuthentication)
    let d = try r.keybag.classKey(.none)
    try r.keybag.setPasscode("123456")
    let session = r.state.bootSession
    try r.device.reboot()
    #expect(r.state.lockState == .beforeFirstUnlock && r.state.hasPasscode)
    #expect(r.state.bootSession == session + 1)
    expectRefusal(.unavailable) { try r.keybag.classKey(.completeUntilFirstUserAuthentication) }
    expectRefusal(.unavailable) { try r.keybag.classKey(.complete) }
    #expect(try r.keybag.classKey(.none) == d, "class none needs no passcode")
    #expect(!(try r.device.lock()), "locking a device before its first unlock changes nothing")
    try r.keybag.unlock(passcode: "123456")
    #expect(try r.keybag.classKey(.completeUntilFirstUserAuthentication) == c)
    #expect(r.state.lockState == .unlocked)
    try r.device.lock()
    #expect(
      try r.keybag.classKey(.completeUntilFirstUserAuthentication) == c, "class C outlives a lock")

    // Without a passcode, a reboot comes back unlocked.
    try r.keybag.unlock(passcode: "123456")
    try r.keybag.clearPasscode(current: "123456")
    try r.device.reboot()
    #expect(r.state.lockState == .unlocked && !r.state.hasPasscode)
    #expect(try r.keybag.classKey(.completeUntilFirstUserAuthentication) == c)
  }

  @Test func aStateFromAnEarlierBootOfTheMachineReadsAsARestart() throws {
    let r = try KeybagRoot()
    try r.keybag.setPasscode("1234")
    let before = r.state
    // The machine's boot id in the page (words 7 and 8) is another boot's.
    let path = DeviceStateFile.path(root: r.root)
    let handle = try #require(FileHandle(forUpdatingAtPath: path))
    try handle.seek(toOffset: 7 * 8)
    handle.write(Data(repeating: 0x5a, count: 16))
    try handle.close()
    let after = r.state
    #expect(after.lockState == .beforeFirstUnlock)
    #expect(after.bootSession == before.bootSession + 1)
    expectRefusal(.unavailable) { try r.keybag.classKey(.completeUntilFirstUserAuthentication) }
    _ = try r.keybag.classKey(.none)  // the first writer makes the restart real
    #expect(r.state.lockState == .beforeFirstUnlock && r.state.bootSession == after.bootSession)
    try r.keybag.unlock(passcode: "1234")
    #expect(r.state.lockState == .unlocked)
  }

  @Test func clearingThePasscodeDestroysThePasscodeSetClass() throws {
    let r = try KeybagRoot()
    try r.keybag.setPasscode("1234")
    let old = try r.keybag.classKey(.passcodeSetThisDeviceOnly)
    let complete = try r.keybag.classKey(.complete)
    expectRefusal(.wrongPasscode) { try r.keybag.clearPasscode(current: "0000") }
    #expect(r.state.hasPasscode, "a wrong code clears nothing")
    try r.keybag.clearPasscode(current: "1234")
    #expect(!r.state.hasPasscode)
    expectRefusal(.noPasscodeSet) { try r.keybag.classKey(.passcodeSetThisDeviceOnly) }
    #expect(try r.keybag.classKey(.complete) == complete, "the other classes keep their keys")
    let list = try #require(
      try PropertyListSerialization.propertyList(
        from: Data(contentsOf: URL(fileURLWithPath: r.keybag.path)), format: nil) as? [String: Any])
    let classes = try #require(list["classes"] as? [String: Data])
    #expect(classes["passcodeSetThisDeviceOnly"] == nil, "its sealed key left the keybag")
    let keyring = DeviceKeyring(deviceIdentifier: r.state.deviceIdentifier, rootPath: r.root.path)
    #expect(
      try keyring.load(name: "passcodeSetThisDeviceOnly", session: r.state.bootSession) == nil)
    try r.keybag.setPasscode("5678")
    #expect(
      try r.keybag.classKey(.passcodeSetThisDeviceOnly) != old, "a new passcode makes a new one")
  }

  /// `groupctl device ARGS` stopped just before it writes the keybag, then killed there.
  private func killedBeforeTheKeybagIsWritten(_ r: KeybagRoot, _ args: [String]) throws {
    let marker = r.t.sandbox.url.appendingPathComponent("before-keybag-save").path
    let child = try ChildProcess(
      "groupctl", ["--root", r.t.path, "device"] + args,
      environment: ["APPGROUPS_ROOT": r.t.path, "APPGROUPS_TEST_PAUSE_BEFORE_KEYBAG_SAVE": marker])
    #expect(waitForFile(marker, timeout: 30), "\(child.standardError)")
    child.signal(SIGKILL)
    #expect(child.wait() == SIGKILL)
  }

  @Test func aPasscodeSetThatIsKilledNeverLeavesADeviceThatRestartsUnlocked() throws {
    let r = try KeybagRoot()
    try r.keybag.prepare()
    try killedBeforeTheKeybagIsWritten(r, ["passcode", "set", "1234"])
    // The state said "a passcode is set" before the keybag was to be sealed with it.
    #expect(r.state.hasPasscode)
    try r.device.reboot()
    #expect(r.state.lockState == .beforeFirstUnlock)
    expectRefusal(.unavailable) { try r.keybag.classKey(.completeUntilFirstUserAuthentication) }
    // The keybag has no passcode: the unlock says so, then the device agrees with it.
    expectRefusal(.noPasscodeSet) { try r.keybag.unlock(passcode: "1234") }
    #expect(!r.state.hasPasscode)
    try r.keybag.unlock()
    _ = try r.keybag.classKey(.complete)
  }

  @Test func aPasscodeClearThatIsKilledNeverServesTheKeyItDestroys() throws {
    let r = try KeybagRoot()
    try r.keybag.setPasscode("1234")
    _ = try r.keybag.classKey(.passcodeSetThisDeviceOnly)
    try killedBeforeTheKeybagIsWritten(r, ["passcode", "clear", "--passcode", "1234"])
    // The key left the kernel's keyring before the keybag could forget it.
    expectRefusal(.unavailable) { try r.keybag.classKey(.passcodeSetThisDeviceOnly) }
    // The keybag still holds the passcode: an unlock with it brings the class back.
    #expect(r.state.hasPasscode)
    try r.device.lock(grace: .zero)
    try r.keybag.unlock(passcode: "1234")
    _ = try r.keybag.classKey(.passcodeSetThisDeviceOnly)
  }

  @Test func passcodeChangesNeedTheCurrentCodeAndAnUnlockedDevice() throws {
    let r = try KeybagRoot()
    expectRefusal(.invalidPasscode) { try r.keybag.setPasscode("12") }
    expectRefusal(.invalidPasscode) { try r.keybag.setPasscode("12\n34") }
    expectRefusal(.invalidPasscode) { try r.keybag.setPasscode(" 1234") }
    expectRefusal(.noPasscodeSet) { try r.keybag.setPasscode("1234", current: "0000") }
    expectRefusal(.noPasscodeSet) { try r.keybag.unlock(passcode: "1234") }
    expectRefusal(.noPasscodeSet) { try r.keybag.clearPasscode(current: "1234") }
    #expect(!r.state.hasPasscode)
    try r.keybag.setPasscode("1234")
    expectRefusal(.passcodeRequired) { try r.keybag.setPasscode("5678") }
    expectRefusal(.wrongPasscode) { try r.keybag.setPasscode("5678", current: "0000") }
    try r.device.lock()
    expectRefusal(.unavailable) { try r.keybag.setPasscode("5678", current: "1234") }
    try r.keybag.unlock(passcode: "1234")
    try r.keybag.setPasscode("5678", current: "1234")
    try r.device.lock(grace: .zero)
    expectRefusal(.wrongPasscode) { try r.keybag.unlock(passcode: "1234") }
    try r.keybag.unlock(passcode: "5678")
    // The same text composed or decomposed is one passcode.
    try r.keybag.setPasscode("caf\u{e9}!", current: "5678")
    try r.device.lock(grace: .zero)
    try r.keybag.unlock(passcode: "cafe\u{301}!")
  }

  @Test func wrongCodesAreSpacedOutAsOnIOS() throws {
    let r = try KeybagRoot()
    try r.keybag.setPasscode("1234")
    try r.device.lock(grace: .zero)
    for attempt in 1...5 {
      do {
        try r.keybag.unlock(passcode: "000\(attempt)")
        Issue.record("a wrong code unlocked the device")
      } catch {
        #expect(error.code == .wrongPasscode)
        #expect(error.message.contains("\(attempt) in a row"))
        if attempt == 5 { #expect(error.message.contains("1 min")) }
        #expect(!error.message.contains("000\(attempt)"), "a message never holds the code")
      }
    }
    // The right code is not heard before the delay either.
    do {
      try r.keybag.unlock(passcode: "1234")
      Issue.record("an attempt was heard during the delay")
    } catch {
      #expect(error.code == .rateLimited)
      let retry = try #require(error.retryAfter)
      #expect(retry.timeIntervalSinceNow > 30 && retry.timeIntervalSinceNow <= 60)
    }
    #expect(r.state.lockState == .locked)
    let attempts = try r.keybag.attempts()
    #expect(attempts.failed == 5 && attempts.retryAfter != nil)
    // Another process is held to it too.
    let cli = try r.groupctl(["unlock", "--passcode", "1234"])
    #expect(cli.status == 1 && cli.stderr.contains("the next attempt is heard in"), "\(cli)")
    #expect(Passcode.delay(afterFailures: 6) == 300 && Passcode.delay(afterFailures: 8) == 900)
    #expect(Passcode.delay(afterFailures: 9) == 3600 && Passcode.delay(afterFailures: 4) == 0)
  }

  /// The `Keybag` folder replaced by a symbolic link to a folder outside the root that holds
  /// a valid keybag (another device's, with another passcode): reading it is refused as writing
  /// through it is, in the same words, naming the link; the outside keybag is never taken as the
  /// device's (it was: its passcode unlocked the device). Nothing outside changes.
  @Test func aKeybagFolderLinkedOutOfTheRootIsRefusedByReadsAsByWrites() throws {
    let r = try KeybagRoot()
    try r.keybag.setPasscode("1234")
    try r.device.lock(grace: .zero)
    let other = try KeybagRoot("other device")
    try other.keybag.setPasscode("9999")
    let folder = r.root.path + "/Keybag"
    try FileManager.default.moveItem(atPath: folder, toPath: folder + ".kept")
    try FileManager.default.createSymbolicLink(
      atPath: folder, withDestinationPath: other.root.path + "/Keybag")
    let outsideBefore = other.files().map { "\($0.path) \($0.bytes)" }
    let refusal = "\(folder) is a symbolic link; the keybag is never read or written through one"
    for (what, call) in [
      ("unlock", { try r.keybag.unlock(passcode: "9999") }),
      ("attempts", { _ = try r.keybag.attempts() }),
    ] as [(String, () throws -> Void)] {
      do {
        try call()
        Issue.record("\(what) went through the linked keybag folder")
      } catch let error as KeybagError {
        #expect(error.message.contains(refusal), "\(what): \(error.message)")
      }
    }
    let cli = try r.groupctl(["unlock", "--passcode", "9999"])
    #expect(cli.status == 1 && cli.stderr.contains(refusal), "\(cli)")
    #expect(r.state.lockState == .locked && r.state.hasPasscode)
    #expect(other.files().map { "\($0.path) \($0.bytes)" } == outsideBefore)
    // The device's own keybag, back in its place, is as it was.
    try FileManager.default.removeItem(atPath: folder)
    try FileManager.default.moveItem(atPath: folder + ".kept", toPath: folder)
    try r.keybag.unlock(passcode: "1234")
  }

  @Test func noUnsealedKeyOrPasscodeIsInAnyFileOfTheRoot() throws {
    let r = try KeybagRoot()
    let passcode = "correct-horse-7"
    try r.keybag.setPasscode(passcode)
    var keys = try Keybag.KeyClass.allCases.map { try r.keybag.classKey($0) }
    try r.device.lock()
    try r.keybag.unlock(passcode: passcode)
    try r.device.reboot()
    try r.keybag.unlock(passcode: passcode)
    keys += try Keybag.KeyClass.allCases.map { try r.keybag.classKey($0) }
    let files = r.files()
    #expect(files.contains { $0.path.hasSuffix("Keybag.plist") })
    for file in files {
      for key in keys {
        #expect(!occurs(key, in: file.bytes), "a class key is in \(file.path)")
      }
      #expect(!occurs(Array(passcode.utf8), in: file.bytes), "the passcode is in \(file.path)")
    }
  }

  @Test func anotherProcessGetsTheKeysTheStateAllows() throws {
    let r = try KeybagRoot()
    let all = Keybag.KeyClass.allCases
    #expect(try r.groupctl(["passcode", "set", "-"], stdin: "2468\n").status == 0)
    let keys = try Dictionary(
      uniqueKeysWithValues: all.map {
        ($0.rawValue, try KeybagRoot.fingerprint(r.keybag.classKey($0)))
      })
    #expect(try r.keysInAnotherProcess(all) == keys)

    #expect(try r.groupctl(["lock", "--grace", "0"]).status == 0)
    var seen = try r.keysInAnotherProcess(all)
    #expect(seen["complete"] == "refused unavailable")
    #expect(seen["passcodeSetThisDeviceOnly"] == "refused unavailable")
    #expect(
      seen["completeUntilFirstUserAuthentication"] == keys["completeUntilFirstUserAuthentication"])

    let reboot = try r.groupctl(["reboot"])
    #expect(reboot.stdout.contains("rebooted: before-first-unlock"), "\(reboot)")
    seen = try r.keysInAnotherProcess(all)
    #expect(seen["completeUntilFirstUserAuthentication"] == "refused unavailable")
    #expect(seen["none"] == keys["none"])

    #expect(try r.groupctl(["unlock", "--passcode", "2468"]).status == 0)
    #expect(try r.keysInAnotherProcess(all) == keys)
  }

  @Test func theKeysGoWithTheRoot() throws {
    let r = try KeybagRoot()
    _ = try r.keybag.classKey(.complete)
    let session = r.state.bootSession
    let keyring = DeviceKeyring(deviceIdentifier: r.state.deviceIdentifier, rootPath: r.root.path)
    #expect(try keyring.load(name: "complete", session: session) != nil)
    r.t.device.remove()
    #expect(try keyring.load(name: "complete", session: session) == nil)
  }

  @Test func twoShellsLockingAndUnlockingAtOnceLoseNothing() throws {
    let r = try KeybagRoot()
    #expect(try r.groupctl(["passcode", "set", "1357"]).status == 0)
    let group = DispatchGroup()
    let results = Mutex<[Int32]>([])
    for index in 0..<8 {
      group.enter()
      DispatchQueue.global().async {
        defer { group.leave() }
        let args = index % 2 == 0 ? ["lock", "--grace", "0"] : ["unlock", "--passcode", "1357"]
        let status = (try? r.groupctl(args).status) ?? -1
        results.withLock { $0.append(status) }
      }
    }
    group.wait()
    #expect(results.withLock { $0 } == [Int32](repeating: 0, count: 8))
    #expect([DeviceState.LockState.locked, .unlocked].contains(r.state.lockState))
    try r.keybag.unlock(passcode: "1357")
    _ = try r.keybag.classKey(.complete)
    #expect(try r.keybag.attempts().failed == 0)
  }
}

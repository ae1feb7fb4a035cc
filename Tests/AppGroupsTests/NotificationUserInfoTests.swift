import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// The `userInfo` of `didChangeNotification`, whole: every key and value, for each origin, and
/// each notification's its own (a later post of the same suite leaves an earlier one's as it was).
@Suite("didChangeNotification's userInfo", .processBound)
struct NotificationUserInfoTests {
  @Test func eachNotificationCarriesItsOwnWholeUserInfo() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    d.set(1, forKey: "kept")
    #expect(d.synchronize())
    let received = Locked<[Notification]>([])
    let arrived = DispatchSemaphore(value: 0)
    let observer = NotificationCenter.default.addObserver(
      forName: GroupDefaults.didChangeNotification, object: d, queue: nil
    ) { note in
      // Another test's registration (the process's domain) is heard here too: not ours.
      let keys = note.userInfo?[GroupDefaults.changedKeysKey] as? [String] ?? ["?"]
      guard keys.contains(where: { ["local", "remote", "gone", "?"].contains($0) }) else { return }
      received.withLock { $0.append(note) }
      arrived.signal()
    }
    defer { NotificationCenter.default.removeObserver(observer) }

    d.set("mine", forKey: "local")
    #expect(arrived.wait(timeout: .now() + 10) == .success)
    #expect(d.synchronize())
    try editOutside(t.groupSuiteFile) {
      $0["remote"] = "theirs"
      $0["gone"] = nil
      $0["kept"] = 2
    }
    #expect(arrived.wait(timeout: .now() + 10) == .success)
    d.removeObject(forKey: "local")
    #expect(arrived.wait(timeout: .now() + 10) == .success)

    let notes = received.withLock { $0 }
    #expect(notes.count == 3)
    guard notes.count == 3 else { return }
    func expectUserInfo(
      _ note: Notification, origin: String, _ changes: [(key: String, old: PropertyListValue?, new: PropertyListValue?)]
    ) {
      #expect(note.object as AnyObject? === d)
      let info = note.userInfo ?? [:]
      #expect(info.count == 4)
      #expect(info[GroupDefaults.suiteNameKey] as? String == TestRoot.group)
      #expect(info[GroupDefaults.originKey] as? String == origin)
      #expect(info[GroupDefaults.changedKeysKey] as? [String] == changes.map(\.key))
      let told = (info[GroupDefaults.changesKey] as? [GroupDefaults.Change] ?? []).sorted { $0.key < $1.key }
      #expect(told.map(\.suiteName) == changes.map { _ in TestRoot.group })
      #expect(told.map(\.key) == changes.map(\.key))
      #expect(told.map(\.oldValue) == changes.map(\.old))
      #expect(told.map(\.newValue) == changes.map(\.new))
      #expect(told.allSatisfy { $0.origin == (origin == "thisProcess" ? .thisProcess : .otherProcess) })
    }
    // Checked after every post was made: each is as it was when posted.
    expectUserInfo(notes[0], origin: "thisProcess", [("local", nil, .string("mine"))])
    expectUserInfo(
      notes[1], origin: "otherProcess", [("kept", .integer(1), .integer(2)), ("remote", nil, .string("theirs"))])
    expectUserInfo(notes[2], origin: "thisProcess", [("local", .string("mine"), nil)])
  }
}

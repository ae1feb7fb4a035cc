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
    // Tests running beside this one register defaults (a process-wide domain), which change
    // this suite's effective values too, and may be told in the same notification as this
    // test's own changes: only this test's keys are compared.
    let ours: Set<String> = ["kept", "local", "remote", "gone"]
    let received = Locked<[Notification]>([])
    let arrived = DispatchSemaphore(value: 0)
    let observer = NotificationCenter.default.addObserver(
      forName: GroupDefaults.didChangeNotification, object: d, queue: nil
    ) { note in
      let keys = note.userInfo?[GroupDefaults.changedKeysKey] as? [String] ?? ["?"]
      guard keys.contains(where: { ours.contains($0) || $0 == "?" }) else { return }
      received.withLock { $0.append(note) }
      arrived.signal()
    }
    defer { NotificationCenter.default.removeObserver(observer) }

    // Each change told before the next is made: none is in another's notification.
    d.set(1, forKey: "kept")
    #expect(arrived.wait(timeout: .now() + 10) == .success)
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
    #expect(notes.count == 4)
    guard notes.count == 4 else { return }
    func expectUserInfo(
      _ note: Notification, origin: String, _ changes: [(key: String, old: PropertyListValue?, new: PropertyListValue?)]
    ) {
      #expect(note.object as AnyObject? === d)
      let info = note.userInfo ?? [:]
      #expect(info.count == 4)
      #expect(info[GroupDefaults.suiteNameKey] as? String == TestRoot.group)
      #expect(info[GroupDefaults.originKey] as? String == origin)
      let keys = info[GroupDefaults.changedKeysKey] as? [String] ?? ["?"]
      #expect(keys.filter { ours.contains($0) || $0 == "?" } == changes.map(\.key))
      let all = info[GroupDefaults.changesKey] as? [GroupDefaults.Change] ?? []
      #expect(Set(all.map(\.key)) == Set(keys))
      #expect(all.allSatisfy { $0.suiteName == TestRoot.group })
      #expect(all.allSatisfy { $0.origin == (origin == "thisProcess" ? .thisProcess : .otherProcess) })
      let told = all.filter { ours.contains($0.key) }.sorted { $0.key < $1.key }
      #expect(told.map(\.key) == changes.map(\.key))
      #expect(told.map(\.oldValue) == changes.map(\.old))
      #expect(told.map(\.newValue) == changes.map(\.new))
    }
    // Checked after every post was made: each is as it was when posted.
    expectUserInfo(notes[0], origin: "thisProcess", [("kept", nil, .integer(1))])
    expectUserInfo(notes[1], origin: "thisProcess", [("local", nil, .string("mine"))])
    expectUserInfo(
      notes[2], origin: "otherProcess", [("kept", .integer(1), .integer(2)), ("remote", nil, .string("theirs"))])
    expectUserInfo(notes[3], origin: "thisProcess", [("local", .string("mine"), nil)])
  }
}

@testable import AppGroups
import Foundation
import Testing

/// The pieces a watching process runs for each change it hears: the diff of two decoded
/// domains, the name of an inotify record (the last one used again), and the reader's tables
/// made with room for their entries.
@Suite struct ChangeHeardTests {
  // MARK: The diff of two domains

  private func diff(_ old: [String: PropertyListValue], _ new: [String: PropertyListValue]) -> [StoredChange] {
    SuiteValues.changes(from: old, to: new)
  }

  @Test func theSameKeysReportOnlyTheValuesThatChanged() {
    let changes = diff(["a": .integer(1), "b": .string("x")], ["a": .integer(2), "b": .string("x")])
    #expect(changes == [StoredChange(key: "a", old: .integer(1), new: .integer(2))])
    #expect(diff(["a": .integer(1)], ["a": .integer(1)]).isEmpty)
    #expect(diff([:], [:]).isEmpty)
  }

  @Test func aKeyGoneIsReportedEvenWhenAsManyKeysCame() {
    // As many keys on each side, but not the same ones: a count alone would miss "gone".
    let changes = diff(["gone": .integer(1), "kept": .integer(2)], ["kept": .integer(2), "new": .integer(3)])
    #expect(changes.count == 2)
    #expect(changes.contains(StoredChange(key: "new", old: nil, new: .integer(3))))
    #expect(changes.contains(StoredChange(key: "gone", old: .integer(1), new: nil)))
  }

  @Test func keysAddedAndRemovedComeAfterTheNewSidesKeys() {
    let old: [String: PropertyListValue] = ["a": .integer(1), "b": .integer(2), "c": .integer(3)]
    let new: [String: PropertyListValue] = ["a": .integer(9)]
    let changes = diff(old, new)
    #expect(changes.first == StoredChange(key: "a", old: .integer(1), new: .integer(9)))
    #expect(Set(changes.dropFirst().map(\.key)) == ["b", "c"])
    #expect(changes.dropFirst().allSatisfy { $0.new == nil && $0.old != nil })
    #expect(diff([:], ["a": .integer(1)]) == [StoredChange(key: "a", old: nil, new: .integer(1))])
    #expect(diff(["a": .integer(1)], [:]) == [StoredChange(key: "a", old: .integer(1), new: nil)])
  }

  @Test func everyKeyThatDiffersIsReportedOnceWithBothSidesTheKeysGoneLast() {
    var old: [String: PropertyListValue] = [:]
    var new: [String: PropertyListValue] = [:]
    for index in 0..<40 {
      if index % 3 != 0 { old["k\(index)"] = .integer(index) }
      if index % 4 != 0 { new["k\(index)"] = .integer(index % 5 == 0 ? -index : index) }
    }
    let changes = diff(old, new)
    let differing = Set(old.keys).union(new.keys).filter { old[$0] != new[$0] }
    #expect(changes.count == differing.count)
    #expect(Set(changes.map(\.key)) == differing)
    #expect(changes.allSatisfy { old[$0.key] == $0.old && new[$0.key] == $0.new })
    let firstGone = changes.firstIndex { $0.new == nil } ?? changes.endIndex
    #expect(changes[firstGone...].allSatisfy { $0.new == nil })
  }

  // MARK: An inotify record's name

  /// A record's name as the kernel lays it out: the bytes, then NULs up to `length`.
  private func name(_ text: String, length: Int, last: inout String) -> String {
    var bytes = Array(text.utf8)
    bytes += [UInt8](repeating: 0, count: length - bytes.count)
    return bytes.withUnsafeBytes { WatcherEngine.eventName($0.baseAddress!, length: length, last: &last) }
  }

  @Test func aRecordsNameIsItsOwnWhateverTheLastOneWas() {
    var last = ""
    #expect(name("suite.plist", length: 16, last: &last) == "suite.plist")
    #expect(last == "suite.plist")
    // Again: the same name (the string kept is used again).
    #expect(name("suite.plist", length: 16, last: &last) == "suite.plist")
    // Longer, with the last name as its prefix; then shorter, a prefix of the last one.
    #expect(name("suite.plist.lock", length: 32, last: &last) == "suite.plist.lock")
    #expect(name("suite.plist", length: 16, last: &last) == "suite.plist")
    #expect(name("suite", length: 16, last: &last) == "suite")
    // As long as the last name, one byte apart.
    #expect(name("suitf", length: 16, last: &last) == "suitf")
    // A name that fills its record but for the one NUL.
    #expect(name("exactly-fifteen", length: 16, last: &last) == "exactly-fifteen")
    #expect(name("exactly-fifteen", length: 16, last: &last) == "exactly-fifteen")
    // No name (the watched directory itself), and a record of NULs only.
    #expect(name("", length: 0, last: &last) == "")
    #expect(name("", length: 16, last: &last) == "")
    #expect(name("after", length: 16, last: &last) == "after")
  }

  // MARK: The reader's tables

  @Test func dictionariesOfEverySizeDecodeWhole() throws {
    for count in [0, 1, 2, 3, 7, 40] {
      var values: [String: PropertyListValue] = [:]
      for index in 0..<count { values["key \(index)"] = .integer(index) }
      let data = BinaryPropertyList.encode(.dictionary(values))
      #expect(try BinaryPropertyList.decode(data) == .dictionary(values), "\(count) keys")
    }
  }

  @Test func aDuplicateKeyInATableMadeWithRoomIsNamed() throws {
    // {"a": 1, "a": 2}: two entries, one key.
    let data = handMade([[0xD2, 0x01, 0x01, 0x02, 0x03], [0x51, 0x61], [0x10, 0x01], [0x10, 0x02]])
    #expect(decodeError(data)?.message.hasPrefix(#"the key "a" is given twice (keys 0 and 1 "#) == true)
  }
}

@testable import AppGroups
import Foundation
import Testing

/// A journal record's payload, `{s: {key: value}, r: [key]}`, read in place into its changes:
/// what decoding it whole would give, and refused whole when that would refuse it.
@Suite("Journal: reading a record")
struct JournalRecordTests {
  /// The changes applied in order, as a journal's are (the last applied wins).
  private func applied(_ changes: [SuiteJournal.Change]) -> [String: PropertyListValue?] {
    var values: [String: PropertyListValue?] = [:]
    for change in changes { values[change.key] = .some(change.value) }
    return values
  }

  /// A binary property list of `objects`, each given encoded, object 0 the top one, with
  /// references and offsets of one byte.
  private func bplist(_ objects: [[UInt8]]) -> ArraySlice<UInt8> {
    var bytes = Array("bplist00".utf8)
    var offsets: [UInt8] = []
    for object in objects {
      offsets.append(UInt8(bytes.count))
      bytes += object
    }
    let table = bytes.count
    bytes += offsets
    bytes += [0, 0, 0, 0, 0, 0, 1, 1]
    for word in [objects.count, 0, table] {
      bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: word >> ($0 * 8)) }
    }
    return bytes[...]
  }

  private let s: [UInt8] = [0x51, UInt8(ascii: "s")]
  private let r: [UInt8] = [0x51, UInt8(ascii: "r")]
  private let k: [UInt8] = [0x51, UInt8(ascii: "k")]

  @Test func aRecordWrittenByACommitReadsAsItsChanges() throws {
    let changes: [SuiteJournal.Change] = [
      .init("set", .integer(7)), .init("gone", nil),
      .init("list", .array([.string("a"), .dictionary(["b": .bool(true)])])), .init("other gone", nil),
    ]
    let record = try #require(SuiteJournal.record(changes))
    let read = try #require(SuiteJournal.recordChanges(record[12...]))
    #expect(read.count == changes.count)
    #expect(applied(read) == applied(changes))
    // The removals come first.
    #expect(read.prefix(2).allSatisfy { $0.value == nil })
  }

  @Test func aDuplicateKeysFirstEntryDecides() throws {
    // {s: {k: 1, k: 2}, r: []}: never written by this package (a suite's file that gives a key
    // twice is refused or read in part); a record read so applies the first entry.
    let payload = bplist([
      [0xD2, 1, 2, 3, 4], s, r, [0xD2, 5, 5, 6, 7], [0xA0], k, [0x10, 1], [0x10, 2],
    ])
    let read = try #require(SuiteJournal.recordChanges(payload))
    #expect(applied(read) == ["k": .integer(1)])
  }

  @Test func aValueMayBeTheObjectThatListsTheRemovedKeys() throws {
    // {s: {k: <the array r>}, r: []}: one empty array, shared.
    let payload = bplist([[0xD2, 1, 2, 3, 4], s, r, [0xD1, 5, 4], [0xA0], k])
    let read = try #require(SuiteJournal.recordChanges(payload))
    #expect(applied(read) == ["k": .array([])])
  }

  @Test func aRecordThatWouldNotDecodeWholeIsRefused() throws {
    // An entry beside s and r that is not a property-list value (null).
    #expect(SuiteJournal.recordChanges(bplist([[0xD3, 1, 2, 5, 3, 4, 6], s, r, [0xD0], [0xA0], k, [0x00]])) == nil)
    // A removed key that is not a string.
    #expect(SuiteJournal.recordChanges(bplist([[0xD2, 1, 2, 3, 4], s, r, [0xD0], [0xA1, 5], [0x10, 1]])) == nil)
    // s that is not a dictionary; r missing; the top not a dictionary.
    #expect(SuiteJournal.recordChanges(bplist([[0xD2, 1, 2, 3, 4], s, r, [0xA0], [0xA0]])) == nil)
    #expect(SuiteJournal.recordChanges(bplist([[0xD1, 1, 2], s, [0xD0]])) == nil)
    #expect(SuiteJournal.recordChanges(bplist([[0xA0]])) == nil)
    // A value that refers to the record itself.
    #expect(SuiteJournal.recordChanges(bplist([[0xD2, 1, 2, 3, 4], s, r, [0xD1, 5, 0], [0xA0], k])) == nil)
    // The same records, well formed, are read.
    #expect(SuiteJournal.recordChanges(bplist([[0xD2, 1, 2, 3, 4], s, r, [0xD0], [0xA1, 5], k])) != nil)
  }

  @Test func aRecordRefusedPartWayLeavesTheChangesOfTheRecordsBeforeIt() throws {
    var changes: [SuiteJournal.Change] = [.init("earlier", .integer(1))]
    // {s: [], r: [k]}: its removal of k is read before its s, not a dictionary, refuses it.
    let refused = bplist([[0xD2, 1, 2, 3, 4], s, r, [0xA0], [0xA1, 5], k])
    #expect(!SuiteJournal.recordChanges(refused, into: &changes))
    #expect(changes.map(\.key) == ["earlier"])
    #expect(changes.map(\.value) == [.integer(1)])
    // A record read after it appends its changes to the same array.
    let read = bplist([[0xD2, 1, 2, 3, 4], s, r, [0xD1, 5, 6], [0xA1, 5], k, [0x10, 2]])
    #expect(SuiteJournal.recordChanges(read, into: &changes))
    #expect(changes.map(\.key) == ["earlier", "k", "k"])
    #expect(changes.map(\.value) == [.integer(1), nil, .integer(2)])
  }
}

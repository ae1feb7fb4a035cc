@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A suite's values held as the file's bytes and an index of its keys, decoded when read
/// (``BinaryPropertyListIndex``, ``SuiteValues``): the index answers as the whole decode
/// does, declines every file it cannot hold exactly (which then takes the path it always
/// took), and the store built on it reads, writes, catches up and re-reads as before.
@Suite("Storage: the indexed domain", .processBound)
struct IndexedDomainTests {
  static func binary(_ values: [String: Any]) throws -> Data {
    try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
  }

  static func decodeWhole(_ data: Data) throws -> [String: PropertyListValue] {
    guard case .dictionary(let values) = try BinaryPropertyList.decode(data) else {
      throw AppGroupsError(.corruptPreferences, "not a dictionary")
    }
    return values
  }

  static var mixed: [String: Any] { [
    "name": "a value", "count": 42, "negative": -7, "big": UInt64.max, "ratio": 0.5, "on": true,
    "off": false, "when": Date(timeIntervalSinceReferenceDate: 12345.5), "bytes": Data([1, 2, 3]),
    "list": [1, "two", 3.0, ["four": [5]]], "nested": ["inner": ["deeper": Data([1, 2, 3])]],
    "empty-list": [Any](), "empty-dict": [String: Any](), "text": "é and 日本",
    "a-key-longer-than-fifteen-bytes-and-eight-aligned": "long",
  ] }

  // MARK: The index against the whole decode

  @Test func everyKeyLooksUpAsTheWholeDecodeReadsIt() throws {
    let data = try Self.binary(Self.mixed)
    let index = try #require(BinaryPropertyListIndex(data))
    let whole = try Self.decodeWhole(data)
    #expect(index.count == whole.count)
    for (key, value) in whole { #expect(index.lookup(key) == .found(value), "\(key)") }
    #expect(index.lookup("missing") == .absent)
    #expect(index.lookup("") == .absent)
    #expect(index.decoded == whole)
    let values = SuiteValues(indexed: index)
    #expect(values.isIndexed && values.count == whole.count && values.decoded == whole)
  }

  @Test func aKeyGivenTwiceIsDeclinedAsTheWholeDecodeRefusesIt() throws {
    // {"k": 1, "k": 2, "j": 3}, and {"d": {"x": 1, "x": 2}, "j": 3}
    let top = CraftedPropertyList.file(
      objects: [[0xD3, 1, 1, 2, 3, 4, 5], CraftedPropertyList.ascii("k"), CraftedPropertyList.ascii("j"),
        [0x10, 1], [0x10, 2], [0x10, 3]],
      referenceSize: 1)
    let nested = CraftedPropertyList.file(
      objects: [[0xD2, 1, 2, 3, 4], CraftedPropertyList.ascii("d"), CraftedPropertyList.ascii("j"),
        [0xD2, 5, 5, 6, 7], [0x10, 3], CraftedPropertyList.ascii("x"), [0x10, 1], [0x10, 2]],
      referenceSize: 1)
    for data in [top, nested] {
      #expect(BinaryPropertyListIndex(data) == nil)
      #expect(throws: AppGroupsError.self) { try Self.decodeWhole(data) }
      // Read in part: the key given twice (or holding a dictionary that does) is left out.
      let salvage = try BinaryPropertyList.decodeSalvaging(data)
      #expect(salvage.values == ["j": .integer(3)])
      #expect(salvage.skipped.count == 1 && salvage.skipped.allSatisfy { $0.reason.contains("is given twice") })
    }
  }

  /// Seeded valid files and mutations of them: whenever the index accepts one, the whole
  /// decode accepts it too and every key reads the same; an index never accepts a file the
  /// whole decode refuses.
  @Test func theIndexAgreesWithTheWholeDecodeOnSeededFiles() throws {
    var random = SeededGenerator(seed: 0x1D_E5ED)
    var accepted = 0
    for round in 0..<600 {
      var values: [String: Any] = [:]
      for i in 0..<Int.random(in: 0...12, using: &random) {
        values["key-\(i)-\(Int.random(in: 0...99, using: &random))"] = FuzzPropertyListTests.randomValue(&random, depth: 3)
      }
      var data = try Self.binary(values)
      if round % 3 != 0 { data = FuzzPropertyListTests.mutate(data, &random) }
      guard let index = BinaryPropertyListIndex(data) else {
        // Declined: the whole decode refuses it, or it holds a key that is not ASCII.
        if case .dictionary(let whole)? = try? BinaryPropertyList.decode(data) {
          #expect(whole.keys.contains { !$0.utf8.allSatisfy { $0 < 0x80 } }, "round \(round): a valid file declined")
        }
        continue
      }
      let whole = try #require(try? Self.decodeWhole(data), "round \(round): indexed, but the whole decode refuses it")
      #expect(index.count == whole.count, "round \(round)")
      // NaN is not equal to itself: compared as the fuzz tests compare.
      #expect(FuzzPropertyListTests.same(index.decoded, whole), "round \(round)")
      for (key, value) in whole {
        guard case .found(let found) = index.lookup(key) else {
          Issue.record("round \(round): \(key) not found")
          continue
        }
        #expect(FuzzPropertyListTests.same([key: found], [key: value]), "round \(round): \(key)")
      }
      accepted += 1
    }
    #expect(accepted > 200)
  }

  /// Every scalar kind the fill checks in place (and the ones it leaves to the reader), each
  /// byte of the objects and of the offsets set to every value in turn: the index
  /// accepts exactly the files the whole decode accepts (with ASCII keys), and reads them as
  /// it does.
  @Test func everyOneByteChangeOfEachScalarKindIsJudgedAsTheWholeDecodeJudgesIt() throws {
    let values: [[UInt8]] = [
      [0x10, 7], [0x13, 0, 0, 0, 0, 0, 0, 1, 2], [0x23, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0],
      [0x53, 0x61, 0x62, 0x63], [0x42, 1, 2], [0x09], [0x14] + [UInt8](repeating: 0, count: 15) + [9],
      [0x33, 0x40, 0, 0, 0, 0, 0, 0, 0], [0x61, 0, 0x41], [0x22, 0x3F, 0x80, 0, 0], [0x08],
    ]
    let keys = values.indices.map { CraftedPropertyList.ascii($0 == 3 ? "a-key-of-sixteen" : "k\($0)") }
    let n = values.count
    let top = [0xD0 | UInt8(n)] + (1...(2 * n)).map { UInt8($0) }
    let original = CraftedPropertyList.file(objects: [top] + keys + values, referenceSize: 1)
    let whole = try Self.decodeWhole(original)
    #expect(BinaryPropertyListIndex(original)?.decoded == whole)
    // Every byte of the objects; of the offset table (8-byte offsets), the low byte of each.
    let table = original.count - 32 - (1 + 2 * n) * 8
    let positions = Array(8..<table) + (0..<(1 + 2 * n)).map { table + $0 * 8 + 7 }
    let accepted = Self.judgeEveryOneByteChange(of: original, at: positions, hasUTF16Key: Self.hasUTF16Key)
    #expect(accepted > 1_000)
  }

  /// Sets each byte of `original` at `positions` to every other value in turn and expects the
  /// index to judge each file as the whole decode does: a file it declines is refused by the
  /// decode, or has a key that is not ASCII or is held as UTF-16 (`hasUTF16Key`); a file it
  /// accepts the decode accepts too, and every key reads the same. Returns how many it accepted.
  /// `context` is added to the message of a file indexed that the decode refuses.
  static func judgeEveryOneByteChange(
    of original: Data, at positions: [Int], context: String = "", hasUTF16Key: (Data) -> Bool
  ) -> Int {
    var accepted = 0
    for position in positions {
      for byte in 0...255 where byte != Int(original[position]) {
        var data = original
        data[position] = UInt8(byte)
        let decoded = try? decodeWhole(data)
        guard let index = BinaryPropertyListIndex(data) else {
          // Declined and valid: only for a key that is not ASCII or is held as UTF-16.
          if let decoded, decoded.keys.allSatisfy({ $0.utf8.allSatisfy { $0 < 0x80 } }) {
            #expect(hasUTF16Key(data), "byte \(position) = \(byte): declined")
          }
          continue
        }
        guard let decoded else {
          Issue.record("byte \(position) = \(byte)\(context): indexed, but the whole decode refuses it")
          continue
        }
        accepted += 1
        #expect(index.count == decoded.count && FuzzPropertyListTests.same(index.decoded, decoded), "byte \(position) = \(byte)")
        for (key, value) in decoded {
          guard case .found(let found) = index.lookup(key), FuzzPropertyListTests.same([key: found], [key: value]) else {
            Issue.record("byte \(position) = \(byte): \(key) reads otherwise")
            continue
          }
        }
      }
    }
    return accepted
  }

  /// Whether a file of ``CraftedPropertyList/file(objects:referenceSize:)`` (1-byte
  /// references, 8-byte offsets, the top dictionary first) has a key stored as UTF-16.
  static func hasUTF16Key(_ data: Data) -> Bool {
    let bytes = [UInt8](data)
    let table = bytes[(bytes.count - 8)...].reduce(0) { $0 << 8 | Int($1) }
    let count = Int(bytes[8] & 0x0F)
    return (0..<count).contains { i in
      let at = table + Int(bytes[9 + i]) * 8
      guard at + 8 <= bytes.count - 32 else { return false }
      let offset = bytes[at..<(at + 8)].reduce(0) { $0 << 8 | Int($1) }
      return offset < bytes.count && bytes[offset] >> 4 == 0x6
    }
  }

  // MARK: What the index declines

  @Test func theIndexDeclinesEveryFileItCannotHoldExactly() throws {
    let utf16Key = try Self.binary(["naïve": 1, "plain": 2])
    let xml = try PropertyListSerialization.data(fromPropertyList: ["k": 1], format: .xml, options: 0)
    let valid = try Self.binary(Self.mixed)
    #expect(BinaryPropertyListIndex(utf16Key) == nil, "a UTF-16 key")
    #expect(BinaryPropertyListIndex(xml) == nil, "XML")
    #expect(BinaryPropertyListIndex(valid.prefix(valid.count - 1)) == nil, "truncated")
    // Every kind of unreadable file of the quarantine tests.
    for (kind, bytes) in FaultUnreadableFileTests.unreadableFiles() {
      #expect(BinaryPropertyListIndex(bytes) == nil, "\(kind)")
    }
    // A file the index declines is read as it always was: values, or what is wrong.
    let t = try TestRoot()
    let dir = t.sandbox.url.appendingPathComponent("files")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    let path = dir.appendingPathComponent("utf16.plist").path
    try utf16Key.write(to: URL(fileURLWithPath: path))
    guard case .values(let values, _) = try PropertyListFile.read(path, indexing: true) else {
      Issue.record("a UTF-16 key's file is not read whole")
      return
    }
    #expect(values == ["naïve": .integer(1), "plain": .integer(2)])
    try valid.prefix(valid.count / 2).write(to: URL(fileURLWithPath: path))
    guard case .unreadable(let reason, _) = try PropertyListFile.read(path, indexing: true),
      case .unreadable(let before, _) = try PropertyListFile.read(path)
    else {
      Issue.record("a truncated file is not unreadable")
      return
    }
    #expect(reason == before)
    // A small file is decoded whole (cheaper than indexing it); a larger one is indexed.
    try valid.write(to: URL(fileURLWithPath: path))
    guard case .values = try PropertyListFile.read(path, indexing: true) else {
      Issue.record("a small binary file is indexed")
      return
    }
    try TestRoot.largeSuitePlist().write(to: URL(fileURLWithPath: path))
    guard case .indexed = try PropertyListFile.read(path, indexing: true) else {
      Issue.record("a large binary file is not indexed")
      return
    }
  }

  /// A query that is not ASCII can still equal an ASCII key: U+212A KELVIN SIGN is
  /// canonically "K", as `String` compares.
  @Test func aNonASCIIQueryCanonicallyEqualToAnASCIIKeyFindsIt() throws {
    let kelvin = "\u{212A}"
    #expect(kelvin == "K")
    let index = try #require(BinaryPropertyListIndex(try Self.binary(["K": "kelvin", "other": 1])))
    #expect(index.lookup(kelvin) == .unknown)
    #expect(index.lookup("é") == .unknown)
    let values = SuiteValues(indexed: index)
    #expect(values.value(forKey: kelvin) == .string("kelvin"))
    #expect(values.value(forKey: "é") == nil)
    var changed = values
    changed[kelvin] = .string("changed")
    #expect(changed.value(forKey: "K") == .string("changed"))
    #expect(changed.count == 2)
    #expect(changed.decoded == ["K": .string("changed"), "other": .integer(1)])
  }

  /// Keys of every length from 0 to 40 bytes (each path of the seeded hash: whole words, a
  /// tail of four to seven, of one to three, none) and keys that differ from one another in
  /// one byte only, first, middle or last: each is found with its own value, and a key one
  /// byte off is absent. The same with the table hashed by `Hasher` (what a file of keys that
  /// crowd the seeded hash gets), and across the two forms.
  @Test func keysOfEveryLengthAndOneByteApartLookUpExactly() throws {
    var values: [String: Any] = [:]
    let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:".utf8)
    for length in 0...40 {
      let key = String(decoding: (0..<length).map { alphabet[($0 &* 7 &+ length) % alphabet.count] }, as: UTF8.self)
      values[key] = length
      guard length > 0 else { continue }
      for position in Set([0, length / 2, length - 1]) {
        var bytes = Array(key.utf8)
        bytes[position] = bytes[position] == UInt8(ascii: "~") ? UInt8(ascii: "}") : UInt8(ascii: "~")
        values[String(decoding: bytes, as: UTF8.self)] = "\(length)@\(position)"
      }
    }
    for i in 0..<1_000 { values["key-\(i)"] = i }
    let data = try Self.binary(values)
    let whole = try Self.decodeWhole(data)
    let seeded = try #require(BinaryPropertyListIndex(data))
    let hashed = try #require(BinaryPropertyListIndex(data, crowdLimit: 0))
    #expect(!seeded.hashesWithHasher, "1,000 ordinary keys crowd the seeded hash")
    #expect(hashed.hashesWithHasher)
    for index in [seeded, hashed] {
      #expect(index.count == whole.count)
      for (key, value) in whole {
        #expect(index.lookup(key) == .found(value), "\(key)")
        // One byte more, one less, and the last byte changed: absent (unless that key exists).
        for other in [key + "!", String(key.dropLast()), String(key.dropLast()) + "!"] where whole[other] == nil {
          #expect(index.lookup(other) == .absent, "\(other)")
        }
      }
      #expect(index.decoded == whole)
    }
    #expect(seeded.keysDiffering(from: hashed).isEmpty)
    var changed = values
    changed["key-7"] = "seven"
    changed["new"] = 1
    changed[""] = nil
    let other = try #require(BinaryPropertyListIndex(try Self.binary(changed), crowdLimit: 0))
    #expect(Set(seeded.keysDiffering(from: other)) == ["key-7", "new", ""])
    #expect(Set(other.keysDiffering(from: seeded)) == ["key-7", "new", ""])
  }

  /// A key put in after the seeded hash was given up on, and one put in before: both found.
  /// (A limit of one slot gives it up at the first collision, wherever that falls.)
  @Test func theTableHashedAgainMidwayHoldsTheKeysPutInBefore() throws {
    var values: [String: Any] = [:]
    for i in 0..<3_000 { values["k\(i)"] = i }
    let data = try Self.binary(values)
    let index = try #require(BinaryPropertyListIndex(data, crowdLimit: 1))
    #expect(index.hashesWithHasher)
    for i in 0..<3_000 { #expect(index.lookup("k\(i)") == .found(.integer(i))) }
    #expect(index.lookup("k3000") == .absent)
  }

  /// A key whose bytes are not ASCII, in an ASCII string object, is not indexed: the file is
  /// declined and the whole decode says what is wrong, as it always did.
  @Test func aKeyThatIsNotASCIIInAnASCIIStringIsDeclined() throws {
    // {"k\u{FF}": 1, "j": 2}: byte 0xFF in an ASCII string object.
    let data = CraftedPropertyList.file(
      objects: [[0xD2, 1, 2, 3, 4], [0x52, UInt8(ascii: "k"), 0xFF], CraftedPropertyList.ascii("j"),
        [0x10, 1], [0x10, 2]],
      referenceSize: 1)
    #expect(BinaryPropertyListIndex(data) == nil)
    #expect(throws: AppGroupsError.self) { try BinaryPropertyList.decode(data) }
  }

  // MARK: Values: the overlay, the diff

  @Test func changesOverAnIndexReadAsADictionaryWould() throws {
    var base: [String: Any] = [:]
    for i in 0..<100 { base["k\(i)"] = i }
    let index = try #require(BinaryPropertyListIndex(try Self.binary(base)))
    var values = SuiteValues(indexed: index)
    var expected = try Self.decodeWhole(index.data)
    #expect(values.updateValue(.string("new"), forKey: "k1") == .integer(1))
    expected["k1"] = .string("new")
    #expect(values.updateValue(.integer(-1), forKey: "added") == nil)
    expected["added"] = .integer(-1)
    #expect(values.removeValue(forKey: "k2") == .integer(2))
    expected["k2"] = nil
    #expect(values.removeValue(forKey: "absent") == nil)
    #expect(values.isIndexed)
    #expect(values.count == expected.count)
    #expect(values.decoded == expected)
    #expect(values.value(forKey: "k2") == nil && values.value(forKey: "k1") == .string("new"))
    #expect(values == SuiteValues(expected))
    // Many changes fold the overlay into a dictionary; nothing changes for a reader.
    for i in 0..<80 { values["k\(i)"] = .integer(i * 2) }
    for i in 0..<80 { expected["k\(i)"] = .integer(i * 2) }
    #expect(!values.isIndexed)
    #expect(values.decoded == expected)
  }

  @Test func aKeyRemovedAndSetAgainOverAnIndexReadsAsADictionaryWould() throws {
    var base: [String: Any] = [:]
    for i in 0..<100 { base["k\(i)"] = i }
    let index = try #require(BinaryPropertyListIndex(try Self.binary(base)))
    var values = SuiteValues(indexed: index)
    var expected = try Self.decodeWhole(index.data)
    // Removed, then set again; set, then removed; a new key set, then removed.
    #expect(values.removeValue(forKey: "k1") == .integer(1))
    #expect(values.updateValue(.string("back"), forKey: "k1") == nil)
    expected["k1"] = .string("back")
    #expect(values.updateValue(.string("gone soon"), forKey: "k2") == .integer(2))
    #expect(values.removeValue(forKey: "k2") == .string("gone soon"))
    expected["k2"] = nil
    values["new"] = .integer(-1)
    values["new"] = nil
    #expect(values.isIndexed)
    #expect(values.value(forKey: "k1") == .string("back") && values.value(forKey: "k2") == nil)
    #expect(values.value(forKey: "new") == nil)
    #expect(values.count == expected.count)
    #expect(values.decoded == expected)
    #expect(values == SuiteValues(expected))
    // A removal alone is a change: told by the diff, and not equal to the file unchanged.
    var removedOnly = SuiteValues(indexed: index)
    removedOnly["k3"] = nil
    #expect(removedOnly != SuiteValues(indexed: index))
    #expect(removedOnly.changes(to: SuiteValues(indexed: index)) == [StoredChange(key: "k3", old: nil, new: .integer(3))])
    #expect(SuiteValues(indexed: index).changes(to: removedOnly) == [StoredChange(key: "k3", old: .integer(3), new: nil)])
  }

  @Test func twoIndexedFilesDifferOnlyInTheKeysWhoseBytesDiffer() throws {
    var base: [String: Any] = [:]
    for i in 0..<500 { base["key-\(i)"] = "value-\(i)" }
    base["list"] = [1, 2, ["x": 3]]
    let before = try #require(BinaryPropertyListIndex(try Self.binary(base)))
    var next = base
    next["key-7"] = "changed"
    next["key-8"] = nil
    next["added"] = 12
    next["list"] = [1, 2, ["x": 4]]
    let after = try #require(BinaryPropertyListIndex(try Self.binary(next)))
    #expect(Set(before.keysDiffering(from: after)) == ["key-7", "key-8", "added", "list"])
    let changes = SuiteValues(indexed: before).changes(to: SuiteValues(indexed: after))
    let byKey = Dictionary(uniqueKeysWithValues: changes.map { ($0.key, $0) })
    #expect(byKey.count == 4)
    #expect(byKey["key-7"] == StoredChange(key: "key-7", old: .string("value-7"), new: .string("changed")))
    #expect(byKey["key-8"] == StoredChange(key: "key-8", old: .string("value-8"), new: nil))
    #expect(byKey["added"] == StoredChange(key: "added", old: nil, new: .integer(12)))
    #expect(byKey["list"]?.new == .array([.integer(1), .integer(2), .dictionary(["x": .integer(4)])]))
    // The same file: nothing differs.
    let same = try #require(BinaryPropertyListIndex(try Self.binary(base)))
    #expect(before.keysDiffering(from: same).isEmpty)
    // An overlay's keys are compared too.
    var mine = SuiteValues(indexed: before)
    mine["key-1"] = .string("mine")
    let fromMine = mine.changes(to: SuiteValues(indexed: same))
    #expect(fromMine == [StoredChange(key: "key-1", old: .string("mine"), new: .string("value-1"))])
  }

  // MARK: The store on an indexed file

  /// The large suite, written by Foundation (binary, ASCII keys), opened: indexed.
  private func largeSuite(_ t: TestRoot) throws -> (GroupDefaults, SuiteStore) {
    try t.writeLargeSuitePlist()
    let d = try t.defaults(TestRoot.group)
    let store = try #require(SuiteStore.existing(path: t.groupSuiteFile.path))
    return (d, store)
  }

  @Test func aSuiteOpensIndexedAndItsFirstSetDecodesItAndLosesNothing() throws {
    let t = try TestRoot()
    let (d, store) = try largeSuite(t)
    #expect(store.state.withLock { $0.values.isIndexed && $0.knownSizeEstimate == nil })
    #expect(d.string(forKey: "base-3") == "value-3-of-the-large-base")
    #expect(store.state.withLock { $0.values.isIndexed })
    d.set("new", forKey: "k-0")
    #expect(store.state.withLock { !$0.values.isIndexed })
    #expect(d.synchronize())
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk.count == TestRoot.largeSuiteCount + 1)
    #expect(onDisk["k-0"] as? String == "new")
    #expect(onDisk["base-9"] as? String == "value-9-of-the-large-base")
    #expect(d.string(forKey: "base-9") == "value-9-of-the-large-base")
    // The size estimate, computed at the first set, is the whole domain's.
    let estimate = store.state.withLock { $0.knownSizeEstimate }
    #expect(estimate == SuiteStore.estimate(store.values()))
  }

  @Test func aJournalWrittenByAnotherProcessIsAppliedOverTheIndexedPlist() throws {
    let t = try TestRoot()
    try t.writeLargeSuitePlist()
    let plist = try Data(contentsOf: t.groupSuiteFile)
    let env = t.environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 }
    #expect(try Product.run("appgroups-worker", ["set", TestRoot.group, "k-journal", "appended"], environment: env).status == 0)
    #expect(try Product.run("appgroups-worker", ["set", TestRoot.group, "base-5", "replaced"], environment: env).status == 0)
    // Both went to the journal: the plist is the one written above.
    #expect(try Data(contentsOf: t.groupSuiteFile) == plist)
    #expect(FileManager.default.fileExists(atPath: t.groupSuiteFile.path + ".journal"))
    let d = try t.defaults(TestRoot.group)
    let store = try #require(SuiteStore.existing(path: t.groupSuiteFile.path))
    #expect(store.state.withLock { $0.values.isIndexed })
    #expect(d.string(forKey: "k-journal") == "appended")
    #expect(d.string(forKey: "base-5") == "replaced")
    #expect(d.string(forKey: "base-6") == "value-6-of-the-large-base")
    #expect(store.values().count == TestRoot.largeSuiteCount + 1)
    // The dead bytes counted the replaced value (a lookup in the index).
    #expect(store.file.commit.withLock { $0.deadBytes } > 0)
  }

  @Test func aWatchersReReadOfOneChangedKeyOfManyTellsOfThatKeyOnly() throws {
    let t = try TestRoot()
    let (d, store) = try largeSuite(t)
    let log = ChangeLog()
    let observation = d.observe(handler: log.record)
    defer { observation.cancel() }
    // Rewritten whole from outside (a new file, renamed in): every key's bytes are compared.
    try editOutside(t.groupSuiteFile) { $0["base-11"] = "edited outside" }
    #expect(log.wait { $0.key == "base-11" } != nil)
    #expect(log.all.map(\.key) == ["base-11"])
    #expect(log.all.first?.oldValue == .string("value-11-of-the-large-base"))
    #expect(log.all.first?.newValue == .string("edited outside"))
    #expect(store.state.withLock { $0.values.isIndexed })
    #expect(d.string(forKey: "base-11") == "edited outside")
    #expect(d.string(forKey: "base-12") == "value-12-of-the-large-base")
  }

  /// A writer that ignores the lock writes over the file in place: this process's copy of
  /// the bytes is what it indexed (no mapping to fault on), and a re-read of the damaged
  /// file keeps the values read before; a valid file renamed in is read.
  @Test func aFileReplacedFromOutsideWithoutTheLockNeverCostsAValue() throws {
    let t = try TestRoot()
    let (d, store) = try largeSuite(t)
    let handle = try FileHandle(forWritingTo: t.groupSuiteFile)
    try handle.truncate(atOffset: 100)
    try handle.close()
    // Read before any re-read: from the bytes read at open.
    #expect(d.string(forKey: "base-20") == "value-20-of-the-large-base")
    store.refresh()
    #expect(d.string(forKey: "base-21") == "value-21-of-the-large-base")
    #expect(store.values().count == TestRoot.largeSuiteCount)
    try Self.binary(["only": "this"]).write(to: t.groupSuiteFile, options: .atomic)
    // Re-read here or by the change monitor, whichever comes first (the view hears of it
    // from the one that did): the store holds the new file.
    store.refresh()
    #expect(store.value(forKey: "only") == .string("this"))
    #expect(store.value(forKey: "base-21") == nil)
    #expect(store.values() == ["only": .string("this")])
  }
}

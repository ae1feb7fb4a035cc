@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

// BinaryPropertyList's tests of damaged input: salvaging, refusals, fuzzing and Foundation's tools.

extension BinaryPropertyListTests {
  // MARK: Salvaging

  /// The error `decodeSalvaging` throws, or `nil` if it salvaged.
  func salvageError(_ data: Data) -> AppGroupsError? {
    do {
      _ = try BinaryPropertyList.decodeSalvaging(data)
      return nil
    } catch {
      return error
    }
  }

  /// A top dictionary of `entries` (key object, value object) over `objects` 1...; object
  /// 0 is the dictionary.
  func dictionaryFile(_ entries: [(key: UInt8, value: UInt8)], _ objects: [[UInt8]]) -> Data {
    let top: [UInt8] = [0xD0 | UInt8(entries.count)] + entries.map(\.key) + entries.map(\.value)
    return handMade([top] + objects)
  }

  @Test func salvageKeepsTheKeysItCanReadAndNamesTheOthers() throws {
    // Keys a...f; values: an integer, a uid, a set, null, a 17-byte-wide integer, a string.
    let data = dictionaryFile(
      [(1, 7), (2, 8), (3, 9), (4, 10), (5, 11), (6, 12)],
      [
        [0x51, 0x61], [0x51, 0x62], [0x51, 0x63], [0x51, 0x64], [0x51, 0x65], [0x51, 0x66],
        [0x10, 0x2A], [0x80, 0x01], [0xC1, 0x07], [0x00],
        [0x14] + bigEndian(1, width: 8) + bigEndian(0, width: 8), [0x52, 0x6F, 0x6B],
      ])
    #expect(decodeError(data) != nil)
    let salvage = try BinaryPropertyList.decodeSalvaging(data)
    #expect(salvage.values == ["a": .integer(42), "f": .string("ok")])
    #expect(salvage.skipped.map(\.key) == ["b", "c", "d", "e"])
    #expect(salvage.skipped.map(\.index) == [1, 2, 3, 4])
    let reasons = salvage.skipped.map(\.reason)
    #expect(reasons[0].contains("uid") && reasons[1].contains("set") && reasons[2].contains("null"))
    #expect(reasons[3].contains("16-byte integer above UInt64.max"))
    #expect(salvage.skipped[0].description.hasPrefix("\"b\" ("))
  }

  @Test func salvageSkipsADamagedValueOrKey() throws {
    // "a" → an array whose element is past the object count; a key that is an integer;
    // "c" → true.
    let data = dictionaryFile(
      [(1, 4), (5, 6), (2, 6)],
      [[0x51, 0x61], [0x51, 0x63], [0x09], [0xA1, 0x09], [0x10, 0x01], [0x09]])
    let salvage = try BinaryPropertyList.decodeSalvaging(data)
    #expect(salvage.values == ["c": .bool(true)])
    #expect(salvage.skipped.count == 2)
    #expect(salvage.skipped[0].key == "a" && salvage.skipped[0].reason.contains("refers to object 9"))
    #expect(salvage.skipped[1].key == nil && salvage.skipped[1].index == 1)
    #expect(salvage.skipped[1].reason.contains("not a string"))
    #expect(salvage.skipped[1].description.hasPrefix("entry 1 of the top dictionary"))
  }

  @Test func salvageClosesTheContainersAFailedValueOpened() throws {
    // "a" and "b" both hold array 5 = [array 6 = [a uid]]. The second is refused for the
    // uid again, not as a container that contains itself.
    let data = dictionaryFile(
      [(1, 3), (2, 4)],
      [[0x51, 0x61], [0x51, 0x62], [0xA1, 0x05], [0xA1, 0x05], [0xA1, 0x06], [0xA1, 0x07], [0x80, 0x01]])
    let salvage = try BinaryPropertyList.decodeSalvaging(data)
    #expect(salvage.values.isEmpty)
    #expect(salvage.skipped.count == 2)
    #expect(salvage.skipped.allSatisfy { $0.reason.contains("uid") })
  }

  @Test func salvageOfAGoodFileIsTheStrictDecode() throws {
    let data = BinaryPropertyList.encode(sampleValue)
    let salvage = try BinaryPropertyList.decodeSalvaging(data)
    #expect(salvage.skipped.isEmpty)
    #expect(PropertyListValue.dictionary(salvage.values) == sampleValue)
    // A key given twice is left out, at its second entry; a key left out for its value
    // (the uid) is reported once.
    let duplicates = dictionaryFile(
      [(1, 2), (1, 3), (4, 5), (4, 2), (6, 2)],
      [[0x51, 0x6B], [0x10, 0x01], [0x10, 0x02], [0x51, 0x75], [0x80, 0x01], [0x51, 0x6A]])
    let salvaged = try BinaryPropertyList.decodeSalvaging(duplicates)
    #expect(salvaged.values == ["j": .integer(1)])
    #expect(salvaged.skipped.map(\.key) == ["k", "u"])
    #expect(
      salvaged.skipped.first?.reason
        == #"the key "k" is given twice (keys 0 and 1 of dictionary object 0); a dictionary holds each key once"#)
    #expect(salvaged.skipped.last?.reason.contains("uid") == true)
  }

  @Test func salvageLeavesOutAKeyWhoseValueGivesAKeyTwice() throws {
    // {"d": {"x": 1, "x": 2}, "k": 1}
    let data = dictionaryFile(
      [(1, 3), (2, 4)],
      [[0x51, 0x64], [0x51, 0x6B], [0xD2, 0x05, 0x05, 0x04, 0x06], [0x10, 0x01], [0x51, 0x78], [0x10, 0x02]])
    let salvage = try BinaryPropertyList.decodeSalvaging(data)
    #expect(salvage.values == ["k": .integer(1)])
    #expect(salvage.skipped.map(\.key) == ["d"])
    #expect(
      salvage.skipped.first?.reason
        == #"the key "x" is given twice in the value of "d" (keys 0 and 1 of dictionary object 3); a dictionary holds each key once"#)
    #expect(decodeError(data)?.message == salvage.skipped.first?.reason)
  }

  @Test func salvageRefusesWhatHoldsNoKeys() throws {
    // The top object is not a dictionary.
    #expect(salvageError(handMade([[0xA0]]))?.message.contains("not a dictionary") == true)
    #expect(salvageError(handMade([[0x80, 0x01]]))?.message.contains("a uid, not a dictionary") == true)
    // A broken trailer.
    var broken = [UInt8](BinaryPropertyList.encode(sampleValue))
    broken[broken.count - 26] = 0
    #expect(salvageError(Data(broken)) != nil)
    // The top dictionary's references run past the object area.
    #expect(salvageError(handMade([[0xD5, 0x01]]))?.message.contains("references") == true)
    // Shared containers that expand past the budget: nothing is kept.
    var objects: [[UInt8]] = [[0xD1, 0x01, 0x02], [0x51, 0x6B]]
    // Object 2...: each array holds the next one 15 times; the last holds an integer.
    for level in 0..<12 { objects.append([0xAF, 0x10, 0x0F] + [UInt8](repeating: UInt8(3 + level), count: 15)) }
    objects.append([0x10, 0x01])
    let bomb = handMade(objects)
    #expect(salvageError(bomb)?.message.contains("expand") == true)
  }

  @Test func salvageOfAnyFormat() throws {
    let binary = dictionaryFile([(1, 3), (2, 4)], [[0x51, 0x61], [0x51, 0x62], [0x10, 0x01], [0x80, 0x01]])
    let fromBinary = try PropertyListValue.salvaging(propertyListData: binary)
    #expect(fromBinary.values == ["a": .integer(1)] && fromBinary.skipped.map(\.key) == ["b"])
    let xml = try PropertyListValue.dictionary(["a": .integer(1), "big": .unsignedInteger(UInt64.max)])
      .propertyListData(format: .xml)
    let fromXML = try PropertyListValue.salvaging(propertyListData: xml)
    #expect(fromXML.values == ["a": .integer(1), "big": .unsignedInteger(UInt64.max)] && fromXML.skipped.isEmpty)
    #expect(throws: AppGroupsError.self) {
      try PropertyListValue.salvaging(propertyListData: Data("<plist><array/></plist>".utf8))
    }
    #expect(throws: AppGroupsError.self) { try PropertyListValue.salvaging(propertyListData: Data()) }
  }

  // MARK: Malformed input

  @Test func randomBytesAreRefused() {
    let seed: UInt64 = 42
    var rng = SplitMix64(seed: seed)
    for iteration in 0..<2000 {
      let count = Int.random(in: 0...120, using: &rng)
      var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
      if iteration % 2 == 0, bytes.count >= 8 {
        bytes.replaceSubrange(0..<8, with: Array("bplist00".utf8))
      }
      checkDecodesOrIsCorrupt(Data(bytes), "seed \(seed) iteration \(iteration)")
    }
  }

  @Test func everyTruncationIsRefused() {
    let data = BinaryPropertyList.encode(sampleValue)
    for length in 0..<data.count {
      let error = decodeError(data.prefix(length))
      #expect(error?.code == .corruptPreferences, "prefix of \(length) bytes")
    }
  }

  @Test func wrongMagicAndVersionAreRefused() {
    var data = BinaryPropertyList.encode(.integer(1))
    #expect(decodeError(data) == nil)
    data[0] = UInt8(ascii: "x")
    #expect(decodeError(data)?.message.contains("bplist00") == true)
    data[0] = UInt8(ascii: "b")
    data[7] = UInt8(ascii: "1")
    #expect(decodeError(data)?.message.contains("version") == true)
    #expect(decodeError(Data("bplist0".utf8))?.code == .corruptPreferences)
    #expect(decodeError(Data())?.code == .corruptPreferences)
  }

  @Test func deepNestingThrowsTheDepthError() throws {
    // A chain of 100,000 one-element arrays, each naming the next.
    let depth = 100_000
    var objects: [[UInt8]] = []
    objects.reserveCapacity(depth)
    for i in 0..<depth - 1 {
      objects.append([0xA1] + bigEndian(UInt64(i + 1), width: 4))
    }
    objects.append([0xA0])
    let data = handMade(objects, refSize: 4, offsetSize: 4)
    let error = try #require(decodeError(data))
    #expect(error.code == .corruptPreferences)
    #expect(error.message.contains("nesting deeper than 512"), "\(error)")
  }

  @Test func nestingOf512IsAcceptedAnd513Refused() throws {
    func chain(_ depth: Int) -> Data {
      var objects: [[UInt8]] = (0..<depth - 1).map { [0xA1] + bigEndian(UInt64($0 + 1), width: 2) }
      objects.append([0xA0])
      return handMade(objects, refSize: 2, offsetSize: 2)
    }
    #expect(decodeError(chain(512)) == nil)
    #expect(decodeError(chain(513))?.message.contains("nesting deeper than 512") == true)
    // Our own encoder's output of the deepest accepted value decodes.
    var value = PropertyListValue.array([])
    for _ in 0..<511 { value = .array([value]) }
    #expect(try BinaryPropertyList.decode(BinaryPropertyList.encode(value)) == value)
  }

  @Test func cyclesAreRefused() throws {
    // An array that contains itself.
    let direct = try #require(decodeError(handMade([[0xA1, 0x00]])))
    #expect(direct.message.contains("object 0 refers to itself"), "\(direct)")
    // Two arrays that contain each other.
    let indirect = try #require(decodeError(handMade([[0xA1, 0x01], [0xA1, 0x00]])))
    #expect(indirect.message.contains("refers to itself"), "\(indirect)")
    // A dictionary whose value is itself.
    let dictionary = try #require(decodeError(handMade([[0xD1, 0x01, 0x00], [0x51, 0x6B]])))
    #expect(dictionary.message.contains("refers to itself"), "\(dictionary)")
    // Sharing without a cycle is fine: [x, x] where x = [1].
    let shared = handMade([[0xA2, 0x01, 0x01], [0xA1, 0x02], [0x10, 0x01]])
    #expect(try BinaryPropertyList.decode(shared) == .array([.array([.integer(1)]), .array([.integer(1)])]))
  }

  @Test func sharedContainersCannotExplode() throws {
    // 64 levels of [next, next]: 2^64 objects once expanded, in a few hundred bytes.
    let levels = 64
    var objects: [[UInt8]] = (0..<levels).map { [0xA2, UInt8($0 + 1), UInt8($0 + 1)] }
    objects.append([0x09])
    let error = try #require(decodeError(handMade(objects)))
    #expect(error.message.contains("expand"), "\(error)")
  }

  @Test func hugeDeclaredLengthsAreRefused() throws {
    // A data object claiming 2^62 bytes.
    let data = handMade([[0x4F, 0x13] + bigEndian(1 << 62, width: 8)])
    let error = try #require(decodeError(data))
    #expect(error.message.contains("2^62"), "\(error)")
    // A string and an array claiming more than the file.
    #expect(decodeError(handMade([[0x5F, 0x12] + bigEndian(1_000_000, width: 4)])) != nil)
    #expect(decodeError(handMade([[0x6F, 0x13] + bigEndian(UInt64.max, width: 8)])) != nil)
    #expect(decodeError(handMade([[0xAF, 0x13] + bigEndian(1 << 61, width: 8)])) != nil)
    #expect(decodeError(handMade([[0xDF, 0x13] + bigEndian(1 << 62, width: 8)])) != nil)
    // A length that is one byte too long.
    #expect(decodeError(handMade([[0x43, 1, 2]])) != nil)
    #expect(try BinaryPropertyList.decode(handMade([[0x42, 1, 2]])) == .data(Data([1, 2])))
  }

  @Test func offsetsPastTheEndAreRefused() throws {
    let data = handMade([[0x09]], offsets: [200])
    let error = try #require(decodeError(data))
    #expect(error.message.contains("offset 200 is past the end of the file"), "\(error)")
    // Into the offset table itself.
    #expect(decodeError(handMade([[0x09]], offsets: [9])) != nil)
    // Into the header.
    #expect(decodeError(handMade([[0x09]], offsets: [3])) != nil)
  }

  @Test func badTrailersAreRefused() {
    let good: [[UInt8]] = [[0xA1, 0x01], [0x09]]
    #expect(decodeError(handMade(good)) == nil)
    #expect(decodeError(handMade(good, refSize: 0))?.message.contains("reference size") == true)
    #expect(decodeError(handMade(good, refSize: 9))?.message.contains("reference size") == true)
    #expect(decodeError(handMade(good, offsetSize: 0))?.message.contains("offset size") == true)
    #expect(decodeError(handMade(good, offsetSize: 9))?.message.contains("offset size") == true)
    #expect(decodeError(handMade(good, objectCount: 0))?.message.contains("no objects") == true)
    #expect(decodeError(handMade(good, top: 2))?.message.contains("top object") == true)
    #expect(decodeError(handMade(good, objectCount: 1 << 62)) != nil)
    #expect(decodeError(handMade(good, objectCount: 3)) != nil)
    // A reference to an object that does not exist.
    #expect(decodeError(handMade([[0xA1, 0x05], [0x09]]))?.message.contains("refers to object 5") == true)
  }

  @Test func nonPropertyListObjectsAreRefused() {
    #expect(decodeError(handMade([[0x00]]))?.message.contains("null") == true)
    #expect(decodeError(handMade([[0x80, 0x01]]))?.message.contains("uid") == true)
    #expect(decodeError(handMade([[0xC1, 0x01], [0x09]]))?.message.contains("set") == true)
    #expect(decodeError(handMade([[0x0F]]))?.message.contains("marker") == true)
    #expect(decodeError(handMade([[0x70]]))?.message.contains("marker") == true)
    #expect(decodeError(handMade([[0x34] + [UInt8](repeating: 0, count: 8)]))?.message.contains("marker") == true)
    #expect(decodeError(handMade([[0x21, 0, 0]]))?.message.contains("real") == true)
    #expect(decodeError(handMade([[0x15] + [UInt8](repeating: 0, count: 32)]))?.message.contains("integer") == true)
    // A dictionary with an integer key.
    let key = decodeError(handMade([[0xD1, 0x01, 0x01], [0x10, 0x01]]))
    #expect(key?.message.contains("not a string") == true)
  }

  @Test func sixteenByteIntegersOf64BitsAreReadAndWiderOnesRefused() throws {
    func int128(_ high: UInt64, _ low: UInt64) -> Data {
      handMade([[0x14] + bigEndian(high, width: 8) + bigEndian(low, width: 8)])
    }
    #expect(try BinaryPropertyList.decode(int128(0, 5)) == .integer(5))
    #expect(try BinaryPropertyList.decode(int128(UInt64.max, UInt64.max)) == .integer(-1))
    #expect(try BinaryPropertyList.decode(int128(0, UInt64(Int.max))) == .integer(Int.max))
    #expect(try BinaryPropertyList.decode(int128(UInt64.max, 1 << 63)) == .integer(Int.min))
    // Above Int.max: unsigned, as CoreFoundation and plistlib write them.
    #expect(try BinaryPropertyList.decode(int128(0, 1 << 63)) == .unsignedInteger(1 << 63))
    #expect(try BinaryPropertyList.decode(int128(0, UInt64.max)) == .unsignedInteger(UInt64.max))
    // Beyond 64 bits, either way.
    #expect(decodeError(int128(1, 0))?.message.contains("16-byte integer above UInt64.max") == true)
    #expect(decodeError(int128(UInt64.max, 0))?.message.contains("16-byte integer below Int64.min") == true)
    #expect(decodeError(int128(1 << 63, 0)) != nil)
    // 1-, 2- and 4-byte integers are unsigned.
    #expect(try BinaryPropertyList.decode(handMade([[0x10, 0xFF]])) == .integer(255))
    #expect(try BinaryPropertyList.decode(handMade([[0x12, 0xFF, 0xFF, 0xFF, 0xFF]])) == .integer(4_294_967_295))
  }

  @Test func nanDatesAreRefused() throws {
    let nan = handMade([[0x33] + bigEndian(Double.nan.bitPattern, width: 8)])
    #expect(decodeError(nan)?.message.contains("NaN") == true)
    let infinite = handMade([[0x33] + bigEndian(Double.infinity.bitPattern, width: 8)])
    #expect(try BinaryPropertyList.decode(infinite) == .date(Date(timeIntervalSinceReferenceDate: .infinity)))
  }

  /// A UTF-16 string with a surrogate that has no pair: refused (a key or a value left out by
  /// a salvage), never read as another string (U+FFFD in its place), where it was. A pair is
  /// read.
  @Test func unpairedSurrogatesAreRefusedAndPairsRead() throws {
    func utf16(_ units: [UInt16]) -> [UInt8] {
      [0x60 | UInt8(units.count)] + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
    for units: [UInt16] in [[0x6B, 0xD800], [0xD800, 0x6B], [0xDC00], [0x6B, 0xDBFF, 0xDBFF, 0xDC00]] {
      let error = decodeError(handMade([utf16(units)]))
      #expect(error?.message.contains("unpaired surrogate") == true, "\(units): \(String(describing: error))")
    }
    #expect(try BinaryPropertyList.decode(handMade([utf16([0x6B, 0xD83D, 0xDE00])])) == .string("k😀"))
    // As a key and as a value of the top dictionary: each left out, the other key kept.
    let data = dictionaryFile(
      [(1, 3), (2, 4), (5, 6)],
      [utf16([0x6B, 0xD800]), [0x51, 0x61], [0x51, 0x76], utf16([0x76, 0xDC00]), [0x51, 0x62], [0x51, 0x77]])
    let salvage = try BinaryPropertyList.decodeSalvaging(data)
    #expect(salvage.values == ["b": .string("w")])
    #expect(salvage.skipped.count == 2)
  }

  @Test func fourByteRealsStayFloats() throws {
    let bits = Float(12.34).bitPattern
    let data = handMade([[0x22] + bigEndian(UInt64(bits), width: 4)])
    #expect(try BinaryPropertyList.decode(data) == .float(12.34))
    // Written back as CoreFoundation writes a Float: marker 0x22 and its 4 bytes.
    let written = [UInt8](BinaryPropertyList.encode(.float(12.34)))
    #expect(Array(written[8..<13]) == [0x22] + bigEndian(UInt64(bits), width: 4))
    // And an unsigned integer above Int.max as a 16-byte integer, high half zero.
    let unsigned = [UInt8](BinaryPropertyList.encode(.unsignedInteger(UInt64.max)))
    #expect(Array(unsigned[8..<25]) == [0x14] + [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xFF, count: 8))
  }

  @Test func stringsAreChecked() throws {
    // ASCII strings must be ASCII.
    #expect(decodeError(handMade([[0x52, 0x61, 0xE9]]))?.message.contains("ASCII") == true)
    // An unpaired surrogate is refused: it would read as U+FFFD, another string.
    #expect(
      decodeError(handMade([[0x62, 0xD8, 0x3D, 0x00, 0x61]]))?.message.contains("unpaired surrogate") == true)
    // A valid pair is kept.
    let pair = try BinaryPropertyList.decode(handMade([[0x62, 0xD8, 0x3D, 0xDE, 0x00]]))
    #expect(pair == .string("😀"))
    // A length that is not an integer.
    #expect(decodeError(handMade([[0x5F, 0x22, 0, 0, 0, 0]]))?.message.contains("length") == true)
  }

  @Test func aKeyGivenTwiceIsRefusedWhereCoreFoundationKeepsOneValue() throws {
    let data = handMade([[0xD2, 0x01, 0x01, 0x02, 0x03], [0x51, 0x6B], [0x10, 0x01], [0x10, 0x02]])
    #expect(
      decodeError(data)?.message
        == #"the key "k" is given twice (keys 0 and 1 of dictionary object 0); a dictionary holds each key once"#)
    #expect(decodeError(data)?.code == .corruptPreferences)
    let foundation = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
    #expect(foundation?["k"] as? Int == 1)
  }

  // MARK: Fuzzing

  /// Decoding either succeeds, and then the value survives a round trip, or
  /// throws `.corruptPreferences`.
  @discardableResult
  func checkDecodesOrIsCorrupt(_ data: Data, _ context: @autoclosure () -> String) -> Bool {
    do {
      let value = try BinaryPropertyList.decode(data)
      let again = try BinaryPropertyList.decode(BinaryPropertyList.encode(value))
      if !same(again, value) {
        Issue.record("\(context()): \(value) re-encoded as \(again); input \(data.map { String($0, radix: 16) })")
      }
      return true
    } catch {
      if error.code != .corruptPreferences {
        Issue.record("\(context()): wrong code \(error.code): \(error)")
      }
      return false
    }
  }

  /// The salvaging reader on the same input: it never traps, refuses only as corrupt, agrees
  /// with the strict reader on what that reads, and what it keeps survives a round trip.
  /// - Returns: whether it kept some keys of a file the strict reader refused.
  @discardableResult
  func checkSalvage(_ data: Data, _ context: @autoclosure () -> String) -> Bool {
    let strict = try? BinaryPropertyList.decode(data)
    do {
      let salvage = try BinaryPropertyList.decodeSalvaging(data)
      if case .dictionary(let values)? = strict {
        if !salvage.skipped.isEmpty || !same(.dictionary(salvage.values), .dictionary(values)) {
          Issue.record("\(context()): salvaged \(salvage) where the strict reader read \(values)")
        }
      }
      for skipped in salvage.skipped where skipped.key.map({ salvage.values[$0] != nil }) == true {
        Issue.record("\(context()): \(skipped) is both kept and skipped")
      }
      let kept = PropertyListValue.dictionary(salvage.values)
      let again = try BinaryPropertyList.decode(BinaryPropertyList.encode(kept))
      if !same(again, kept) { Issue.record("\(context()): salvaged \(kept) re-encoded as \(again)") }
      return strict == nil && !salvage.values.isEmpty
    } catch {
      if error.code != .corruptPreferences { Issue.record("\(context()): wrong code \(error.code): \(error)") }
      if case .dictionary? = strict {
        Issue.record("\(context()): the salvaging reader refused what the strict one read: \(error)")
      }
      return false
    }
  }

  @Test func mutationFuzz() throws {
    let iterations = ProcessInfo.processInfo.environment["APPGROUPS_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 1000
    var generator = ValueGenerator(seed: 7)
    var corpus: [Data] = [
      BinaryPropertyList.encode(sampleValue),
      BinaryPropertyList.encode(.array([.integer(1), .string("a"), .array([.dictionary(["k": .real(1)])])])),
      BinaryPropertyList.encode(.string("héllo 😀")),
      try PropertyListSerialization.data(fromPropertyList: sampleValue.foundationValue, format: .binary, options: 0),
    ]
    for _ in 0..<4 { corpus.append(BinaryPropertyList.encode(generator.value())) }
    let interesting: [UInt8] = [0, 1, 0x0F, 0x10, 0x13, 0x14, 0x7F, 0x80, 0xA1, 0xD1, 0xFE, 0xFF]
    let seed = ProcessInfo.processInfo.environment["APPGROUPS_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0xF022
    var rng = SplitMix64(seed: seed)
    var decoded = 0
    var salvaged = 0
    var reasons: [String: Int] = [:]
    for iteration in 0..<iterations {
      let original = corpus[Int(rng.next() % UInt64(corpus.count))]
      var bytes = [UInt8](original)
      // Most mutations land in the objects, keeping the header, offset table
      // and trailer, so that they reach the object parser.
      let tableOffset = Trailer(original).tableOffset
      /// A random number in low..<high, or `low` if that is empty.
      func random(_ low: Int, _ high: Int) -> Int {
        high <= low ? low : low + Int(rng.next() % UInt64(high - low))
      }
      func anyByte() -> UInt8 {
        rng.next() % 2 == 0 ? UInt8(truncatingIfNeeded: rng.next()) : interesting[random(0, interesting.count)]
      }
      let mutations = 1 + random(0, 4)
      for _ in 0..<mutations where bytes.count > 8 {
        switch rng.next() % 10 {
        case 0, 1, 2:
          // An object byte.
          let at = random(8, min(tableOffset, bytes.count))
          if rng.next() % 2 == 0 { bytes[at] ^= 1 << UInt8(rng.next() % 8) } else { bytes[at] = anyByte() }
        case 3:
          // An offset-table byte.
          let at = random(min(tableOffset, bytes.count), max(0, bytes.count - 32))
          if at < bytes.count { bytes[at] = anyByte() }
        case 4:
          // A trailer byte: the widths, counts and offsets.
          let at = random(max(0, bytes.count - 26), bytes.count)
          bytes[at] = anyByte()
        case 5: bytes.insert(anyByte(), at: random(0, bytes.count))
        case 6:
          let at = random(0, bytes.count)
          bytes.removeSubrange(at..<min(bytes.count, at + 1 + random(0, 4)))
        case 7: bytes.removeLast(random(0, min(bytes.count, 8)))
        case 8:
          // A byte anywhere, the header included.
          bytes[random(0, bytes.count)] ^= 1 << UInt8(rng.next() % 8)
        default:
          // An object's bytes copied over another place in the objects.
          let from = random(8, min(tableOffset, bytes.count))
          let to = random(8, min(tableOffset, bytes.count))
          let length = min(random(1, 9), bytes.count - max(from, to))
          if length > 0 { bytes.replaceSubrange(to..<to + length, with: bytes[from..<from + length]) }
        }
      }
      if checkDecodesOrIsCorrupt(Data(bytes), "seed \(seed) iteration \(iteration)") {
        decoded += 1
      } else if let error = decodeError(Data(bytes)) {
        reasons[String(error.message.prefix(while: { !$0.isNumber })), default: 0] += 1
      }
      if checkSalvage(Data(bytes), "seed \(seed) iteration \(iteration)") { salvaged += 1 }
    }
    // Every path is exercised: some mutants decode, many reasons refuse the rest, and
    // the salvaging reader keeps keys of some that the strict one refuses.
    if iterations >= 1000 {
      #expect(decoded > iterations / 50, "seed \(seed): only \(decoded) of \(iterations) mutants decoded")
      #expect(reasons.count > 5, "seed \(seed): refusals \(reasons)")
      #expect(salvaged > iterations / 100, "seed \(seed): only \(salvaged) of \(iterations) refused mutants salvaged")
    }
  }

  // MARK: Foundation's tools

  @Test(.enabled(
    if: FileManager.default.isExecutableFile(atPath: "/opt/swift/usr/bin/plutil"),
    "/opt/swift/usr/bin/plutil is not installed"))
  func plutilAcceptsOurDictionary() throws {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("appgroups-plutil-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    var entries: [String: PropertyListValue] = ["sample": sampleValue]
    for i in 0..<300 { entries["key\(i)"] = .string("value \(i) é") }
    let file = directory.appendingPathComponent("domain.plist")
    try BinaryPropertyList.encode(.dictionary(entries)).write(to: file)

    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/opt/swift/usr/bin/plutil")
    process.arguments = ["-lint", file.path]
    let output = Spawn.pipe()
    process.standardOutput = output
    process.standardError = output
    let exited = try process.startWatchingExit()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(exited.wait(timeout: 60))
    #expect(process.terminationStatus == 0, "plutil -lint: \(text)")
    #expect(text.contains("OK"), "plutil -lint: \(text)")
  }
}

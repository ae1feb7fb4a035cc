@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

// MARK: - Helpers

/// SplitMix64: a tiny seeded generator, so that every failure names a seed
/// that reproduces it.
struct SplitMix64: RandomNumberGenerator {
  var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// Equality that treats reals and dates by bit pattern, so NaN equals NaN
/// and -0.0 differs from 0.0.
func same(_ a: PropertyListValue, _ b: PropertyListValue) -> Bool {
  switch (a, b) {
  case (.real(let x), .real(let y)):
    return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
  case (.float(let x), .float(let y)):
    return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
  case (.date(let x), .date(let y)):
    let (s, t) = (x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
    return s.bitPattern == t.bitPattern || (s.isNaN && t.isNaN)
  case (.array(let x), .array(let y)):
    return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
  case (.dictionary(let x), .dictionary(let y)):
    guard x.count == y.count else { return false }
    for (key, value) in x {
      guard let other = y[key], same(value, other) else { return false }
    }
    return true
  default:
    return a == b
  }
}

/// The error `decode` throws, or `nil` if it decoded.
func decodeError(_ data: Data) -> AppGroupsError? {
  do {
    _ = try BinaryPropertyList.decode(data)
    return nil
  } catch {
    return error
  }
}

/// Builds a binary property list by hand: the objects' bytes in order (they
/// must use `refSize`-byte references), an offset table of `offsetSize`-byte
/// offsets, and a trailer. `offsets` replaces the real offsets when given.
func handMade(
  _ objects: [[UInt8]], top: UInt64 = 0, refSize: UInt8 = 1, offsetSize: UInt8 = 1,
  offsets: [UInt64]? = nil, objectCount: UInt64? = nil
) -> Data {
  var bytes = Array("bplist00".utf8)
  var realOffsets: [UInt64] = []
  for object in objects {
    realOffsets.append(UInt64(bytes.count))
    bytes += object
  }
  let tableOffset = UInt64(bytes.count)
  for offset in offsets ?? realOffsets {
    bytes += bigEndian(offset, width: Int(offsetSize))
  }
  bytes += [0, 0, 0, 0, 0, 0, offsetSize, refSize]
  bytes += bigEndian(objectCount ?? UInt64(objects.count), width: 8)
  bytes += bigEndian(top, width: 8)
  bytes += bigEndian(tableOffset, width: 8)
  return Data(bytes)
}

func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
  (0..<width).map { UInt8(truncatingIfNeeded: value >> (UInt64(width - 1 - $0) * 8)) }
}

/// The trailer's fields of an encoded file.
struct Trailer {
  let offsetSize: Int
  let refSize: Int
  let objectCount: Int
  let top: Int
  let tableOffset: Int

  init(_ data: Data) {
    let bytes = [UInt8](data.suffix(32))
    func field(_ at: Int) -> Int { bytes[at..<at + 8].reduce(0) { $0 << 8 | Int($1) } }
    offsetSize = Int(bytes[6])
    refSize = Int(bytes[7])
    objectCount = field(8)
    top = field(16)
    tableOffset = field(24)
  }
}

/// Random property-list values, seeded.
struct ValueGenerator {
  var rng: SplitMix64

  init(seed: UInt64) { rng = SplitMix64(seed: seed) }

  mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }

  mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

  static let scalarPool: [Unicode.Scalar] = {
    var pool: [Unicode.Scalar] = []
    for v in [0x0, 0x1, 0x9, 0xA, 0x20, 0x7F, 0x80, 0xA0, 0xE9, 0xFF, 0x100, 0x301, 0x3A9, 0x5D0,
              0x4E2D, 0xFEFF, 0xFFFD, 0xFFFF, 0x1F600, 0x1F468, 0x200D, 0x10FFFF, 0x1D11E] {
      if let s = Unicode.Scalar(v) { pool.append(s) }
    }
    return pool
  }()

  mutating func string() -> String {
    let length = chance(10) ? int(15...70) : int(0...14)
    var s = String.UnicodeScalarView()
    let ascii = chance(60)
    for _ in 0..<length {
      if ascii || chance(50) {
        s.append(Unicode.Scalar(UInt8(int(0x20...0x7E))))
      } else {
        s.append(ValueGenerator.scalarPool[int(0...ValueGenerator.scalarPool.count - 1)])
      }
    }
    return String(s)
  }

  mutating func integer() -> Int {
    switch int(0...7) {
    case 0: return [0, 1, -1, Int.min, Int.max, 255, 256, 65535, 65536, Int(UInt32.max), Int(UInt32.max) + 1][int(0...10)]
    case 1: return int(-1000...1000)
    case 2: return Int(truncatingIfNeeded: rng.next())
    case 3: return int(0...255)
    case 4: return int(256...65535)
    case 5: return int(65536...Int(UInt32.max))
    default: return int(Int(Int32.min)...Int(Int32.max))
    }
  }

  mutating func real(allowNaN: Bool) -> Double {
    switch int(0...7) {
    case 0: return [0.0, -0.0, 1.0, -1.5, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1][int(0...8)]
    case 1 where allowNaN: return .nan
    case 2: return Double(int(-1000...1000))
    default: return Double(bitPattern: rng.next() & 0x7FEF_FFFF_FFFF_FFFF | (chance(50) ? 1 << 63 : 0))
    }
  }

  /// A finite float: CoreFoundation writes a float that is not finite as an 8-byte real
  /// (its cached NaN and infinities are doubles), so those are tested on their own.
  mutating func float() -> Float {
    switch int(0...3) {
    case 0: return [0, -0.0, 1, -1.5, 12.34, 0.1, .leastNonzeroMagnitude, .greatestFiniteMagnitude][int(0...7)]
    case 1: return Float(int(-1000...1000))
    default: return Float(bitPattern: UInt32(truncatingIfNeeded: rng.next()) & 0x7F7F_FFFF | (chance(50) ? 1 << 31 : 0))
    }
  }

  mutating func value(depth: Int = 0, allowNaN: Bool = true) -> PropertyListValue {
    let containerChance = depth == 0 ? 100 : max(0, 40 - depth * 12)
    if chance(containerChance) {
      let count = chance(10) ? int(15...40) : int(0...6)
      if chance(50) {
        return .array((0..<count).map { _ in value(depth: depth + 1, allowNaN: allowNaN) })
      }
      var entries: [String: PropertyListValue] = [:]
      for _ in 0..<count { entries[string()] = value(depth: depth + 1, allowNaN: allowNaN) }
      return .dictionary(entries)
    }
    switch int(0...7) {
    case 0: return .string(string())
    case 1:
      // Now and then an unsigned integer above Int.max (a 16-byte integer on disk).
      if chance(10) { return .unsignedInteger(UInt64(Int.max) + 1 + rng.next() % (UInt64(Int.max) + 1)) }
      return .integer(integer())
    case 2:
      // A quarter of the reals are floats (4 bytes on disk).
      if chance(25) { return .float(float()) }
      return .real(real(allowNaN: allowNaN))
    case 3: return .bool(chance(50))
    case 4:
      // Sub-second dates, before and after 2001.
      return .date(Date(timeIntervalSinceReferenceDate: Double(int(-4_000_000_000...4_000_000_000)) / 1000))
    case 5:
      let count = chance(5) ? int(15...2000) : int(0...20)
      return .data(Data((0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
    case 6: return .string(["", "key", "value", "😀"][int(0...3)])  // repeats, to dedupe
    default: return .integer(int(0...3))
    }
  }
}

/// A value with every case, some repeated strings, and nesting.
let sampleValue: PropertyListValue = .dictionary([
  "string": .string("hello"),
  "unicode": .string("héllo wörld 😀 𝄞 中文"),
  "empty": .string(""),
  "emptyArray": .array([]),
  "emptyDict": .dictionary([:]),
  "int": .integer(42),
  "negative": .integer(-42),
  "min": .integer(Int.min),
  "max": .integer(Int.max),
  "real": .real(3.25),
  "negativeZero": .real(-0.0),
  "float": .float(12.34),
  "unsigned": .unsignedInteger(UInt64.max),
  "true": .bool(true),
  "false": .bool(false),
  "date": .date(Date(timeIntervalSinceReferenceDate: 1234.5678)),
  "data": .data(Data([0, 1, 2, 0xFF])),
  "nested": .array([
    .string("hello"), .string("hello"), .integer(300), .integer(70000),
    .dictionary(["string": .string("hello"), "deeper": .array([.bool(true), .bool(false)])]),
  ]),
  "long": .string(String(repeating: "long string ", count: 10)),
])

// MARK: - Tests

@Suite("BinaryPropertyList")
struct BinaryPropertyListTests {
  // MARK: Round trips

  @Test(arguments: [
    PropertyListValue.string(""), .string("a"), .string("plain ascii of more than fifteen bytes"),
    .string("é"), .string("😀"), .string("𝄞 music"), .string("a\u{0}b"), .string("\u{FEFF}bom"),
    .string("e\u{301}"), .string(String(repeating: "ü", count: 300)),
    .integer(0), .integer(1), .integer(-1), .integer(255), .integer(256), .integer(65535),
    .integer(65536), .integer(Int(UInt32.max)), .integer(Int(UInt32.max) + 1),
    .integer(Int.min), .integer(Int.max), .integer(Int(Int32.min)),
    .real(0), .real(-0.0), .real(1.5), .real(-1e300), .real(.infinity), .real(-.infinity),
    .real(.leastNonzeroMagnitude), .real(.nan),
    .float(0), .float(-0.0), .float(12.34), .float(.leastNonzeroMagnitude),
    .float(.greatestFiniteMagnitude),
    .unsignedInteger(UInt64(Int.max) + 1), .unsignedInteger(UInt64.max),
    .bool(true), .bool(false),
    .date(Date(timeIntervalSinceReferenceDate: 0)),
    .date(Date(timeIntervalSinceReferenceDate: 0.123456789)),
    .date(Date(timeIntervalSinceReferenceDate: -978_307_200.5)),
    .data(Data()), .data(Data([0xFF])), .data(Data(repeating: 7, count: 100_000)),
    .array([]), .dictionary([:]),
    .array([.array([.array([.dictionary(["": .string("")])])])]),
  ])
  func roundTripsEveryCase(_ value: PropertyListValue) throws {
    let data = BinaryPropertyList.encode(value)
    let back = try BinaryPropertyList.decode(data)
    #expect(same(back, value), "\(value) came back as \(back)")
    // Foundation reads it too.
    let foundation = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
    let converted = try #require(PropertyListValue(foundation))
    #expect(same(converted, value), "Foundation read \(value) as \(converted)")
  }

  @Test func roundTripsTheSample() throws {
    let data = BinaryPropertyList.encode(sampleValue)
    #expect(same(try BinaryPropertyList.decode(data), sampleValue))
    #expect(try PropertyListValue(propertyListData: data) == sampleValue)
    #expect(try sampleValue.propertyListData() == data)
  }

  @Test func decodesASliceOfData() throws {
    let data = BinaryPropertyList.encode(sampleValue)
    let padded = Data([1, 2, 3]) + data + Data([4])
    let slice = padded.dropFirst(3).dropLast()
    #expect(slice.startIndex == 3)
    #expect(try BinaryPropertyList.decode(slice) == sampleValue)
    #expect(try PropertyListValue(propertyListData: slice) == sampleValue)
  }

  @Test func negativeZeroAndNaNKeepTheirBits() throws {
    let back = try BinaryPropertyList.decode(BinaryPropertyList.encode(.array([.real(-0.0), .real(.nan)])))
    guard case .array(let elements) = back, elements.count == 2,
      case .real(let zero) = elements[0], case .real(let nan) = elements[1]
    else {
      Issue.record("decoded \(back)")
      return
    }
    #expect(zero == 0 && zero.sign == .minus)
    #expect(nan.isNaN)
  }

  @Test func datesKeepSubSecondPrecision() throws {
    let date = Date(timeIntervalSinceReferenceDate: 700_000_000.123456)
    let back = try BinaryPropertyList.decode(BinaryPropertyList.encode(.date(date)))
    #expect(back == .date(date))
  }

  @Test func largeDictionaryRoundTrips() throws {
    var entries: [String: PropertyListValue] = [:]
    for i in 0..<20_000 {
      entries["key\(i)"] = i % 2 == 0 ? .integer(i) : .string("value\(i)")
    }
    let value = PropertyListValue.dictionary(entries)
    let data = BinaryPropertyList.encode(value)
    #expect(try BinaryPropertyList.decode(data) == value)
    let trailer = Trailer(data)
    #expect(trailer.refSize == 2)
    #expect(trailer.offsetSize == 4)
    #expect(trailer.objectCount == 40_001)
  }

  // MARK: Format details

  @Test func outputIsDeterministic() {
    var forward: [String: PropertyListValue] = [:]
    var backward: [String: PropertyListValue] = [:]
    let keys = (0..<500).map { "k\($0 * 7919 % 1000)-\(String(repeating: "x", count: $0 % 13))é" }
    for key in keys { forward[key] = .string(key) }
    for key in keys.reversed() { backward[key] = .string(key) }
    var small = forward
    small.reserveCapacity(10_000)
    let data = BinaryPropertyList.encode(.dictionary(forward))
    #expect(BinaryPropertyList.encode(.dictionary(backward)) == data)
    #expect(BinaryPropertyList.encode(.dictionary(small)) == data)
  }

  /// The keys of the top dictionary in the order the file lists them.
  func writtenKeyOrder(_ data: Data) throws -> [String] {
    let trailer = Trailer(data)
    let bytes = [UInt8](data)
    func read(_ at: Int, _ width: Int) -> Int { bytes[at..<at + width].reduce(0) { $0 << 8 | Int($1) } }
    let offsets = (0..<trailer.objectCount).map { read(trailer.tableOffset + $0 * trailer.offsetSize, trailer.offsetSize) }
    var at = offsets[trailer.top]
    var count = Int(bytes[at] & 0x0F)
    at += 1
    if count == 15 {
      let width = 1 << Int(bytes[at] & 0x0F)
      count = read(at + 1, width)
      at += 1 + width
    }
    return try (0..<count).map { i -> String in
      let ref = read(at + i * trailer.refSize, trailer.refSize)
      // A key object (these are short), copied into a file of its own.
      let object = Array(bytes[offsets[ref]..<min(offsets[ref] + 128, trailer.tableOffset)])
      guard case .string(let key) = try BinaryPropertyList.decode(handMade([object])) else { return "?" }
      return key
    }
  }

  @Test(arguments: [
    ["b", "a", "ab", "a\u{0}", "aaaaaaaaab", "aaaaaaaaa", "aaaaaaaa", "é", "Z", ""],
    (0..<300).map { "com.example.setting.\($0 * 7 % 300)" }
      + (0..<100).map { "k\($0)" } + ["", "a", "a\u{0}", "\u{0}", "é", "😀", "zzzzzzzzz", "zzzzzzzz"],
  ])
  func keysAreSortedByTheirBytes(_ keys: [String]) throws {
    var entries: [String: PropertyListValue] = [:]
    for key in keys { entries[key] = .bool(true) }
    let written = try writtenKeyOrder(BinaryPropertyList.encode(.dictionary(entries)))
    #expect(written == keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
  }

  @Test func stringsAreWrittenOnceAndBooleansShared() {
    let value = PropertyListValue.dictionary([
      "a": .string("a"), "b": .array([.string("a"), .string("b"), .bool(true), .bool(true)]),
      "c": .bool(true),
    ])
    // Objects: dict, "a", "b", "c", array, true = 6.
    #expect(Trailer(BinaryPropertyList.encode(value)).objectCount == 6)
    // Canonically equivalent but different strings stay two objects.
    let twins = PropertyListValue.array([.string("\u{E9}"), .string("e\u{301}")])
    let data = BinaryPropertyList.encode(twins)
    #expect(Trailer(data).objectCount == 3)
    guard case .array(let back) = (try? BinaryPropertyList.decode(data)) ?? .array([]), back.count == 2,
      case .string(let first) = back[0], case .string(let second) = back[1]
    else {
      Issue.record("twins did not decode")
      return
    }
    #expect(Array(first.unicodeScalars) == ["\u{E9}"])
    #expect(Array(second.unicodeScalars) == ["e", "\u{301}"])
  }

  /// A dictionary's keys are looked up only among the strings written before the
  /// dictionary: a key is still shared with a later string value, a nested dictionary's
  /// keys, an array's strings, and a string written before it.
  @Test func stringsAreSharedAcrossKeysValuesAndNestedDictionaries() {
    let nested = PropertyListValue.dictionary([
      "k": .dictionary(["k": .string("v"), "v": .string("k")]),
      "v": .array([.string("k"), .string("v"), .string("w")]),
    ])
    // Objects: 0 the dictionary, 1 "k", 2 "v", 3 the inner dictionary, 4 the array,
    // 5 "w"; the containers are written after the strings, then the offset table.
    var expected: [UInt8] = Array("bplist00".utf8)
    expected += [0x51, 0x6B, 0x51, 0x76, 0x51, 0x77]  // "k" at 8, "v" at 10, "w" at 12
    expected += [0xD2, 1, 2, 3, 4]  // at 14
    expected += [0xD2, 1, 2, 2, 1]  // at 19
    expected += [0xA3, 1, 2, 5]  // at 24
    expected += [14, 8, 10, 19, 24, 12]  // the offset table, at 28
    expected += [0, 0, 0, 0, 0, 0, 1, 1]
    expected += bigEndian(6, width: 8)
    expected += bigEndian(0, width: 8)
    expected += bigEndian(28, width: 8)
    #expect([UInt8](BinaryPropertyList.encode(nested)) == expected)

    // A key met before as a string value: array, "x", dictionary, "y", 1.
    let keyAfterValue = PropertyListValue.array([
      .string("x"), .dictionary(["x": .integer(1), "y": .string("x")]),
    ])
    #expect(Trailer(BinaryPropertyList.encode(keyAfterValue)).objectCount == 5)
    // A value equal to its own key: dictionary, "a".
    #expect(Trailer(BinaryPropertyList.encode(.dictionary(["a": .string("a")]))).objectCount == 2)
    // UTF-16 keys likewise: dictionary, "b", "é", the inner dictionary, 1.
    let utf16 = PropertyListValue.dictionary([
      "\u{E9}": .string("\u{E9}"), "b": .dictionary(["\u{E9}": .integer(1)]),
    ])
    let data = BinaryPropertyList.encode(utf16)
    #expect(Trailer(data).objectCount == 5)
    #expect((try? BinaryPropertyList.decode(data)).map { same($0, utf16) } == true)
  }

  @Test func integersUseTheFewestBytes() {
    func marker(_ v: Int) -> UInt8 {
      let data = BinaryPropertyList.encode(.integer(v))
      return data[8]
    }
    #expect(marker(0) == 0x10)
    #expect(marker(255) == 0x10)
    #expect(marker(256) == 0x11)
    #expect(marker(65535) == 0x11)
    #expect(marker(65536) == 0x12)
    #expect(marker(Int(UInt32.max)) == 0x12)
    #expect(marker(Int(UInt32.max) + 1) == 0x13)
    #expect(marker(-1) == 0x13)
    #expect(marker(Int.min) == 0x13)
  }

  @Test func stringsAreASCIIOrUTF16() {
    #expect(BinaryPropertyList.encode(.string("abc"))[8] == 0x53)
    #expect(BinaryPropertyList.encode(.string("ab\u{7F}"))[8] == 0x53)
    let utf16 = [UInt8](BinaryPropertyList.encode(.string("é😀")))
    // é is one unit, 😀 two.
    #expect(Array(utf16[8..<15]) == [0x63, 0x00, 0xE9, 0xD8, 0x3D, 0xDE, 0x00])
    let long = [UInt8](BinaryPropertyList.encode(.string(String(repeating: "a", count: 20))))
    #expect(Array(long[8..<11]) == [0x5F, 0x10, 20])
  }

  @Test func smallFilesUseOneByteReferencesAndOffsets() {
    let small = Trailer(BinaryPropertyList.encode(.dictionary(["a": .integer(1), "b": .array([.bool(true)])])))
    #expect(small.refSize == 1)
    #expect(small.offsetSize == 1)
    #expect(small.top == 0)
    // More than 255 bytes before the offset table: 2-byte offsets.
    let sample = Trailer(BinaryPropertyList.encode(sampleValue))
    #expect(sample.refSize == 1)
    #expect(sample.offsetSize == 2)
  }

  // MARK: Differential against Foundation

  @Test func differentialAgainstFoundation() throws {
    let seed: UInt64 = 0x00C0_FFEE_2024
    var generator = ValueGenerator(seed: seed)
    for iteration in 0..<500 {
      let value = generator.value()
      // (a) Ours, read by Foundation.
      let ours = BinaryPropertyList.encode(value)
      let foundation = try PropertyListSerialization.propertyList(from: ours, options: [], format: nil)
      let converted = PropertyListValue(foundation)
      #expect(converted.map { same($0, value) } == true,
              "seed \(seed) iteration \(iteration): Foundation read \(String(describing: converted)) for \(value)")
      // (b) Foundation's, read by us.
      let theirs = try PropertyListSerialization.data(
        fromPropertyList: value.foundationValue, format: .binary, options: 0)
      do {
        let decoded = try BinaryPropertyList.decode(theirs)
        #expect(same(decoded, value), "seed \(seed) iteration \(iteration): we read \(decoded) for \(value)")
      } catch {
        Issue.record("seed \(seed) iteration \(iteration): Foundation's bytes for \(value) failed: \(error)")
      }
    }
  }

  /// A float written alone: ours and Foundation's bytes are the same (marker 0x22 and the
  /// float's 4 bytes), and each reads the other's as the same float.
  @Test func floatsAreWrittenAsFoundationWritesThem() throws {
    var generator = ValueGenerator(seed: 0xF10A7)
    for iteration in 0..<300 {
      let float = generator.float()
      let ours = BinaryPropertyList.encode(.float(float))
      let theirs = try PropertyListSerialization.data(fromPropertyList: float, format: .binary, options: 0)
      #expect(ours == theirs, "iteration \(iteration): \(float) written as \(Array(ours)), Foundation \(Array(theirs))")
      let number = try #require(
        PropertyListSerialization.propertyList(from: ours, format: nil) as? NSNumber)
      #expect(String(cString: number.objCType) == "f" && number.floatValue.bitPattern == float.bitPattern,
              "iteration \(iteration): Foundation read \(float) as \(number) (\(String(cString: number.objCType)))")
      #expect(same(try BinaryPropertyList.decode(theirs), .float(float)))
    }
  }

  /// Unsigned integers above Int.max: the same 16 bytes as Foundation writes, and each
  /// reads the other's exactly.
  @Test func unsignedIntegersAreWrittenAsFoundationWritesThem() throws {
    var rng = SplitMix64(seed: 0x0164)
    let values = [UInt64(Int.max) + 1, UInt64.max, UInt64.max - 1]
      + (0..<200).map { _ in rng.next() | 1 << 63 }
    for value in values {
      let ours = BinaryPropertyList.encode(.unsignedInteger(value))
      let theirs = try PropertyListSerialization.data(fromPropertyList: value, format: .binary, options: 0)
      #expect(ours == theirs, "\(value) written as \(Array(ours)), Foundation \(Array(theirs))")
      let number = try #require(
        PropertyListSerialization.propertyList(from: ours, format: nil) as? NSNumber)
      #expect(number.uint64Value == value && number as? UInt64 == value)
      #expect(try BinaryPropertyList.decode(theirs) == .unsignedInteger(value))
      #expect(PropertyListValue(value) == .unsignedInteger(value))
    }
    // A small one stays an ordinary integer, in the model and on disk.
    #expect(PropertyListValue(UInt64(7)) == .integer(7))
    #expect(PropertyListValue(UInt(Int.max)) == .integer(Int.max))
  }

  /// A float that is not finite: CoreFoundation writes its cached NaN and infinities as
  /// 8-byte reals; this writer keeps a float 4 bytes. Each reads the other's.
  @Test func nonFiniteFloatsAreReadEitherWay() throws {
    for float: Float in [.infinity, -.infinity, .nan] {
      let ours = BinaryPropertyList.encode(.float(float))
      #expect(same(try BinaryPropertyList.decode(ours), .float(float)))
      let number = try #require(PropertyListSerialization.propertyList(from: ours, format: nil) as? NSNumber)
      #expect(number.floatValue.isNaN == float.isNaN && (float.isNaN || number.floatValue == float))
      let theirs = try PropertyListSerialization.data(fromPropertyList: float, format: .binary, options: 0)
      #expect(same(try BinaryPropertyList.decode(theirs), .real(Double(float))))
    }
  }
}

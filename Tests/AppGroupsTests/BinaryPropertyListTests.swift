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
    // Duplicate keys: the first entry decides, kept or skipped.
    let duplicates = dictionaryFile(
      [(1, 2), (1, 3), (4, 5), (4, 2)],
      [[0x51, 0x6B], [0x10, 0x01], [0x10, 0x02], [0x51, 0x75], [0x80, 0x01]])
    let salvaged = try BinaryPropertyList.decodeSalvaging(duplicates)
    #expect(salvaged.values == ["k": .integer(1)])
    #expect(salvaged.skipped.map(\.key) == ["u"])
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
    // An unpaired surrogate becomes U+FFFD.
    let lone = try BinaryPropertyList.decode(handMade([[0x62, 0xD8, 0x3D, 0x00, 0x61]]))
    #expect(lone == .string("\u{FFFD}a"))
    // A valid pair is kept.
    let pair = try BinaryPropertyList.decode(handMade([[0x62, 0xD8, 0x3D, 0xDE, 0x00]]))
    #expect(pair == .string("😀"))
    // A length that is not an integer.
    #expect(decodeError(handMade([[0x5F, 0x22, 0, 0, 0, 0]]))?.message.contains("length") == true)
  }

  @Test func duplicateKeysKeepTheFirstValueAsCoreFoundationDoes() throws {
    let data = handMade([[0xD2, 0x01, 0x01, 0x02, 0x03], [0x51, 0x6B], [0x10, 0x01], [0x10, 0x02]])
    #expect(try BinaryPropertyList.decode(data) == .dictionary(["k": .integer(1)]))
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

// MARK: - Public entry points

@Suite("PropertyListValue coding")
struct PropertyListValueCodingTests {
  static let xml = """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <dict>
      <key>yes</key><true/>
      <key>no</key><false/>
      <key>one</key><integer>1</integer>
      <key>zero</key><integer>0</integer>
      <key>negative</key><integer>-7</integer>
      <key>big</key><integer>9223372036854775807</integer>
      <key>realOne</key><real>1</real>
      <key>real</key><real>2.5</real>
      <key>text</key><string>héllo</string>
      <key>when</key><date>2001-01-01T00:00:10Z</date>
      <key>bytes</key><data>AQID</data>
      <key>list</key><array><integer>1</integer><true/><real>0</real></array>
    </dict>
    </plist>
    """

  @Test func readsXMLWithTheRightTypes() throws {
    let value = try PropertyListValue(propertyListData: Data(Self.xml.utf8))
    #expect(value == .dictionary([
      "yes": .bool(true), "no": .bool(false), "one": .integer(1), "zero": .integer(0),
      "negative": .integer(-7), "big": .integer(Int.max), "realOne": .real(1), "real": .real(2.5),
      "text": .string("héllo"), "when": .date(Date(timeIntervalSinceReferenceDate: 10)),
      "bytes": .data(Data([1, 2, 3])), "list": .array([.integer(1), .bool(true), .real(0)]),
    ]))
  }

  @Test func readsOpenStepText() throws {
    let value = try PropertyListValue(propertyListData: Data("{ name = \"x y\"; list = (a, b); }".utf8))
    #expect(value == .dictionary(["name": .string("x y"), "list": .array([.string("a"), .string("b")])]))
  }

  @Test func refusesEmptyAndGarbage() {
    for bytes in [Data(), Data("garbage <<".utf8), Data("<?xml version=\"1.0\"?><plist><dict><key>a</key></plist>".utf8),
                  Data([0xFF, 0xFE, 0x00]), Data("bplist00".utf8), Data("bplist15xxxxxxxxxxxx".utf8)] {
      do {
        _ = try PropertyListValue(propertyListData: bytes)
        Issue.record("\(bytes.count) bytes decoded")
      } catch {
        #expect(error.code == .corruptPreferences, "\(error)")
        #expect(!error.message.isEmpty)
      }
    }
  }

  @Test func refusesDeeplyNestedText() {
    let depth = 100_000
    let xml = "<plist version=\"1.0\">" + String(repeating: "<array>", count: depth)
      + String(repeating: "</array>", count: depth) + "</plist>"
    let openStep = String(repeating: "(", count: depth) + String(repeating: ")", count: depth)
    for text in [xml, openStep] {
      #expect(throws: AppGroupsError.self) { try PropertyListValue(propertyListData: Data(text.utf8)) }
    }
  }

  @Test func readsAnXMLIntegerAboveIntMaxAsUnsigned() throws {
    let xml = "<plist version=\"1.0\"><integer>18446744073709551615</integer></plist>"
    #expect(try PropertyListValue(propertyListData: Data(xml.utf8)) == .unsignedInteger(UInt64.max))
    // And writes it back as XML exactly.
    let written = try PropertyListValue.unsignedInteger(UInt64.max).propertyListData(format: .xml)
    #expect(String(decoding: written, as: UTF8.self).contains("<integer>18446744073709551615</integer>"))
  }

  @Test func writesAFloatAsAnXMLReal() throws {
    let data = try PropertyListValue.dictionary(["f": .float(12.34)]).propertyListData(format: .xml)
    let text = String(decoding: data, as: UTF8.self)
    #expect(text.contains("<real>12.34"))
    // XML has one kind of real: it reads back as the float's double.
    #expect(try PropertyListValue(propertyListData: data) == .dictionary(["f": .real(Double(Float(12.34)))]))
  }

  @Test func writesXMLThatKeepsTypes() throws {
    let value = PropertyListValue.dictionary([
      "yes": .bool(true), "no": .bool(false), "one": .integer(1), "realOne": .real(1),
      "when": .date(Date(timeIntervalSinceReferenceDate: 10)), "bytes": .data(Data([1, 2, 3])),
      "list": .array([.string("é"), .integer(-3)]),
    ])
    let data = try value.propertyListData(format: .xml)
    let text = String(decoding: data, as: UTF8.self)
    #expect(text.contains("<true/>"))
    #expect(text.contains("<false/>"))
    #expect(text.contains("<integer>1</integer>"))
    #expect(text.contains("<real>1</real>"))
    #expect(try PropertyListValue(propertyListData: data) == value)
  }

  @Test func xmlDropsFractionsOfASecond() throws {
    let value = PropertyListValue.date(Date(timeIntervalSinceReferenceDate: 10.75))
    let back = try PropertyListValue(propertyListData: value.propertyListData(format: .xml))
    guard case .date(let date) = back else {
      Issue.record("read \(back)")
      return
    }
    #expect(abs(date.timeIntervalSinceReferenceDate - 10.75) < 1)
  }

  @Test func binaryIsTheDefault() throws {
    let data = try sampleValue.propertyListData()
    #expect(data.starts(with: Array("bplist00".utf8)))
    #expect(try PropertyListValue(propertyListData: data) == sampleValue)
  }

  @Test func foundationNumbersConvertByTheirType() {
    #expect(PropertyListValue(NSNumber(value: true)) == .bool(true))
    #expect(PropertyListValue(NSNumber(value: 1)) == .integer(1))
    #expect(PropertyListValue(NSNumber(value: 1.0)) == .real(1))
    #expect(PropertyListValue(NSNumber(value: Float(0.5))) == .float(0.5))
    #expect(PropertyListValue(NSNumber(value: UInt64(7))) == .integer(7))
    #expect(PropertyListValue(NSNumber(value: UInt64.max)) == .unsignedInteger(UInt64.max))
    #expect(PropertyListValue(NSNumber(value: Int8(-3))) == .integer(-3))
  }
}

internal import Foundation

/// What a salvaging read recovered from a property-list file whose top object is a
/// dictionary: every top-level key it could decode, and the ones it left out.
///
/// Made by ``BinaryPropertyList/decodeSalvaging(_:)`` and, for any format,
/// ``PropertyListValue/salvaging(propertyListData:)``.
struct PropertyListSalvage: Sendable, Equatable {
  /// A top-level key that was left out, and why.
  struct SkippedKey: Sendable, Hashable, CustomStringConvertible {
    /// The key, or `nil` when the key itself could not be read.
    let key: String?
    /// The entry's place in the file's top dictionary (0 first); for a format read by
    /// Foundation, its place among the keys in sorted order.
    let index: Int
    /// Why its value (or key) was left out: a value this package cannot hold (a
    /// keyed-archiver uid, a set, null, an integer beyond 64 bits, a date that is not a
    /// number) or a damaged object.
    let reason: String

    /// `"key" (reason)`, or `entry 3 of the top dictionary (reason)` when the key could
    /// not be read.
    var description: String {
      if let key { return "\(key.debugDescription) (\(reason))" }
      return "entry \(index) of the top dictionary (\(reason))"
    }
  }

  /// The keys that were read, with their values.
  var values: [String: PropertyListValue] = [:]
  /// The entries left out, in the order of the file.
  var skipped: [SkippedKey] = []
}

/// Apple's binary property-list format ("bplist00"), read and written
/// without Foundation's `PropertyListSerialization`, which is too slow for
/// large domains (about 5 µs a key on Linux).
///
/// Layout: the 8-byte header `bplist00`; the objects, each starting with a
/// marker byte whose high nibble is the type and low nibble a size or count
/// (0xF: an integer object follows with the real count); the offset table,
/// one big-endian offset of `offsetIntSize` bytes for every object; and a
/// 32-byte trailer: 6 unused bytes, `offsetIntSize`, `objectRefSize`, then
/// `numObjects`, `topObject` and `offsetTableOffset`, each 8 bytes big-endian.
/// Containers name their elements by object number in `objectRefSize` bytes.
///
/// The writer follows CFBinaryPList.c: identical strings are written once,
/// integers, references and offsets take the fewest of 1, 2, 4 or 8 bytes,
/// negative integers take 8, an unsigned integer above `Int.max` takes 16
/// (0x14), reals are 8-byte doubles (0x23) and floats 4-byte (0x22), strings
/// are ASCII (0x5n) when every byte is below 0x80 and UTF-16BE (0x6n) otherwise.
/// Dictionary keys are sorted, so equal values encode to equal bytes.
///
/// The reader takes untrusted bytes (a file any process in the group may
/// have written) and either returns a value or throws
/// ``AppGroupsError/Code/corruptPreferences`` with the reason; it never
/// traps. Every length is checked against the file before it is used,
/// containers may nest at most ``maximumDepth`` deep, a container that
/// contains itself is refused, and a file whose shared containers would
/// expand to more than 16 objects for each byte is refused, so that a small
/// file cannot make a huge value. Its policies:
/// - null (0x00), uids (0x8n), sets and ordered sets are refused: they are not
///   property-list values here (uids come from `NSKeyedArchiver` archives).
/// - 1-, 2- and 4-byte integers are unsigned, 8-byte ones signed; a 16-byte
///   integer is accepted when its value fits in 64 bits (an `Int`, or an
///   unsigned one up to `UInt64.max`, as CoreFoundation and `plistlib` write).
/// - 4-byte reals are read as `Float`; dates are seconds since 2001-01-01,
///   and a NaN date is refused (Foundation traps describing one). The writer
///   writes whatever it is given, so refuse NaN dates before encoding.
/// - An ASCII string (0x5n) with a byte of 0x80 or more is refused. In a
///   UTF-16 string an unpaired surrogate becomes U+FFFD, as it does when
///   Foundation hands such a string to Swift: refusing it would throw away
///   a whole domain for one damaged character.
/// - A dictionary's keys must be strings; when two keys are equal as Swift
///   strings (the same text, or canonically equivalent), the first one wins, as in CoreFoundation.
///
/// ``decode(_:)`` refuses a whole file for one such object; ``decodeSalvaging(_:)``
/// keeps the top-level keys it can read and reports the others.
enum BinaryPropertyList {
  /// The deepest nesting of arrays and dictionaries the reader accepts.
  static let maximumDepth = 512

  /// Encodes any value (a dictionary in the common case) as a binary property list.
  static func encode(_ value: PropertyListValue) -> Data {
    if let data = encode(value, as: UInt32.self) { return data }
    // Past 4 GiB: offsets of 8 bytes, which always fit.
    return encode(value, as: UInt64.self) ?? Data()
  }

  private static func encode<Index: FixedWidthInteger & UnsignedInteger & BitwiseCopyable>(
    _ value: PropertyListValue, as: Index.Type
  ) -> Data? {
    let expectedObjects: Int
    switch value {
    case .dictionary(let entries): expectedObjects = entries.count &* 2 &+ 1
    case .array(let elements): expectedObjects = elements.count &+ 1
    default: expectedObjects = 1
    }
    var writer = Writer<Index>(expectedObjects: expectedObjects)
    let top = writer.flatten(value)
    return writer.serialize(top: top)
  }

  /// Decodes a binary property list.
  ///
  /// - Throws: ``AppGroupsError/Code/corruptPreferences`` with the reason,
  ///   for every malformed input.
  static func decode(_ data: Data) throws(AppGroupsError) -> PropertyListValue {
    let result = data.withUnsafeBytes { raw -> Result<PropertyListValue, AppGroupsError> in
      do throws(AppGroupsError) {
        var reader = try Reader(raw)
        return .success(try reader.decodeTop())
      } catch {
        return .failure(error)
      }
    }
    return try result.get()
  }

  /// Decodes a binary property list whose top object is a dictionary, keeping every key
  /// whose value can be read and leaving out (and reporting) the others.
  ///
  /// For a preferences file that another tool wrote with one value this package cannot
  /// hold (a keyed-archiver uid, a set, a 16-byte integer beyond 64 bits), or with one
  /// damaged value, the other keys stay readable instead of the whole file being
  /// refused. A duplicate key's first entry decides, as in CoreFoundation: when it is
  /// skipped, later entries of that key are ignored (and not read).
  ///
  /// - Throws: ``AppGroupsError/Code/corruptPreferences`` with the reason when nothing can
  ///   be salvaged: the header, trailer or offset table is malformed, the top object is not
  ///   a dictionary or its references are out of the file, or the objects expand past the
  ///   budget of 16 for each byte of the file (a file built to explode is not read at all).
  static func decodeSalvaging(_ data: Data) throws(AppGroupsError) -> PropertyListSalvage {
    let result = data.withUnsafeBytes { raw -> Result<PropertyListSalvage, AppGroupsError> in
      do throws(AppGroupsError) {
        var reader = try Reader(raw)
        return .success(try reader.salvageTop())
      } catch {
        return .failure(error)
      }
    }
    return try result.get()
  }

  /// "bplist00", big-endian.
  fileprivate static let magic: UInt64 = 0x6270_6C69_7374_3030

  /// The error for a malformed file. Out of line, with the message built
  /// only when thrown, so that the checks on the hot paths stay small.
  @inline(never)
  fileprivate static func corrupt(_ reason: @autoclosure () -> String) -> AppGroupsError {
    AppGroupsError(.corruptPreferences, "binary property list: \(reason())")
  }

  /// Whether every byte is below 0x80, 8 at a time.
  @inline(__always)
  fileprivate static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    let n = bytes.count
    var high: UInt64 = 0
    var i = 0
    while n &- i >= 8 {
      high |= base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
      i &+= 8
    }
    while i < n {
      high |= UInt64(base.load(fromByteOffset: i, as: UInt8.self))
      i &+= 1
    }
    return high & 0x8080_8080_8080_8080 == 0
  }

  /// The fewest of 1, 2, 4 or 8 bytes that hold `value`, as CFBinaryPList writes.
  fileprivate static func byteWidth(_ value: UInt64) -> Int {
    if value <= 0xFF { return 1 }
    if value <= 0xFFFF { return 2 }
    if value <= 0xFFFF_FFFF { return 4 }
    return 8
  }
}

// MARK: - Writing

/// Bytes being written, in memory this type owns. Appends check capacity
/// once per call, not per byte.
private struct ByteBuffer: ~Copyable {
  private(set) var base: UnsafeMutableRawPointer
  private(set) var capacity: Int
  var count = 0

  init(capacity: Int) {
    self.capacity = Swift.max(capacity, 256)
    base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
  }

  deinit { base.deallocate() }

  /// Makes room for `extra` more bytes.
  /// Makes room for `extra` more bytes, and 8 more: `appendBigEndian`
  /// stores whole words and `hash` loads them.
  @inline(__always)
  mutating func reserve(_ extra: Int) {
    if capacity &- count &- 8 < extra { grow(extra &+ 8) }
  }

  @inline(never)
  private mutating func grow(_ extra: Int) {
    var newCapacity = capacity &* 2
    while newCapacity &- count < extra { newCapacity &*= 2 }
    let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
    newBase.copyMemory(from: base, byteCount: count)
    base.deallocate()
    base = newBase
    capacity = newCapacity
  }

  @inline(__always)
  mutating func append(_ byte: UInt8) {
    reserve(1)
    base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
    count &+= 1
  }

  @inline(__always)
  mutating func append(_ bytes: UnsafeRawBufferPointer) {
    guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
    reserve(bytes.count)
    (base + count).copyMemory(from: source, byteCount: bytes.count)
    count &+= bytes.count
  }

  /// The low `width` (1 to 8) bytes of `value`, most significant first.
  @inline(__always)
  mutating func appendBigEndian(_ value: UInt64, width: Int) {
    reserve(width)
    // Store all 8 bytes with the wanted ones first, then keep `width` of them.
    let shifted = value &<< UInt64(64 &- width &* 8)
    base.storeBytes(of: shifted.bigEndian, toByteOffset: count, as: UInt64.self)
    count &+= width
  }

  /// A marker with the count in its low nibble, or 0xF and an integer object.
  @inline(__always)
  mutating func appendHeader(_ marker: UInt8, count: Int) {
    if count < 15 {
      append(marker | UInt8(truncatingIfNeeded: count))
    } else {
      append(marker | 0x0F)
      appendInteger(count)
    }
  }

  /// An integer object: non-negative ones in the fewest of 1, 2, 4 or 8
  /// bytes, negative ones in 8 (1-, 2- and 4-byte integers are unsigned).
  @inline(__always)
  mutating func appendInteger(_ value: Int) {
    let width = value < 0 ? 8 : BinaryPropertyList.byteWidth(UInt64(value))
    append(0x10 | UInt8(truncatingIfNeeded: width.trailingZeroBitCount))
    appendBigEndian(UInt64(UInt(bitPattern: value)), width: width)
  }

  /// Whether `length` bytes at `a` and at `b` are equal.
  func bytesEqual(_ a: Int, _ b: Int, length: Int) -> Bool {
    memcmp(base + a, base + b, length) == 0
  }

  /// Hands the bytes over as `Data` without copying them.
  consuming func finish() -> Data {
    let data = Data(
      bytesNoCopy: base, count: count,
      deallocator: .custom { pointer, _ in pointer.deallocate() })
    discard self
    return data
  }
}

/// A growable list of plain values in memory it owns: appends and
/// subscripts without the uniqueness checks of `Array`. Indices are the
/// writer's own, always in range.
private struct UnsafeList<Element: BitwiseCopyable>: ~Copyable {
  private(set) var base: UnsafeMutablePointer<Element>
  private(set) var capacity: Int
  private(set) var count = 0

  init(capacity: Int) {
    self.capacity = Swift.max(capacity, 16)
    base = UnsafeMutablePointer<Element>.allocate(capacity: self.capacity)
  }

  deinit { base.deallocate() }

  @inline(__always)
  subscript(index: Int) -> Element {
    get { base[index] }
    set { base[index] = newValue }
  }

  /// Makes room for `extra` more elements.
  @inline(__always)
  mutating func reserve(_ extra: Int) {
    if capacity &- count < extra { grow(extra) }
  }

  @inline(never)
  private mutating func grow(_ extra: Int) {
    var newCapacity = capacity &* 2
    while newCapacity &- count < extra { newCapacity &*= 2 }
    let newBase = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
    newBase.initialize(from: base, count: count)
    base.deallocate()
    base = newBase
    capacity = newCapacity
  }

  @inline(__always)
  mutating func append(_ element: Element) {
    reserve(1)
    (base + count).initialize(to: element)
    count &+= 1
  }

  /// Appends `n` copies of `element`.
  mutating func append(_ element: Element, count n: Int) {
    reserve(n)
    (base + count).initialize(repeating: element, count: n)
    count &+= n
  }

  @inline(__always)
  mutating func removeLast() {
    count &-= 1
  }
}

/// The string objects written so far, found by their encoded bytes: an open
/// addressing table (linear probing, at most half full) hashed with a
/// per-process seed. A slot holds the hash's top 24 bits and 1 + the object
/// number; the object's bytes are found through the offsets.
private struct StringTable {
  private var slots: [UInt64] = Array(repeating: 0, count: 256)
  private var mask = 255
  private var count = 0

  static let seed = UInt64.random(in: 0...UInt64.max)
  private static let objectBits: UInt64 = 40
  private static let objectMask: UInt64 = 1 &<< objectBits &- 1

  /// Makes room for `extra` more strings without rehashing.
  mutating func reserve<Index: FixedWidthInteger & BitwiseCopyable>(
    _ extra: Int, buffer: borrowing ByteBuffer, offsets: borrowing UnsafeList<Index>
  ) {
    var capacity = mask &+ 1
    while capacity < (count &+ extra) &* 2 { capacity &*= 2 }
    if capacity != mask &+ 1 { rehash(capacity: capacity, buffer: buffer, offsets: offsets) }
  }

  /// The object number of a string whose encoding is the `length` bytes
  /// written at `start`, if an identical one was written before; otherwise
  /// records it as object `object` and returns `nil`.
  @inline(__always)
  mutating func find<Index: FixedWidthInteger & BitwiseCopyable>(
    start: Int, length: Int, object: Int, buffer: borrowing ByteBuffer,
    offsets: borrowing UnsafeList<Index>
  ) -> Int? {
    let h = buffer.hash(start: start, length: length, seed: StringTable.seed)
    let tag = h & ~StringTable.objectMask
    var slot = Int(truncatingIfNeeded: h) & mask
    while true {
      let value = slots[slot]
      if value == 0 { break }
      if value & ~StringTable.objectMask == tag {
        let candidate = Int(truncatingIfNeeded: value & StringTable.objectMask) &- 1
        // The candidate was written earlier, so `length` bytes from it are in
        // the buffer; a different string differs within them, since an
        // encoding starts with its length.
        if buffer.bytesEqual(Int(offsets[candidate]), start, length: length) {
          return candidate
        }
      }
      slot = (slot &+ 1) & mask
    }
    slots[slot] = tag | UInt64(object &+ 1)
    count &+= 1
    if count &* 2 > mask {
      rehash(capacity: (mask &+ 1) &* 2, buffer: buffer, offsets: offsets)
    }
    return nil
  }

  private mutating func rehash<Index: FixedWidthInteger & BitwiseCopyable>(
    capacity: Int, buffer: borrowing ByteBuffer, offsets: borrowing UnsafeList<Index>
  ) {
    let old = slots
    mask = capacity &- 1
    slots = Array(repeating: 0, count: capacity)
    for value in old where value != 0 {
      let object = Int(truncatingIfNeeded: value & StringTable.objectMask) &- 1
      let start = Int(offsets[object])
      let h = buffer.hash(start: start, length: buffer.stringLength(at: start), seed: StringTable.seed)
      var slot = Int(truncatingIfNeeded: h) & mask
      while slots[slot] != 0 { slot = (slot &+ 1) & mask }
      slots[slot] = value
    }
  }
}

extension ByteBuffer {
  /// A hash of the `length` bytes written at `start`, 8 at a time. The
  /// last word may read up to 7 bytes past the end of what was written,
  /// inside the capacity (`reserve` keeps 8 bytes spare), and masks them off.
  @inline(__always)
  func hash(start: Int, length: Int, seed: UInt64) -> UInt64 {
    var h = seed ^ (UInt64(truncatingIfNeeded: length) &* 0x9E37_79B9_7F4A_7C15)
    var i = 0
    while length &- i >= 8 {
      let word = base.loadUnaligned(fromByteOffset: start &+ i, as: UInt64.self)
      h = (h ^ word) &* 0xBF58_476D_1CE4_E5B9
      h ^= h &>> 31
      i &+= 8
    }
    let rest = length &- i
    if rest > 0 {
      let word = base.loadUnaligned(fromByteOffset: start &+ i, as: UInt64.self)
      let tail = UInt64(littleEndian: word) & (1 &<< UInt64(rest &* 8) &- 1)
      h = (h ^ tail) &* 0x94D0_49BB_1331_11EB
    }
    h ^= h &>> 29
    h = h &* 0xBF58_476D_1CE4_E5B9
    h ^= h &>> 32
    return h
  }

  /// The length of the string object this writer wrote at `start`.
  func stringLength(at start: Int) -> Int {
    let marker = base.load(fromByteOffset: start, as: UInt8.self)
    let unit = marker &>> 4 == 0x6 ? 2 : 1
    let nibble = Int(marker & 0x0F)
    if nibble < 15 { return 1 &+ nibble &* unit }
    let width = 1 &<< Int(base.load(fromByteOffset: start &+ 1, as: UInt8.self) & 0x0F)
    var count = 0
    for i in 0..<width {
      count = count &<< 8 | Int(base.load(fromByteOffset: start &+ 2 &+ i, as: UInt8.self))
    }
    return 2 &+ width &+ count &* unit
  }
}

private typealias Entries = [String: PropertyListValue]

/// A dictionary key being sorted: the first 8 bytes of its UTF-8 as a
/// big-endian integer (zero-padded), then the entry's place in the
/// dictionary's own order (low 40 bits) and the key's length in bytes
/// (high 24 bits, saturating).
private struct SortKey {
  var prefix: UInt64
  var packed: UInt64

  init(prefix: UInt64, ordinal: Int, length: Int) {
    self.prefix = prefix
    packed = UInt64(Swift.min(length, 0xFF_FFFF)) &<< 40 | UInt64(truncatingIfNeeded: ordinal) & (1 &<< 40 &- 1)
  }

  var ordinal: Int { Int(truncatingIfNeeded: packed & (1 &<< 40 &- 1)) }
  var length: Int { Int(truncatingIfNeeded: packed &>> 40) }
}

/// A container to write at the end: its object number, where its
/// references start in `refs`, and its count of elements or entries.
private struct Container {
  var object: Int
  var refStart: Int
  var count: Int
  var isDictionary: Bool
}

/// Writes a value in one pass: strings, numbers, dates and data are written
/// as they are met (their object number is the next one); arrays and
/// dictionaries, which need the reference width, that is the object count,
/// are written after everything else. The offset table maps numbers to places,
/// so the order of objects in the file does not matter.
///
/// Offsets and references are kept as `Index`, `UInt32` unless the file
/// would pass 4 GiB: memory, not arithmetic, is the cost here.
private struct Writer<Index: FixedWidthInteger & UnsignedInteger & BitwiseCopyable>: ~Copyable {
  var buffer: ByteBuffer
  /// Each object's offset in the file (for containers, set when written).
  var offsets: UnsafeList<Index>
  /// Containers' references: an array's elements, or a dictionary's keys then values.
  var refs: UnsafeList<Index>
  var containers: [Container] = []
  var strings = StringTable()
  var trueObject = -1
  var falseObject = -1
  /// Set when an offset did not fit in `Index`: the result is wrong, write again wider.
  var overflowed = false

  init(expectedObjects: Int) {
    // Untouched capacity costs address space, not memory.
    buffer = ByteBuffer(capacity: expectedObjects &* 48 &+ 1024)
    offsets = UnsafeList(capacity: expectedObjects &+ 16)
    refs = UnsafeList(capacity: expectedObjects)
    buffer.appendBigEndian(BinaryPropertyList.magic, width: 8)
  }

  /// Adds the value and everything in it, and returns its object number.
  mutating func flatten(_ value: PropertyListValue) -> Int {
    switch value {
    case .string(let s):
      var s = s
      return s.withUTF8 { intern(UnsafeRawBufferPointer($0)) }
    case .integer(let v):
      let object = beginObject()
      buffer.appendInteger(v)
      return object
    case .unsignedInteger(let v):
      // 16 bytes, as CFBinaryPList writes a 128-bit number: the high half (0), then the low.
      let object = beginObject()
      buffer.append(0x14)
      buffer.appendBigEndian(0, width: 8)
      buffer.appendBigEndian(v, width: 8)
      return object
    case .real(let v):
      let object = beginObject()
      buffer.append(0x23)
      buffer.appendBigEndian(v.bitPattern, width: 8)
      return object
    case .float(let v):
      let object = beginObject()
      buffer.append(0x22)
      buffer.appendBigEndian(UInt64(v.bitPattern), width: 4)
      return object
    case .bool(true):
      if trueObject < 0 {
        trueObject = beginObject()
        buffer.append(0x09)
      }
      return trueObject
    case .bool(false):
      if falseObject < 0 {
        falseObject = beginObject()
        buffer.append(0x08)
      }
      return falseObject
    case .date(let v):
      let object = beginObject()
      buffer.append(0x33)
      buffer.appendBigEndian(v.timeIntervalSinceReferenceDate.bitPattern, width: 8)
      return object
    case .data(let v):
      let object = beginObject()
      buffer.appendHeader(0x40, count: v.count)
      v.withUnsafeBytes { buffer.append($0) }
      return object
    case .array(let elements):
      let count = elements.count
      let (object, refStart) = beginContainer(count: count, isDictionary: false)
      for i in 0..<count {
        let ref = flatten(elements[i])
        refs[refStart &+ i] = Index(truncatingIfNeeded: ref)
      }
      return object
    case .dictionary(let dictionary):
      return flatten(dictionary)
    }
  }

  /// A dictionary: its keys sorted by their UTF-8 bytes, so that equal
  /// dictionaries encode alike whatever their hash order; the keys first,
  /// then the values.
  private mutating func flatten(_ dictionary: Entries) -> Int {
    let count = dictionary.count
    let (object, refStart) = beginContainer(count: count, isDictionary: true)
    // Its keys, and room for string values as many as half of them.
    strings.reserve(count &+ count / 2, buffer: buffer, offsets: offsets)
    offsets.reserve(count &* 2)

    var keys: [SortKey] = []
    keys.reserveCapacity(count)
    var hasLongKeys = false
    for key in dictionary.keys {
      var key = key
      key.withUTF8 { utf8 in
        if utf8.count > 8 { hasLongKeys = true }
        keys.append(SortKey(prefix: Writer.prefix(utf8), ordinal: keys.count, length: utf8.count))
      }
    }
    Writer.sort(&keys, dictionary)

    // The entries in sorted order, gathered in one pass over the dictionary
    // in its own order: stores to scattered places do not stall as loads
    // from scattered places (which miss the cache) would.
    var rank = [Int](repeating: 0, count: count)
    for position in 0..<count { rank[keys[position].ordinal] = position }
    var longKeys: [String] = []
    if hasLongKeys {
      longKeys = [String](repeating: "", count: count)
      var ordinal = 0
      for key in dictionary.keys {
        longKeys[rank[ordinal]] = key
        ordinal &+= 1
      }
    }
    // `rank` is a permutation of 0..<count, so each element is initialized
    // exactly once.
    let values = [PropertyListValue](unsafeUninitializedCapacity: count) { values, initialized in
      guard let base = values.baseAddress else {
        initialized = 0
        return
      }
      var ordinal = 0
      for value in dictionary.values {
        (base + rank[ordinal]).initialize(to: value)
        ordinal &+= 1
      }
      initialized = count
    }
    rank = []

    for position in 0..<count {
      let key = keys[position]
      let ref: Int
      if key.length <= 8 {
        // The prefix holds the whole key.
        let bytes = key.prefix.bigEndian
        ref = withUnsafeBytes(of: bytes) { raw in
          intern(UnsafeRawBufferPointer(rebasing: raw[0..<key.length]))
        }
      } else {
        ref = longKeys[position].withUTF8 { intern(UnsafeRawBufferPointer($0)) }
      }
      refs[refStart &+ position] = Index(truncatingIfNeeded: ref)
    }
    longKeys = []
    for position in 0..<count {
      let ref = flatten(values[position])
      refs[refStart &+ count &+ position] = Index(truncatingIfNeeded: ref)
    }
    return object
  }

  /// Numbers an object that starts at the end of the buffer.
  @inline(__always)
  private mutating func beginObject() -> Int {
    beginObject(at: buffer.count)
  }

  /// Numbers an object that starts at `offset`.
  @inline(__always)
  private mutating func beginObject(at offset: Int) -> Int {
    if UInt64(offset) > UInt64(Index.max) { overflowed = true }
    offsets.append(Index(truncatingIfNeeded: offset))
    return offsets.count &- 1
  }

  /// Numbers a container and makes room for its references.
  private mutating func beginContainer(count: Int, isDictionary: Bool) -> (object: Int, refStart: Int) {
    offsets.append(0)
    let object = offsets.count &- 1
    let refStart = refs.count
    let refCount = isDictionary ? count &* 2 : count
    refs.append(0, count: refCount)
    containers.append(Container(object: object, refStart: refStart, count: count, isDictionary: isDictionary))
    return (object, refStart)
  }

  /// The first 8 bytes as a big-endian integer, zero-padded.
  @inline(__always)
  static func prefix(_ utf8: UnsafeBufferPointer<UInt8>) -> UInt64 {
    if utf8.count >= 8, let base = utf8.baseAddress {
      return UInt64(bigEndian: UnsafeRawPointer(base).loadUnaligned(as: UInt64.self))
    }
    var prefix: UInt64 = 0
    var shift: UInt64 = 56
    for byte in utf8 {
      prefix |= UInt64(byte) &<< shift
      shift &-= 8
    }
    return prefix
  }

  /// Whether `a`'s UTF-8 bytes sort before `b`'s; `keys` are the
  /// dictionary's keys in its own order, for keys longer than 8 bytes.
  @inline(__always)
  static func precedes(_ a: SortKey, _ b: SortKey, _ keys: [String]) -> Bool {
    if a.prefix != b.prefix { return a.prefix < b.prefix }
    // The first 8 bytes are equal, zero padding included.
    if a.length <= 8 || b.length <= 8 { return a.length < b.length }
    return utf8Precedes(keys[a.ordinal], keys[b.ordinal])
  }

  @inline(never)
  static func utf8Precedes(_ a: String, _ b: String) -> Bool {
    var a = a
    var b = b
    return a.withUTF8 { x in
      b.withUTF8 { y in
        let common = Swift.min(x.count, y.count)
        if common > 0, let xBase = x.baseAddress, let yBase = y.baseAddress {
          let order = memcmp(xBase, yBase, common)
          if order != 0 { return order < 0 }
        }
        return x.count < y.count
      }
    }
  }

  /// Sorts keys by their UTF-8 bytes: a radix sort on the 8-byte prefixes,
  /// one byte a pass, skipping bytes that all keys share (no comparisons to
  /// mispredict), then each run of equal prefixes by comparison.
  static func sort(_ keys: inout [SortKey], _ dictionary: Entries) {
    let n = keys.count
    // The keys themselves, in the dictionary's order, are needed only to
    // order keys longer than 8 bytes that share their first 8.
    var names: [String] = []
    guard n > 64 else {
      if keys.contains(where: { $0.length > 8 }) { names = Array(dictionary.keys) }
      keys.withUnsafeMutableBufferPointer { keys in
        if keys.count > 1 {
          introsort(keys, 0, keys.count &- 1, 2 &* Int.bitWidth, names)
        }
      }
      return
    }
    var counts = [Int](repeating: 0, count: 8 &* 256)
    var scratch = Array(repeating: keys[0], count: n)
    counts.withUnsafeMutableBufferPointer { counts in
      keys.withUnsafeBufferPointer { keys in
        for key in keys {
          var p = key.prefix
          for digit in 0..<8 {
            counts[digit &* 256 &+ Int(p & 0xFF)] &+= 1
            p &>>= 8
          }
        }
      }
      for digit in 0..<8 {
        let base = digit &* 256
        var shared = false
        for bucket in 0..<256 where counts[base &+ bucket] == n { shared = true }
        if shared { continue }
        var position = 0
        for bucket in 0..<256 {
          let c = counts[base &+ bucket]
          counts[base &+ bucket] = position
          position &+= c
        }
        let shift = UInt64(digit &* 8)
        keys.withUnsafeBufferPointer { source in
          scratch.withUnsafeMutableBufferPointer { target in
            for key in source {
              let bucket = base &+ Int((key.prefix &>> shift) & 0xFF)
              target[counts[bucket]] = key
              counts[bucket] &+= 1
            }
          }
        }
        swap(&keys, &scratch)
      }
    }
    keys.withUnsafeMutableBufferPointer { keys in
      var runStart = 0
      while runStart < n {
        var runEnd = runStart &+ 1
        while runEnd < n, keys[runEnd].prefix == keys[runStart].prefix { runEnd &+= 1 }
        if runEnd &- runStart > 1 {
          if names.isEmpty { names = Array(dictionary.keys) }
          introsort(keys, runStart, runEnd &- 1, 2 &* Int.bitWidth, names)
        }
        runStart = runEnd
      }
    }
  }

  /// Sorts `keys[low...high]`.
  private static func introsort(
    _ keys: UnsafeMutableBufferPointer<SortKey>, _ low: Int, _ high: Int, _ depth: Int,
    _ names: [String]
  ) {
    var low = low
    var high = high
    var depth = depth
    while high &- low > 16 {
      if depth == 0 {
        heapsort(keys, low, high, names)
        return
      }
      depth &-= 1
      // Median of three as the pivot, then Hoare's partition.
      let mid = low &+ (high &- low) / 2
      if precedes(keys[mid], keys[low], names) { keys.swapAt(mid, low) }
      if precedes(keys[high], keys[low], names) { keys.swapAt(high, low) }
      if precedes(keys[high], keys[mid], names) { keys.swapAt(high, mid) }
      let pivot = keys[mid]
      var i = low &- 1
      var j = high &+ 1
      while true {
        repeat { i &+= 1 } while precedes(keys[i], pivot, names)
        repeat { j &-= 1 } while precedes(pivot, keys[j], names)
        if i >= j { break }
        keys.swapAt(i, j)
      }
      // Recurse into the smaller side, loop on the larger.
      if j &- low < high &- j {
        introsort(keys, low, j, depth, names)
        low = j &+ 1
      } else {
        introsort(keys, j &+ 1, high, depth, names)
        high = j
      }
    }
    // Insertion sort.
    var i = low &+ 1
    while i <= high {
      let key = keys[i]
      var j = i
      while j > low, precedes(key, keys[j &- 1], names) {
        keys[j] = keys[j &- 1]
        j &-= 1
      }
      keys[j] = key
      i &+= 1
    }
  }

  private static func heapsort(
    _ keys: UnsafeMutableBufferPointer<SortKey>, _ low: Int, _ high: Int, _ names: [String]
  ) {
    let n = high &- low &+ 1
    func siftDown(_ root: Int, _ end: Int) {
      var root = root
      while true {
        var child = 2 &* root &+ 1
        if child >= end { return }
        if child &+ 1 < end,
          precedes(keys[low &+ child], keys[low &+ child &+ 1], names)
        {
          child &+= 1
        }
        guard precedes(keys[low &+ root], keys[low &+ child], names) else { return }
        keys.swapAt(low &+ root, low &+ child)
        root = child
      }
    }
    var start = n / 2
    while start > 0 {
      start &-= 1
      siftDown(start, n)
    }
    var end = n
    while end > 1 {
      end &-= 1
      keys.swapAt(low, low &+ end)
      siftDown(0, end)
    }
  }

  /// Writes the string unless an identical one was written before, and
  /// returns its object number.
  @inline(__always)
  private mutating func intern(_ utf8: UnsafeRawBufferPointer) -> Int {
    let start = buffer.count
    appendString(utf8)
    // Numbered first, so that the table can find it if it grows.
    let object = beginObject(at: start)
    // Once an offset is cut short, this attempt is thrown away: stop looking.
    if overflowed { return object }
    if let existing = strings.find(
      start: start, length: buffer.count &- start, object: object,
      buffer: buffer, offsets: offsets)
    {
      offsets.removeLast()
      buffer.count = start
      return existing
    }
    return object
  }

  /// A string object: ASCII (0x5n) when every byte is below 0x80, else UTF-16BE (0x6n).
  @inline(__always)
  private mutating func appendString(_ utf8: UnsafeRawBufferPointer) {
    if BinaryPropertyList.isASCII(utf8) {
      buffer.appendHeader(0x50, count: utf8.count)
      buffer.append(utf8)
    } else {
      appendUTF16(utf8)
    }
  }

  private mutating func appendUTF16(_ utf8: UnsafeRawBufferPointer) {
    var units = 0
    for byte in utf8 {
      // Every byte but a continuation byte starts a UTF-16 unit; a 4-byte
      // sequence's lead byte starts two (a surrogate pair).
      units &+= (byte & 0xC0 != 0x80 ? 1 : 0) &+ (byte >= 0xF0 ? 1 : 0)
    }
    buffer.appendHeader(0x60, count: units)
    buffer.reserve(units &* 2)
    // A Swift string is valid UTF-8; the bounds checks only keep a bug from
    // reading past the end.
    var i = 0
    let n = utf8.count
    while i < n {
      let b0 = UInt32(utf8[i])
      var scalar: UInt32
      var length: Int
      if b0 < 0x80 {
        scalar = b0
        length = 1
      } else if b0 < 0xE0 {
        scalar = b0 & 0x1F
        length = 2
      } else if b0 < 0xF0 {
        scalar = b0 & 0x0F
        length = 3
      } else {
        scalar = b0 & 0x07
        length = 4
      }
      guard n &- i >= length else { break }
      var j = 1
      while j < length {
        scalar = scalar &<< 6 | (UInt32(utf8[i &+ j]) & 0x3F)
        j &+= 1
      }
      i &+= length
      if scalar < 0x10000 {
        buffer.appendBigEndian(UInt64(scalar), width: 2)
      } else {
        let v = scalar &- 0x10000
        buffer.appendBigEndian(UInt64(0xD800 | (v &>> 10)), width: 2)
        buffer.appendBigEndian(UInt64(0xDC00 | (v & 0x3FF)), width: 2)
      }
    }
  }

  /// Writes the containers, the offset table and the trailer; `nil` if an
  /// offset did not fit in `Index`.
  consuming func serialize(top: Int) -> Data? {
    let objectCount = offsets.count
    let refWidth = BinaryPropertyList.byteWidth(UInt64(objectCount))
    for container in containers {
      let offset = buffer.count
      if UInt64(offset) > UInt64(Index.max) { overflowed = true }
      offsets[container.object] = Index(truncatingIfNeeded: offset)
      let refCount = container.isDictionary ? container.count &* 2 : container.count
      buffer.appendHeader(container.isDictionary ? 0xD0 : 0xA0, count: container.count)
      buffer.reserve(refCount &* refWidth &+ 8)
      var i = container.refStart
      let end = i &+ refCount
      while i < end {
        buffer.appendBigEndian(UInt64(refs[i]), width: refWidth)
        i &+= 1
      }
    }
    if overflowed { return nil }
    let tableOffset = buffer.count
    let offsetWidth = BinaryPropertyList.byteWidth(UInt64(tableOffset))
    buffer.reserve(objectCount &* offsetWidth &+ 40)
    for object in 0..<objectCount {
      buffer.appendBigEndian(UInt64(offsets[object]), width: offsetWidth)
    }
    buffer.appendBigEndian(0, width: 6)
    buffer.append(UInt8(offsetWidth))
    buffer.append(UInt8(refWidth))
    buffer.appendBigEndian(UInt64(objectCount), width: 8)
    buffer.appendBigEndian(UInt64(top), width: 8)
    buffer.appendBigEndian(UInt64(tableOffset), width: 8)
    return buffer.finish()
  }
}

// MARK: - Reading

private struct Reader {
  let base: UnsafeRawPointer
  /// The file's size.
  let size: Int
  let offsetWidth: Int
  let refWidth: Int
  let objectCount: Int
  let topObject: Int
  /// Where the offset table starts, which is where the objects end.
  let tableOffset: Int
  /// For each object, whether it is a container being decoded: meeting one
  /// again means a cycle. Allocated at the first container.
  var open: [Bool] = []
  /// How many more objects may be decoded (counting shared ones each time).
  var budget: Int

  init(_ raw: UnsafeRawBufferPointer) throws(AppGroupsError) {
    let size = raw.count
    guard let base = raw.baseAddress, size >= 8 else {
      throw BinaryPropertyList.corrupt("the file is \(size) bytes, too short for the 8-byte header")
    }
    guard Reader.bigEndian(base, at: 0, width: 6) == BinaryPropertyList.magic &>> 16 else {
      throw BinaryPropertyList.corrupt("the file does not start with \"bplist00\"")
    }
    let major = base.load(fromByteOffset: 6, as: UInt8.self)
    let minor = base.load(fromByteOffset: 7, as: UInt8.self)
    guard major == UInt8(ascii: "0"), minor == UInt8(ascii: "0") else {
      let printable = (0x21...0x7E).contains(major) && (0x21...0x7E).contains(minor)
      let version = printable
        ? "\"\(String(decoding: [major, minor], as: UTF8.self))\""
        : "0x\(String(major, radix: 16)) 0x\(String(minor, radix: 16))"
      throw BinaryPropertyList.corrupt("version \(version) is not supported (only \"00\")")
    }
    // The smallest file: header, a one-byte object, a one-byte offset, trailer.
    guard size >= 8 + 1 + 1 + 32 else {
      throw BinaryPropertyList.corrupt("the file is \(size) bytes, too short for an object, an offset table and the 32-byte trailer")
    }
    let trailer = size &- 32
    let offsetWidth = Int(base.load(fromByteOffset: trailer &+ 6, as: UInt8.self))
    let refWidth = Int(base.load(fromByteOffset: trailer &+ 7, as: UInt8.self))
    let objectCount = Reader.bigEndian(base, at: trailer &+ 8, width: 8)
    let topObject = Reader.bigEndian(base, at: trailer &+ 16, width: 8)
    let tableOffset = Reader.bigEndian(base, at: trailer &+ 24, width: 8)
    guard (1...8).contains(offsetWidth) else {
      throw BinaryPropertyList.corrupt("the trailer's offset size is \(offsetWidth) bytes (must be 1 to 8)")
    }
    guard (1...8).contains(refWidth) else {
      throw BinaryPropertyList.corrupt("the trailer's object reference size is \(refWidth) bytes (must be 1 to 8)")
    }
    guard objectCount > 0 else {
      throw BinaryPropertyList.corrupt("the trailer says there are no objects")
    }
    guard topObject < objectCount else {
      throw BinaryPropertyList.corrupt("the top object \(topObject) is not one of the \(objectCount) objects")
    }
    guard tableOffset >= 9, tableOffset <= UInt64(trailer) else {
      throw BinaryPropertyList.corrupt("the offset table offset \(tableOffset) is outside the file's object area (9...\(trailer))")
    }
    let tableSpace = UInt64(trailer) &- tableOffset
    let (tableSize, overflow) = objectCount.multipliedReportingOverflow(by: UInt64(offsetWidth))
    guard !overflow, tableSize == tableSpace else {
      throw BinaryPropertyList.corrupt("an offset table of \(objectCount) offsets of \(offsetWidth) bytes does not fill the \(tableSpace) bytes between offset \(tableOffset) and the trailer")
    }
    // As CoreFoundation requires: the widths must reach every object and the table.
    guard refWidth == 8 || objectCount < 1 << UInt64(refWidth &* 8) else {
      throw BinaryPropertyList.corrupt("object references of \(refWidth) bytes cannot name all \(objectCount) objects")
    }
    guard offsetWidth == 8 || tableOffset < 1 << UInt64(offsetWidth &* 8) else {
      throw BinaryPropertyList.corrupt("offsets of \(offsetWidth) bytes cannot reach the offset table at \(tableOffset)")
    }
    self.base = base
    self.size = size
    self.offsetWidth = offsetWidth
    self.refWidth = refWidth
    // All three are at most the file's size, from the checks above.
    self.objectCount = Int(objectCount)
    self.topObject = Int(topObject)
    self.tableOffset = Int(tableOffset)
    let (budget, budgetOverflow) = size.multipliedReportingOverflow(by: 16)
    self.budget = budgetOverflow ? Int.max : budget
  }

  /// Reads `width` (1 to 8) bytes at `offset` as a big-endian unsigned integer.
  /// The caller has checked that they are in the file.
  @inline(__always)
  static func bigEndian(_ base: UnsafeRawPointer, at offset: Int, width: Int) -> UInt64 {
    switch width {
    case 1: return UInt64(base.load(fromByteOffset: offset, as: UInt8.self))
    case 2: return UInt64(UInt16(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
    case 4: return UInt64(UInt32(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
    case 8: return UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    default:
      var value: UInt64 = 0
      for i in 0..<width {
        value = value &<< 8 | UInt64(base.load(fromByteOffset: offset &+ i, as: UInt8.self))
      }
      return value
    }
  }

  @inline(__always)
  func byte(at offset: Int) -> UInt8 {
    base.load(fromByteOffset: offset, as: UInt8.self)
  }

  /// Decodes the top object.
  mutating func decodeTop() throws(AppGroupsError) -> PropertyListValue {
    try decode(object: topObject, depth: 0)
  }

  /// Decodes the top object, which must be a dictionary, one entry at a time: an entry
  /// whose key or value cannot be decoded is left out and reported, and the others are
  /// kept. The file's structure (header, trailer, offset table, the top dictionary's own
  /// references) must be sound, and the whole file stays within the expansion budget.
  mutating func salvageTop() throws(AppGroupsError) -> PropertyListSalvage {
    let offset = try offset(of: topObject)
    let marker = byte(at: offset)
    guard marker &>> 4 == 0xD else {
      throw BinaryPropertyList.corrupt(
        "the top object is \(Reader.kindName(marker)), not a dictionary, so it holds no keys to salvage")
    }
    try spend(topObject)
    let top = try open(object: topObject, at: offset, isDictionary: true, depth: 0)
    var salvage = PropertyListSalvage()
    salvage.values.reserveCapacity(top.count)
    // Keys already met, kept or skipped: a duplicate key's first entry wins, as in
    // CoreFoundation, even when that entry was skipped.
    var skippedKeys: Set<String> = []
    for index in 0..<top.count {
      let key: String
      do throws(AppGroupsError) {
        key = try self.key(in: topObject, at: top.refStart, index: index)
      } catch {
        if budget < 0 { throw error }
        salvage.skipped.append(.init(key: nil, index: index, reason: error.message))
        continue
      }
      if salvage.values[key] != nil || skippedKeys.contains(key) { continue }
      do throws(AppGroupsError) {
        let ref = try reference(from: topObject, at: top.refStart &+ top.count &* refWidth, index: index)
        salvage.values[key] = try decode(object: ref, depth: 1)
      } catch {
        // Past the budget the file is built to explode: nothing more is decoded.
        if budget < 0 { throw error }
        skippedKeys.insert(key)
        salvage.skipped.append(.init(key: key, index: index, reason: error.message))
      }
    }
    open[topObject] = false
    return salvage
  }

  /// What kind of object a marker starts, for messages.
  static func kindName(_ marker: UInt8) -> String {
    switch marker &>> 4 {
    case 0x0: marker == 0x08 || marker == 0x09 ? "a boolean" : "null or an unknown object"
    case 0x1: "an integer"
    case 0x2: "a real"
    case 0x3: "a date"
    case 0x4: "data"
    case 0x5, 0x6: "a string"
    case 0x8: "a uid"
    case 0xA: "an array"
    case 0xB, 0xC: "a set"
    default: "an object of unknown kind 0x\(String(marker, radix: 16))"
    }
  }

  /// Decodes object `object` and everything in it, at nesting `depth`. Iterative, with an
  /// explicit stack of open containers, so that it needs little of the thread's stack
  /// whatever the nesting (debug builds take kilobytes a frame). The innermost open
  /// container is held apart from the stack, where it is filled. When it throws, the
  /// containers it opened are closed again, so that a salvaging caller can go on.
  mutating func decode(object: Int, depth: Int) throws(AppGroupsError) -> PropertyListValue {
    var current: Frame
    switch try begin(object: object, depth: depth) {
    case .value(let value): return value
    case .container(let frame): current = frame
    }
    var stack: [Frame] = []
    do throws(AppGroupsError) {
      return try fill(&current, &stack, depth: depth)
    } catch {
      open[current.object] = false
      for frame in stack { open[frame.object] = false }
      throw error
    }
  }

  /// Fills `current` and the containers in it, with `stack` holding the containers
  /// around it, until the outermost one (at `depth`) is complete.
  @inline(__always)
  private mutating func fill(
    _ current: inout Frame, _ stack: inout [Frame], depth: Int
  ) throws(AppGroupsError) -> PropertyListValue {
    while true {
      if current.next < current.count {
        let index = current.next
        if current.isDictionary {
          let key = try self.key(in: current.object, at: current.refStart, index: index)
          let ref = try reference(
            from: current.object, at: current.refStart &+ current.count &* refWidth, index: index)
          switch try begin(object: ref, depth: depth &+ stack.count &+ 1) {
          case .value(let value):
            // A duplicate key: the first one wins, as in CoreFoundation.
            if current.entries[key] == nil { current.entries[key] = value }
            current.next &+= 1
          case .container(let child):
            current.key = key
            stack.append(current)
            current = child
          }
        } else {
          let ref = try reference(from: current.object, at: current.refStart, index: index)
          switch try begin(object: ref, depth: depth &+ stack.count &+ 1) {
          case .value(let value):
            current.elements.append(value)
            current.next &+= 1
          case .container(let child):
            stack.append(current)
            current = child
          }
        }
      } else {
        // Complete: hand it to its parent.
        open[current.object] = false
        let value: PropertyListValue =
          current.isDictionary ? .dictionary(current.entries) : .array(current.elements)
        guard let parent = stack.popLast() else { return value }
        current = parent
        if current.isDictionary {
          if current.entries[current.key] == nil { current.entries[current.key] = value }
        } else {
          current.elements.append(value)
        }
        current.next &+= 1
      }
    }
  }

  /// Where object `object` (already checked to be a valid number) starts.
  @inline(__always)
  func offset(of object: Int) throws(AppGroupsError) -> Int {
    let entry = tableOffset &+ object &* offsetWidth
    let offset = Reader.bigEndian(base, at: entry, width: offsetWidth)
    guard offset >= 8, offset < UInt64(tableOffset) else {
      if offset >= UInt64(size) {
        throw BinaryPropertyList.corrupt("object \(object) offset \(offset) is past the end of the file (\(size) bytes)")
      }
      throw BinaryPropertyList.corrupt("object \(object) offset \(offset) is outside the object area (8..<\(tableOffset))")
    }
    return Int(offset)
  }

  /// Checks that `count` bytes from `start` lie in the object area.
  @inline(__always)
  func checkRange(object: Int, start: Int, count: Int, what: String) throws(AppGroupsError) {
    guard start <= tableOffset, count <= tableOffset &- start else {
      throw BinaryPropertyList.corrupt("object \(object) at offset \(start) needs \(count) bytes of \(what), past the object area's end at \(tableOffset) (the file is \(size) bytes)")
    }
  }

  /// The count of a data, string, array or dictionary object whose marker is
  /// at `offset`, and where its contents start.
  @inline(__always)
  func header(object: Int, at offset: Int) throws(AppGroupsError) -> (count: Int, start: Int) {
    let nibble = Int(byte(at: offset) & 0x0F)
    if nibble != 0x0F { return (nibble, offset &+ 1) }
    let intOffset = offset &+ 1
    guard intOffset < tableOffset else {
      throw BinaryPropertyList.corrupt("object \(object) at offset \(offset) has its length cut off by the end of the object area")
    }
    let marker = byte(at: intOffset)
    guard marker & 0xF0 == 0x10, marker & 0x0F <= 3 else {
      throw BinaryPropertyList.corrupt("object \(object) at offset \(offset) has a length that is not a 1-, 2-, 4- or 8-byte integer (marker 0x\(String(marker, radix: 16)))")
    }
    let width = 1 &<< Int(marker & 0x0F)
    try checkRange(object: object, start: intOffset &+ 1, count: width, what: "length")
    let value = Reader.bigEndian(base, at: intOffset &+ 1, width: width)
    guard value <= UInt64(size) else {
      throw BinaryPropertyList.corrupt("object \(object) declares a length of \(Reader.describe(value)), which exceeds the file (\(size) bytes)")
    }
    return (Int(value), intOffset &+ 1 &+ width)
  }

  /// A large declared length as a power of two when it is one, for the message.
  static func describe(_ value: UInt64) -> String {
    if value.nonzeroBitCount == 1 && value >= 1 << 16 {
      return "2^\(value.trailingZeroBitCount) (\(value))"
    }
    return "\(value)"
  }

  /// The object a container's `index`th reference names.
  @inline(__always)
  func reference(from container: Int, at start: Int, index: Int) throws(AppGroupsError) -> Int {
    let ref = Reader.bigEndian(base, at: start &+ index &* refWidth, width: refWidth)
    guard ref < UInt64(objectCount) else {
      throw BinaryPropertyList.corrupt("object \(container) refers to object \(ref), but there are only \(objectCount) objects")
    }
    return Int(ref)
  }

  @inline(__always)
  mutating func spend(_ object: Int) throws(AppGroupsError) {
    budget &-= 1
    guard budget >= 0 else {
      throw BinaryPropertyList.corrupt("the objects expand to more than 16 for each byte of the \(size)-byte file (containers shared many times over), at object \(object)")
    }
  }

  /// A decoded object: a value, or a container opened to be filled.
  enum Begun {
    case value(PropertyListValue)
    case container(Frame)
  }

  /// The object's value if it is not a container; otherwise the container,
  /// opened at nesting `depth` (the top object is at 0).
  @inline(__always)
  mutating func begin(object: Int, depth: Int) throws(AppGroupsError) -> Begun {
    try spend(object)
    let offset = try offset(of: object)
    let marker = byte(at: offset)
    switch marker &>> 4 {
    case 0x0:
      switch marker {
      case 0x08: return .value(.bool(false))
      case 0x09: return .value(.bool(true))
      case 0x00: throw BinaryPropertyList.corrupt("object \(object) is null, which is not a property-list value")
      default: throw BinaryPropertyList.corrupt("object \(object) has the unknown marker 0x\(String(marker, radix: 16))")
      }
    case 0x1: return .value(try integer(object: object, at: offset))
    case 0x2:
      switch marker & 0x0F {
      case 2:
        try checkRange(object: object, start: offset &+ 1, count: 4, what: "real")
        let bits = UInt32(Reader.bigEndian(base, at: offset &+ 1, width: 4))
        return .value(.float(Float(bitPattern: bits)))
      case 3:
        try checkRange(object: object, start: offset &+ 1, count: 8, what: "real")
        return .value(.real(Double(bitPattern: Reader.bigEndian(base, at: offset &+ 1, width: 8))))
      default:
        throw BinaryPropertyList.corrupt("object \(object) is a real of \(Reader.widthName(marker)) bytes (must be 4 or 8)")
      }
    case 0x3:
      guard marker == 0x33 else {
        throw BinaryPropertyList.corrupt("object \(object) has the unknown marker 0x\(String(marker, radix: 16)) (a date is 0x33)")
      }
      try checkRange(object: object, start: offset &+ 1, count: 8, what: "date")
      let seconds = Double(bitPattern: Reader.bigEndian(base, at: offset &+ 1, width: 8))
      // Not a point in time; and Foundation traps describing such a Date.
      guard !seconds.isNaN else {
        throw BinaryPropertyList.corrupt("object \(object) is a date that is not a number (NaN)")
      }
      return .value(.date(Date(timeIntervalSinceReferenceDate: seconds)))
    case 0x4:
      let (count, start) = try header(object: object, at: offset)
      try checkRange(object: object, start: start, count: count, what: "data")
      return .value(.data(Data(bytes: base.advanced(by: start), count: count)))
    case 0x5, 0x6:
      return .value(.string(try string(object: object, at: offset)))
    case 0x8:
      throw BinaryPropertyList.corrupt("object \(object) is a uid (from a keyed archive), which is not a property-list value")
    case 0xA:
      return .container(try open(object: object, at: offset, isDictionary: false, depth: depth))
    case 0xB, 0xC:
      throw BinaryPropertyList.corrupt("object \(object) is a set, which is not a property-list value")
    case 0xD:
      return .container(try open(object: object, at: offset, isDictionary: true, depth: depth))
    default:
      throw BinaryPropertyList.corrupt("object \(object) has the unknown marker 0x\(String(marker, radix: 16))")
    }
  }

  static func widthName(_ marker: UInt8) -> String {
    let exponent = Int(marker & 0x0F)
    return exponent < 8 ? "\(1 << exponent)" : "2^\(exponent)"
  }

  @inline(__always)
  func integer(object: Int, at offset: Int) throws(AppGroupsError) -> PropertyListValue {
    let marker = byte(at: offset)
    let start = offset &+ 1
    switch marker & 0x0F {
    case 0, 1, 2:
      let width = 1 &<< Int(marker & 0x0F)
      try checkRange(object: object, start: start, count: width, what: "integer")
      return .integer(Int(Reader.bigEndian(base, at: start, width: width)))
    case 3:
      try checkRange(object: object, start: start, count: 8, what: "integer")
      return .integer(Int(Int64(bitPattern: Reader.bigEndian(base, at: start, width: 8))))
    case 4:
      // A signed 128-bit integer, high half first.
      try checkRange(object: object, start: start, count: 16, what: "integer")
      let high = Reader.bigEndian(base, at: start, width: 8)
      let low = Reader.bigEndian(base, at: start &+ 8, width: 8)
      if high == 0 { return .unsigned(low) }
      guard high == UInt64.max, low >= 1 << 63 else {
        let sign = high >= 1 << 63 ? "below Int64.min" : "above UInt64.max"
        throw BinaryPropertyList.corrupt(
          "object \(object) is a 16-byte integer \(sign), which is not a property-list value here (64 bits at most)")
      }
      return .integer(Int(Int64(bitPattern: low)))
    default:
      throw BinaryPropertyList.corrupt("object \(object) is an integer of \(Reader.widthName(marker)) bytes (must be 1, 2, 4, 8 or 16)")
    }
  }

  @inline(__always)
  func string(object: Int, at offset: Int) throws(AppGroupsError) -> String {
    let marker = byte(at: offset)
    let (count, start) = try header(object: object, at: offset)
    let bytes = base.advanced(by: start)
    if marker &>> 4 == 0x5 {
      try checkRange(object: object, start: start, count: count, what: "ASCII string")
      let buffer = UnsafeRawBufferPointer(start: bytes, count: count)
      guard BinaryPropertyList.isASCII(buffer) else {
        throw BinaryPropertyList.corrupt("object \(object) is an ASCII string with a byte of 0x80 or more")
      }
      return String(decoding: buffer, as: UTF8.self)
    }
    // count <= size, so twice it cannot overflow.
    try checkRange(object: object, start: start, count: count &* 2, what: "UTF-16 string")
    let units = [UInt16](unsafeUninitializedCapacity: count) { buffer, initialized in
      for i in 0..<count {
        buffer[i] = UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: i &* 2, as: UInt16.self))
      }
      initialized = count
    }
    // Unpaired surrogates become U+FFFD.
    return String(decoding: units, as: UTF16.self)
  }

  /// Checks that a container's references are in the file and that it may
  /// be opened (depth, cycle), and opens it.
  mutating func open(
    object: Int, at offset: Int, isDictionary: Bool, depth: Int
  ) throws(AppGroupsError) -> Frame {
    guard depth < BinaryPropertyList.maximumDepth else {
      throw BinaryPropertyList.corrupt("nesting deeper than \(BinaryPropertyList.maximumDepth) (at object \(object))")
    }
    let (count, start) = try header(object: object, at: offset)
    // count <= size and refWidth <= 8, so this cannot overflow.
    let refBytes = isDictionary ? count &* refWidth &* 2 : count &* refWidth
    try checkRange(object: object, start: start, count: refBytes, what: "references")
    if open.isEmpty { open = [Bool](repeating: false, count: objectCount) }
    guard !open[object] else {
      throw BinaryPropertyList.corrupt("object \(object) refers to itself (directly or through the containers in it)")
    }
    open[object] = true
    var frame = Frame(object: object, isDictionary: isDictionary, refStart: start, count: count)
    if isDictionary {
      frame.entries.reserveCapacity(count)
    } else {
      frame.elements.reserveCapacity(count)
    }
    return frame
  }

  /// The `index`th key of a dictionary whose key references start at `start`.
  @inline(__always)
  mutating func key(in object: Int, at start: Int, index: Int) throws(AppGroupsError) -> String {
    let keyRef = try reference(from: object, at: start, index: index)
    try spend(keyRef)
    let keyOffset = try offset(of: keyRef)
    let keyMarker = byte(at: keyOffset) &>> 4
    guard keyMarker == 0x5 || keyMarker == 0x6 else {
      throw BinaryPropertyList.corrupt("dictionary object \(object) has a key, object \(keyRef), that is not a string")
    }
    return try string(object: keyRef, at: keyOffset)
  }
}

/// An array or dictionary being decoded.
private struct Frame {
  let object: Int
  let isDictionary: Bool
  /// Where its references start: the elements', or the keys' then the values'.
  let refStart: Int
  let count: Int
  /// The index of the next element or entry to decode.
  var next = 0
  var elements: [PropertyListValue] = []
  var entries: [String: PropertyListValue] = [:]
  /// The key of the entry whose value is being decoded.
  var key = ""

  init(object: Int, isDictionary: Bool, refStart: Int, count: Int) {
    self.object = object
    self.isDictionary = isDictionary
    self.refStart = refStart
    self.count = count
  }
}

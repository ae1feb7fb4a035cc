internal import Foundation

// The writer of ``BinaryPropertyList``: the value flattened into objects (strings uniqued)
// written into a buffer of its own (`BinaryPropertyList+Buffers.swift`), then the offset
// table and the trailer.

private typealias Entries = [String: PropertyListValue]

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
struct BinaryPropertyListWriter<Index: FixedWidthInteger & UnsignedInteger & BitwiseCopyable>: ~Copyable {
  fileprivate var buffer: ByteBuffer
  /// Each object's offset in the file (for containers, set when written).
  fileprivate var offsets: UnsafeList<Index>
  /// Containers' references: an array's elements, or a dictionary's keys then values.
  fileprivate var refs: UnsafeList<Index>
  fileprivate var containers: [Container] = []
  fileprivate var strings = StringTable()
  /// The key objects of the dictionary flattened last that are not yet in `strings`:
  /// keys of one dictionary differ from each other, so each is looked up only among the
  /// strings written before its dictionary, and added to the table only when a later
  /// string is looked up (in a domain of numbers, never).
  fileprivate var unhashedKeys = 0..<0
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
    // Its keys are looked up among every string written before them.
    hashUnhashedKeys()
    offsets.reserve(count &* 2)

    var keys: [SortKey] = []
    keys.reserveCapacity(count)
    var hasLongKeys = false
    for key in dictionary.keys {
      var key = key
      key.withUTF8 { utf8 in
        if utf8.count > 8 { hasLongKeys = true }
        keys.append(SortKey(prefix: KeyOrder.prefix(utf8), ordinal: keys.count, length: utf8.count))
      }
    }
    KeyOrder.sort(&keys, dictionary)

    // The entries in sorted order, gathered in one pass over the dictionary
    // in its own order: stores to scattered places do not stall as loads
    // from scattered places (which miss the cache) would.
    // A permutation of 0..<count: each element is written once.
    var rank = [Int](unsafeUninitializedCapacity: count) { rank, initialized in
      for position in 0..<count { (rank.baseAddress! + keys[position].ordinal).initialize(to: position) }
      initialized = count
    }
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

    // New keys are numbered one after the other: nothing else is written among them.
    let firstKey = offsets.count
    for position in 0..<count {
      let key = keys[position]
      let ref: Int
      if key.length <= 8 {
        // The prefix holds the whole key.
        ref = internKey(prefix: key.prefix, length: key.length)
      } else {
        ref = longKeys[position].withUTF8 { internKey(UnsafeRawBufferPointer($0)) }
      }
      refs[refStart &+ position] = Index(truncatingIfNeeded: ref)
    }
    unhashedKeys = firstKey..<offsets.count
    longKeys = []
    for position in 0..<count {
      let ref: Int
      // The common value, without the call and the copy.
      if case .integer(let v) = values[position] {
        ref = beginObject()
        buffer.appendInteger(v)
      } else {
        ref = flatten(values[position])
      }
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
    // Every reference is set before `serialize` writes it.
    refs.appendUninitialized(count: refCount)
    containers.append(Container(object: object, refStart: refStart, count: count, isDictionary: isDictionary))
    return (object, refStart)
  }

  /// Adds the keys of the dictionary flattened last to `strings`, before a string is
  /// looked up there.
  @inline(__always)
  private mutating func hashUnhashedKeys() {
    if !unhashedKeys.isEmpty { addUnhashedKeys() }
  }

  @inline(never)
  private mutating func addUnhashedKeys() {
    let keys = unhashedKeys
    unhashedKeys = 0..<0
    // Once an offset is cut short, this attempt is thrown away: the table is not used.
    if overflowed { return }
    // The keys, and room for string values as many as half of them.
    strings.reserve(keys.count &+ keys.count / 2, buffer: buffer, offsets: offsets)
    for object in keys {
      let start = Int(offsets[object])
      strings.add(object: object, start: start, length: buffer.stringLength(at: start), buffer: buffer)
    }
  }

  /// Writes a dictionary's key unless an identical string was written before the
  /// dictionary, and returns its object number. A new key is not added to `strings`
  /// (see `unhashedKeys`).
  @inline(__always)
  private mutating func internKey(_ utf8: UnsafeRawBufferPointer) -> Int {
    let start = buffer.count
    appendString(utf8)
    return numberKey(start: start)
  }

  /// ``internKey(_:)`` for a key of at most 8 bytes, given as its sort prefix.
  @inline(__always)
  private mutating func internKey(prefix: UInt64, length: Int) -> Int {
    guard prefix & 0x8080_8080_8080_8080 == 0 else {
      return internKey(nonASCIIPrefix: prefix, length: length)
    }
    let start = buffer.count
    buffer.appendShortASCII(prefix, length: length)
    return numberKey(start: start)
  }

  /// Out of line: its bytes on the stack would cost the common case a stack check.
  @inline(never)
  private mutating func internKey(nonASCIIPrefix prefix: UInt64, length: Int) -> Int {
    withUnsafeBytes(of: prefix.bigEndian) { raw in
      internKey(UnsafeRawBufferPointer(rebasing: raw[0..<length]))
    }
  }

  /// The object number of the key just written at `start`: that of an identical string
  /// written before the dictionary (the key is then taken back), or a new one.
  @inline(__always)
  private mutating func numberKey(start: Int) -> Int {
    if !strings.isEmpty, !overflowed,
      let existing = strings.lookup(
        start: start, length: buffer.count &- start, buffer: buffer, offsets: offsets)
    {
      buffer.count = start
      return existing
    }
    return beginObject(at: start)
  }

  /// Writes the string unless an identical one was written before, and
  /// returns its object number.
  @inline(__always)
  private mutating func intern(_ utf8: UnsafeRawBufferPointer) -> Int {
    hashUnhashedKeys()
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
      buffer.appendBigEndian(refs.base + container.refStart, count: refCount, width: refWidth)
    }
    if overflowed { return nil }
    let tableOffset = buffer.count
    let offsetWidth = BinaryPropertyList.byteWidth(UInt64(tableOffset))
    buffer.reserve(objectCount &* offsetWidth &+ 40)
    buffer.appendBigEndian(offsets.base, count: objectCount, width: offsetWidth)
    buffer.appendBigEndian(0, width: 6)
    buffer.append(UInt8(offsetWidth))
    buffer.append(UInt8(refWidth))
    buffer.appendBigEndian(UInt64(objectCount), width: 8)
    buffer.appendBigEndian(UInt64(top), width: 8)
    buffer.appendBigEndian(UInt64(tableOffset), width: 8)
    return buffer.finish()
  }
}

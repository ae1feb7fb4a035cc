internal import Foundation

// The writer of ``BinaryPropertyList``: the value flattened into objects (strings uniqued)
// written into a buffer this file owns, then the offset table and the trailer.

/// Bytes being written: an ``UnsafeList`` of bytes, the writer's one growable buffer, with
/// the stores of the format on top. Appends check capacity once per call, not per byte.
private struct ByteBuffer: ~Copyable {
  private var bytes: UnsafeList<UInt8>

  init(capacity: Int) {
    bytes = UnsafeList(capacity: Swift.max(capacity, 256))
  }

  var base: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bytes.base) }
  /// The bytes written; set lower to take back what was written since.
  var count: Int {
    get { bytes.count }
    set { bytes.truncate(to: newValue) }
  }

  /// Makes room for `extra` more bytes, and 8 more: `appendBigEndian`
  /// stores whole words and `hash` loads them.
  @inline(__always)
  mutating func reserve(_ extra: Int) {
    bytes.reserve(extra &+ 8)
  }

  /// Counts `n` more bytes, stored already in the room ``reserve(_:)`` made.
  @inline(__always)
  private mutating func advance(_ n: Int) {
    bytes.advance(n)
  }

  @inline(__always)
  mutating func append(_ byte: UInt8) {
    reserve(1)
    base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
    advance(1)
  }

  @inline(__always)
  mutating func append(_ bytes: UnsafeRawBufferPointer) {
    guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
    reserve(bytes.count)
    (base + count).copyMemory(from: source, byteCount: bytes.count)
    advance(bytes.count)
  }

  /// The low `width` (1 to 8) bytes of `value`, most significant first.
  @inline(__always)
  mutating func appendBigEndian(_ value: UInt64, width: Int) {
    reserve(width)
    // Store all 8 bytes with the wanted ones first, then keep `width` of them.
    let shifted = value &<< UInt64(64 &- width &* 8)
    base.storeBytes(of: shifted.bigEndian, toByteOffset: count, as: UInt64.self)
    advance(width)
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
    let (base, count) = bytes.release()
    return Data(
      bytesNoCopy: UnsafeMutableRawPointer(base), count: count,
      deallocator: .custom { pointer, _ in pointer.deallocate() })
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

  /// Forgets the elements from `newCount` on.
  @inline(__always)
  mutating func truncate(to newCount: Int) {
    count = newCount
  }

  /// Counts `n` more elements, initialized already in the room ``reserve(_:)`` made.
  @inline(__always)
  mutating func advance(_ n: Int) {
    count &+= n
  }

  /// Gives up the memory (the caller deallocates it) and its count.
  consuming func release() -> (UnsafeMutablePointer<Element>, Int) {
    let result = (base, count)
    discard self
    return result
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
struct BinaryPropertyListWriter<Index: FixedWidthInteger & UnsignedInteger & BitwiseCopyable>: ~Copyable {
  fileprivate var buffer: ByteBuffer
  /// Each object's offset in the file (for containers, set when written).
  fileprivate var offsets: UnsafeList<Index>
  /// Containers' references: an array's elements, or a dictionary's keys then values.
  fileprivate var refs: UnsafeList<Index>
  fileprivate var containers: [Container] = []
  fileprivate var strings = StringTable()
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
        keys.append(SortKey(prefix: BinaryPropertyListWriter.prefix(utf8), ordinal: keys.count, length: utf8.count))
      }
    }
    BinaryPropertyListWriter.sort(&keys, dictionary)

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
  fileprivate static func precedes(_ a: SortKey, _ b: SortKey, _ keys: [String]) -> Bool {
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
  fileprivate static func sort(_ keys: inout [SortKey], _ dictionary: Entries) {
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

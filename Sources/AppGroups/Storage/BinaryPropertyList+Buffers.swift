internal import Foundation

// The binary property-list writer's buffers (see `BinaryPropertyList+Writer.swift`): the
// bytes being written, the growable lists of offsets and references, and the table that
// uniques strings by their bytes.

/// Bytes being written: an ``UnsafeList`` of bytes, the writer's one growable buffer, with
/// the stores of the format on top. Appends check capacity once per call, not per byte.
struct ByteBuffer: ~Copyable {
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

  /// `n` values, each in its low `width` (1, 2, 4 or 8) bytes, most significant
  /// first: the offset table and a container's references.
  @inline(__always)
  mutating func appendBigEndian<Value: FixedWidthInteger>(
    _ values: UnsafePointer<Value>, count n: Int, width: Int
  ) {
    reserve(n &* width)
    let target = base + count
    switch width {
    case 1:
      for i in 0..<n {
        target.storeBytes(of: UInt8(truncatingIfNeeded: values[i]), toByteOffset: i, as: UInt8.self)
      }
    case 2:
      for i in 0..<n {
        target.storeBytes(
          of: UInt16(truncatingIfNeeded: values[i]).bigEndian, toByteOffset: i &* 2, as: UInt16.self)
      }
    case 4:
      for i in 0..<n {
        target.storeBytes(
          of: UInt32(truncatingIfNeeded: values[i]).bigEndian, toByteOffset: i &* 4, as: UInt32.self)
      }
    default:
      for i in 0..<n {
        target.storeBytes(
          of: UInt64(truncatingIfNeeded: values[i]).bigEndian, toByteOffset: i &* 8, as: UInt64.self)
      }
    }
    advance(n &* width)
  }

  /// An ASCII string object of `length` (0 to 8) bytes, given as a big-endian word
  /// holding them first, zero-padded: its marker, then the word, of which `length`
  /// bytes are kept.
  @inline(__always)
  mutating func appendShortASCII(_ word: UInt64, length: Int) {
    reserve(9)
    base.storeBytes(of: 0x50 | UInt8(truncatingIfNeeded: length), toByteOffset: count, as: UInt8.self)
    base.storeBytes(of: word.bigEndian, toByteOffset: count &+ 1, as: UInt64.self)
    advance(1 &+ length)
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
struct UnsafeList<Element: BitwiseCopyable>: ~Copyable {
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

  /// Counts `n` more elements, left uninitialized: the caller sets each before reading it.
  @inline(__always)
  mutating func appendUninitialized(count n: Int) {
    reserve(n)
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
struct StringTable {
  private var slots: [UInt64] = Array(repeating: 0, count: 256)
  private var mask = 255
  private var count = 0
  /// Read once here: a global's every read checks that it was initialized.
  private let seed = StringTable.processSeed

  static let processSeed = UInt64.random(in: 0...UInt64.max)
  private static let objectBits: UInt64 = 40
  private static let objectMask: UInt64 = 1 &<< objectBits &- 1

  var isEmpty: Bool { count == 0 }

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
    let (found, slot, tag) = probe(start: start, length: length, buffer: buffer, offsets: offsets)
    if let found { return found }
    slots[slot] = tag | UInt64(object &+ 1)
    count &+= 1
    if count &* 2 > mask {
      rehash(capacity: (mask &+ 1) &* 2, buffer: buffer, offsets: offsets)
    }
    return nil
  }

  /// The object number of a string whose encoding is the `length` bytes written at
  /// `start`, if an identical one was written before and added.
  @inline(__always)
  func lookup<Index: FixedWidthInteger & BitwiseCopyable>(
    start: Int, length: Int, buffer: borrowing ByteBuffer, offsets: borrowing UnsafeList<Index>
  ) -> Int? {
    probe(start: start, length: length, buffer: buffer, offsets: offsets).found
  }

  /// The string's object number if the table holds it; otherwise the empty slot where
  /// it goes. `tag` is its hash's top 24 bits, as a slot stores them.
  @inline(__always)
  private func probe<Index: FixedWidthInteger & BitwiseCopyable>(
    start: Int, length: Int, buffer: borrowing ByteBuffer, offsets: borrowing UnsafeList<Index>
  ) -> (found: Int?, slot: Int, tag: UInt64) {
    let h = buffer.hash(start: start, length: length, seed: seed)
    let tag = h & ~StringTable.objectMask
    var slot = Int(truncatingIfNeeded: h) & mask
    while true {
      let value = slots[slot]
      if value == 0 { return (nil, slot, tag) }
      if value & ~StringTable.objectMask == tag {
        let candidate = Int(truncatingIfNeeded: value & StringTable.objectMask) &- 1
        // The candidate was written earlier, so `length` bytes from it are in
        // the buffer; a different string differs within them, since an
        // encoding starts with its length.
        if buffer.bytesEqual(Int(offsets[candidate]), start, length: length) {
          return (candidate, slot, tag)
        }
      }
      slot = (slot &+ 1) & mask
    }
  }

  /// Records string object `object`, whose encoding is the `length` bytes written at
  /// `start`, known to differ from every string in the table. The caller has made room
  /// with ``reserve(_:buffer:offsets:)``.
  @inline(__always)
  mutating func add(object: Int, start: Int, length: Int, buffer: borrowing ByteBuffer) {
    let h = buffer.hash(start: start, length: length, seed: seed)
    var slot = Int(truncatingIfNeeded: h) & mask
    while slots[slot] != 0 { slot = (slot &+ 1) & mask }
    slots[slot] = h & ~StringTable.objectMask | UInt64(object &+ 1)
    count &+= 1
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
      let h = buffer.hash(start: start, length: buffer.stringLength(at: start), seed: seed)
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

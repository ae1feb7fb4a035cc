internal import Foundation
internal import Synchronization

// A suite's file held as its bytes and an index of its top dictionary's keys: values are
// decoded when asked for, not all at open (see ``SuiteValues``).

/// The values of a binary property list whose top object is a dictionary of ASCII keys,
/// checked whole when it is made (every object the full decode reads is read, with the same
/// budget, depth and cycle checks, so a file the full decode refuses is declined here) but
/// turned into `String`s and ``PropertyListValue``s only when a key is asked for.
///
/// Keys are compared as bytes: for ASCII keys that is `String` equality. A query that is not
/// ASCII may still equal an ASCII key (U+212A KELVIN SIGN is canonically "K"), so it is not
/// answered here (``lookup(_:)`` says `.unknown`): the caller decodes the whole file, once
/// (``decoded``).
///
/// The bytes are this process's copy, read, not mapped: a file truncated in place by a writer
/// that ignores the lock would be SIGBUS under a mapping, and the copy is what was checked.
final class BinaryPropertyListIndex: Sendable {
  /// The file's bytes.
  let data: Data
  /// How many distinct keys the top dictionary has (a duplicate key's first entry counts).
  let count: Int
  /// Open addressing, linear probing, a power of two at least twice `count`: 0 is empty,
  /// else the number of a distinct key's first entry + 1.
  private let slots: [UInt32]
  /// The whole dictionary, decoded the first time it is asked for, then shared by every
  /// holder of this index (a store's memory and its file's last-read values).
  private let whole = Mutex<[String: PropertyListValue]?>(nil)

  /// What ``lookup(_:)`` found.
  enum Lookup: Equatable {
    case found(PropertyListValue)
    case absent
    /// The query is not ASCII: only the whole decode can answer it.
    case unknown
  }

  /// Indexes `data`, or `nil` when this form cannot hold it exactly (not a binary property
  /// list, a top object that is not a dictionary, a key that is not an ASCII string, 2^31
  /// entries or more) or when anything in it is malformed: the caller then decodes the whole
  /// file, which says what is wrong exactly as it always did.
  init?(_ data: Data) {
    guard data.starts(with: "bplist".utf8) else { return nil }
    let built = data.withUnsafeBytes { raw -> (count: Int, slots: [UInt32])? in
      do throws(AppGroupsError) {
        var reader = try BinaryPropertyListReader(raw)
        return try reader.indexTop()
      } catch {
        return nil
      }
    }
    guard let built else { return nil }
    self.data = data
    self.count = built.count
    self.slots = built.slots
  }

  /// The value of `key`, decoded now.
  func lookup(_ key: String) -> Lookup {
    var key = key
    return key.withUTF8 { utf8 -> Lookup in
      let query = UnsafeRawBufferPointer(utf8)
      guard BinaryPropertyList.isASCII(query) else { return .unknown }
      return data.withUnsafeBytes { raw -> Lookup in
        // The file was checked whole when indexed: nothing below can fail.
        guard var reader = try? BinaryPropertyListReader(raw), let top = try? reader.topReferences(),
          let entry = find(query, reader, top)
        else { return .absent }
        guard let ref = try? reader.reference(from: reader.topObject, at: top.valueStart, index: entry),
          let value = try? reader.decode(object: ref, depth: 1)
        else { return .absent }
        return .found(value)
      }
    }
  }

  /// The entry number of the key whose bytes are `query`, or `nil`.
  private func find(
    _ query: UnsafeRawBufferPointer, _ reader: BinaryPropertyListReader, _ top: BinaryPropertyListReader.Top
  ) -> Int? {
    let mask = slots.count &- 1
    var slot = Self.hash(query) & mask
    while true {
      let entry = Int(slots[slot])
      if entry == 0 { return nil }
      if let bytes = try? reader.keyBytes(at: top.keyStart, index: entry &- 1),
        BinaryPropertyListReader.same(bytes, query)
      {
        return entry &- 1
      }
      slot = (slot &+ 1) & mask
    }
  }

  /// Every key and value, decoded the first time and kept (the full decode cannot fail on a
  /// file this index accepted).
  var decoded: [String: PropertyListValue] {
    whole.withLock { whole in
      if let whole { return whole }
      var values: [String: PropertyListValue] = [:]
      if case .dictionary(let all)? = try? BinaryPropertyList.decode(data) { values = all }
      whole = values
      return values
    }
  }

  /// The keys whose values may differ between this file and `other`: every key of one that
  /// the other lacks, and every key whose value's objects are not the same bytes. Compared
  /// key by key as bytes, nothing decoded but the keys returned (and the values of the few
  /// containers whose bytes cannot be compared directly).
  func keysDiffering(from other: BinaryPropertyListIndex) -> [String] {
    if self === other || data == other.data { return [] }
    return data.withUnsafeBytes { mine -> [String] in
      other.data.withUnsafeBytes { theirs -> [String] in
        guard var a = try? BinaryPropertyListReader(mine), let aTop = try? a.topReferences(),
          var b = try? BinaryPropertyListReader(theirs), let bTop = try? b.topReferences()
        else { return [] }
        var keys: [String] = []
        // Every key of this file: missing from the other, or its value's bytes differ.
        for slot in slots where slot != 0 {
          let entry = Int(slot) &- 1
          guard let bytes = try? a.keyBytes(at: aTop.keyStart, index: entry) else { continue }
          if let match = other.find(bytes, b, bTop),
            let aRef = try? a.reference(from: a.topObject, at: aTop.valueStart, index: entry),
            let bRef = try? b.reference(from: b.topObject, at: bTop.valueStart, index: match),
            BinaryPropertyListReader.sameValue(&a, aRef, &b, bRef)
          {
            continue
          }
          keys.append(String(decoding: bytes, as: UTF8.self))
        }
        // Every key of the other that this file lacks.
        for slot in other.slots where slot != 0 {
          guard let bytes = try? b.keyBytes(at: bTop.keyStart, index: Int(slot) &- 1) else { continue }
          if find(bytes, a, aTop) == nil { keys.append(String(decoding: bytes, as: UTF8.self)) }
        }
        return keys
      }
    }
  }

  /// A multiply-rotate over 8 bytes at a time and murmur3's 64-bit finaliser: keys are short,
  /// and the table is this process's (what collides is no one else's choice to exploit but
  /// a file's writer's, who can only slow this process's own reads of that file).
  @inline(__always)
  static func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
    var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
    guard let base = bytes.baseAddress else { return Int(truncatingIfNeeded: h) }
    let n = bytes.count
    var i = 0
    while n &- i >= 8 {
      h = (h ^ base.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xC2B2_AE3D_27D4_EB4F
      h = h &<< 31 | h &>> 33
      i &+= 8
    }
    var tail: UInt64 = 0
    var shift: UInt64 = 0
    while i < n {
      tail |= UInt64(base.load(fromByteOffset: i, as: UInt8.self)) &<< shift
      shift &+= 8
      i &+= 1
    }
    h ^= tail &* 0x1656_67B1_9E37_79F9
    h ^= h &>> 33
    h = h &* 0xFF51_AFD7_ED55_8CCD
    h ^= h &>> 33
    h = h &* 0xC4CE_B9FE_1A85_EC53
    h ^= h &>> 33
    return Int(truncatingIfNeeded: h)
  }
}

extension BinaryPropertyListReader {
  /// Where the top dictionary's key references and value references start, and its count.
  struct Top {
    let keyStart: Int
    let valueStart: Int
    let count: Int
  }

  /// The top dictionary's references, checked to lie in the file.
  func topReferences() throws(AppGroupsError) -> Top {
    let offset = try offset(of: topObject)
    guard byte(at: offset) &>> 4 == 0xD else {
      throw BinaryPropertyList.corrupt("the top object is not a dictionary")
    }
    let (count, start) = try header(object: topObject, at: offset)
    // count <= size and refWidth <= 8: no overflow.
    try checkRange(object: topObject, start: start, count: count &* refWidth &* 2, what: "references")
    return Top(keyStart: start, valueStart: start &+ count &* refWidth, count: count)
  }

  /// The bytes of the `index`th key of the top dictionary, checked as ``key(in:at:index:)``
  /// checks them; `nil` for a UTF-16 key (not indexed).
  func keyBytes(at keyStart: Int, index: Int) throws(AppGroupsError) -> UnsafeRawBufferPointer? {
    let keyRef = try reference(from: topObject, at: keyStart, index: index)
    let keyOffset = try offset(of: keyRef)
    let marker = byte(at: keyOffset) &>> 4
    guard marker == 0x5 else {
      if marker == 0x6 { return nil }
      throw BinaryPropertyList.corrupt("dictionary object \(topObject) has a key, object \(keyRef), that is not a string")
    }
    let (count, start) = try header(object: keyRef, at: keyOffset)
    try checkRange(object: keyRef, start: start, count: count, what: "ASCII string")
    let bytes = UnsafeRawBufferPointer(start: base.advanced(by: start), count: count)
    guard BinaryPropertyList.isASCII(bytes) else {
      throw BinaryPropertyList.corrupt("object \(keyRef) is an ASCII string with a byte of 0x80 or more")
    }
    return bytes
  }

  /// Whether two byte ranges are equal.
  static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    guard let x = a.baseAddress, let y = b.baseAddress else { return true }
    var i = 0
    while a.count &- i >= 8 {
      if x.loadUnaligned(fromByteOffset: i, as: UInt64.self) != y.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
        return false
      }
      i &+= 8
    }
    while i < a.count {
      if x.load(fromByteOffset: i, as: UInt8.self) != y.load(fromByteOffset: i, as: UInt8.self) { return false }
      i &+= 1
    }
    return true
  }

  /// The bytes of a scalar object (everything but an array or a dictionary), marker
  /// included; `nil` for a container, or an object this reader refuses.
  func scalarBytes(_ object: Int) -> UnsafeRawBufferPointer? {
    guard let offset = try? offset(of: object) else { return nil }
    let marker = byte(at: offset)
    let length: Int
    switch marker &>> 4 {
    case 0x0: length = 1
    case 0x1, 0x2: length = 1 &+ 1 &<< Int(min(marker & 0x0F, 4))
    case 0x3: length = 9
    case 0x4, 0x5, 0x6:
      guard let (count, start) = try? header(object: object, at: offset) else { return nil }
      length = start &- offset &+ (marker &>> 4 == 0x6 ? count &* 2 : count)
    default: return nil
    }
    guard offset <= tableOffset, length <= tableOffset &- offset else { return nil }
    return UnsafeRawBufferPointer(start: base.advanced(by: offset), count: length)
  }

  /// Whether object `aRef` of `a` and object `bRef` of `b` are the same value: the same
  /// bytes for a scalar (its encoding is canonical but for the width of an integer or a
  /// length, where unequal bytes fall back to comparing the decoded values), else the
  /// decoded values compared.
  static func sameValue(
    _ a: inout BinaryPropertyListReader, _ aRef: Int, _ b: inout BinaryPropertyListReader, _ bRef: Int
  ) -> Bool {
    if let x = a.scalarBytes(aRef), let y = b.scalarBytes(bRef), same(x, y) { return true }
    guard let x = try? a.decode(object: aRef, depth: 1), let y = try? b.decode(object: bRef, depth: 1) else {
      return false
    }
    return x == y
  }

  /// Checks the whole file as ``decodeTop()`` does (the same objects, the same budget, the
  /// same cycle and depth checks) and indexes the top dictionary's keys; `nil` when a key is
  /// not ASCII or there are too many. Each value is decoded and dropped: the check is what
  /// costs, not keeping it.
  mutating func indexTop() throws(AppGroupsError) -> (count: Int, slots: [UInt32])? {
    try spend(topObject)
    let top = try topReferences()
    guard top.count < Int(Int32.max), BinaryPropertyList.maximumDepth > 0 else { return nil }
    if open.isEmpty { open = [Bool](repeating: false, count: objectCount) }
    open[topObject] = true
    var capacity = 8
    while capacity < top.count &* 2 { capacity &<<= 1 }
    var slots = [UInt32](repeating: 0, count: capacity)
    let mask = capacity &- 1
    var distinct = 0
    let indexed = try slots.withUnsafeMutableBufferPointer { slots throws(AppGroupsError) -> Bool in
      for index in 0..<top.count {
        try spend(try reference(from: topObject, at: top.keyStart, index: index))
        guard let bytes = try keyBytes(at: top.keyStart, index: index) else { return false }
        var slot = BinaryPropertyListIndex.hash(bytes) & mask
        while true {
          let entry = Int(slots[slot])
          if entry == 0 {
            slots[slot] = UInt32(truncatingIfNeeded: index &+ 1)
            distinct &+= 1
            break
          }
          // A duplicate key: the first one wins, as in CoreFoundation and the full decode.
          if let other = try keyBytes(at: top.keyStart, index: entry &- 1), Self.same(other, bytes) { break }
          slot = (slot &+ 1) & mask
        }
        _ = try decode(object: try reference(from: topObject, at: top.valueStart, index: index), depth: 1)
      }
      return true
    }
    open[topObject] = false
    return indexed ? (distinct, slots) : nil
  }
}

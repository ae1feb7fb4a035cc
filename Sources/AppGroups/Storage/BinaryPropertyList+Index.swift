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
  /// How many keys the top dictionary has (each once: a file that gives one twice is declined).
  let count: Int
  /// Open addressing, linear probing, a power of two at least twice `count`: 0 is empty,
  /// else the number of a key's entry + 1 in the low 32 bits, and the high 32
  /// bits of its key's hash above them (most probes that do not match end there). Allocated
  /// by ``BinaryPropertyListReader/indexTop(crowdLimit:)``, never written after it, freed
  /// with this index.
  nonisolated(unsafe) private let slots: UnsafeMutableBufferPointer<UInt64>
  /// How `slots` hashes keys (see ``KeyHash``).
  private let keyHash: KeyHash
  /// How many slots a lookup looks at, at most: every key was put in within that many.
  private let probeLimit: Int
  /// The whole dictionary, decoded the first time it is asked for, then shared by every
  /// holder of this index (a store's memory and its file's last-read values).
  private let whole = Mutex<[String: PropertyListValue]?>(nil)

  /// The smallest file worth indexing: below it (a few dozen keys) the whole decode costs
  /// less than building the index and looking keys up one by one (measured on a watcher's
  /// re-read of a one-key suite: 72 k instructions decoded whole, 80 k indexed).
  static let minimumSize = 2048

  /// What ``lookup(_:)`` found.
  enum Lookup: Equatable {
    case found(PropertyListValue)
    case absent
    /// The query is not ASCII: only the whole decode can answer it.
    case unknown
  }

  /// Whether `data` starts with "bplist", the binary format's magic, looked at in place: a
  /// `starts(with:)` of `Data` over a string's UTF-8 walks two generic iterators (~4 K
  /// instructions at a process's first open, and two more symbols to bind).
  static func isBinary(_ data: Data) -> Bool {
    let text: StaticString = "bplist"
    return data.withUnsafeBytes { raw in
      text.withUTF8Buffer { magic in
        guard raw.count >= magic.count else { return false }
        for index in magic.indices where raw[index] != magic[index] { return false }
        return true
      }
    }
  }

  /// Indexes `data`, or `nil` when this form cannot hold it exactly (not a binary property
  /// list, a top object that is not a dictionary, a key that is not an ASCII string, 2^31
  /// entries or more) or when anything in it is malformed: the caller then decodes the whole
  /// file, which says what is wrong exactly as it always did.
  ///
  /// - Parameter crowdLimit: how many slots a key put in with the seeded hash may look at
  ///   (see ``KeyHash``); tests lower it to take the other path.
  init?(_ data: Data, crowdLimit: Int = KeyHash.crowdLimit) {
    guard Self.isBinary(data) else { return nil }
    let built = data.withUnsafeBytes { raw -> BinaryPropertyListReader.TopIndex? in
      do throws(AppGroupsError) {
        var reader = try BinaryPropertyListReader(raw)
        return try reader.indexTop(crowdLimit: crowdLimit)
      } catch {
        return nil
      }
    }
    guard let built else { return nil }
    self.data = data
    self.count = built.count
    self.slots = built.slots
    self.keyHash = built.keyHash
    self.probeLimit = built.keyHash == .seeded ? crowdLimit : Int.max
  }

  deinit { slots.deallocate() }

  /// Whether the keys are hashed by the standard library's `Hasher` (a key crowded the seeded
  /// hash): for tests.
  var hashesWithHasher: Bool { keyHash == .hasher }

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
    let hash = keyHash.hash(query)
    let tag = hash &>> 32
    var slot = Int(truncatingIfNeeded: hash) & mask
    var probes = 0
    // Linear probing without removals: a key is found within as many slots as it took to
    // put in, which was at most `probeLimit`.
    while probes < probeLimit {
      let found = slots[slot]
      if found == 0 { return nil }
      let entry = Int(truncatingIfNeeded: found & 0xFFFF_FFFF) &- 1
      if found &>> 32 == tag, let bytes = try? reader.keyBytes(at: top.keyStart, index: entry),
        BinaryPropertyListReader.same(bytes, query)
      {
        return entry
      }
      slot = (slot &+ 1) & mask
      probes &+= 1
    }
    return nil
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
          let entry = Int(truncatingIfNeeded: slot & 0xFFFF_FFFF) &- 1
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
          let entry = Int(truncatingIfNeeded: slot & 0xFFFF_FFFF) &- 1
          guard let bytes = try? b.keyBytes(at: bTop.keyStart, index: entry) else { continue }
          if find(bytes, a, aTop) == nil { keys.append(String(decoding: bytes, as: UTF8.self)) }
        }
        return keys
      }
    }
  }

  /// How the index hashes a key's bytes. Either way the hash is seeded at random per process,
  /// so that a group member that writes the file cannot choose keys that collide and make
  /// every other member's open quadratic (as `Dictionary`'s table, which the index replaces,
  /// is protected).
  ///
  /// - `seeded`: a multiply-and-shift hash of the key's words under a per-process seed, about
  ///   a tenth of `Hasher`'s cost for a short key (a cold open hashes every key of the file).
  ///   It makes no promise against chosen keys, so the table it fills is checked as it is
  ///   filled: a key that looks at more than ``crowdLimit`` slots to find its place (random
  ///   keys at this load look at one or two, rarely a few dozen) and the table is filled
  ///   again with `hasher`. A lookup then looks at no more than that many slots either: the
  ///   cost of a file of chosen keys is bounded, whatever its author knows of the hash.
  /// - `hasher`: the standard library's `Hasher` (SipHash-1-3), whose seed a file's author
  ///   cannot learn.
  enum KeyHash: Equatable {
    case seeded
    case hasher

    /// How many slots a key put in with the seeded hash may look at.
    static let crowdLimit = 96

    /// The seeded hash's seed: random per process, from the system's generator (`getrandom(2)`),
    /// as the library's other seeds are; not made with a `Hasher`, whose three calls into the
    /// standard library were each a lazy binding at a new process's first open.
    static let seed = UInt64.random(in: .min ... .max)

    @inline(__always)
    func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
      switch self {
      case .seeded: return Self.seeded(bytes, seed: Self.seed).hash
      case .hasher:
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        return UInt64(truncatingIfNeeded: hasher.finalize())
      }
    }

    /// Eight bytes at a time; the last one to seven are read without going past the key
    /// (two overlapping loads of four, or three single bytes), and the length is mixed in,
    /// so that every byte of every key counts and no two lengths share a hash by padding.
    /// - Returns: the hash, and the OR of every load (each byte of the key is in one), whose
    ///   high bits say whether the key is ASCII.
    @inline(__always)
    static func seeded(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> (hash: UInt64, bits: UInt64) {
      let count = bytes.count
      var h = seed ^ (UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15)
      // An empty key hashes alike whether its buffer has an address or not.
      guard let base = bytes.baseAddress, count > 0 else { return (finish(h &* 0x94D0_49BB_1331_11EB), 0) }
      var bits: UInt64 = 0
      var i = 0
      while count &- i >= 8 {
        let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
        bits |= word
        h = (h ^ word) &* 0xBF58_476D_1CE4_E5B9
        h ^= h &>> 31
        i &+= 8
      }
      let rest = count &- i
      var tail: UInt64 = 0
      if rest >= 4 {
        let low = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt32.self))
        let high = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self))
        tail = UInt64(low) | UInt64(high) &<< 32
      } else if rest > 0 {
        let first = UInt64(base.load(fromByteOffset: i, as: UInt8.self))
        let middle = UInt64(base.load(fromByteOffset: i &+ rest &>> 1, as: UInt8.self))
        let last = UInt64(base.load(fromByteOffset: count &- 1, as: UInt8.self))
        tail = first | middle &<< 8 | last &<< 16
      }
      bits |= tail
      h = (h ^ tail) &* 0x94D0_49BB_1331_11EB
      return (finish(h), bits)
    }

    @inline(__always)
    private static func finish(_ value: UInt64) -> UInt64 {
      var h = value
      h ^= h &>> 29
      h = h &* 0xBF58_476D_1CE4_E5B9
      h ^= h &>> 32
      return h
    }
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
  @inline(__always)
  func keyBytes(at keyStart: Int, index: Int) throws(AppGroupsError) -> UnsafeRawBufferPointer? {
    try keyBytes(of: try reference(from: topObject, at: keyStart, index: index))
  }

  /// The bytes of key object `keyRef`, checked as ``key(in:at:index:)`` checks them; `nil`
  /// for a UTF-16 key (not indexed).
  @inline(__always)
  func keyBytes(of keyRef: Int) throws(AppGroupsError) -> UnsafeRawBufferPointer? {
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

  /// Checks object `object` as ``begin(object:depth:)`` would decode it, when it is not a
  /// container, without making its value (no `String`, no `Data`): the same budget spent,
  /// the same ranges and markers refused. - Returns: `false` for an array or a dictionary,
  /// which is left to the decode (nothing spent).
  @inline(__always)
  mutating func checkScalar(_ object: Int) throws(AppGroupsError) -> Bool {
    let offset = try offset(of: object)
    let marker = byte(at: offset)
    let kind = marker &>> 4
    if kind == 0xA || kind == 0xD { return false }
    try spend(object)
    switch kind {
    case 0x0:
      guard marker == 0x08 || marker == 0x09 else {
        throw BinaryPropertyList.corrupt("object \(object) is null or has an unknown marker")
      }
    case 0x1:
      _ = try integer(object: object, at: offset)
    case 0x2:
      let width = marker & 0x0F == 2 ? 4 : marker & 0x0F == 3 ? 8 : 0
      guard width > 0 else { throw BinaryPropertyList.corrupt("object \(object) is a real of another width") }
      try checkRange(object: object, start: offset &+ 1, count: width, what: "real")
    case 0x3:
      guard marker == 0x33 else { throw BinaryPropertyList.corrupt("object \(object) has an unknown marker") }
      try checkRange(object: object, start: offset &+ 1, count: 8, what: "date")
      guard !Double(bitPattern: BinaryPropertyListReader.bigEndian(base, at: offset &+ 1, width: 8)).isNaN else {
        throw BinaryPropertyList.corrupt("object \(object) is a date that is not a number (NaN)")
      }
    case 0x4:
      let (count, start) = try header(object: object, at: offset)
      try checkRange(object: object, start: start, count: count, what: "data")
    case 0x5:
      let (count, start) = try header(object: object, at: offset)
      try checkRange(object: object, start: start, count: count, what: "ASCII string")
      guard BinaryPropertyList.isASCII(UnsafeRawBufferPointer(start: base.advanced(by: start), count: count)) else {
        throw BinaryPropertyList.corrupt("object \(object) is an ASCII string with a byte of 0x80 or more")
      }
    case 0x6:
      let (count, start) = try header(object: object, at: offset)
      try checkRange(object: object, start: start, count: count &* 2, what: "UTF-16 string")
      if let unit = BinaryPropertyList.unpairedSurrogate(in: base.advanced(by: start), count: count) {
        throw BinaryPropertyList.unpairedSurrogateError(object: object, unit: unit)
      }
    default:
      throw BinaryPropertyList.corrupt("object \(object) is not a property-list value here")
    }
    return true
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
}

/// A key of the effective-value cache, hashed without SipHash.
///
/// A cached read is a hash and one slot's look (``CachedScalars``), or one lock and one
/// table probe, and hashing the key with `String`'s SipHash cost more than everything else in it
/// (callgrind: about 270 of 460 instructions for an 11-byte key). This key
/// hashes the UTF-8 bytes a word at a time, mixed with the cache's random
/// seed and the dictionary's own seed.
///
/// Equality is byte equality of the UTF-8, not `String`'s canonical
/// equivalence, so that it agrees with the hash. Two spellings of one key
/// (`"K"` and U+212A KELVIN SIGN, `"é"` composed and decomposed) are then
/// separate cache entries that each resolve, through the layers' `String`
/// dictionaries, to the same value. Two ASCII spellings are equal only when
/// their bytes are, so a change clears only its own entry when every key
/// involved is ASCII, and the whole cache otherwise (`SuiteView.layerChanged`).
struct CacheKey: Hashable, Sendable {
  let string: String
  /// The key's hash before the dictionary's seed is mixed in.
  let bits: UInt64
  let isASCII: Bool

  /// - Parameter seed: the cache's random seed; keys compared with each
  ///   other must have the same.
  init(_ string: String, seed: UInt64) {
    self.string = string
    let probe = Self.probe(of: string, seed: seed)
    (bits, isASCII) = (probe.bits, probe.isASCII)
  }

  /// A key whose hash ``probe(of:seed:)`` has already given.
  init(_ string: String, bits: UInt64, isASCII: Bool) {
    self.string = string
    self.bits = bits
    self.isASCII = isASCII
  }

  /// What a cached read needs of its key, in one pass over its bytes, without making the key
  /// (which would keep a copy of the string: a retain and a release on every cached read):
  /// the key's hash and ASCII-ness, and its bytes as words for ``CachedScalars``.
  struct Probe {
    let bits: UInt64
    let isASCII: Bool
    /// The key's UTF-8 length.
    let count: Int
    /// The key's bytes, little-endian, zero past its end, when it has at most
    /// ``CachedScalars/keyBytes`` of them (``fitsWords``); the first ones otherwise.
    let words: (UInt64, UInt64, UInt64)

    /// Whether ``words`` hold the whole key: two keys that fit are the same key exactly when
    /// their counts and words are equal.
    var fitsWords: Bool { count <= CachedScalars.keyBytes }
  }

  /// `string`'s ``Probe``.
  @inline(__always)
  static func probe(of string: String, seed: UInt64) -> Probe {
    string.utf8.withContiguousStorageIfAvailable { probe($0, seed: seed) }
      ?? Array(string.utf8).withUnsafeBufferPointer { probe($0, seed: seed) }
  }

  /// Whether this key is `string`'s, given `string`'s hash: as `==`, without a second key.
  @inline(__always)
  func matches(_ string: String, bits: UInt64, isASCII: Bool) -> Bool {
    guard self.bits == bits, self.isASCII == isASCII else { return false }
    // For ASCII, String's equality is byte equality (and has fast paths).
    if isASCII { return self.string == string }
    return self.string.utf8.elementsEqual(string.utf8)
  }

  @inline(__always)
  private static func probe(_ bytes: UnsafeBufferPointer<UInt8>, seed: UInt64) -> Probe {
    let raw = UnsafeRawBufferPointer(bytes)
    let count = raw.count
    var h = seed ^ (UInt64(count) &* 0x9E37_79B9_7F4A_7C15)
    var highBits: UInt64 = 0
    // Each word hashed is the key's bytes at its offset, zero past the end: the first three
    // are the key's words.
    var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
    @inline(__always) func keep(_ word: UInt64, at offset: Int) {
      switch offset {
      case 0: words.0 = word
      case 8: words.1 = word
      case 16: words.2 = word
      default: break
      }
    }
    var offset = 0
    while offset + 8 <= count {
      let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
      keep(word, at: offset)
      highBits |= word
      h = (h ^ word) &* 0xBF58_476D_1CE4_E5B9
      h ^= h >> 29
      offset += 8
    }
    let rest = count - offset
    if rest > 0 {
      var word: UInt64 = 0
      if count >= 8 {
        // The last `rest` bytes: one load ending at the end, shifted down.
        word = raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self) >> UInt64(64 - 8 * rest)
      } else {
        for i in 0..<rest { word |= UInt64(raw[i]) << UInt64(8 * i) }
      }
      keep(word, at: offset)
      highBits |= word
      h = (h ^ word) &* 0xBF58_476D_1CE4_E5B9
      h ^= h >> 29
    }
    return Probe(bits: h, isASCII: highBits & 0x8080_8080_8080_8080 == 0, count: count, words: words)
  }

  static func == (a: CacheKey, b: CacheKey) -> Bool {
    a.matches(b.string, bits: b.bits, isASCII: b.isASCII)
  }

  func hash(into hasher: inout Hasher) { hasher.combine(bits) }

  /// What `Dictionary` calls: the bits, the seed, and a finalising mix
  /// (splitmix64's), without running a `Hasher`.
  func _rawHashValue(seed: Int) -> Int {
    var z = bits ^ UInt64(bitPattern: Int64(seed))
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return Int(bitPattern: UInt(z ^ (z >> 31)))
  }
}

/// The effective-value cache's table: open addressing with linear probing on
/// ``CacheKey``'s bits.
///
/// Not a `Dictionary`: the first `Dictionary` keyed by a type costs a new
/// process a search of every protocol conformance it has loaded (the
/// runtime checks the key's `Hashable` when it makes the storage's type, and
/// that search was a tenth of opening a suite and reading it once), and a
/// probe here needs no second mix of the hash.
struct CacheTable<Value: Sendable>: Sendable {
  private struct Slot: Sendable {
    let key: CacheKey
    let value: Value
  }

  /// The slots, a power of two of them, or none; never more than three quarters full. In the
  /// memory of a class that is not generic, shared by copies until one changes: an array of
  /// them (`[Slot?]`) is a generic type whose first instantiation, through the runtime's
  /// demangler, cost a new process 28 k of the 34 k instructions of its first read of a suite
  /// (callgrind).
  private var storage: CacheSlots?
  /// How many slots hold an entry.
  private(set) var count = 0

  private var capacity: Int { storage?.capacity ?? 0 }

  /// The slots' memory: call with `storage` set.
  private var slots: UnsafeMutablePointer<Slot?> {
    storage.unsafelyUnwrapped.memory.assumingMemoryBound(to: Slot?.self)
  }

  @inline(__always)
  private func home(of bits: UInt64) -> Int {
    // The key's bits mixed once more: their high half decides the slot.
    Int(truncatingIfNeeded: (bits &* 0x9E37_79B9_7F4A_7C15) >> 32) & (capacity &- 1)
  }

  @inline(__always)
  private func home(of key: CacheKey) -> Int { home(of: key.bits) }

  /// The value cached for `key`, if any.
  subscript(key: CacheKey) -> Value? {
    self[key.string, bits: key.bits, isASCII: key.isASCII]
  }

  /// The value cached for `string`, whose hash is `bits` and `isASCII`
  /// (``CacheKey/probe(of:seed:)``), if any: a read makes no key.
  subscript(string: String, bits bits: UInt64, isASCII isASCII: Bool) -> Value? {
    guard count > 0 else { return nil }
    let slots = self.slots
    let mask = capacity &- 1
    var index = home(of: bits)
    while let slot = slots[index] {
      if slot.key.matches(string, bits: bits, isASCII: isASCII) { return slot.value }
      index = (index &+ 1) & mask
    }
    return nil
  }

  /// Caches `value` for `key`, replacing what was cached for it.
  mutating func set(_ value: Value, for key: CacheKey) {
    if (count + 1) * 4 > capacity * 3 { grow() } else { makeUnique() }
    let slots = self.slots
    let mask = capacity &- 1
    var index = home(of: key)
    while let slot = slots[index] {
      if slot.key == key {
        slots[index] = Slot(key: key, value: value)
        return
      }
      index = (index &+ 1) & mask
    }
    slots[index] = Slot(key: key, value: value)
    count += 1
  }

  /// Forgets what was cached for `key`.
  mutating func remove(_ key: CacheKey) {
    guard count > 0 else { return }
    makeUnique()
    let slots = self.slots
    let mask = capacity &- 1
    var hole = home(of: key)
    while true {
      guard let slot = slots[hole] else { return }
      if slot.key == key { break }
      hole = (hole &+ 1) & mask
    }
    slots[hole] = nil
    count -= 1
    // Close the gap: move back each later entry of the run that may sit in
    // the hole (its home is not strictly between the hole and where it is).
    var index = (hole &+ 1) & mask
    while let slot = slots[index] {
      if (index &- home(of: slot.key)) & mask >= (index &- hole) & mask {
        slots[hole] = slot
        slots[index] = nil
        hole = index
      }
      index = (index &+ 1) & mask
    }
  }

  /// Forgets everything, keeping the room.
  mutating func removeAll() {
    guard count > 0 else { return }
    makeUnique()
    let slots = self.slots
    for index in 0..<capacity { slots[index] = nil }
    count = 0
  }

  private mutating func grow() {
    let old = storage
    let oldCapacity = capacity
    let newCapacity = Swift.max(16, oldCapacity * 2)
    storage = CacheSlots(capacity: newCapacity) { (slots: UnsafeMutablePointer<Slot?>) in
      slots.initialize(repeating: nil, count: newCapacity)
    }
    count = 0
    guard let old else { return }
    let slots = old.memory.assumingMemoryBound(to: Slot?.self)
    for index in 0..<oldCapacity {
      if let slot = slots[index] { set(slot.value, for: slot.key) }
    }
  }

  /// Gives these slots memory of their own, when a copy of the table shares it.
  private mutating func makeUnique() {
    guard storage != nil, !isKnownUniquelyReferenced(&storage) else { return }
    let old = slots
    storage = CacheSlots(capacity: capacity) { (slots: UnsafeMutablePointer<Slot?>) in
      slots.initialize(from: old, count: capacity)
    }
  }
}

/// The memory of a ``CacheTable``'s slots, of the table's element type, initialized when made
/// and deinitialized when freed. Changed only by a table that holds the one reference to it.
private final class CacheSlots: @unchecked Sendable {
  let memory: UnsafeMutableRawPointer
  let capacity: Int
  /// Deinitializes the `capacity` elements and frees the memory.
  private let free: (UnsafeMutableRawPointer, Int) -> Void

  init<Element>(capacity: Int, initialize: (UnsafeMutablePointer<Element>) -> Void) {
    let elements = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
    initialize(elements)
    memory = UnsafeMutableRawPointer(elements)
    self.capacity = capacity
    free = { memory, capacity in
      let elements = memory.assumingMemoryBound(to: Element.self)
      elements.deinitialize(count: capacity)
      elements.deallocate()
    }
  }

  deinit { free(memory, capacity) }
}

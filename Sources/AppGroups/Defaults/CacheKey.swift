/// A key of the effective-value cache, hashed without SipHash.
///
/// A cached read is one lock and one dictionary probe, and hashing the
/// key with `String`'s SipHash cost more than everything else in it
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
    let hashed =
      string.utf8.withContiguousStorageIfAvailable { Self.hash($0, seed: seed) }
      ?? Array(string.utf8).withUnsafeBufferPointer { Self.hash($0, seed: seed) }
    (bits, isASCII) = hashed
  }

  @inline(__always)
  private static func hash(_ bytes: UnsafeBufferPointer<UInt8>, seed: UInt64) -> (UInt64, Bool) {
    let raw = UnsafeRawBufferPointer(bytes)
    let count = raw.count
    var h = seed ^ (UInt64(count) &* 0x9E37_79B9_7F4A_7C15)
    var highBits: UInt64 = 0
    var offset = 0
    while offset + 8 <= count {
      let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
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
      highBits |= word
      h = (h ^ word) &* 0xBF58_476D_1CE4_E5B9
      h ^= h >> 29
    }
    return (h, highBits & 0x8080_8080_8080_8080 == 0)
  }

  static func == (a: CacheKey, b: CacheKey) -> Bool {
    guard a.bits == b.bits, a.isASCII == b.isASCII else { return false }
    // For ASCII, String's equality is byte equality (and has fast paths).
    if a.isASCII { return a.string == b.string }
    return a.string.utf8.elementsEqual(b.string.utf8)
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

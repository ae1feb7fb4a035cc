// The index's fill: the top dictionary's entries checked and its keys put in the table in
// one pass (see ``BinaryPropertyListIndex``). A cold open does this for every key of the
// file, so the common entry (an ASCII key, a scalar value of a usual width) is checked here
// with the reader's fields in locals; anything else goes through the reader's own checks.

extension BinaryPropertyListReader {
  /// The top dictionary's index: see ``BinaryPropertyListIndex``.
  struct TopIndex {
    var count: Int
    /// Allocated here, owned by the caller from now on.
    var slots: UnsafeMutableBufferPointer<UInt64>
    var keyHash: BinaryPropertyListIndex.KeyHash
  }

  /// Checks the whole file as ``decodeTop()`` does (the same objects, the same budget, the
  /// same cycle and depth checks) and indexes the top dictionary's keys; `nil` when a key is
  /// not ASCII or there are too many, or when anything is malformed (the caller then decodes
  /// the whole file, which says what is wrong). A scalar value is checked in place; a
  /// container is decoded and dropped.
  mutating func indexTop(crowdLimit: Int) throws(AppGroupsError) -> TopIndex? {
    try spend(topObject)
    let top = try topReferences()
    guard top.count < Int(Int32.max), BinaryPropertyList.maximumDepth > 0 else { return nil }
    var capacity = 8
    while capacity < top.count &* 2 { capacity &<<= 1 }
    // Not an array: `[UInt64]`'s storage would be one more generic type a new process
    // instantiates when it opens its first suite.
    let slots = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: capacity)
    slots.initialize(repeating: 0)
    // The widths the writer chooses (1, 2 or 4 bytes, by the object count and the file's
    // size), each with a loop of its own, without a switch on the width at every read.
    let filled =
      switch (refWidth, offsetWidth) {
      case (1, 1): fill(slots, top, crowdLimit, FixedWidth<UInt8>(), FixedWidth<UInt8>())
      case (1, 2): fill(slots, top, crowdLimit, FixedWidth<UInt8>(), FixedWidth<UInt16>())
      case (2, 2): fill(slots, top, crowdLimit, FixedWidth<UInt16>(), FixedWidth<UInt16>())
      case (2, 4): fill(slots, top, crowdLimit, FixedWidth<UInt16>(), FixedWidth<UInt32>())
      case (4, 4): fill(slots, top, crowdLimit, FixedWidth<UInt32>(), FixedWidth<UInt32>())
      default: fill(slots, top, crowdLimit, AnyWidth(width: refWidth), AnyWidth(width: offsetWidth))
      }
    guard let (distinct, keyHash) = filled else {
      slots.deallocate()
      return nil
    }
    return TopIndex(count: distinct, slots: slots, keyHash: keyHash)
  }

  /// Checks every entry of the top dictionary and puts its key in `slots` (zeroed, a power
  /// of two at least twice the entries). Every check is ``keyBytes(of:)``'s and
  /// ``checkScalar(_:)``'s (or the decode's, for a container), spending the same budget:
  /// only the outcome is simpler, `nil` for whatever they would refuse. (A check may come
  /// earlier or later than theirs, the budget's among them: any refusal refuses the whole.)
  /// `references` and `offsets` read the file's references and offsets, of its widths.
  /// - Returns: how many distinct keys, and how they are hashed.
  private mutating func fill<References: BigEndianWidth, Offsets: BigEndianWidth>(
    _ slots: UnsafeMutableBufferPointer<UInt64>, _ top: Top, _ crowdLimit: Int,
    _ references: References, _ offsets: Offsets
  ) -> (Int, BinaryPropertyListIndex.KeyHash)? {
    let base = self.base
    let end = tableOffset
    let refWidth = references.width
    let offsetWidth = offsets.width
    let objects = UInt64(objectCount)
    let seed = BinaryPropertyListIndex.KeyHash.seed
    let mask = slots.count &- 1
    var keyHash = BinaryPropertyListIndex.KeyHash.seeded
    var distinct = 0
    // Spent here, kept in `self.budget` around the reader's own checks.
    var budget = self.budget
    defer { self.budget = budget }
    // The top dictionary is open (a cycle through it is refused) from the first container on:
    // a scalar refers to nothing.
    var topOpen = false
    defer { if topOpen { open[topObject] = false } }

    /// Where object `ref` starts (``offset(of:)``'s check), or `nil`: `ref` is below the
    /// object count, so its offset lies in the table.
    @inline(__always)
    func start(of ref: UInt64) -> Int? {
      let offset = offsets.read(base, at: end &+ Int(truncatingIfNeeded: ref) &* offsetWidth)
      guard offset >= 8, offset < UInt64(end) else { return nil }
      return Int(truncatingIfNeeded: offset)
    }

    var keyAt = top.keyStart
    var valueAt = top.valueStart
    var index = 0
    while index < top.count {
      defer {
        index &+= 1
        keyAt &+= refWidth
        valueAt &+= refWidth
      }
      // The key (``keyBytes(of:)``): a reference, an ASCII string object within the objects.
      let keyRef = references.read(base, at: keyAt)
      budget &-= 1
      guard keyRef < objects, let keyOffset = start(of: keyRef) else { return nil }
      let keyMarker = base.load(fromByteOffset: keyOffset, as: UInt8.self)
      // A UTF-16 key is not indexed; any other kind is refused by the decode.
      guard keyMarker &>> 4 == 0x5 else { return nil }
      var length = Int(keyMarker & 0x0F)
      var from = keyOffset &+ 1
      if length == 0x0F {
        guard let (count, contents) = try? header(object: Int(keyRef), at: keyOffset) else { return nil }
        length = count
        from = contents
      }
      guard from <= end, length <= end &- from else { return nil }
      let bytes = UnsafeRawBufferPointer(start: base.advanced(by: from), count: length)
      let hash: UInt64
      if keyHash == .seeded {
        let (seeded, bits) = BinaryPropertyListIndex.KeyHash.seeded(bytes, seed: seed)
        guard bits & 0x8080_8080_8080_8080 == 0 else { return nil }
        hash = seeded
      } else {
        guard BinaryPropertyList.isASCII(bytes) else { return nil }
        hash = keyHash.hash(bytes)
      }

      // Its place: the first free slot from the hash's. An equal key there is a key given
      // twice, which the full decode refuses (and a salvage leaves out): declined.
      let tag = hash & 0xFFFF_FFFF_0000_0000
      var slot = Int(truncatingIfNeeded: hash) & mask
      var probes = 1
      while true {
        let found = slots[slot]
        if found == 0 {
          slots[slot] = tag | UInt64(truncatingIfNeeded: index &+ 1)
          distinct &+= 1
          break
        }
        if found & 0xFFFF_FFFF_0000_0000 == tag,
          let other = try? keyBytes(at: top.keyStart, index: Int(truncatingIfNeeded: found & 0xFFFF_FFFF) &- 1),
          Self.same(other, bytes)
        {
          return nil
        }
        slot = (slot &+ 1) & mask
        probes &+= 1
      }
      if probes > crowdLimit, keyHash == .seeded {
        // Keys that crowd the seeded hash: the entries so far go to a table hashed by `Hasher`.
        keyHash = .hasher
        guard refill(slots, entries: index &+ 1, keyStart: top.keyStart) else { return nil }
      }

      // The value (``checkScalar(_:)``): the usual scalars here, the rest by the reader.
      let valueRef = references.read(base, at: valueAt)
      guard valueRef < objects, let valueOffset = start(of: valueRef) else { return nil }
      let marker = base.load(fromByteOffset: valueOffset, as: UInt8.self)
      var width = -1
      switch marker &>> 4 {
      case 0x0:
        guard marker == 0x08 || marker == 0x09 else { return nil }
        width = 0
      case 0x1:
        // 1, 2, 4 or 8 bytes; 16 (and the refused widths) below.
        if marker & 0x0F <= 3 { width = 1 &<< Int(marker & 0x0F) }
      case 0x2:
        if marker == 0x22 { width = 4 } else if marker == 0x23 { width = 8 }
      case 0x4, 0x5:
        let count = Int(marker & 0x0F)
        if count != 0x0F {
          guard count <= end &- (valueOffset &+ 1) else { return nil }
          if marker &>> 4 == 0x5,
            !BinaryPropertyList.isASCII(UnsafeRawBufferPointer(start: base.advanced(by: valueOffset &+ 1), count: count))
          {
            return nil
          }
          width = 0
        }
      default:
        break
      }
      if width >= 0 {
        // valueOffset < end: the one marker byte is in the objects; `width` more must be.
        guard width <= end &- (valueOffset &+ 1) else { return nil }
        budget &-= 1
        continue
      }
      // The reader's own checks spend from its own budget.
      guard budget >= 0 else { return nil }
      self.budget = budget
      defer { budget = self.budget }
      guard let scalar = try? checkScalar(Int(valueRef)) else { return nil }
      if scalar { continue }
      if !topOpen {
        if open.isEmpty { allocateOpen() }
        open[topObject] = true
        topOpen = true
      }
      // A key given twice in a dictionary in it: refused by the full decode as well.
      guard (try? decode(object: Int(valueRef), depth: 1)) != nil, repeated == nil else { return nil }
    }
    guard budget >= 0 else { return nil }
    return (distinct, keyHash)
  }

  /// Fills `slots` again with the first `entries` entries' keys, hashed by `Hasher` (their
  /// keys were checked when first put in). - Returns: `false` if a key cannot be read.
  private func refill(_ slots: UnsafeMutableBufferPointer<UInt64>, entries: Int, keyStart: Int) -> Bool {
    let mask = slots.count &- 1
    for slot in slots.indices { slots[slot] = 0 }
    for index in 0..<entries {
      guard let bytes = try? keyBytes(at: keyStart, index: index) else { return false }
      let hash = BinaryPropertyListIndex.KeyHash.hasher.hash(bytes)
      let tag = hash & 0xFFFF_FFFF_0000_0000
      var slot = Int(truncatingIfNeeded: hash) & mask
      while true {
        let found = slots[slot]
        if found == 0 {
          slots[slot] = tag | UInt64(truncatingIfNeeded: index &+ 1)
          break
        }
        if found & 0xFFFF_FFFF_0000_0000 == tag,
          let other = try? keyBytes(at: keyStart, index: Int(truncatingIfNeeded: found & 0xFFFF_FFFF) &- 1),
          Self.same(other, bytes)
        {
          break
        }
        slot = (slot &+ 1) & mask
      }
    }
    return true
  }
}

/// How the index's fill reads a reference or an offset: big-endian, of one width.
private protocol BigEndianWidth {
  var width: Int { get }
  /// The unsigned integer at `offset`, which the caller has checked is in the file.
  func read(_ base: UnsafeRawPointer, at offset: Int) -> UInt64
}

/// A width known when the fill is compiled: one load and a byte swap.
private struct FixedWidth<Word: FixedWidthInteger & UnsignedInteger>: BigEndianWidth {
  var width: Int { MemoryLayout<Word>.size }

  @inline(__always)
  func read(_ base: UnsafeRawPointer, at offset: Int) -> UInt64 {
    UInt64(Word(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: Word.self)))
  }
}

/// Any width from 1 to 8, as the file's trailer gives it.
private struct AnyWidth: BigEndianWidth {
  let width: Int

  @inline(__always)
  func read(_ base: UnsafeRawPointer, at offset: Int) -> UInt64 {
    BinaryPropertyListReader.bigEndian(base, at: offset, width: width)
  }
}

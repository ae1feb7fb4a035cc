internal import Synchronization

/// The scalar entries of a view's effective-value cache (a number, a Boolean, or no value), of
/// keys up to ``keyBytes`` bytes long, readable without the cache's lock.
///
/// A cached read under the lock costs two atomic read-modify-write instructions (the lock
/// taken and let go), about 20 cycles each on this project's hosts: more than the rest of the
/// read. Here a read is plain loads under a sequence lock: the lock's holder makes the
/// sequence odd, changes slots and makes it even again; a reader reads the sequence, the
/// slot, and the sequence again, and takes the locked way when it moved or was odd. Every
/// word is an atomic (relaxed, ordered by fences), so nothing races.
///
/// A copy, never the only holder: every entry here is also in the cache's table, put and
/// forgotten with it under the cache's lock, so a read answers what a read under the lock
/// would have answered at the instant of its first look at the sequence. One slot per hash
/// (no probing, so a read is bounded): a key whose slot another holds is read under the lock.
///
/// Slots are allocated with the first entry (a process that reads nothing twice pays nothing)
/// and freed only when this goes: a reader may look at them at any moment before.
struct CachedScalars: ~Copyable, Sendable {
  /// The longest key (UTF-8 bytes) held: three words.
  static let keyBytes = 24
  private static let slotCount = 64
  /// A slot's words: the description (``describe(kind:domain:count:)``, 0 when empty), the
  /// key's three words, the value's bits.
  private static let slotWords = 5

  /// Odd while the cache's lock holder changes slots.
  private let sequence = Atomic<UInt64>(0)
  /// The slots' address; 0 until the first entry.
  private let address = Atomic<UInt>(0)

  init() {}

  deinit {
    guard let slots = UnsafeMutablePointer<Atomic<UInt64>>(bitPattern: address.load(ordering: .acquiring))
    else { return }
    slots.deinitialize(count: Self.slotCount * Self.slotWords)
    slots.deallocate()
  }

  // MARK: Reading, without the lock

  /// The entry held for the key `probe` describes, if any: without a lock, and without a
  /// write to memory another thread reads.
  @inline(__always)
  func entry(_ probe: CacheKey.Probe) -> SuiteView.Entry? {
    guard probe.fitsWords,
      let slots = UnsafeMutablePointer<Atomic<UInt64>>(bitPattern: address.load(ordering: .acquiring))
    else { return nil }
    let before = sequence.load(ordering: .acquiring)
    guard before & 1 == 0 else { return nil }
    let slot = slots + Self.home(of: probe.bits) * Self.slotWords
    let description = slot[0].load(ordering: .relaxed)
    let key0 = slot[1].load(ordering: .relaxed)
    let key1 = slot[2].load(ordering: .relaxed)
    let key2 = slot[3].load(ordering: .relaxed)
    let bits = slot[4].load(ordering: .relaxed)
    // The loads above before the sequence's second look (a seqlock's reader).
    atomicMemoryFence(ordering: .acquiring)
    guard sequence.load(ordering: .relaxed) == before, description != 0,
      Int(truncatingIfNeeded: description & 0xFF) == probe.count,
      key0 == probe.words.0, key1 == probe.words.1, key2 == probe.words.2
    else { return nil }
    return Self.entry(description: description, bits: bits)
  }

  // MARK: Changing, holding the cache's lock

  /// Holds `entry` for the key `probe` describes when it is a scalar and the key fits, in
  /// place of whatever its slot held; else forgets what is held for the key.
  func set(_ entry: SuiteView.Entry, for probe: CacheKey.Probe) {
    guard probe.fitsWords else { return }
    guard let (description, bits) = Self.describe(entry, count: probe.count) else {
      remove(probe)
      return
    }
    let slot = slots() + Self.home(of: probe.bits) * Self.slotWords
    changing {
      slot[0].store(description, ordering: .relaxed)
      slot[1].store(probe.words.0, ordering: .relaxed)
      slot[2].store(probe.words.1, ordering: .relaxed)
      slot[3].store(probe.words.2, ordering: .relaxed)
      slot[4].store(bits, ordering: .relaxed)
    }
  }

  /// Forgets what is held for the key `probe` describes.
  func remove(_ probe: CacheKey.Probe) {
    guard probe.fitsWords,
      let slots = UnsafeMutablePointer<Atomic<UInt64>>(bitPattern: address.load(ordering: .relaxed))
    else { return }
    let slot = slots + Self.home(of: probe.bits) * Self.slotWords
    let description = slot[0].load(ordering: .relaxed)
    guard description != 0, Int(truncatingIfNeeded: description & 0xFF) == probe.count,
      slot[1].load(ordering: .relaxed) == probe.words.0, slot[2].load(ordering: .relaxed) == probe.words.1,
      slot[3].load(ordering: .relaxed) == probe.words.2
    else { return }
    changing { slot[0].store(0, ordering: .relaxed) }
  }

  /// Forgets everything.
  func removeAll() {
    guard let slots = UnsafeMutablePointer<Atomic<UInt64>>(bitPattern: address.load(ordering: .relaxed))
    else { return }
    changing {
      for index in 0..<Self.slotCount { slots[index * Self.slotWords].store(0, ordering: .relaxed) }
    }
  }

  /// Runs `body`, which changes slots, with the sequence odd (a seqlock's writer; the cache's
  /// lock makes this the only one).
  private func changing(_ body: () -> Void) {
    let even = sequence.load(ordering: .relaxed)
    sequence.store(even &+ 1, ordering: .relaxed)
    // The odd sequence before the slots' stores.
    atomicMemoryFence(ordering: .releasing)
    body()
    sequence.store(even &+ 2, ordering: .releasing)
  }

  /// The slots, allocated (empty) on first use.
  private func slots() -> UnsafeMutablePointer<Atomic<UInt64>> {
    if let slots = UnsafeMutablePointer<Atomic<UInt64>>(bitPattern: address.load(ordering: .relaxed)) {
      return slots
    }
    let count = Self.slotCount * Self.slotWords
    let slots = UnsafeMutablePointer<Atomic<UInt64>>.allocate(capacity: count)
    for index in 0..<count { (slots + index).initialize(to: Atomic(0)) }
    address.store(UInt(bitPattern: slots), ordering: .releasing)
    return slots
  }

  /// The slot of a key whose hash is `bits`.
  @inline(__always)
  static func home(of bits: UInt64) -> Int {
    // The bits' high half (as the table's), mixed once more.
    Int(truncatingIfNeeded: (bits &* 0x9E37_79B9_7F4A_7C15) >> 32) & (slotCount &- 1)
  }

  // MARK: Entries as words

  /// A slot's description of a scalar entry of a key of `count` bytes, and its value's bits;
  /// `nil` for an entry that is not a scalar. Description: bit 63 set (never 0), the kind in
  /// bits 8 to 15, the domain in bits 16 to 23, `count` in bits 0 to 7.
  private static func describe(_ entry: SuiteView.Entry, count: Int) -> (UInt64, UInt64)? {
    let kind: UInt64
    let bits: UInt64
    let domain: UInt64
    switch entry {
    case .absent: return (describe(kind: 0, domain: 0, count: count), 0)
    case .found(let value, let found):
      switch value {
      case .integer(let v): (kind, bits) = (1, UInt64(bitPattern: Int64(v)))
      case .unsignedInteger(let v): (kind, bits) = (2, v)
      case .real(let v): (kind, bits) = (3, v.bitPattern)
      case .float(let v): (kind, bits) = (4, UInt64(v.bitPattern))
      case .bool(let v): (kind, bits) = (5, v ? 1 : 0)
      default: return nil
      }
      switch found {
      case .managed: domain = 0
      case .argument: domain = 1
      case .application: domain = 2
      case .global: domain = 3
      case .registration: domain = 4
      }
    }
    return (describe(kind: kind, domain: domain, count: count), bits)
  }

  private static func describe(kind: UInt64, domain: UInt64, count: Int) -> UInt64 {
    1 << 63 | domain << 16 | kind << 8 | UInt64(count)
  }

  /// The entry a slot's description and bits stand for.
  @inline(__always)
  private static func entry(description: UInt64, bits: UInt64) -> SuiteView.Entry {
    let domain: GroupDefaults.Domain
    switch description >> 16 & 0xFF {
    case 0: domain = .managed
    case 1: domain = .argument
    case 2: domain = .application
    case 3: domain = .global
    default: domain = .registration
    }
    switch description >> 8 & 0xFF {
    case 1: return .found(.integer(Int(Int64(bitPattern: bits))), domain)
    case 2: return .found(.unsignedInteger(bits), domain)
    case 3: return .found(.real(Double(bitPattern: bits)), domain)
    case 4: return .found(.float(Float(bitPattern: UInt32(truncatingIfNeeded: bits))), domain)
    case 5: return .found(.bool(bits != 0), domain)
    default: return .absent
    }
  }
}

@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// The effective-value cache keys by UTF-8 bytes (``CacheKey``) while the
/// layers key by `String` (canonical equivalence): reads must never see a
/// stale value through either spelling of a key.
@Suite("Effective-value cache")
struct EffectiveValueCacheTests {
  @Test func canonicallyEquivalentSpellingsNeverReadStale() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    // U+212A KELVIN SIGN is canonically "K"; "é" composed and decomposed.
    for (a, b) in [("K", "\u{212A}"), ("caf\u{E9}", "cafe\u{301}")] {
      #expect(a == b)
      d.set(1, forKey: a)
      #expect(d.integer(forKey: a) == 1)
      #expect(d.integer(forKey: b) == 1)  // both spellings now cached apart
      d.set(2, forKey: b)
      #expect(d.integer(forKey: a) == 2)
      #expect(d.integer(forKey: b) == 2)
      d.set(3, forKey: a)
      #expect(d.integer(forKey: b) == 3)
      #expect(d.integer(forKey: a) == 3)
      d.removeObject(forKey: b)
      #expect(d.object(forKey: a) == nil)
      #expect(d.object(forKey: b) == nil)
    }
  }

  @Test func anASCIIChangeForgetsACachedNonASCIISpelling() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set("old", forKey: "K")
    #expect(d.string(forKey: "\u{212A}") == "old")  // cached under the non-ASCII bytes
    d.set("new", forKey: "K")  // an ASCII change
    #expect(d.string(forKey: "\u{212A}") == "new")
  }

  @Test func keysOfEveryLengthAndByteReadBack() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    var keys: [String] = []
    for length in 1...40 {
      keys.append(String(repeating: "k", count: length))
      keys.append(String(repeating: "k", count: length - 1) + "j")
      keys.append("k" + String(repeating: "\u{E9}", count: length))
      keys.append(String((0..<length).map { Character(UnicodeScalar(UInt8(33 + ($0 * 7 + length) % 90))) }))
    }
    keys = Array(Set(keys))
    for (i, key) in keys.enumerated() { d.set(i, forKey: key) }
    for (i, key) in keys.enumerated() { #expect(d.integer(forKey: key) == i, "\(key.debugDescription)") }
    for (i, key) in keys.enumerated() { d.set(i + 1_000, forKey: key) }
    for (i, key) in keys.enumerated() { #expect(d.integer(forKey: key) == i + 1_000, "\(key.debugDescription)") }
  }

  @Test func cacheKeyEqualityIsByteEquality() {
    let seed: UInt64 = 0x1234_5678_9ABC_DEF0
    #expect(CacheKey("unreadCount", seed: seed) == CacheKey("unread" + "Count", seed: seed))
    #expect(CacheKey("unreadCount", seed: seed) != CacheKey("unreadCounT", seed: seed))
    #expect(CacheKey("K", seed: seed) != CacheKey("\u{212A}", seed: seed))
    #expect(CacheKey("K", seed: seed).isASCII && !CacheKey("\u{212A}", seed: seed).isASCII)
    // A large (heap) string and a small one with the same bytes.
    let long = String(repeating: "x", count: 40)
    #expect(CacheKey(long, seed: seed) == CacheKey(String(long.utf8.map { Character(UnicodeScalar($0)) }), seed: seed))
    // Same length, one byte apart in the tail, hash apart.
    #expect(CacheKey("abcdefghij", seed: seed).bits != CacheKey("abcdefghik", seed: seed).bits)
  }

  @Test func aWholeDomainReplacementIsSeenThroughTheCache() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    for i in 0..<100 { d.set(i, forKey: "key-\(i)") }
    for i in 0..<100 { _ = d.integer(forKey: "key-\(i)") }
    d.setPersistentDomain(Dictionary(uniqueKeysWithValues: (0..<100).map { ("key-\($0)", $0 * 2) }), forName: TestRoot.group)
    for i in 0..<100 { #expect(d.integer(forKey: "key-\(i)") == i * 2) }
  }

  /// The cache's own table (linear probing, entries moved back on removal) against a
  /// `Dictionary`, through random sets, removals and clears: every key reads what the
  /// dictionary holds, including keys whose probe runs cross the end of the table.
  @Test func theCacheTableAgreesWithADictionary() {
    var generator = SeededGenerator(seed: 0x5EED)
    let seed = UInt64.random(in: .min ... .max, using: &generator)
    // Few distinct keys for the table's size: long probe runs and many collisions.
    let keys = (0..<64).map { CacheKey("k\($0)", seed: seed) }
    var table = CacheTable<Int>()
    var reference: [String: Int] = [:]
    for step in 0..<20_000 {
      let key = keys[Int.random(in: 0..<keys.count, using: &generator)]
      switch Int.random(in: 0..<10, using: &generator) {
      case 0..<5:
        table.set(step, for: key)
        reference[key.string] = step
      case 5..<9:
        table.remove(key)
        reference[key.string] = nil
      default:
        if step % 50 == 0 {
          table.removeAll()
          reference.removeAll()
        }
      }
      #expect(table.count == reference.count)
      if step % 97 == 0 {
        for key in keys where table[key] != reference[key.string] {
          Issue.record("step \(step): \(key.string) reads \(String(describing: table[key])), not \(String(describing: reference[key.string]))")
        }
      }
    }
    for key in keys { #expect(table[key] == reference[key.string]) }
  }
}


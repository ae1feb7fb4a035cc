@testable import AppGroups
import Testing

extension EffectiveValueCacheTests {
  /// The cache's table is a value: a copy shares its slots until one of the two changes, and
  /// a change to one (a set, a removal, a clear, a growth) never shows in the other.
  @Test func aCopyOfTheCacheTableKeepsItsEntriesWhateverTheOriginalDoes() {
    let keys = (0..<40).map { CacheKey("k\($0)", seed: 7) }
    var table = CacheTable<Int>()
    for (i, key) in keys.prefix(10).enumerated() { table.set(i, for: key) }
    let copy = table
    table.set(100, for: keys[0])
    table.remove(keys[1])
    var cleared = copy
    cleared.removeAll()
    // Thirty more keys: the table grows, twice.
    for (i, key) in keys.enumerated().dropFirst(10) { table.set(i, for: key) }
    #expect(copy.count == 10 && cleared.count == 0 && table.count == 39)
    for (i, key) in keys.enumerated() {
      #expect(copy[key] == (i < 10 ? i : nil), "\(key.string)")
      #expect(cleared[key] == nil, "\(key.string)")
      #expect(table[key] == (i == 0 ? 100 : i == 1 ? nil : i), "\(key.string)")
    }
  }
}

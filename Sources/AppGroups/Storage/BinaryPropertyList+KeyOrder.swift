internal import Foundation

// The order the writer puts a dictionary's keys in: by their UTF-8 bytes, as Foundation's
// writer does, so that the same dictionary is always written to the same bytes.

/// A dictionary key being sorted: the first 8 bytes of its UTF-8 as a
/// big-endian integer (zero-padded), then the entry's place in the
/// dictionary's own order (low 40 bits) and the key's length in bytes
/// (high 24 bits, saturating).
struct SortKey {
  var prefix: UInt64
  var packed: UInt64

  init(prefix: UInt64, ordinal: Int, length: Int) {
    self.prefix = prefix
    packed = UInt64(Swift.min(length, 0xFF_FFFF)) &<< 40 | UInt64(truncatingIfNeeded: ordinal) & (1 &<< 40 &- 1)
  }

  var ordinal: Int { Int(truncatingIfNeeded: packed & (1 &<< 40 &- 1)) }
  var length: Int { Int(truncatingIfNeeded: packed &>> 40) }
}

/// Sorts a dictionary's keys by their UTF-8 bytes (``BinaryPropertyListWriter``'s order).
enum KeyOrder {
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
  static func precedes(_ a: SortKey, _ b: SortKey, _ keys: [String]) -> Bool {
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
  static func sort(_ keys: inout [SortKey], _ dictionary: [String: PropertyListValue]) {
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
}

import Foundation

/// A look at untrusted property-list bytes before Foundation's parser sees them.
///
/// swift-corelibs-foundation crashes the process on binary property lists that
/// CoreFoundation accepts but the bridge to Swift does not: a set (marker `0xC_`) crashes
/// `PropertyListSerialization` itself (a bad pointer while bridging), and a dictionary keyed
/// by a keyed-archiver UID (marker `0x8_`) crashes whoever iterates the dictionary it
/// returns. A preferences file or a manifest holds neither (only booleans, numbers, dates,
/// data, strings, arrays and dictionaries), so a file with any other kind of object is
/// refused here, before the parser runs.
///
/// Only the object table is looked at: the trailer's sizes and the first byte (the marker)
/// of every object. A file whose trailer does not add up is left to the parser, which is
/// stricter about it and refuses it.
enum PropertyListScreen {
  /// Why `data` must not reach Foundation's parser, or `nil` when it may.
  static func problem(with data: Data) -> String? {
    data.withUnsafeBytes { problem(with: $0) }
  }

  private static func problem(with bytes: UnsafeRawBufferPointer) -> String? {
    let count = bytes.count
    // "bplist0" then any version byte is parsed as binary; trailer of 32 bytes.
    guard count >= 8 + 1 + 32, bytes.starts(with: "bplist0".utf8) else { return nil }
    func integer(at offset: Int, size: Int) -> UInt64 {
      var value: UInt64 = 0
      for i in 0..<size { value = value << 8 | UInt64(bytes[offset + i]) }
      return value
    }
    let trailer = count - 32
    let offsetSize = Int(bytes[trailer + 6])
    let objectCount = integer(at: trailer + 8, size: 8)
    let tableOffset = integer(at: trailer + 24, size: 8)
    guard (1...8).contains(offsetSize), objectCount >= 1, tableOffset >= 9,
      tableOffset < UInt64(trailer)
    else { return nil }
    let (tableSize, overflow) = objectCount.multipliedReportingOverflow(by: UInt64(offsetSize))
    guard !overflow, tableSize <= UInt64(trailer) - tableOffset else { return nil }
    let table = Int(tableOffset)
    for index in 0..<Int(objectCount) {
      let offset = integer(at: table + index * offsetSize, size: offsetSize)
      guard offset < tableOffset else { continue }  // the parser refuses it
      let marker = bytes[Int(offset)]
      switch marker >> 4 {
      // null/bool/fill, integer, real, date, data, ASCII string, UTF-16 string, array, dictionary
      case 0x0, 0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0xA, 0xD:
        continue
      case 0x8:
        return "it holds a keyed-archiver UID (binary object \(index)), which a property list of preferences cannot"
      case 0xB, 0xC:
        return "it holds a set (binary object \(index)), which a property list of preferences cannot"
      default:
        return "it holds an object of unknown kind 0x\(String(marker, radix: 16)) (binary object \(index))"
      }
    }
    return nil
  }
}

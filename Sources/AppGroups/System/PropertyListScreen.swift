import Foundation

/// A look at untrusted property-list bytes before Foundation's parser sees them.
///
/// swift-corelibs-foundation crashes the process (a bad pointer while bridging) when
/// `PropertyListSerialization` decodes a binary property list holding a set (marker `0xC_`,
/// or the ordered set `0xB_`): CoreFoundation accepts it, the bridge to Swift does not.
/// Apple never writes a set into a property list, and a preferences file or a manifest
/// cannot hold one, so such a file is refused here, before the parser runs.
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
      switch bytes[Int(offset)] >> 4 {
      case 0xB, 0xC:
        return "it holds a set (binary object \(index)), which a property list of preferences cannot"
      default:
        continue
      }
    }
    return nil
  }
}

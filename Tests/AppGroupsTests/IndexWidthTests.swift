@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

extension IndexedDomainTests {
  /// The index's fill is compiled once for each width of references and offsets the writer
  /// chooses, and once for any other width: at each, every byte of the objects and of the
  /// offset table set to every value in turn, the index accepts exactly the files the whole
  /// decode accepts (with ASCII keys), and reads them as it does.
  @Test(arguments: [(1, 1), (1, 2), (2, 2), (2, 4), (4, 4), (1, 8), (2, 3)])
  func everyOneByteChangeIsJudgedAsTheWholeDecodeJudgesItAtEachWidth(referenceSize: Int, offsetSize: Int) throws {
    func reference(_ object: Int) -> [UInt8] { CraftedPropertyList.reference(object, size: referenceSize) }
    let n = 6
    let keys = (0..<n).map { CraftedPropertyList.ascii($0 == 2 ? "a-key-of-sixteen" : "k\($0)") }
    // An integer, a two-byte one, a string, a boolean, a real, and an array of the first.
    let values: [[UInt8]] = [
      [0x10, 7], [0x11, 1, 2], [0x53, 0x61, 0x62, 0x63], [0x09], [0x23, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0],
      [0xA1] + reference(1 + n),
    ]
    let top = [0xD0 | UInt8(n)] + (1...(2 * n)).flatMap(reference)
    let original = handMade([top] + keys + values, refSize: UInt8(referenceSize), offsetSize: UInt8(offsetSize))
    let whole = try Self.decodeWhole(original)
    #expect(BinaryPropertyListIndex(original)?.decoded == whole)
    let table = original.count - 32 - (1 + 2 * n) * offsetSize
    let accepted = Self.judgeEveryOneByteChange(
      of: original, at: Array(8..<(original.count - 32)), context: " (the table from \(table))"
    ) { Self.hasUTF16Key($0, referenceSize, offsetSize) }
    #expect(accepted > 500)
  }

  /// Whether a file of ``handMade(_:top:refSize:offsetSize:offsets:objectCount:)`` (the top
  /// dictionary first, fewer than 15 entries) has a key stored as UTF-16.
  static func hasUTF16Key(_ data: Data, _ referenceSize: Int, _ offsetSize: Int) -> Bool {
    let bytes = [UInt8](data)
    func read(_ at: Int, _ width: Int) -> Int? {
      guard at >= 0, at + width <= bytes.count - 32 else { return nil }
      return bytes[at..<(at + width)].reduce(0) { $0 << 8 | Int($1) }
    }
    let table = bytes[(bytes.count - 8)...].reduce(0) { $0 << 8 | Int($1) }
    let count = Int(bytes[8] & 0x0F)
    return (0..<count).contains { i in
      guard let key = read(9 + i * referenceSize, referenceSize), let offset = read(table + key * offsetSize, offsetSize),
        offset < bytes.count
      else { return false }
      return bytes[offset] >> 4 == 0x6
    }
  }
}

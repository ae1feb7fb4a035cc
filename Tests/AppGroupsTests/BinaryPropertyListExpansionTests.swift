@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A small binary file whose one string or data object is shared many times over. The
/// objects' budget alone let it be decoded into gigabytes: a 1 MB file whose data object of
/// 1 MiB an array names 20,000 times made 20 GB, and ended the process that read it (every
/// member of the group, for a suite or a keychain file). It is refused as a file built to
/// explode, whole, and sharing within reason is still read.
@Suite("Binary property list: strings and data shared many times over")
struct BinaryPropertyListExpansionTests {
  /// `{"k": [object 3, object 3, …]}`, `count` times, with `shared` as object 3 and `more`
  /// after it.
  static func file(sharing shared: [UInt8], count: Int, more: [[UInt8]] = []) -> Data {
    let array: [UInt8] = [0xAF, 0x11] + bigEndian(UInt64(count), width: 2) + [UInt8](repeating: 3, count: count)
    return handMade([[0xD1, 0x01, 0x02], [0x51, 0x6B], array, shared] + more, offsetSize: 4)
  }

  static func data(_ count: Int) -> [UInt8] {
    [0x4F, 0x12] + bigEndian(UInt64(count), width: 4) + [UInt8](repeating: 0xAB, count: count)
  }

  static func ascii(_ count: Int) -> [UInt8] {
    [0x5F, 0x12] + bigEndian(UInt64(count), width: 4) + [UInt8](repeating: 0x61, count: count)
  }

  static let mebibyte = 1 << 20

  /// 100 times 1 MiB from a file of 1 MiB: past 64 MiB and 16 for each byte.
  static let bombs: [(String, Data)] = [
    ("data", file(sharing: data(mebibyte), count: 100)),
    ("string", file(sharing: ascii(mebibyte), count: 100)),
    // A dictionary named 100 times whose key is the string of 1 MiB.
    ("key", file(sharing: [0xD1, 0x04, 0x05], count: 100, more: [ascii(mebibyte), [0x10, 0x01]])),
  ]

  @Test func aSharedStringOrDataPastTheBudgetIsRefusedWhole() throws {
    for (what, bomb) in Self.bombs {
      #expect(bomb.count < Self.mebibyte + 4096, "\(what)")
      for error in [decodeError(bomb), Self.salvageError(bomb)] {
        let message = try #require(error?.message, "\(what)")
        #expect(
          message.hasPrefix("binary property list: the strings and data expand to more than 67108864 bytes and 16 for each byte of the"),
          "\(what): \(message)")
      }
    }
  }

  /// A string of 1 KiB named 1,000 times (1 MiB from a file of 3 KB) is read.
  @Test func sharingWithinReasonIsRead() throws {
    let value = try BinaryPropertyList.decode(Self.file(sharing: Self.ascii(1024), count: 1000))
    let string = PropertyListValue.string(String(repeating: "a", count: 1024))
    #expect(value == .dictionary(["k": .array(Array(repeating: string, count: 1000))]))
  }

  /// A suite whose file is such a bomb opens without reading it: the file is kept aside, as
  /// any unreadable file is, and the suite goes on empty.
  @Test func aSuiteWhoseFileExplodesIsKeptAsideNotRead() throws {
    let t = try TestRoot()
    let file = t.groupSuiteFile
    let folder = file.deletingLastPathComponent()
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let bomb = try #require(Self.bombs.first?.1)
    try bomb.write(to: file)
    let messages = MessageLog()
    let d = try Diagnostics.withHandler({ messages.append($0) }) { try t.defaults(TestRoot.group) }
    #expect(d.object(forKey: "k") == nil)
    let copies = entries(of: folder).filter { $0.hasPrefix("\(TestRoot.group).plist.unreadable-") }
    try #require(copies.count == 1, "\(entries(of: folder))")
    #expect(try Data(contentsOf: folder.appendingPathComponent(copies[0])) == bomb)
    #expect(messages.lines.contains { $0.contains("the strings and data expand") }, "\(messages.lines)")
  }

  static func salvageError(_ data: Data) -> AppGroupsError? {
    do {
      _ = try BinaryPropertyList.decodeSalvaging(data)
      return nil
    } catch {
      return error
    }
  }
}

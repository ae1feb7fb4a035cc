@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A suite file with values a parser reads as something the file does not say (a key given
/// twice): opening the suite never holds them as what the parser made of them. The key that
/// holds one is left out and named with the reason, every other key is kept with its value,
/// and the file's bytes are kept aside before anything is written over them.
@Suite("Salvage what a parser would misread")
struct MisreadValueSalvageTests {
  /// A binary file whose top dictionary gives a key twice (another tool's writer; Foundation's
  /// parser keeps one of the values): the key is left out, the rest kept, the file kept aside;
  /// small or large enough to be indexed.
  @Test(arguments: [0, 400])
  func aBinarySuiteGivingAKeyTwiceLeavesThatKeyOut(extraKeys: Int) throws {
    var values: [String: PropertyListValue] = ["a": .integer(1), "b": .integer(2), "name": .string("kept")]
    for index in 0..<extraKeys { values["key-\(index)"] = .integer(index) }
    // "b" written as "a".
    var original = BinaryPropertyList.encode(.dictionary(values))
    let b = try #require(original.firstRange(of: Data([0x51, UInt8(ascii: "b")])))
    original[b.upperBound - 1] = UInt8(ascii: "a")
    #expect((original.count >= BinaryPropertyListIndex.minimumSize) == (extraKeys > 0))
    #expect(BinaryPropertyListIndex(original) == nil)
    let error = try #require(throws: AppGroupsError.self) { try BinaryPropertyList.decode(original) }
    #expect(error.message.hasPrefix(#"the key "a" is given twice (keys "#), "\(error.message)")
    #expect(PropertyListValue.misreadValues(in: original) == error.message)

    let t = try TestRoot()
    let file = t.groupSuiteFile
    let folder = file.deletingLastPathComponent()
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try original.write(to: file)
    let messages = MessageLog()
    let d = try Diagnostics.withHandler({ messages.append($0) }) { try t.defaults(TestRoot.group) }
    #expect(d.object(forKey: "a") == nil)
    #expect(d.object(forKey: "b") == nil)
    #expect(d.string(forKey: "name") == "kept")
    #expect(d.dictionaryRepresentation().count >= extraKeys + 1)
    if extraKeys > 0 { #expect(d.object(forKey: "key-\(extraKeys - 1)") as? Int == extraKeys - 1) }
    let aside = entries(of: folder).filter { $0.hasPrefix("\(TestRoot.group).plist.unreadable-") }
    try #require(aside.count == 1)
    #expect(try Data(contentsOf: folder.appendingPathComponent(aside[0])) == original)
    #expect(
      messages.lines.contains { $0.contains(#""a" (the key "a" is given twice (keys "#) && $0.contains(aside[0]) },
      "\(messages.lines)")
  }
}

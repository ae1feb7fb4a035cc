@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A suite file edited by hand with values Foundation's parser reads as something the file
/// does not say (a `<data>` that is not base64, a `<date>` out of range, a key given twice):
/// opening the suite never holds them as what the parser made of them. The key that holds one
/// is left out and named with the reason, every other key is kept with its value, and the
/// file's bytes are kept aside before anything is written over them.
@Suite("Salvage what a parser would misread")
struct MisreadValueSalvageTests {
  /// An XML preferences file with `body` as its top dictionary's entries, one a line.
  static func document(_ body: [String]) -> [String] {
    [
      #"<?xml version="1.0" encoding="UTF-8"?>"#,
      #"<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">"#,
      #"<plist version="1.0">"#,
      "<dict>",
    ] + body + ["</dict>", "</plist>", ""]
  }

  /// The line (the first is 1) of `lines` that is `text`, after `after` lines; `nil` if none.
  static func line(of text: String, in lines: [String], after: Int = 0) -> Int? {
    lines.indices.first { $0 >= after && lines[$0] == text }.map { $0 + 1 }
  }

  static let badData = "\t<data>@@@</data>"
  static let badDate = "\t<date>2024-13-01T00:00:00Z</date>"
  static let badNested = "\t<dict><key>inner</key><data>!!</data></dict>"

  /// One bad `<data>`, one `<date>` in month 13, a key given twice, a good key whose
  /// dictionary holds a bad `<data>`, and good keys of every kind around them.
  static let handEdited = document([
    "\t<key>name</key>", "\t<string>kept</string>",
    "\t<key>count</key>", "\t<integer>7</integer>",
    "\t<key>blob</key>", badData,
    "\t<key>when</key>", badDate,
    "\t<key>mode</key>", "\t<string>first</string>",
    "\t<key>bytes</key>", "\t<data>QUJD</data>",
    "\t<key>nested</key>", badNested,
    "\t<key>list</key>", "\t<array><integer>1</integer><string>two</string></array>",
    "\t<key>mode</key>", "\t<string>second</string>",
    "\t<key>stamp</key>", "\t<date>2024-02-29T12:00:00Z</date>",
  ])

  /// What each bad key of `lines` is reported with, by line.
  static func reasons(_ lines: [String]) -> [String: String] {
    var reasons: [String: String] = [:]
    if let data = line(of: badData, in: lines) { reasons["blob"] = "the <data> on line \(data) is not base64" }
    if let date = line(of: badDate, in: lines) {
      reasons["when"] = #"the <date> on line \#(date) ("2024-13-01T00:00:00Z") is not a date"#
    }
    if let mode = line(of: "\t<key>mode</key>", in: lines), let again = line(of: "\t<key>mode</key>", in: lines, after: mode) {
      reasons["mode"] = #"the key "mode" is given twice in one dictionary (lines \#(mode) and \#(again))"#
    }
    if let nested = line(of: badNested, in: lines) { reasons["nested"] = "the <data> on line \(nested) is not base64" }
    return reasons
  }

  static let stamp = Date(timeIntervalSince1970: 1_709_208_000)  // 2024-02-29T12:00:00Z

  @Test func theReaderRefusesWhatFoundationWouldMisreadAndSalvagesTheOtherKeys() throws {
    let data = Data(Self.handEdited.joined(separator: "\n").utf8)
    let reasons = Self.reasons(Self.handEdited)
    #expect(reasons.count == 4)
    // Read whole: refused, with the first one's reason.
    let error = try #require(throws: AppGroupsError.self) { try PropertyListValue(propertyListData: data) }
    #expect(error.code == .corruptPreferences)
    #expect(error.message.hasPrefix(try #require(reasons["blob"])), "\(error.message)")
    // Read in part: every bad key left out with its reason, the others as the file says.
    let salvage = try PropertyListValue.salvaging(propertyListData: data)
    #expect(
      salvage.values == [
        "name": .string("kept"), "count": .integer(7), "bytes": .data(Data("ABC".utf8)),
        "list": .array([.integer(1), .string("two")]), "stamp": .date(Self.stamp),
      ])
    #expect(Set(salvage.skipped.compactMap(\.key)) == Set(reasons.keys))
    for skipped in salvage.skipped {
      let reason = try #require(reasons[skipped.key ?? ""])
      #expect(skipped.reason.hasPrefix(reason), "\(skipped)")
    }
    // The first problem is the one misreadValues(in:) names, as groupctl import says it.
    #expect(PropertyListValue.misreadValues(in: data) == error.message)
  }

  @Test func aHandEditedSuiteKeepsItsGoodKeysAndItsBytesAside() throws {
    let t = try TestRoot()
    let file = t.groupSuiteFile
    let folder = file.deletingLastPathComponent()
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let original = Data(Self.handEdited.joined(separator: "\n").utf8)
    try original.write(to: file)
    let messages = MessageLog()
    let d = try Diagnostics.withHandler({ messages.append($0) }) { try t.defaults(TestRoot.group) }
    // The good keys, exactly.
    #expect(d.string(forKey: "name") == "kept")
    #expect(d.object(forKey: "count") as? Int == 7)
    #expect(d.data(forKey: "bytes") == Data("ABC".utf8))
    #expect(d.array(forKey: "list")?.count == 2)
    #expect(d.object(forKey: "stamp") as? Date == Self.stamp)
    // The bad ones are not held as what Foundation made of them (empty data, next January,
    // one of the two strings, a dictionary with empty data).
    for key in ["blob", "when", "mode", "nested"] {
      #expect(d.object(forKey: key) == nil, "\(key): \(String(describing: d.object(forKey: key)))")
      #expect(d.dictionaryRepresentation()[key] == nil)
    }
    // The whole file is kept aside, byte for byte, and the user is told which key and why.
    let copies = entries(of: folder).filter { $0.hasPrefix("\(TestRoot.group).plist.unreadable-") }
    try #require(copies.count == 1)
    let copy = folder.appendingPathComponent(copies[0])
    #expect(try Data(contentsOf: copy) == original)
    let line = try #require(messages.lines.first { $0.contains(file.path) && $0.contains(copies[0]) }, "\(messages.lines)")
    for (key, reason) in Self.reasons(Self.handEdited) {
      #expect(line.contains("\(key.debugDescription) (\(reason)"), "\(key): \(line)")
    }
    // A write lands with the good keys; the copy aside still holds the original bytes.
    d.set("new", forKey: "added")
    #expect(d.synchronize())
    let onDisk = try TestRoot.readOnDisk(file)
    #expect(Set(onDisk.keys) == ["name", "count", "bytes", "list", "stamp", "added"])
    #expect(onDisk["name"] as? String == "kept")
    #expect(try Data(contentsOf: copy) == original)
    #expect(entries(of: folder).filter { $0.hasPrefix("\(TestRoot.group).plist.unreadable-") } == copies)
  }

  /// A file whose one key is bad: nothing is made up for it, and its bytes survive aside.
  @Test(arguments: [
    ["\t<key>blob</key>", badData],
    ["\t<key>when</key>", badDate],
    ["\t<key>mode</key>", "\t<string>first</string>", "\t<key>mode</key>", "\t<string>second</string>"],
  ])
  func aFileWhoseOnlyKeyIsBadInventsNothing(_ body: [String]) throws {
    let t = try TestRoot()
    let file = t.groupSuiteFile
    let folder = file.deletingLastPathComponent()
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let lines = Self.document(body)
    let original = Data(lines.joined(separator: "\n").utf8)
    try original.write(to: file)
    let key = String(body[0].dropFirst("\t<key>".count).dropLast("</key>".count))
    let reason = try #require(Self.reasons(lines)[key])
    let messages = MessageLog()
    let d = try Diagnostics.withHandler({ messages.append($0) }) { try t.defaults(TestRoot.group) }
    #expect(d.object(forKey: key) == nil)
    #expect(d.dictionaryRepresentation()[key] == nil)
    let aside = entries(of: folder).filter { $0.hasPrefix("\(TestRoot.group).plist.unreadable-") }
    try #require(aside.count == 1)
    let copy = folder.appendingPathComponent(aside[0])
    #expect(try Data(contentsOf: copy) == original)
    #expect(
      messages.lines.contains { $0.contains(file.path) && $0.contains(aside[0]) && $0.contains(reason) },
      "\(messages.lines)")
    d.set("new", forKey: "added")
    #expect(d.synchronize())
    #expect(try TestRoot.readOnDisk(file).keys.sorted() == ["added"])
    #expect(try Data(contentsOf: copy) == original)
  }

  /// A managed preferences file edited by hand: its good keys are forced, as the file says;
  /// a key Foundation would misread is neither held nor forced, asked either way.
  @Test func aHandEditedManagedFileForcesItsGoodKeysOnly() throws {
    let t = try TestRoot()
    let managed = t.root.managedPreferencesURL(forDomain: TestRoot.group)
    try FileManager.default.createDirectory(
      at: managed.deletingLastPathComponent(), withIntermediateDirectories: true)
    let lines = Self.document(["\t<key>forced</key>", "\t<string>admin</string>", "\t<key>blob</key>", Self.badData])
    try Data(lines.joined(separator: "\n").utf8).write(to: managed)
    let messages = MessageLog()
    let d = try Diagnostics.withHandler({ messages.append($0) }) { try t.defaults(TestRoot.group) }
    #expect(d.string(forKey: "forced") == "admin")
    #expect(d.objectIsForced(forKey: "forced"))
    #expect(d.object(forKey: "blob") == nil)
    #expect(!d.objectIsForced(forKey: "blob"))
    // Asked of the group's domain from the app's own suite, which reads the file itself.
    let app = try t.defaults(nil)
    #expect(app.objectIsForced(forKey: "forced", inDomain: TestRoot.group))
    #expect(!app.objectIsForced(forKey: "blob", inDomain: TestRoot.group))
  }

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

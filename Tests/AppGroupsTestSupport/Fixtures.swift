public import AppGroups
public import AppGroupsTesting
public import Foundation
import Glibc

/// A temporary root with the example identities granted: `com.example.app`
/// and `com.example.widget` in `group.com.example.shared`. Made by
/// `AppGroupsTesting`'s ``TemporaryAppGroup``, as an app's own tests would make theirs.
public struct TestRoot: Sendable {
  /// The temporary root, its manifest and identity; removed when the last copy goes away.
  public let device: TemporaryAppGroup
  public var root: ContainerRoot { device.root }
  /// The root's folder, for files a test keeps beside the containers.
  public var sandbox: (url: URL, path: String) { (root.url, root.path) }
  public static let group = "group.com.example.shared"
  public static let app = "com.example.app"
  public static let widget = "com.example.widget"

  public init(_ name: String = #function, grant: Bool = true) throws {
    device = try TemporaryAppGroup(groups: grant ? [Self.group] : [], as: Self.app, label: name)
    if grant { try device.grant(Self.widget, groups: [Self.group]) }
  }

  public var path: String { root.path }

  /// A suite opened as `bundleID` (default: the example app).
  public func defaults(_ suiteName: String?, as bundleID: String = TestRoot.app) throws -> GroupDefaults {
    try GroupDefaults(
      suiteName: suiteName, identity: AppIdentity(bundleIdentifier: bundleID), root: root)
  }

  /// The environment a child process needs to act as `bundleID` in this root.
  public func environment(as bundleID: String = TestRoot.app) -> [String: String] {
    ["APPGROUPS_ROOT": root.path, "APPGROUPS_BUNDLE_ID": bundleID]
  }

  /// The group suite's file.
  public var groupSuiteFile: URL {
    root.groupContainerURL(for: Self.group)
      .appendingPathComponent("Library/Preferences/\(Self.group).plist")
  }

  /// The group suite's values whose keys start with `prefix`, each as text, as a new process
  /// (`appgroups-worker dump`, acting as `bundleID`) reads them through AppGroups: the plist
  /// and the journal of a large suite's last small commits. `nil` when the process failed.
  public func readGroupSuite(prefix: String, as bundleID: String = TestRoot.widget) throws -> [String: String]? {
    let run = try Product.run(
      "appgroups-worker", ["dump", Self.group, prefix],
      environment: environment(as: bundleID).merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 })
    var values: [String: String] = [:]
    for line in run.stdout.split(separator: "\n") where line.hasPrefix("entry ") {
      let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
      if parts.count == 3 { values[parts[1]] = parts[2] }
    }
    guard run.status == 0, run.stdout.contains("dumped \(values.count)\n") else { return nil }
    return values
  }

  /// A suite's values as they are on disk, read with Foundation and not with AppGroups: the
  /// property list, then, when `<plist>.journal` names this version of it in its 40-byte
  /// header, the journal's records in order, each a little-endian `UInt32` length, an 8-byte
  /// check and a binary property list `{s: {key: value}, r: [key]}`, as far as the lock file
  /// publishes them durable (and as far as they are whole). A header names the version by
  /// `AGJRNL01` and the plist's device, inode, size and modification time; or by `AGJRNL02`
  /// and a check of the plist's bytes (``contentCheck(_:)``), its inode, size and modification
  /// time, where the same size and check name it too (a plist touched or copied since): the
  /// lock file then publishes no length for it.
  public static func readOnDisk(_ url: URL) throws -> [String: Any] {
    var values = try readPlist(url)
    var s = stat()
    guard lstat(url.path, &s) == 0,
      let journal = FileManager.default.contents(atPath: url.path + ".journal"), journal.count >= 40
    else { return values }
    let bytes = [UInt8](journal)
    func word(_ offset: Int, _ width: Int = 8) -> UInt64 {
      (0..<width).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
    }
    let modified = UInt64(bitPattern: Int64(s.st_mtim.tv_sec) * 1_000_000_000 + Int64(s.st_mtim.tv_nsec))
    let magic = String(decoding: bytes[0..<8], as: UTF8.self)
    let sameIdentity =
      word(16) == UInt64(s.st_ino) && word(24) == UInt64(s.st_size) && word(32) == modified
    let byIdentity =
      (magic == "AGJRNL01" && word(8) == UInt64(s.st_dev) && sameIdentity) || (magic == "AGJRNL02" && sameIdentity)
    let byContent =
      !byIdentity && magic == "AGJRNL02" && word(24) == UInt64(s.st_size)
      && (try? contentCheck(Data(contentsOf: url))) == word(8)
    guard byIdentity || byContent else { return values }
    // How much of it is durable: the length the lock file's page publishes (its words: magic,
    // sequence, token, has-identity, device, inode, size, modified, changed, length, inode),
    // when the page describes this version of the plist and publishes a length (an inode of
    // all ones publishes none).
    var end = bytes.count
    if let page = FileManager.default.contents(atPath: url.path + ".lock"), page.count >= 88 {
      let words = [UInt8](page.prefix(88))
      func pageWord(_ index: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(words[index * 8 + $1]) << (8 * UInt64($1)) }
      }
      if pageWord(0) == 0x3154_4e45_4b4f_5447, pageWord(3) != 0, pageWord(4) == UInt64(s.st_dev),
        pageWord(5) == UInt64(s.st_ino), pageWord(6) == UInt64(s.st_size), pageWord(7) == modified,
        pageWord(10) != .max
      {
        end = min(end, Int(pageWord(9)))
      }
    }
    var offset = 40
    while offset + 12 <= end {
      let length = Int(word(offset, 4))
      guard length > 0, offset + 12 + length <= end else { break }
      let payload = Data(bytes[(offset + 12)..<(offset + 12 + length)])
      guard let record = try? PropertyListSerialization.propertyList(from: payload, format: nil) as? [String: Any],
        let set = record["s"] as? [String: Any], let removed = record["r"] as? [String]
      else { break }
      for key in removed { values[key] = nil }
      values.merge(set) { $1 }
      offset += 12 + length
    }
    return values
  }

  /// The check of a plist's bytes that a journal's `AGJRNL02` header holds, written from its
  /// description (not with AppGroups): a little-endian 64-bit word at a time (the last one
  /// padded with zeros), `hash = (hash <<< 5 ^ word) &* 0x9e3779b97f4a7c15` from
  /// `0x243f6a8885a308d3 ^ count`, then MurmurHash3's 64-bit finalizer.
  public static func contentCheck(_ data: Data) -> UInt64 {
    let bytes = [UInt8](data)
    var hash: UInt64 = 0x243f_6a88_85a3_08d3 ^ UInt64(bytes.count)
    var offset = 0
    while offset < bytes.count {
      var word: UInt64 = 0
      for i in 0..<8 where offset + i < bytes.count { word |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
      hash = ((hash << 5) | (hash >> 59)) ^ word
      hash = hash &* 0x9e37_79b9_7f4a_7c15
      offset += 8
    }
    hash ^= hash >> 33
    hash = hash &* 0xff51_afd7_ed55_8ccd
    hash ^= hash >> 33
    hash = hash &* 0xc4ce_b9fe_1a85_ec53
    hash ^= hash >> 33
    return hash
  }

  /// How many keys ``largeSuitePlist`` holds.
  public static let largeSuiteCount = 2_000

  /// A binary property list of 2,000 keys `base-N` = `"value-N-of-the-large-base"`, about
  /// 70 KiB: well past the 16 KiB from which a suite's small commits go to its journal.
  public static func largeSuitePlist() throws -> Data {
    var base: [String: Any] = [:]
    for i in 0..<largeSuiteCount { base["base-\(i)"] = "value-\(i)-of-the-large-base" }
    return try PropertyListSerialization.data(fromPropertyList: base, format: .binary, options: 0)
  }

  /// Writes ``largeSuitePlist()`` as the group suite's plist with Foundation (so that no
  /// commit of the base went to a journal), its folder made first.
  public func writeLargeSuitePlist() throws {
    try FileManager.default.createDirectory(
      at: groupSuiteFile.deletingLastPathComponent(), withIntermediateDirectories: true,
      attributes: [.posixPermissions: 0o700])
    try Self.largeSuitePlist().write(to: groupSuiteFile)
  }

  /// Reads a property-list file with Foundation, not with AppGroups.
  public static func readPlist(_ url: URL) throws -> [String: Any] {
    let data = try Data(contentsOf: url)
    return try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] ?? [:]
  }
}

import Foundation

/// Where file coordination keeps its state inside a container, `<container>/Library/Coordination`,
/// and how a byte of its claims file names a coordinated item. Below both the coordinator,
/// which writes it, and the lifecycle, which names a claim held across a suspension.
///
/// ```
/// Library/Coordination/claims              the coordinated accesses' byte-range locks
/// Library/Coordination/names/<slot>        the item (its path in the container) of a slot
/// Library/Coordination/presenters/<name>   one registered presenter
/// Library/Coordination/inbox/<pid>-<start> a participating process's inbox (a FIFO)
/// Library/Coordination/processes/<pid>-<start>  the app that process acts as
/// ```
enum CoordinationLayout {
  /// The folder, relative to its container.
  static let folder = "Library/Coordination"
  /// The claims file's name in the folder.
  static let claimsFile = "claims"
  static let namesFolder = "names"
  static let presentersFolder = "presenters"
  static let inboxFolder = "inbox"
  /// `processes/<pid>-<start time>`: the app a participating process acts as, for reports.
  static let processesFolder = "processes"
  /// The log of presenters that did not answer, for a process that cannot write
  /// `<root>/Run/lifecycle.log` (an app in its sandbox).
  static let logFile = "log"

  /// Bytes of the claims file per item: a turnstile (+0) that keeps a waiting writer ahead of
  /// later readers, the item itself (+1), and its subtree (+2: taken shared by every access
  /// below the item, exclusively by a move or deletion of the whole folder).
  static let stride: Int64 = 4
  static let turnstileByte: Int64 = 0
  static let itemByte: Int64 = 1
  static let subtreeByte: Int64 = 2

  /// The slot of the item at `relativePath` (its path in the container, no leading `/`; empty
  /// for the container itself): a 60-bit FNV-1a hash, so that every byte offset fits `off_t`.
  /// Two items that share a slot only wait for each other more than they must.
  static func slot(of relativePath: String) -> Int64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in relativePath.utf8 {
      hash ^= UInt64(byte)
      hash &*= 0x0000_0100_0000_01b3
    }
    return Int64(bitPattern: hash & 0x0fff_ffff_ffff_ffff)
  }

  /// The name file of `slot` in `folder` (a coordination folder's path).
  static func nameFile(slot: Int64, in folder: String) -> String {
    folder + "/" + namesFolder + "/" + String(slot, radix: 16)
  }

  /// What a lock on bytes `start`… of the claims file at `claimsPath` stands for: the item's
  /// path (in its container; empty for the container itself) and whether the lock is on the
  /// item, its turnstile or its subtree; `nil` only when the file is not a claims file.
  ///
  /// The container's own slot needs no name (its path is empty, and so would be its name
  /// file); any other slot's item is what its name file says, and `nil` when that file is
  /// missing or empty (removed by another process, or left empty by a full disk): a claim
  /// whose name cannot be read is still a claim.
  static func claim(at start: UInt64, claimsPath: String) -> (item: String?, part: String)? {
    guard claimsPath.hasSuffix("/" + folder + "/" + claimsFile), start <= UInt64(Int64.max)
    else { return nil }
    let offset = Int64(start)
    let slot = offset / stride
    let part: String
    switch offset % stride {
    case itemByte: part = "item"
    case subtreeByte: part = "subtree"
    default: part = "turnstile"
    }
    if slot == Self.slot(of: "") { return ("", part) }
    let coordination = String(claimsPath.dropLast(claimsFile.count + 1))
    guard let bytes = FileSystem.readPrefix(4096, of: nameFile(slot: slot, in: coordination)),
      !bytes.isEmpty
    else { return (nil, part) }
    return (String(decoding: bytes, as: UTF8.self), part)
  }
}

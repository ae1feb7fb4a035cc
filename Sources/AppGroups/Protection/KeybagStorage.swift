import Foundation

/// Where the device's keybag is kept: `<root>/Keybag/Keybag.plist` (mode 0600, its folder
/// 0700), outside what a sandboxed app may read. The keybag (`AppGroupsKeybag`) reads and
/// replaces it only while it holds the device's lock (``DeviceStateFile/transition(_:)``);
/// this type knows the place and the durable write, not the contents.
package struct KeybagStorage: Sendable {
  /// The root.
  package let root: ContainerRoot

  package init(root: ContainerRoot) {
    self.root = root
  }

  /// `<root>/Keybag`.
  package var folder: String { root.path + "/Keybag" }
  /// `<root>/Keybag/Keybag.plist`.
  package var path: String { folder + "/Keybag.plist" }

  /// The keybag's bytes; `nil` when there is none.
  ///
  /// - Throws: `.outsideRoot` when it, or a folder on the way from the root, is a symbolic
  ///   link (as ``write(_:)`` refuses one: nothing is read through it); `.io` when it cannot
  ///   be read (a folder, a fifo, no permission).
  package func read() throws(AppGroupsError) -> [UInt8]? {
    do throws(SystemCallError) {
      guard try FileSystem.requireFolders(folder, within: root.path),
        let (data, _) = try FileSystem.read(path, followLinks: false)
      else { return nil }
      return [UInt8](data)
    } catch where error.code == .tooManySymbolicLinkLevels {
      throw linkRefused(error)
    } catch {
      throw AppGroupsError(io: error, "reading the keybag")
    }
  }

  /// Replaces the keybag with `bytes`, durably: a temporary file, `fsync(2)`, `rename(2)`,
  /// `fsync(2)` of the folder. The folder is made first when missing.
  ///
  /// - Throws: `.outsideRoot` when a folder on the way is a symbolic link; `.io` when the
  ///   disk refuses (the keybag there is left as it was).
  package func write(_ bytes: [UInt8]) throws(AppGroupsError) {
    try root.prepareRoot()
    do throws(SystemCallError) {
      try FileSystem.makeDirectory(folder, within: root.path)
      _ = FileSystem.removeLeftoverTemporaries(for: "Keybag.plist", in: folder)
      try FileSystem.writeAtomically(Data(bytes), to: path, mode: 0o600)
    } catch where error.code == .tooManySymbolicLinkLevels {
      throw linkRefused(error)
    } catch {
      throw AppGroupsError(io: error, "writing the keybag")
    }
  }

  /// The refusal of a symbolic link where the keybag or its folder should be, the same for a
  /// read and a write: a link may lead out of the root, to a keybag that is not the device's.
  private func linkRefused(_ error: SystemCallError) -> AppGroupsError {
    AppGroupsError(
      .outsideRoot,
      "\(error.path ?? path) is a symbolic link; the keybag is never read or written through one",
      cause: error)
  }

  /// Moves a keybag that cannot be read aside (never deleted), beside it with a time stamp.
  ///
  /// - Returns: Where it went.
  package func moveAside() throws(AppGroupsError) -> String {
    do {
      return try PropertyListFile.moveAside(path)
    } catch {
      throw AppGroupsError(io: error, "moving the keybag aside")
    }
  }
}

public import Foundation

extension ContainerRoot {
  /// The folder of the keychain's access groups: `<root>/Keychains`.
  public var keychainsURL: URL { url.appendingPathComponent("Keychains", isDirectory: true) }

  /// The folder of one access group's keychain items, `<root>/Keychains/<group>`: the items
  /// file and its lock file, nothing else, so that a sandbox rule can admit an app to exactly
  /// its own groups' items. The group is not validated here; the keychain only names groups
  /// the manifest holds, and the manifest's are valid names.
  public func keychainFolderURL(forAccessGroup group: String) -> URL {
    keychainsURL.appendingPathComponent(group, isDirectory: true)
  }
}

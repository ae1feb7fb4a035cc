public import Foundation

extension FileManager {
  /// The group container of `groupIdentifier` for the current process, or `nil` when the
  /// process is not entitled to the group, as Apple's call of the same name.
  ///
  /// Code written for iOS compiles unchanged:
  ///
  /// ```swift
  /// let folder = FileManager.default.containerURL(
  ///   forSecurityApplicationGroupIdentifier: "group.com.example.shared")
  /// ```
  ///
  /// The process and the root are found as ``GroupDefaults/init(suiteName:)`` finds them: the
  /// identity is ``AppIdentity/current(fallback:)`` (`APPGROUPS_BUNDLE_ID`, else the
  /// executable's name) and the root is ``ContainerRoot/default`` (`APPGROUPS_ROOT`, else
  /// `Containers` in the current directory). The container is created (mode 0700, with
  /// `Library/Preferences` and `Library/Caches`) on first use.
  ///
  /// Refuses, with `nil` and the reason written once to stderr (see ``Diagnostics``): an
  /// identifier that is not a valid `group.` name, an identity the manifest does not entitle
  /// to the group or that runs another executable than the one it is bound to, a malformed
  /// manifest, a container that is a symbolic link, or a folder that cannot be created.
  /// ``SuiteResolver/container(forSecurityApplicationGroupIdentifier:)`` throws the reason.
  public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? {
    do {
      let resolver = SuiteResolver(identity: try AppIdentity.current(), root: .default)
      return try resolver.container(forSecurityApplicationGroupIdentifier: groupIdentifier)
    } catch {
      Diagnostics.reportOnce("\(error)")
      return nil
    }
  }
}

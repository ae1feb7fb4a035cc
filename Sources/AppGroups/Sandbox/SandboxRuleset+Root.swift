import Foundation

// A Landlock rule on a folder allows everything beneath it, and a ruleset can only add: a
// rule on a folder that holds the root would open every container in it, whatever else the
// ruleset says. So no rule ever names such a folder. ``SandboxRuleset/allow(_:_:purpose:)``
// admits what it holds entry by entry instead, leaving out the way down to the root; the
// callers that know better (COMMAND's folder, `--ro` and `--rw`) admit a file or refuse first.

extension SandboxRuleset {
  /// Whether `path` is `folder` or lies beneath it (both absolute and real).
  static func isWithin(_ path: String, _ folder: String) -> Bool {
    path == folder || ContainerRoot.isStrictlyInside(path, folder)
  }

  /// The protected path (the root, or another path of it) that `path` holds, when it holds one.
  func protectedPath(heldBy path: String) -> String? {
    protectedPaths.first { Self.isWithin($0, path) }
  }

  /// The paths under which the kernel finds `root`: its real path, and the other paths of the
  /// same folder that bind mounts give it (from `/proc/self/mountinfo`). A rule on a folder
  /// that holds any of them would open the root.
  static func protectedPaths(of root: ContainerRoot) -> [String] {
    let real = Paths.realPath(root.path) ?? root.path
    let mounts = (try? FileSystem.read("/proc/self/mountinfo")?.0).map {
      String(decoding: $0, as: UTF8.self)
    }
    return [real] + mountAliases(of: real, mountInfo: mounts ?? "").filter { $0 != real }
  }

  /// The other paths of `path` that the mounts of `mountInfo` (the text of
  /// `/proc/self/mountinfo`) give it: where a bind mount shows the folder, or a folder above
  /// it, a second time.
  ///
  /// See: man 5 proc (`/proc/pid/mountinfo`: mount id, parent id, major:minor, the mount's
  /// root within its file system, the mount point, …; spaces in paths are written `\040`).
  static func mountAliases(of path: String, mountInfo: String) -> [String] {
    struct Mount {
      var device: Substring
      var root: String
      var point: String
    }
    func unescaped(_ field: Substring) -> String {
      var bytes: [UInt8] = []
      var utf8 = Array(field.utf8)[...]
      while let byte = utf8.first {
        if byte == UInt8(ascii: "\\"), utf8.count >= 4,
          let code = UInt8(String(decoding: utf8.dropFirst().prefix(3), as: UTF8.self), radix: 8)
        {
          bytes.append(code)
          utf8 = utf8.dropFirst(4)
        } else {
          bytes.append(byte)
          utf8 = utf8.dropFirst()
        }
      }
      return String(decoding: bytes, as: UTF8.self)
    }
    let mounts = mountInfo.split(separator: "\n").compactMap { line -> Mount? in
      let fields = line.split(separator: " ")
      guard fields.count >= 5 else { return nil }
      return Mount(device: fields[2], root: unescaped(fields[3]), point: unescaped(fields[4]))
    }
    // The mount `path` is on: the last (topmost) of those with the longest mount point
    // above it.
    var best: Mount?
    for mount in mounts where isWithin(path, mount.point) {
      if best.map({ mount.point.count >= $0.point.count }) ?? true { best = mount }
    }
    guard let home = best else { return [] }
    // The folder's path inside its file system.
    let inside = joined(home.root, String(path.dropFirst(home.point == "/" ? 0 : home.point.count)))
    var aliases: [String] = []
    for mount in mounts where mount.device == home.device && isWithin(inside, mount.root) {
      let alias = joined(mount.point, String(inside.dropFirst(mount.root == "/" ? 0 : mount.root.count)))
      if alias != path && !aliases.contains(alias) { aliases.append(alias) }
    }
    return aliases
  }

  /// `base` followed by the absolute `rest` (`"/"` or `"/a/b"`).
  private static func joined(_ base: String, _ rest: String) -> String {
    if rest.isEmpty || rest == "/" { return base }
    return base == "/" ? rest : base + rest
  }

  /// Allows `access` on everything `folder` holds except the way down to the protected paths:
  /// each entry that neither holds one nor lies in one gets a rule of its own, and each
  /// folder on the way down is treated so in turn. An entry that is a symbolic link to a
  /// folder holding the root elsewhere is left out, as is one that cannot be resolved.
  mutating func allowAround(_ access: Access, folder: String, purpose: String) {
    let note = "\(purpose); \(folder) holds the root, so it is allowed entry by entry"
    for name in FileSystem.entryNames(in: folder).sorted() where name != "." && name != ".." {
      let entry = folder == "/" ? "/" + name : folder + "/" + name
      guard let real = Paths.realPath(entry) else { continue }
      if protectedPaths.contains(where: { Self.isWithin(real, $0) }) { continue }
      if protectedPath(heldBy: real) != nil {
        // Only down: a link back up (or across) to a folder that holds the root is left out.
        if ContainerRoot.isStrictlyInside(real, folder) {
          allowAround(access, folder: real, purpose: purpose)
        }
        continue
      }
      append(Rule(path: entry, access: access, purpose: note))
    }
  }

  /// Adds `rule` unless the same path is already listed with the same access.
  mutating func append(_ rule: Rule) {
    guard !rules.contains(where: { $0.path == rule.path && $0.access == rule.access }) else {
      return
    }
    rules.append(rule)
  }
}

import Glibc

/// What the kernel says of a path, beyond what ``FileStatus`` says: where it really leads,
/// what a link holds, whether it exists, and the program a command name runs.
package enum Paths {
  /// The absolute path with every symbolic link resolved, or `nil` when it does not exist or
  /// cannot be resolved.
  ///
  /// The corresponding C function is `realpath(3)`.
  package static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// The current directory, or `/` when it cannot be read (it was removed, or is longer than
  /// `PATH_MAX`).
  ///
  /// The corresponding system call is `getcwd(2)`.
  package static func currentDirectory() -> String {
    guard let path = getcwd(nil, 0) else { return "/" }
    defer { free(path) }
    return String(cString: path)
  }

  /// What the symbolic link at `path` holds, as written, or `nil` when it is not a link or
  /// cannot be read.
  ///
  /// The corresponding system call is `readlink(2)`.
  static func linkContents(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = buffer.withUnsafeMutableBufferPointer { pointer -> Int in
      guard let base = pointer.baseAddress else { return -1 }
      return readlink(path, base, Int(PATH_MAX))
    }
    guard count >= 0 else { return nil }
    return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// Whether something exists at `path` (following links).
  ///
  /// The corresponding system call is `access(2)` with `F_OK`.
  static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

  /// The program `name` names, as `execvp(3)` looks for it: `name` itself when it has a `/`
  /// (and may be executed), else the first regular file of that name in `searchPath`'s
  /// folders (`PATH`; an empty entry is the current folder) that may be executed.
  ///
  /// - Throws: `.notFound` saying "cannot run NAME: not found in PATH"; `.io` saying
  ///   "cannot run NAME: access: " and the errno text for a path that may not be run, or
  ///   "cannot run NAME: it is a folder"; `.invalidName` for an empty name. NAME is quoted
  ///   (``Names/quoted(_:)``) when it is empty or holds a character that does not show as
  ///   itself (a newline would split the message over two lines).
  package static func executable(
    named name: String, searchPath: String
  ) throws(AppGroupsError) -> String {
    let shown = shownName(name)
    if name.isEmpty {
      throw AppGroupsError(.invalidName, "cannot run \(shown): the command name is empty")
    }
    if name.contains("/") {
      do {
        _ = try valueOrErrno("access", path: name) { access(name, X_OK) }
      } catch {
        throw AppGroupsError(.io, "cannot run \(shown): access: \(error.code)", cause: error)
      }
      // A folder passes `access(X_OK)` (search permission); `execve(2)` would refuse it with
      // `EACCES`, which says nothing of why.
      if FileStatus(atPath: name, followingLinks: true)?.kind == .folder {
        throw AppGroupsError(.io, "cannot run \(shown): it is a folder")
      }
      return name
    }
    for folder in searchPath.split(separator: ":", omittingEmptySubsequences: false) {
      let candidate = (folder.isEmpty ? "." : String(folder)) + "/" + name
      if FileStatus(atPath: candidate, followingLinks: true)?.kind == .regularFile,
        access(candidate, X_OK) == 0
      {
        return candidate
      }
    }
    throw AppGroupsError(.notFound, "cannot run \(shown): not found in PATH")
  }

  /// `name` as a message shows it: as it is, or quoted (``Names/quoted(_:)``) when it is
  /// empty or any of its characters would not show as itself.
  private static func shownName(_ name: String) -> String {
    let plain = !name.isEmpty && name.unicodeScalars.allSatisfy { Names.quoted(String($0)) == "\"\($0)\"" }
    return plain ? name : Names.quoted(name)
  }
}

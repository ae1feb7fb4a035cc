internal import CAppGroupsLinux
import Glibc

extension FileSystem {
  /// Whether `path` is a folder reached from `/` through real folders only, no symbolic link
  /// at any level: what ``makeDirectory(_:within:)`` finds, level by level, when it has
  /// nothing to make, told by one `openat2(2)` (`RESOLVE_NO_SYMLINKS`) and its `close(2)`.
  /// `false` when it is not, or when the kernel cannot tell (before Linux 5.6, or a filter
  /// that refuses the call): the caller then walks.
  static func isFolderWithoutLinks(_ path: String) -> Bool {
    cappgroups_is_folder_without_links(path) == 1
  }

  /// ``makeDirectory(_:within:)`` on the path's own bytes, for the shape every suite's open
  /// asks for: an ASCII `root` that `path` starts with, then `/` and components that are not
  /// empty (no `//`, no `/` at the end). The folders the walk looks at are then exactly the
  /// prefixes of `path` that end before a `/` or at its end, which are what the walk over
  /// components would build (`root`, then `/` and a component, each time): each is looked at
  /// in place, with a NUL written over its `/` for the call, and made a `String` only for an
  /// error. The same calls in the same order, the same errors.
  ///
  /// - Returns: `false` when `path` is not of that shape: nothing was done, the caller walks.
  static func makeDirectoryInPlace(_ path: String, within root: String) throws(SystemCallError) -> Bool {
    let rootCount = root.utf8.count
    var failure: SystemCallError? = nil
    let applies: Bool? = path.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
      guard bytes.count >= rootCount, isPlainRoot(root, of: bytes) else { return false }
      let rest = UnsafeBufferPointer(rebasing: bytes[rootCount...])
      if rest.isEmpty { return true }
      // `/` first, no `//`, no `/` last: the components are the runs between the slashes.
      guard rest.first == UInt8(ascii: "/"), rest.last != UInt8(ascii: "/") else { return false }
      var previous: UInt8 = 0
      for byte in rest {
        if byte == UInt8(ascii: "/") && previous == UInt8(ascii: "/") { return false }
        previous = byte
      }
      failure = withUnsafeTemporaryAllocation(of: CChar.self, capacity: bytes.count + 1) {
        buffer -> SystemCallError? in
        for index in 0..<bytes.count { buffer[index] = CChar(bitPattern: bytes[index]) }
        buffer[bytes.count] = 0
        var end = rootCount + 1
        while end <= bytes.count {
          if end == bytes.count || bytes[end] == UInt8(ascii: "/") {
            buffer[end] = 0
            let failed = makeFolder(at: buffer.baseAddress!, length: end)
            if end < bytes.count { buffer[end] = CChar(bitPattern: UInt8(ascii: "/")) }
            if let failed { return failed }
          }
          end += 1
        }
        return nil
      }
      return true
    }
    if let failure { throw failure }
    return applies ?? false
  }

  /// Whether `root` is ASCII and `bytes` start with it: then the characters `String.hasPrefix`
  /// compares are its bytes, and a `/` after them starts a new one.
  /// (The caller has checked that `bytes` are at least as many as the root's.)
  private static func isPlainRoot(_ root: String, of bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    // Over the root's contiguous bytes: its `UTF8View`'s iterator costs ~45 instructions a byte.
    let plain = root.utf8.withContiguousStorageIfAvailable { rootBytes -> Bool in
      for index in rootBytes.indices {
        guard rootBytes[index] < 0x80, bytes[index] == rootBytes[index] else { return false }
      }
      return true
    }
    return plain ?? false
  }

  /// One step of the walk, at the NUL-terminated `folder` of `length` bytes: an `lstat(2)`, a
  /// `mkdir(2)` when nothing is there (and an `lstat(2)` again when something was made there
  /// meanwhile), as ``makeDirectory(_:within:)`` does. The error names the folder.
  private static func makeFolder(at folder: UnsafePointer<CChar>, length: Int) -> SystemCallError? {
    func name() -> String {
      String(decoding: UnsafeRawBufferPointer(start: folder, count: length), as: UTF8.self)
    }
    do throws(SystemCallError) {
      if let s = try status(folder) {
        return refusal(s).map { SystemCallError(call: "mkdir", path: name(), errno: $0) }
      }
      // See: man 2 mkdir (EEXIST: something was made there since the lstat; checked below).
      do {
        _ = try valueOrErrno("mkdir") { mkdir(folder, 0o700) }
        return nil
      } catch where error.errno == EEXIST {}
      guard let s = try status(folder) else {
        return SystemCallError(call: "mkdir", path: name(), errno: ENOENT)
      }
      return refusal(s).map { SystemCallError(call: "mkdir", path: name(), errno: $0) }
    } catch {
      return SystemCallError(call: error.call, path: name(), errno: error.errno)
    }
  }

  /// `lstat(2)` of a NUL-terminated path; `nil` when nothing is there. The error names no
  /// path (the caller adds it).
  private static func status(_ folder: UnsafePointer<CChar>) throws(SystemCallError) -> stat? {
    var s = stat()
    do {
      _ = try valueOrErrno("lstat") { Status.link(folder, &s) }
    } catch where error.errno == ENOENT {
      return nil
    }
    return s
  }

  /// What ``requireFolder(_:_:)`` refuses in `s`: a link (`ELOOP`) or anything but a folder
  /// (`ENOTDIR`); `nil` for a folder.
  private static func refusal(_ s: stat) -> CInt? {
    if s.fileType == FileMode.symbolicLink { return ELOOP }
    if s.fileType != FileMode.folder { return ENOTDIR }
    return nil
  }
}

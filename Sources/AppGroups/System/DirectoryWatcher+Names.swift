internal import Glibc

extension WatcherEngine {
  /// The name of an inotify record: `length` bytes from `bytes`, NUL-terminated and padded
  /// (none: the watched directory itself, an empty name). When its bytes are those of `last`,
  /// the name of the record read before, that string is used again (a watching process hears
  /// one file's name change after change): no string is allocated, checked as UTF-8 and freed
  /// per record. Otherwise a new string, which becomes `last`.
  static func eventName(_ bytes: UnsafeRawPointer, length: Int, last: inout String) -> String {
    guard length > 0 else { return "" }
    let name = bytes.assumingMemoryBound(to: CChar.self)
    let same = last.utf8.withContiguousStorageIfAvailable { known in
      // The NUL ends the name within the record: the known bytes, then the NUL.
      known.count < length && name[known.count] == 0
        && (known.isEmpty || memcmp(name, known.baseAddress!, known.count) == 0)
    }
    if same == true { return last }
    last = String(cString: name)
    return last
  }
}

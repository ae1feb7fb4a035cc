/// Where a change came from.
public enum ChangeOrigin: Sendable, Hashable {
  /// A call in this process.
  case thisProcess
  /// A commit by another process, or an edit of the file from outside.
  case otherProcess
}

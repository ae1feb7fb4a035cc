/// The one locked read-modify-write of the package: a lock file opened, its lock taken, the
/// work done, the lock released, every failure said one way. A preferences file's whole domain
/// is read and written inside it by ``PropertyListFile/update(_:holding:timeout:doing:_:)``.
extension LockedFile {
  /// Opens (creating, mode 0600) the lock file at `path`.
  ///
  /// - Throws: `.outsideRoot` when a symbolic link is at `path` (nothing is created or written
  ///   through it); `.io` naming the call otherwise.
  package static func opening(_ path: String, options: Options = Options()) throws(AppGroupsError) -> LockedFile {
    do {
      return try LockedFile(path: path, options: options)
    } catch where error.code == .tooManySymbolicLinkLevels {
      throw AppGroupsError(
        .outsideRoot,
        "\(path) is a symbolic link; a lock file must be a regular file, so nothing was created or written through the link",
        cause: error)
    } catch {
      throw AppGroupsError(io: error, "opening the lock file \(path)")
    }
  }

  /// Runs `body` holding the lock, waiting for it `timeout` at most (and on, up to
  /// `ceiling`, while its holder makes progress: see ``LockedFile``).
  ///
  /// - Throws: what ``lock(until:bound:whileHolderProgresses:doing:)`` throws, or what `body`
  ///   throws (the lock is released either way).
  package func withLock<Result>(
    timeout: Duration, whileHolderProgresses ceiling: Duration? = nil, doing what: String,
    _ body: () throws(AppGroupsError) -> Result
  ) throws(AppGroupsError) -> Result {
    try lock(
      until: FileSystem.deadline(after: timeout), bound: timeout,
      whileHolderProgresses: ceiling.map { FileSystem.deadline(after: $0) }, doing: what)
    defer { unlock() }
    return try body()
  }

  /// Takes the lock, as ``withLock(timeout:whileHolderProgresses:doing:_:)`` does, for a
  /// caller that holds it across calls of its own; release it with ``unlock()``.
  ///
  /// - Throws: `.lockTimeout` ("`what`: another process held the lock `path` for more than
  ///   `bound`"); `.io` naming the call when the file cannot be opened again or locked.
  package func lock(
    until deadline: UInt64, bound: Duration, whileHolderProgresses ceiling: UInt64? = nil,
    doing what: String
  ) throws(AppGroupsError) {
    do throws(Failure) {
      try lock(until: deadline, whileHolderProgresses: ceiling)
    } catch .failed(let error) {
      throw AppGroupsError(io: error, "\(what): locking \(path)")
    } catch {
      throw AppGroupsError(
        .lockTimeout,
        "\(what): another process held the lock \(path) for more than \(bound)"
          + (ceiling == nil ? "" : " without making progress (stopped, or idle)"))
    }
  }
}

/// A protected suite's file and the device: a commit asks ``SuiteFile/protectedDataReason``
/// once it holds the suite's lock (before it reads) and again at its commit point (just
/// before the rename or the journal's append), so that no commit that began before the device
/// restarted writes after it (see `SuiteStore+Protection.swift`).
extension SuiteFile {
  /// Throws when the device says the file cannot be written now; nothing was read or written.
  func refuseIfProtected(doing: String?) throws(AppGroupsError) {
    guard let reason = protectedDataReason?() else { return }
    throw SuiteStore.unavailableError(path, reason, doing: doing)
  }

  /// The refusal of a commit stopped at its commit point: nothing was written.
  func protectedDataRefusal(_ reason: String, _ request: CommitRequest) -> AppGroupsError {
    SuiteStore.unavailableError(path, reason, doing: request.extra == nil ? nil : "an atomic update")
  }
}

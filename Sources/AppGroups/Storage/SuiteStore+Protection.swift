internal import Synchronization

/// A store whose file cannot be read yet: a suite's file is of class
/// `completeUntilFirstUserAuthentication`, unreadable before the device's first unlock.
///
/// Storage knows nothing of devices. A store opened with a ``SuiteStore/Options/protectionScope``
/// asks ``SuiteStore/protectionGate`` (installed from above, by the Defaults layer) once, when
/// it opens. While the answer is a reason:
///
/// - the store is not loaded: it holds this process's own writes only, so reads see the
///   registered defaults or nil; nothing is checked on a read (a store is loaded or it is not);
/// - writes stay in memory: a commit is refused (`.protectedDataUnavailable`, with the
///   reason), `synchronize()` says `false`, and no retry is scheduled;
/// - a whole-domain replacement and an atomic update are refused: what is on disk is unknown;
/// - the change monitor's re-reads do nothing.
///
/// When the data comes back (``retryProtectedLoad()``, called by whoever hears the device),
/// the file is read under the pending writes, which land key by key.
extension SuiteStore {
  /// Why the files of a scope (a device) cannot be read now, or `nil`. Installed by the
  /// layer that knows the device; asked when a store opens and when its data may have come
  /// back, never on a read.
  static let protectionGate = Mutex<(@Sendable (_ scope: String) -> String?)?>(nil)

  /// Asks the gate whether this store's file can be read; marks it unavailable when it
  /// cannot (whoever opened the store says so). Called from `init`.
  func markUnavailableIfProtected() -> Bool {
    guard let scope = options.protectionScope, !options.readOnly,
      let gate = Self.protectionGate.withLock({ $0 }), let reason = gate(scope)
    else { return false }
    unavailability.withLock { $0 = reason }
    isUnavailable.store(true, ordering: .releasing)
    return true
  }

  /// Why this store's file cannot be read now; `nil` when it is loaded.
  var unavailabilityReason: String? {
    guard isUnavailable.load(ordering: .acquiring) else { return nil }
    return unavailability.withLock { $0 }
  }

  /// Refuses a commit while the file cannot be read: `doing` names a refused operation
  /// (nothing changed), `nil` a plain commit (the changes stay in memory).
  func requireAvailable(_ doing: String?) throws(AppGroupsError) {
    guard let reason = unavailabilityReason else { return }
    if let doing {
      throw AppGroupsError(
        .protectedDataUnavailable,
        "\(doing) of \(path) is refused: protected data is unavailable (\(reason)); nothing"
          + " was changed")
    }
    throw AppGroupsError(
      .protectedDataUnavailable,
      "\(path) cannot be written: protected data is unavailable (\(reason)); the changes stay"
        + " in this process's memory and land, key by key, when it is available")
  }

  /// Loads the store if the gate now says its file can be read.
  /// - Returns: Whether the store is loaded (it was already, or is now).
  @discardableResult
  func retryProtectedLoad() -> Bool {
    guard isUnavailable.load(ordering: .acquiring) else { return true }
    guard let scope = options.protectionScope, let gate = Self.protectionGate.withLock({ $0 }),
      gate(scope) == nil
    else { return false }
    do {
      try loadAfterProtection()
      return true
    } catch {
      Diagnostics.report("\(path): protected data is available again, but \(error.message)")
      return false
    }
  }
}

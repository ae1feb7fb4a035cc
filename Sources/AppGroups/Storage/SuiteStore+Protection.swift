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
///
/// A store that was loaded when the device restarted (its process outlived the reboot, which
/// no process does on a device) becomes such a store again from the moment its process can
/// know: ``markUnavailable(_:)``, called by whoever hears the device, and the file's own
/// check under the suite's lock just before each write (``protectionProbes``), which refuses
/// a commit that passed its availability check before the restart. The values it had read
/// stay in its memory, as a process's memory does.
extension SuiteStore {
  /// Why the files of a scope (a device) cannot be read now, or `nil`. Installed by the
  /// layer that knows the device; asked when a store opens and when its data may have come
  /// back, never on a read.
  static let protectionGate = Mutex<(@Sendable (_ scope: String) -> String?)?>(nil)

  /// Makes, for a scope, what a store's file asks under the suite's lock just before each
  /// write (and once the lock is taken): why the scope's files cannot be written now, or
  /// `nil`. Installed from above with ``protectionGate``; the answer must cost a few loads
  /// from memory (a commit asks twice).
  static let protectionProbes =
    Mutex<(@Sendable (_ scope: String) -> @Sendable () -> String?)?>(nil)

  /// The probe of `options`' scope; `nil` for a read-only or unprotected store.
  static func protectionProbe(_ options: Options) -> (@Sendable () -> String?)? {
    guard let scope = options.protectionScope, !options.readOnly,
      let make = protectionProbes.withLock({ $0 })
    else { return nil }
    return make(scope)
  }

  /// The refusal of a commit whose file cannot be written: `doing` names a refused operation
  /// (nothing changed), `nil` a plain commit (the changes stay in memory).
  static func unavailableError(_ path: String, _ reason: String, doing: String?) -> AppGroupsError {
    if let doing {
      return AppGroupsError(
        .protectedDataUnavailable,
        "\(doing) of \(path) is refused: protected data is unavailable (\(reason)); nothing"
          + " was changed")
    }
    return AppGroupsError(
      .protectedDataUnavailable,
      "\(path) cannot be written: protected data is unavailable (\(reason)); the changes stay"
        + " in this process's memory and land, key by key, when it is available")
  }

  /// Makes a loaded store unavailable: its scope's device restarted while it was open. From
  /// now on it reads as it is (the values it had read stay in memory), its writes stay in
  /// memory, a commit is refused and a re-read does nothing, until ``retryProtectedLoad()``
  /// reads the file again under the pending writes.
  /// - Returns: Whether the store was loaded until now.
  @discardableResult
  func markUnavailable(_ reason: String) -> Bool {
    guard options.protectionScope != nil, !options.readOnly else { return false }
    unavailability.withLock { $0 = reason }
    return !isUnavailable.exchange(true, ordering: .acquiringAndReleasing)
  }

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

  /// Marks the store unavailable when its file's probe says the device refuses it now (a
  /// commit found it so under the lock), and says so once.
  func becameUnavailable(_ reason: String? = nil) {
    guard let reason = reason ?? file.protectedDataReason?(), markUnavailable(reason) else { return }
    Diagnostics.report(
      "\(path): protected data became unavailable while the suite was open (\(reason)); its"
        + " writes stay in this process's memory and land, key by key, when it is available")
  }

  /// Stores whose changes wait for their file to become available, kept alive here: the
  /// registry holds stores weakly, and a suite object the app lets go of must not take with
  /// it the writes the library said would land at the unlock. Released once they are handed
  /// to the commit that lands them (``loadAfterProtection()``).
  private static let waitingForData = Mutex<[ObjectIdentifier: SuiteStore]>([:])

  /// Keeps this store alive until its file can be read, when changes are pending: a commit
  /// was refused because the file is unavailable.
  func holdUntilAvailable() {
    guard hasPendingChanges else { return }
    Self.waitingForData.withLock { $0[ObjectIdentifier(self)] = self }
  }

  /// Lets go of what ``holdUntilAvailable()`` kept: its changes are scheduled to land, or gone.
  func releaseHold() {
    _ = Self.waitingForData.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) }
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
    throw Self.unavailableError(path, reason, doing: doing)
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
      // The device restarted again while the file was read (a mark made meanwhile was
      // cleared by the load): unavailable again.
      if let reason = gate(scope) {
        markUnavailable(reason)
        return false
      }
      return true
    } catch {
      Diagnostics.report("\(path): protected data is available again, but \(error.message)")
      return false
    }
  }
}

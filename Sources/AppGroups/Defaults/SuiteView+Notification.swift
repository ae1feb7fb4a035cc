import Foundation
internal import Synchronization

/// The `didChangeNotification` of a suite: batched per burst, posted per origin, and the
/// one-time costs of the first post paid early.
extension SuiteView {
  /// Adds changes (`add`) to the notification that is to be posted, and schedules its post
  /// unless one is scheduled already.
  ///
  /// NotificationCenter: one notification per burst, never posted from inside the call that
  /// made a change. What the change monitor heard from another process is posted on the
  /// monitor's thread once its batch of events was told (every re-read done, every observer
  /// called), with whatever else was waiting to be posted: no second thread is woken for it,
  /// which matters when one write is heard by many processes at once on a few cores, and it
  /// never waits for a busy Dispatch pool. Everything else is posted from a Dispatch worker:
  /// at once when the last batch was taken at least ``notificationPause`` ago (a lone change),
  /// else once that pause has passed since it, so that batches are taken a pause apart at
  /// least and a burst of `set` calls posts a few notifications, not hundreds, however the
  /// threads are scheduled.
  func postLater(origin: ChangeOrigin?, _ add: (inout [GroupDefaults.Change]) -> Void) {
    let (scheduled, byMonitor) = notificationPending.withLock { pending in
      let scheduled = pending != nil
      if pending == nil {
        pending = PendingNotification()
        pending!.changes.reserveCapacity(notificationRoom.load(ordering: .relaxed))
      } else if pending!.changes.count == pending!.changes.capacity {
        // A burst outgrowing that room: four times over, not twice, so that its changes are
        // moved to a larger batch a third as often.
        pending!.changes.reserveCapacity(pending!.changes.count &* 4)
      }
      add(&pending!.changes)
      return (scheduled, pending!.byMonitor)
    }
    schedulePost(origin: origin, scheduled: scheduled, byMonitor: byMonitor)
  }

  /// ``postLater(origin:_:)`` of the changes that a layer's change made (see
  /// ``deliver(_:)-([GroupDefaults.Change])``): when no notification is waiting, the array
  /// becomes its batch as it is, not copied into a batch made with room for it.
  func postLater(origin: ChangeOrigin?, handing changes: [GroupDefaults.Change]) {
    let (scheduled, byMonitor) = notificationPending.withLock { pending in
      guard pending != nil else {
        pending = PendingNotification(changes: changes)
        return (false, false)
      }
      let needed = pending!.changes.count &+ changes.count
      if needed > pending!.changes.capacity {
        pending!.changes.reserveCapacity(Swift.max(needed, pending!.changes.count &* 4))
      }
      pending!.changes.append(contentsOf: changes)
      return (true, pending!.byMonitor)
    }
    schedulePost(origin: origin, scheduled: scheduled, byMonitor: byMonitor)
  }

  /// Has the notification that is waiting posted, as ``postLater(origin:_:)`` says, unless
  /// its post was `scheduled` already or is left to the change monitor (`byMonitor`).
  private func schedulePost(origin: ChangeOrigin?, scheduled: Bool, byMonitor: Bool) {
    if byMonitor { return }
    if origin == .otherProcess, ChangeMonitor.shared.afterThisBatch(self) {
      // A Dispatch worker may have taken the batch meanwhile: then this marks a later one, or
      // none, and the monitor posts what is waiting then, if anything.
      notificationPending.withLock { $0?.byMonitor = true }
      return
    }
    if scheduled { return }
    // The batch taken last was taken under the lock above, before this one began: its time is
    // the one read here. Within the pause, this batch gathers changes until it ends.
    let sinceTaken = FileSystem.monotonicNanoseconds() &- notificationTaken.load(ordering: .relaxed)
    if sinceTaken < Self.notificationPause {
      let after = DispatchTime.now() + .nanoseconds(Int(Self.notificationPause &- sinceTaken))
      DispatchQueue.global().asyncAfter(deadline: after) { [self] in postPending() }
    } else {
      DispatchQueue.global().async { [self] in postPending() }
    }
  }

  /// Posts the notification that is waiting, if any: the change monitor's call at the end of
  /// the batch of events in which this view heard a change (see ``postLater(origin:_:)``).
  func batchTold() { postPending() }

  /// Posts the notification that is waiting, if any.
  private func postPending() {
    let batch = notificationPending.withLock { pending in
      defer { pending = nil }
      guard let changes = pending?.changes else { return [GroupDefaults.Change]() }
      notificationTaken.store(FileSystem.monotonicNanoseconds(), ordering: .relaxed)
      return changes
    }
    notificationRoom.store(min(batch.count, Self.notificationRoomLimit), ordering: .relaxed)
    postNotification(batch)
  }

  /// Posts ``GroupDefaults/didChangeNotification`` for a burst of changes:
  /// one notification per origin (this process's first), so that the
  /// `origin` in `userInfo` is never a guess for a mixed burst.
  ///
  /// The `userInfo` is filled in a table that the post before handed back
  /// (``Observers/spareUserInfo``), in place, and handed back again once posted with its
  /// values emptied: a change heard copies and frees no table (a copy and its release were a
  /// fifth of what a watching process spent on a post, callgrind). A table an observer kept
  /// is not changed under it: the first value set in it copies it. The first live handle is
  /// held apart from the others, so that a view's usual one handle builds no array.
  private func postNotification(_ changes: [GroupDefaults.Change]) {
    guard !changes.isEmpty else { return }
    var first: GroupDefaults?
    var others: [GroupDefaults] = []
    var spare: UserInfoTemplate.Table?
    let made = observers.withLock { observers -> UserInfoTemplate? in
      for handle in observers.handles {
        guard let object = handle.object else { continue }
        if first == nil { first = object } else { others.append(object) }
      }
      if first != nil { spare = observers.spareUserInfo.take() }
      return observers.userInfoTemplate
    }
    guard let first else { return }
    let template = made ?? userInfoTemplate()
    // Taken out of `spare`, so that the table has no other holder and is filled in place.
    var info = spare.take()?.info ?? template.table
    func post(_ origin: ChangeOrigin, _ batch: [GroupDefaults.Change]) {
      template.fill(&info, origin: origin, changes: batch)
      NotificationCenter.default.post(
        name: GroupDefaults.didChangeNotification, object: first, userInfo: info)
      for handle in others {
        NotificationCenter.default.post(
          name: GroupDefaults.didChangeNotification, object: handle, userInfo: info)
      }
    }
    // One origin (a burst of `set` calls, or another process's commits): the batch as it is,
    // not a copy of every change.
    let origin = changes[0].origin
    if !changes.contains(where: { $0.origin != origin }) {
      post(origin, changes)
    } else {
      post(.thisProcess, changes.filter { $0.origin == .thisProcess })
      post(.otherProcess, changes.filter { $0.origin == .otherProcess })
    }
    template.empty(&info)
    observers.withLock { observers in
      if observers.spareUserInfo == nil { observers.spareUserInfo = UserInfoTemplate.Table(info: info) }
    }
  }

  /// The `userInfo` of ``GroupDefaults/didChangeNotification``: its keys made hashable once,
  /// set one by one into a table with room to spare (no literal's array of pairs to build, and
  /// fewer probes, each of which compares two `AnyHashable`s).
  private static func userInfo(
    domain: String, origin: ChangeOrigin, changes: [GroupDefaults.Change]
  ) -> [AnyHashable: Any] {
    var info = [AnyHashable: Any](minimumCapacity: 8)
    info[UserInfoKey.suiteName] = domain
    info[UserInfoKey.changedKeys] = sortedKeys(changes)
    info[UserInfoKey.origin] = originName(origin)
    info[UserInfoKey.changes] = changes
    return info
  }

  /// This view's ``UserInfoTemplate``, made by its first post.
  func userInfoTemplate() -> UserInfoTemplate {
    if let made = observers.withLock({ $0.userInfoTemplate }) { return made }
    let made = UserInfoTemplate(domain: domain)
    return observers.withLock { observers in
      if let first = observers.userInfoTemplate { return first }
      observers.userInfoTemplate = made
      return made
    }
  }

  /// The `userInfo` of a view's notifications, with its suite name, made once, and where its
  /// other values lie in it: a notification's `userInfo` is a copy of it with those values
  /// replaced, in place, position by position. A copy of a dictionary keeps its layout (and
  /// so its positions), and replacing a value at a position hashes no key: a post builds no
  /// table and hashes no `AnyHashable` (four insertions, each with a hash and a probe, were a
  /// third of what a watching process spent telling of a change after its observers).
  /// `@unchecked Sendable`: it holds constant strings and empty arrays, and is never changed
  /// once made; each post changes its own copy.
  struct UserInfoTemplate: @unchecked Sendable {
    private let info: [AnyHashable: Any]
    private let changedKeys: Dictionary<AnyHashable, Any>.Index
    private let origin: Dictionary<AnyHashable, Any>.Index
    private let changes: Dictionary<AnyHashable, Any>.Index

    init(domain: String) {
      let info = SuiteView.userInfo(domain: domain, origin: .otherProcess, changes: [])
      self.info = info
      // Every key was just set: each is found.
      changedKeys = info.index(forKey: UserInfoKey.changedKeys)!
      origin = info.index(forKey: UserInfoKey.origin)!
      changes = info.index(forKey: UserInfoKey.changes)!
    }

    /// What ``SuiteView/userInfo(domain:origin:changes:)`` makes for this view's domain.
    func userInfo(origin: ChangeOrigin, changes: [GroupDefaults.Change]) -> [AnyHashable: Any] {
      var info = self.info
      fill(&info, origin: origin, changes: changes)
      return info
    }

    /// The template's table, to fill (``fill(_:origin:changes:)``): a copy made when a value
    /// is first set in it.
    var table: [AnyHashable: Any] { info }

    /// Sets the values of a notification in `info`, a copy of this template's table (a copy
    /// keeps its layout, and so the positions of its values), position by position.
    func fill(_ info: inout [AnyHashable: Any], origin: ChangeOrigin, changes: [GroupDefaults.Change]) {
      info.values[changedKeys] = SuiteView.sortedKeys(changes)
      info.values[self.origin] = SuiteView.originName(origin)
      info.values[self.changes] = changes
    }

    /// Gives `info`, filled by ``fill(_:origin:changes:)``, the template's values back: what
    /// a notification held is released, and the table can be filled again.
    func empty(_ info: inout [AnyHashable: Any]) {
      info.values[changedKeys] = [String]()
      info.values[changes] = [GroupDefaults.Change]()
    }

    /// A copy of a template's table, kept between posts (see
    /// ``SuiteView/postNotification(_:)``). `@unchecked Sendable`: it is taken and handed
    /// back under the view's lock, and holds strings and changes.
    struct Table: @unchecked Sendable {
      var info: [AnyHashable: Any]
    }
  }

  /// The value of ``GroupDefaults/originKey`` for `origin`.
  private static func originName(_ origin: ChangeOrigin) -> String {
    origin == .thisProcess ? "thisProcess" : "otherProcess"
  }

  /// The keys of ``userInfo(domain:origin:changes:)``, made hashable once. (`nonisolated
  /// (unsafe)`: an `AnyHashable` is not `Sendable`, but these hold constant strings and are
  /// never changed.)
  private enum UserInfoKey {
    nonisolated(unsafe) static let suiteName = AnyHashable(GroupDefaults.suiteNameKey)
    nonisolated(unsafe) static let changedKeys = AnyHashable(GroupDefaults.changedKeysKey)
    nonisolated(unsafe) static let origin = AnyHashable(GroupDefaults.originKey)
    nonisolated(unsafe) static let changes = AnyHashable(GroupDefaults.changesKey)
  }

  /// The changed keys, sorted, each once: sorted first, then adjacent repeats dropped (no set
  /// of the keys is built: a burst of 10,000 `set`s posts one notification with them all).
  private static func sortedKeys(_ changes: [GroupDefaults.Change]) -> [String] {
    if changes.count == 1 { return [changes[0].key] }
    var keys = changes.map(\.key)
    keys.sort()
    var kept = 0
    for index in keys.indices where kept == 0 || keys[index] != keys[kept - 1] {
      if index != kept { keys.swapAt(index, kept) }
      kept += 1
    }
    keys.removeLast(keys.count - kept)
    return keys
  }

  /// Posts the notifications of persistent-domain calls in the order the calls were made.
  private static let domainNotificationQueue = DispatchQueue(
    label: "AppGroups.persistentDomainNotifications")

  /// Posts ``GroupDefaults/didChangeNotification`` for a persistent domain that
  /// `defaults` replaced or removed and whose changes its own search list does not
  /// report: one notification for the call, as Foundation posts, even when the domain
  /// was already as asked (then `changedKeys` is empty). Off the caller's thread, in the
  /// order of the calls.
  static func postDomainReplaced(
    domain: String, changes: [StoredChange], by defaults: GroupDefaults
  ) {
    let described = changes.map {
      GroupDefaults.Change(
        suiteName: domain, key: $0.key, oldValue: $0.old, newValue: $0.new, origin: .thisProcess)
    }
    let userInfo = Self.userInfo(domain: domain, origin: .thisProcess, changes: described)
    nonisolated(unsafe) let info = userInfo
    domainNotificationQueue.async {
      NotificationCenter.default.post(
        name: GroupDefaults.didChangeNotification, object: defaults, userInfo: info)
    }
  }

  /// Whether this process paid the one-time costs of posting a change (see
  /// ``prepareNotificationPosting(for:)``).
  private static let notificationPostingPrepared = Atomic<Bool>(false)

  /// Pays once per process, when an observer is first added, what the first
  /// ``GroupDefaults/didChangeNotification`` would otherwise pay when the first change arrives:
  /// the runtime's first look-ups (each a scan of every protocol conformance record) of
  /// building its `userInfo`, about 0.4 million instructions, and of `NotificationCenter`'s
  /// first post with a ``GroupDefaults`` as its object (it bridges the object, a look-up of a
  /// conformance the type does not have: about a million), and the storage of the change
  /// monitor's work for the end of a batch, where such a change is posted (no thread to start
  /// for it). Also the storage types of the arrays the first change heard from another
  /// process builds (its changes as stored and as told; the telling thread's, see
  /// ``SuiteStore/prepareTelling()``): each type's first array costs the runtime its metadata,
  /// about 11 k instructions; and, through a diff of two suites' values as a re-read makes one,
  /// the look-ups by name of the types a copy of those values goes through (about 13 k the
  /// first time). Paid then, they are not paid by a process told of another's write while
  /// every other watching process is being told too (the first write a group of watchers hears
  /// is the slowest of all). The post is of ``preparationNotification``, which nothing in the
  /// package observes.
  static func prepareNotificationPosting(for defaults: GroupDefaults) {
    guard !notificationPostingPrepared.exchange(true, ordering: .relaxed) else { return }
    let change = GroupDefaults.Change(suiteName: "", key: "", oldValue: nil, newValue: nil, origin: .otherProcess)
    _ = UserInfoTemplate(domain: "").userInfo(origin: .otherProcess, changes: [change])
    withExtendedLifetime(SuiteValues().changes(to: SuiteValues(["": .integer(0)]))) {}
    NotificationCenter.default.post(name: preparationNotification, object: defaults)
    ChangeMonitor.shared.prepareAfterBatch()
  }

  /// Posted once per process, when the first observer of a suite is added (see
  /// ``prepareNotificationPosting(for:)``).
  static let preparationNotification = Notification.Name("AppGroups.notificationPostingPrepared")
}

internal import Synchronization

/// The device state as it is stored: the words of the page of `<root>/Device/state`.
///
/// Layout (64-bit words): magic, sequence, lock state (1 before first unlock, 2 unlocked,
/// 3 locked), flags (bit 0: a passcode is set), locked-at (`CLOCK_MONOTONIC` ns), grace (ns),
/// boot session, the machine's boot id (two words), generation, device identifier, lock
/// count, unlock count; the page's last word is ``LockedFile``'s retired mark. A page of
/// zeros is a device with no state yet.
package struct DeviceRecord: Sendable, Equatable {
  package var initialized = false
  package var lockState: DeviceState.LockState = .unlocked
  package var hasPasscode = false
  package var lockedAt: UInt64 = 0
  package var grace: UInt64 = 0
  package var bootSession: UInt64 = 0
  package var machineBoot = MachineBoot.Identifier(high: 0, low: 0)
  package var generation: UInt64 = 0
  package var deviceIdentifier: UInt64 = 0
  package var lockCount: UInt64 = 0
  package var unlockCount: UInt64 = 0

  static let magic: UInt64 = 0x3143_4956_4544_4741  // "AGDEVIC1"
  static let wordCount = 13

  init() {}

  /// The record in `words` (`word(index)`); an uninitialized one when the magic is missing.
  init(_ word: (Int) -> UInt64) {
    guard word(0) == Self.magic else { return }
    initialized = true
    lockState =
      switch word(2) {
      case 1: .beforeFirstUnlock
      case 3: .locked
      default: .unlocked
      }
    hasPasscode = word(3) & 1 == 1
    lockedAt = word(4)
    grace = word(5)
    bootSession = word(6)
    machineBoot = MachineBoot.Identifier(high: word(7), low: word(8))
    generation = word(9)
    deviceIdentifier = word(10)
    lockCount = word(11)
    unlockCount = word(12)
  }

  /// The words 2 to 12, as ``init(_:)`` reads them.
  var words: [UInt64] {
    let state: UInt64 =
      switch lockState {
      case .beforeFirstUnlock: 1
      case .unlocked: 2
      case .locked: 3
      }
    return [
      state, hasPasscode ? 1 : 0, lockedAt, grace, bootSession, machineBoot.high,
      machineBoot.low, generation, deviceIdentifier, lockCount, unlockCount,
    ]
  }

  /// A device made now: unlocked, no passcode, a random identity.
  static func newDevice() -> DeviceRecord {
    var record = DeviceRecord()
    record.initialized = true
    record.bootSession = 1
    record.machineBoot = MachineBoot.current
    record.deviceIdentifier = UInt64.random(in: 1 ... .max)
    return record
  }

  /// Whether this record was written during an earlier boot of the machine: the kernel's
  /// keys are gone, so the device has restarted too.
  var isFromEarlierBoot: Bool {
    initialized && machineBoot != MachineBoot.current && !MachineBoot.current.isUnknown
  }

  /// The device starting again: every key gone, `before-first-unlock` with a passcode,
  /// `unlocked` without. Protected data that was available goes away (counted as a lock).
  package mutating func restart() {
    if hasPasscode && lockState == .unlocked { lockCount &+= 1 }
    lockState = hasPasscode ? .beforeFirstUnlock : .unlocked
    lockedAt = 0
    grace = 0
    bootSession &+= 1
    machineBoot = MachineBoot.current
  }

  /// The state this record stands for now, for a reader.
  package var state: DeviceState {
    guard initialized else { return .newDevice }
    var record = self
    // Written before the machine restarted: read as the restart that the next writer makes.
    if isFromEarlierBoot {
      record.restart()
      record.generation &+= 1
    }
    return DeviceState(
      lockState: record.lockState, hasPasscode: record.hasPasscode,
      grace: .nanoseconds(Int64(clamping: record.grace)), bootSession: record.bootSession,
      lockedAt: record.lockedAt, generation: record.generation, lockCount: record.lockCount,
      unlockCount: record.unlockCount, deviceIdentifier: record.deviceIdentifier)
  }
}

/// The machine's boot: `/proc/sys/kernel/random/boot_id`, a random id the kernel draws at
/// each start, read once per process.
package enum MachineBoot {
  package struct Identifier: Sendable, Hashable {
    package var high: UInt64
    package var low: UInt64
    var isUnknown: Bool { high == 0 && low == 0 }
  }

  /// This boot's id; zero when it cannot be read (then no restart is ever inferred).
  package static let current: Identifier = {
    guard let bytes = FileSystem.readPrefix(64, of: "/proc/sys/kernel/random/boot_id") else {
      return Identifier(high: 0, low: 0)
    }
    let hex = bytes.filter { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: "\n") }
    guard hex.count == 32,
      let high = UInt64(String(decoding: hex[0..<16], as: UTF8.self), radix: 16),
      let low = UInt64(String(decoding: hex[16..<32], as: UTF8.self), radix: 16)
    else { return Identifier(high: 0, low: 0) }
    return Identifier(high: high, low: low)
  }()
}

/// The device state file, `<root>/Device/state`, as a writer holds it: its lock, under which
/// every change of the device happens (a lock, an unlock, a reboot, a change of the keybag),
/// and its page, mapped shared.
///
/// ```swift
/// let file = try DeviceStateFile(root: root)
/// try file.transition { record throws(AppGroupsError) in
///   record.lockState = .locked
/// }
/// ```
///
/// A transition reads the record under the lock, lets its body change it, and publishes the
/// change with a sequence lock (readers retry while it is odd), then touches the file
/// (`futimens(2)`): every process watching `<root>/Device` hears it at once (`IN_ATTRIB`).
/// Two transitions never interleave, in this process or across processes.
package final class DeviceStateFile: Sendable {
  /// The root.
  package let root: ContainerRoot
  /// The state file's path.
  package let path: String
  private let file: LockedFile
  /// Serialises this process's transitions: the file lock is the open file description's,
  /// which every thread shares.
  private let gate = Mutex<Void>(())

  /// How long a transition waits for another one to end.
  package static let lockTimeout: Duration = .seconds(5)

  /// `<root>/Device`.
  package static func folder(root: ContainerRoot) -> String { root.path + "/Device" }
  /// `<root>/Device/state` (``DeviceStatePage/read(rootPath:)`` spells it too).
  package static func path(root: ContainerRoot) -> String { folder(root: root) + "/state" }

  /// Opens the state file, creating the root's `Device` folder (0700) and the file (0600)
  /// when they are missing.
  ///
  /// - Throws: `.outsideRoot` when the folder or the file is a symbolic link; `.io` when
  ///   they cannot be created.
  package init(root: ContainerRoot) throws(AppGroupsError) {
    self.root = root
    path = Self.path(root: root)
    try root.prepareRoot()
    do {
      try FileSystem.makeDirectory(Self.folder(root: root), within: root.path)
      file = try LockedFile(
        path: path, options: LockedFile.Options(mapsPage: true, makeFolder: root.path))
    } catch where error.code == .tooManySymbolicLinkLevels {
      throw AppGroupsError(
        .outsideRoot,
        "\(error.path ?? path) is a symbolic link; the device state must be a regular file in"
          + " the root, so nothing was created through the link", cause: error)
    } catch {
      throw AppGroupsError(io: error, "opening the device state \(path)")
    }
  }

  /// Changes the device state under its lock: `body` gets the record as it is now (a new
  /// device's, or the restarted one's when it was written in an earlier boot of the
  /// machine), and what it leaves is published, unless it throws.
  ///
  /// - Throws: `.lockTimeout` when another process held the device's lock for
  ///   ``lockTimeout``; `.io` when the lock cannot be taken; what `body` throws.
  package func transition<Result>(
    _ body: (inout DeviceRecord) throws(AppGroupsError) -> Result
  ) throws(AppGroupsError) -> Result {
    try transition(publishingEarly: { record, _ throws(AppGroupsError) in try body(&record) })
  }

  /// ``transition(_:)``, whose body may also publish a record before it returns
  /// (`publishNow`), for a change of two files whose order matters: a passcode being set
  /// publishes "a passcode is set" before the keybag is sealed with it, so that a process
  /// killed between the two leaves a device that asks for a passcode it may not have (which
  /// the next unlock repairs), never one that restarts unlocked with a keybag that needs one.
  /// What the body leaves is published when it returns; when it throws, the record as it was
  /// before it ran is published again.
  package func transition<Result>(
    publishingEarly body: (inout DeviceRecord, _ publishNow: @escaping (DeviceRecord) -> Void) throws(AppGroupsError) -> Result
  ) throws(AppGroupsError) -> Result {
    try gate.withLock { _ throws(AppGroupsError) -> Result in
      do throws(LockedFile.Failure) {
        try file.lock(until: FileSystem.deadline(after: Self.lockTimeout))
      } catch .failed(let error) {
        throw AppGroupsError(io: error, "locking the device state \(path)")
      } catch {
        throw AppGroupsError(
          .lockTimeout,
          "another process has held the device's lock (\(path)) for more than"
            + " \(Self.lockTimeout); nothing was changed")
      }
      defer { file.unlock() }
      guard let page = file.page.page.map(SharedWords.init) else {
        throw AppGroupsError(.io, "the device state \(path) is not mapped")
      }
      var record = DeviceRecord { page.load($0) }
      var repaired = false
      if !record.initialized {
        record = .newDevice()
        repaired = true
        // A new device: the moment to drop the keys of roots that went without a teardown.
        DeviceKeyring.removeOrphans()
      } else if record.isFromEarlierBoot {
        record.restart()
        repaired = true
      }
      let before = record
      var publishedEarly = false
      let result: Result
      do throws(AppGroupsError) {
        result = try body(&record) { early in
          publishedEarly = true
          self.publish(early, on: page)
        }
      } catch {
        if repaired || publishedEarly { publish(before, on: page) }
        throw error
      }
      if repaired || publishedEarly || record != before { publish(record, on: page) }
      return result
    }
  }

  /// The record as it is now, read under the lock (see ``transition(_:)``), changing nothing
  /// but what a new device or a machine restart makes.
  package func record() throws(AppGroupsError) -> DeviceRecord {
    try transition { record throws(AppGroupsError) in record }
  }

  /// Writes `record` with a new generation under the sequence lock, then wakes the watchers.
  private func publish(_ record: DeviceRecord, on page: SharedWords) {
    var record = record
    record.generation = page.load(9) &+ 1
    var sequence = page.load(1)
    if sequence & 1 == 0 { sequence &+= 1 }
    page.store(1, sequence)
    for (offset, word) in record.words.enumerated() {
      page.store(2 + offset, word)
    }
    page.store(0, DeviceRecord.magic)
    page.store(1, sequence &+ 1)
    // A change of the page through the mapping makes no inotify event; a change of the
    // file's times does (IN_ATTRIB), in every process watching the folder.
    FileSystem.touch(file.page.descriptor)
  }
}

/// The device state page as a reader maps it: read-only (a sandboxed app may read the file
/// and nothing more), one per root per process while someone holds it.
final class DeviceStatePage: Sendable {
  let path: String
  /// The mapped page and its descriptor, replaced when a writer retires the file.
  private let mapping: Mutex<MappedPage?>
  /// Pages of files replaced at the path: unmapped when this goes, as a reader may hold one.
  private let retired = Mutex<[MappedPage]>([])

  private static let registry = WeakRegistry<DeviceStatePage>()

  private init(path: String) {
    self.path = path
    // Mapped at the first read of the state (`currentPage()`), which tries again while
    // there is no file: one `open(2)`, not two.
    mapping = Mutex(nil)
  }

  /// The page of `root` in this process, mapped on first use; the same object for as long as
  /// someone holds it.
  static func shared(root: ContainerRoot) -> DeviceStatePage { shared(rootPath: root.path) }

  /// The page of the root at `rootPath` (resolved, as ``ContainerRoot/path`` is).
  static func shared(rootPath: String) -> DeviceStatePage {
    let path = rootPath + "/Device/state"
    // Opening cannot fail: a missing file is mapped when it appears.
    return
      (try? registry.object(forKey: path) { () throws(AppGroupsError) in
        DeviceStatePage(path: path)
      }) ?? DeviceStatePage(path: path)
  }

  /// The state of `root` now: from the page this process has mapped, or one `pread(2)`.
  static func read(root: ContainerRoot) -> DeviceState { read(rootPath: root.path) }

  /// The state of the root at `rootPath` (resolved, as ``ContainerRoot/path`` is).
  static func read(rootPath: String) -> DeviceState {
    let path = rootPath + "/Device/state"
    if let page = registry.existing(forKey: path) { return page.state }
    return peek(path).state
  }

  /// The state this page holds now (a new device while there is no file).
  var state: DeviceState { record.state }

  /// The state this page holds, when a file is mapped; `nil` while none is, without looking
  /// for one (``state`` tries `open(2)` each time). For a process whose device monitor
  /// watches the folder: it maps the file as soon as it appears, and a device whose data can
  /// be unavailable (a passcode is set) has had its file since before.
  var mappedState: DeviceState? {
    guard mapping.withLock({ $0 != nil }) else { return nil }
    return record.state
  }

  /// The record this page holds now; a retired page is replaced by the file now at the path.
  var record: DeviceRecord {
    guard let page = currentPage() else { return DeviceRecord() }
    for _ in 0..<10_000 {
      let before = page.load(1)
      if before & 1 == 1 { continue }
      let record = DeviceRecord { page.load($0) }
      if page.load(1) == before { return record }
    }
    // A writer died in the middle of an update: the words are whole, each of them.
    return DeviceRecord { page.load($0) }
  }

  /// Maps the file now at the path when it is not the mapped one: the folder or the file was
  /// removed and made again, which no writer retired (a writer retires a file it replaces).
  func remapIfReplaced() {
    // Nothing mapped yet: the next read of the state maps whatever is at the path.
    guard mapping.withLock({ $0.map { _ in true } ?? false }) else { return }
    let atPath = try? FileSystem.identity(ofPath: path)
    mapping.withLock { mapping in
      if let current = mapping, let atPath, let mapped = try? current.file.status().identity,
        mapped.inode == atPath.inode, mapped.device == atPath.device
      {
        return
      }
      guard atPath != nil, let fresh = Self.map(path) else { return }
      if let old = mapping { retired.withLock { $0.append(old) } }
      mapping = fresh
    }
  }

  /// The mapped page, mapping the file if it appeared or was replaced since.
  private func currentPage() -> SharedWords? {
    mapping.withLock { mapping in
      if let current = mapping, current.words.load(LockedFile.retiredWord) != LockedFile.retiredMark {
        return current.words
      }
      guard let fresh = Self.map(path) else { return mapping?.words }
      if let old = mapping { retired.withLock { $0.append(old) } }
      mapping = fresh
      return fresh.words
    }
  }

  /// Maps the page of the file at `path` read-only; `nil` when there is no such regular file
  /// of a page or more.
  private static func map(_ path: String) -> MappedPage? {
    guard let file = try? OpenFile(existing: path, for: .reading) else { return nil }
    return MappedPage(readOnly: file, size: LockedFile.pageSize)
  }

  /// The record in the file at `path`, read as a tool reads it: with `pread(2)`, nothing
  /// created or mapped. A device with no state yet when there is no file.
  static func peek(_ path: String) -> DeviceRecord {
    guard let file = try? OpenFile(existing: path, for: .reading) else { return DeviceRecord() }
    var bytes: [UInt8] = []
    for _ in 0..<100 {
      guard let read = try? file.read(at: 0, count: DeviceRecord.wordCount * 8),
        read.count == DeviceRecord.wordCount * 8
      else { return DeviceRecord() }
      bytes = read
      let sequence = SharedWords.word(1, of: bytes)
      guard sequence & 1 == 0, let again = try? file.read(at: 8, count: 8),
        SharedWords.word(0, of: again) == sequence
      else { continue }
      break
    }
    return DeviceRecord { SharedWords.word($0, of: bytes) }
  }
}

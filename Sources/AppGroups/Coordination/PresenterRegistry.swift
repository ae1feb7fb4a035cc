import Foundation

/// The presenters registered in one container, by every process: one small property list per
/// presenter in `Library/Coordination/presenters`, named `<pid>-<start time>-<number>`.
///
/// A registration belongs to a process: it is live while that process runs (its pid with the
/// same start time) and its inbox has a reader. A process that crashed leaves its files
/// behind; they are stale, skipped by every coordinator and removed by the first that finds
/// them. A generation counter (the first word of `presenters/.generation`, mapped) moves at
/// every change, so that a coordinator re-reads the folder only when it changed.
final class PresenterRegistry: @unchecked Sendable {
  /// One registered presenter.
  struct Record: Sendable, Hashable {
    /// The file's name: `<pid>-<start time>-<number>`.
    var name: String
    /// The presented item's path in the container.
    var item: String
    /// Whether it presents a folder (and hears of the items inside it).
    var isFolder: Bool
    var bundleIdentifier: String
    /// The registering process, `<pid>-<start time>`: its inbox's name.
    var process: String
    /// When it was registered (nanoseconds since 1970): presenters are asked in this order.
    var registered: Int64

    var pid: Int32 { ThisProcess.parse(process)?.0 ?? 0 }

    var propertyList: [String: Any] {
      [
        "item": item, "folder": isFolder, "bundleIdentifier": bundleIdentifier,
        "process": process, "registered": Int(registered),
      ]
    }

    init(
      name: String, item: String, isFolder: Bool, bundleIdentifier: String, process: String,
      registered: Int64
    ) {
      self.name = name
      self.item = item
      self.isFolder = isFolder
      self.bundleIdentifier = bundleIdentifier
      self.process = process
      self.registered = registered
    }

    init?(name: String, propertyList: Any) {
      guard let values = propertyList as? [String: Any], let item = values["item"] as? String,
        let folder = values["folder"] as? Bool,
        let bundle = values["bundleIdentifier"] as? String,
        let process = values["process"] as? String, let registered = values["registered"] as? Int
      else { return nil }
      self.init(
        name: name, item: item, isFolder: folder, bundleIdentifier: bundle, process: process,
        registered: Int64(registered))
    }
  }

  let folder: String
  private var generationPath: String { folder + "/.generation" }

  private struct Cache {
    var generation: UInt64 = .max
    var records: [Record] = []
    /// The mapped counter, when there is one.
    var counter: SharedCounter?
    /// Counters of files replaced at the path: another thread may still read one, so they
    /// stay mapped while the registry lives.
    var retired: [SharedCounter] = []
  }
  private let cache = Mutex(Cache())

  init(folder: String) {
    self.folder = folder
  }

  // MARK: Reading

  /// The live registrations, in registration order, read again only when the folder's
  /// generation moved.
  func records() -> [Record] {
    let counter = mappedCounter()
    let generation = counter?.value
    if let generation, let cached = cache.withLock({ $0.generation == generation ? $0.records : nil }) {
      return cached
    }
    let records = scan()
    if let generation {
      cache.withLock { cache in
        cache.generation = generation
        cache.records = records
      }
    }
    return records
  }

  /// Every registration file's record, live or not, in registration order.
  func scan() -> [Record] {
    var records: [Record] = []
    for name in FileSystem.entryNames(in: folder) where !name.hasPrefix(".") {
      guard let record = record(named: name) else { continue }
      records.append(record)
    }
    return records.sorted { ($0.registered, $0.name) < ($1.registered, $1.name) }
  }

  /// The registration `name` as it reads now; `nil` when it is missing or is not one (a
  /// folder, a link, bytes that are not its property list, more than the 64 KiB no
  /// registration comes near).
  func record(named name: String) -> Record? {
    guard let data = try? FileSystem.readFile(folder + "/" + name, atMost: 1 << 16)?.0,
      let list = try? PropertyListSerialization.propertyList(from: data, format: nil)
    else { return nil }
    return Record(name: name, propertyList: list)
  }

  // MARK: Writing

  /// Writes `record` (a new registration, or one whose item moved).
  func write(_ record: Record) throws(AppGroupsError) {
    let path = folder + "/" + record.name
    do {
      let data = try PropertyListSerialization.data(
        fromPropertyList: record.propertyList, format: .binary, options: 0)
      try FileSystem.replace(path, with: Array(data))
    } catch let error as SystemCallError {
      throw AppGroupsError(io: error, "registering the presenter of \(record.item)")
    } catch {
      throw AppGroupsError(.io, "registering the presenter of \(record.item): \(error)")
    }
    bump()
  }

  /// Removes the registration `name`, if it is there.
  func remove(_ name: String) {
    guard (try? FileSystem.remove(folder + "/" + name)) != nil else { return }
    bump()
  }

  /// Removes the registrations of a process that is gone.
  func removeStale(_ records: [Record]) {
    var removed = false
    for record in records where !ThisProcess.isAlive(record.process) {
      if (try? FileSystem.remove(folder + "/" + record.name)) != nil { removed = true }
    }
    if removed { bump() }
  }

  /// Moves the generation on, so that every process reads the folder again.
  func bump() {
    mappedCounter()?.increment()
  }

  /// The generation counter, mapped (created when missing; mapped again when the file was
  /// replaced); `nil` when it cannot be, and then the folder is read every time.
  private func mappedCounter() -> SharedCounter? {
    let path = generationPath
    let atPath = try? FileSystem.identity(ofPath: path)
    let current = cache.withLock { cache in
      cache.counter.flatMap { $0.inode == atPath?.inode ? $0 : nil }
    }
    if let current { return current }
    guard let counter = SharedCounter(path: path) else { return nil }
    cache.withLock { cache in
      if let old = cache.counter { cache.retired.append(old) }
      cache.counter = counter
      cache.generation = .max
    }
    return counter
  }
}

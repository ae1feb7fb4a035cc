import Foundation

/// What a presenter hears of its item when a process changes it without coordinating: the
/// library watches the item's folder (the process's one change monitor, inotify) and compares
/// the item with what it last saw (device, inode, size, modification time).
///
/// - The item changed: `presentedItemDidChange()`.
/// - The item is gone (removed, or renamed away): `accommodatePresentedItemDeletion`, its
///   completion handler ignored (it is too late to refuse), and a line on stderr naming the
///   item; the presenter stays registered, and hears of the item again if it comes back.
///
/// A coordinated write is not heard twice: while a coordinator has asked the presenter to
/// relinquish, the watch stays quiet, and the coordinator's tell records what the item looks
/// like after the write.
enum UncoordinatedChanges {
  /// What the item looked like: `nil` when it did not exist.
  struct Stamp: Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: Int64

    init?(path: String) {
      guard let identity = try? FileSystem.identity(ofPath: path) else { return nil }
      device = identity.device
      inode = identity.inode
      size = identity.size
      modified = identity.modified
    }
  }

  private struct Watched {
    var stamp: Stamp?
    var quiet = 0
  }

  private static let state = Mutex<[String: Watched]>([:])

  /// Watches `entry`'s item from now on (replacing an earlier watch).
  static func watch(_ entry: PresenterHost.Entry) {
    guard let item = PresenterHost.shared.currentItem(of: entry), !item.relativePath.isEmpty else { return }
    let path = item.path
    let folder = FileSystem.folder(of: path)
    let name = FileSystem.lastComponent(of: path)
    let key = entry.name
    state.withLock { $0[key] = Watched(stamp: Stamp(path: path)) }
    let observation: Observation?
    do {
      let id = try ChangeMonitor.shared.addListener(directory: folder, prefix: name) { changed in
        guard changed.isEmpty || changed == name else { return }
        check(key)
      }
      observation = Observation { ChangeMonitor.shared.removeListener(id) }
    } catch {
      observation = nil
      Diagnostics.report(
        "cannot watch \(folder) for changes to \(name) made without coordination (\(error.message))")
    }
    PresenterHost.shared.setWatch(observation, of: entry)
  }

  /// A coordinator asked the presenter `key` to relinquish (`true`), or told it what happened
  /// (`false`): quiet meanwhile, then what the item is now.
  static func coordinated(_ key: String, begins: Bool, path: String?) {
    state.withLock { state in
      guard var watched = state[key] else { return }
      watched.quiet = max(0, watched.quiet + (begins ? 1 : -1))
      if !begins, let path { watched.stamp = Stamp(path: path) }
      state[key] = watched
    }
  }

  /// Looks at the item of presenter `key` now, as after an event in its folder: a
  /// coordinator that was killed in its access told nothing of what it did.
  static func lookAgain(_ key: String) { check(key) }

  static func forget(_ key: String) {
    _ = state.withLock { $0.removeValue(forKey: key) }
  }

  /// Looks at the item of presenter `key` after an event in its folder.
  private static func check(_ key: String) {
    guard let entry = PresenterHost.shared.entry(named: key),
      let item = PresenterHost.shared.currentItem(of: entry)
    else { return }
    let now = Stamp(path: item.path)
    let changed: Bool = state.withLock { state in
      guard var watched = state[key], watched.quiet == 0, watched.stamp != now else { return false }
      watched.stamp = now
      state[key] = watched
      return true
    }
    guard changed else { return }
    let presenter = UncheckedBox(value: entry.presenter)
    let queue = entry.presenter.presentedItemOperationQueue
    if now == nil {
      Diagnostics.report(
        "\(item.path) was removed by a process that did not coordinate; its presenter"
          + " (\(entry.bundleIdentifier)) is told accommodatePresentedItemDeletion")
      queue.addOperation { presenter.value.accommodatePresentedItemDeletion { _ in } }
    } else {
      queue.addOperation { presenter.value.presentedItemDidChange() }
    }
  }
}

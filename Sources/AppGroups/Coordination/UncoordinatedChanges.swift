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
/// A coordinated access is not heard again: while a coordinator has asked the presenter to
/// relinquish, the watch stays quiet. When the access ends, the coordinator looks at the item
/// itself, still holding its claim (no other coordinated access comes between), and its tell
/// carries what it saw (``Seen``). The presenter takes that as what it last saw of the item and
/// looks at once: a change made after the access and before the presenter handled the tell
/// (which the coordinator sends and does not wait for) differs from it, and is heard as made
/// without coordination, after the tell's callbacks. (The presenter once looked for itself
/// when it handled the tell: such a change was in what it saw, and never heard.) A tell that
/// carries nothing (the coordinator could not look, or is of an earlier build), or what the
/// coordinator saw at another path than the presenter's item, leaves the presenter to look for
/// itself; a coordinator killed in its access tells nothing, and the item is compared with
/// what the presenter saw before it.
///
/// A look is of the path watched, and counts only when nothing else changed the watch between
/// the look and its comparison: a look begun before a coordinator's tell and ended after it
/// saw the item as it was in the access (the look after the tell sees it again). Above all,
/// one begun before the presenter followed a coordinated move of its item saw the old path
/// empty, which is no deletion: compared with the new path's stamp, it made the presenter hear
/// `accommodatePresentedItemDeletion` after `presentedItemDidMove(to:)`. The next event in the
/// folder looks again.
enum UncoordinatedChanges {
  /// What the item looked like: `nil` when it did not exist.
  struct Stamp: Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: Int64

    init?(path: String) {
      guard let identity = try? FileSystem.identity(ofPath: path) else { return nil }
      self.init(identity)
    }

    init(_ identity: FileIdentity) {
      self.init(
        device: identity.device, inode: identity.inode, size: identity.size,
        modified: identity.modified)
    }

    init(device: UInt64, inode: UInt64, size: Int64, modified: Int64) {
      self.device = device
      self.inode = inode
      self.size = size
      self.modified = modified
    }
  }

  /// What a coordinator saw of a presenter's item when its access ended, carried by its tell
  /// (``CoordinationMessage/text``): the item's stamp, or that there was no item.
  struct Seen: Equatable {
    var stamp: Stamp?

    /// The item at `path` as it is now; `nil` when it could not be looked at (an item that
    /// does not exist is seen so).
    init?(lookingAt path: String) {
      do throws(SystemCallError) {
        stamp = try FileSystem.identity(ofPath: path).map(Stamp.init)
      } catch {
        return nil
      }
    }

    /// As a tell carries it: `seen:<device>:<inode>:<size>:<modified>`, or `seen:none`.
    var carried: String {
      guard let stamp else { return "seen:none" }
      return "seen:\(stamp.device):\(stamp.inode):\(stamp.size):\(stamp.modified)"
    }

    /// Read back from a tell's ``carried`` text; `nil` when the tell carries none.
    init?(carried text: String) {
      if text == "seen:none" {
        stamp = nil
        return
      }
      let fields = text.split(separator: ":", omittingEmptySubsequences: false)
      guard fields.count == 5, fields[0] == "seen", let device = UInt64(fields[1]),
        let inode = UInt64(fields[2]), let size = Int64(fields[3]), let modified = Int64(fields[4])
      else { return nil }
      stamp = Stamp(device: device, inode: inode, size: size, modified: modified)
    }
  }

  private struct Watched {
    /// The path watched: the presenter's item when the watch was made or a coordinator last
    /// told it what happened.
    var path: String
    var stamp: Stamp?
    var quiet = 0
    /// Counts every change of the watch: a look that began under another number is out of
    /// date.
    var generation: UInt64 = 0

    mutating func changed() { generation &+= 1 }
  }

  private static let state = Mutex<[String: Watched]>([:])

  /// Watches `entry`'s item from now on (replacing an earlier watch).
  static func watch(_ entry: PresenterHost.Entry) {
    guard let item = PresenterHost.shared.currentItem(of: entry), !item.relativePath.isEmpty else { return }
    let path = item.path
    let folder = FileSystem.folder(of: path)
    let name = FileSystem.lastComponent(of: path)
    let key = entry.name
    state.withLock { state in
      // Made again for a presenter that followed a move while a coordinator had it relinquish:
      // quiet still, until that coordinator's tell.
      var watched = state[key] ?? Watched(path: path)
      watched.path = path
      watched.stamp = Stamp(path: path)
      watched.changed()
      state[key] = watched
    }
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
  /// (`false`): quiet meanwhile, then the item at `path`, as the coordinator saw it when its
  /// access ended (`seen`), or else as it is now. A coordinator that told nothing (`path`
  /// `nil`) leaves what the presenter saw before.
  static func coordinated(_ key: String, begins: Bool, path: String?, seen: Seen? = nil) {
    state.withLock { state in
      guard var watched = state[key] else { return }
      watched.quiet = max(0, watched.quiet + (begins ? 1 : -1))
      if !begins, let path {
        watched.path = path
        if let seen {
          watched.stamp = seen.stamp
        } else {
          watched.stamp = Stamp(path: path)
        }
      }
      watched.changed()
      state[key] = watched
    }
  }

  /// Looks at the item of presenter `key` now, as after an event in its folder: once a
  /// coordinator told what happened (a change made since it saw the item is heard), or was
  /// killed in its access and told nothing of what it did.
  static func lookAgain(_ key: String) { check(key, afterEvent: false) }

  static func forget(_ key: String) {
    _ = state.withLock { $0.removeValue(forKey: key) }
  }

  /// Looks at the item of presenter `key` after an event in its folder (`afterEvent`), or
  /// after a coordinator's access.
  private static func check(_ key: String, afterEvent: Bool = true) {
    guard let entry = PresenterHost.shared.entry(named: key),
      let (path, generation) = state.withLock({ state in state[key].map { ($0.path, $0.generation) } })
    else { return }
    let now = Stamp(path: path)
    let held = now == nil && afterEvent ? TestHooks.lookAcrossMove : nil
    held?.lookBegins()
    defer { held?.lookEnded() }
    let changed: Bool = state.withLock { state in
      guard var watched = state[key], watched.generation == generation, watched.quiet == 0,
        watched.stamp != now
      else { return false }
      watched.stamp = now
      watched.changed()
      state[key] = watched
      return true
    }
    guard changed else { return }
    let presenter = UncheckedBox(value: entry.presenter)
    let queue = entry.presenter.presentedItemOperationQueue
    if now == nil {
      Diagnostics.report(
        "\(path) was removed by a process that did not coordinate; its presenter"
          + " (\(entry.bundleIdentifier)) is told accommodatePresentedItemDeletion")
      queue.addOperation { presenter.value.accommodatePresentedItemDeletion { _ in } }
    } else {
      queue.addOperation { presenter.value.presentedItemDidChange() }
    }
  }
}

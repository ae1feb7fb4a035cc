internal import Synchronization

/// A reference that does not keep its object alive: a registry of live objects holds these,
/// so that an object goes away when its last user lets go of it.
///
/// `@unchecked`: the `weak` field is a variable, but it is only read and written under the
/// lock of the registry that holds it (or, in ``WeakBox``, set once before it is shared).
struct WeakReference<Object: AnyObject & Sendable>: @unchecked Sendable {
  weak var object: Object?

  init(_ object: Object?) { self.object = object }
}

/// ``WeakReference`` as a class, for a reference set after the object that shares it is
/// made (a callback made in an initializer, pointing back at the object).
final class WeakBox<Object: AnyObject & Sendable>: @unchecked Sendable {
  weak var object: Object?

  init() {}
}

/// The objects of one kind shared in this process, one per key (a file's or folder's
/// path), held weakly: the first user opens one, later users get the same one while it is
/// alive, and it goes away with its last user.
final class WeakRegistry<Object: AnyObject & Sendable>: Sendable {
  private let entries = Mutex<[String: WeakReference<Object>]>([:])

  init() {}

  /// The live object for `key`, or the one `open` makes, registered under `key`. `open` runs
  /// under the registry's lock, so two threads never open one key twice; it must not use
  /// this registry.
  func object(
    forKey key: String, opening open: () throws(AppGroupsError) -> Object
  ) throws(AppGroupsError) -> Object {
    let result: Result<Object, AppGroupsError> = entries.withLock { entries in
      if let existing = entries[key]?.object { return .success(existing) }
      let opened = Result { () throws(AppGroupsError) in try open() }
      if case .success(let object) = opened {
        // Forget objects that are gone, so that a process opening many keys in turn does
        // not keep an entry for each (amortised: when the table doubles).
        if entries.count >= 64 && entries.count.nonzeroBitCount == 1 {
          entries = entries.filter { $0.value.object != nil }
        }
        entries[key] = WeakReference(object)
      }
      return opened
    }
    return try result.get()
  }

  /// The live object for `key`, if there is one; opens nothing.
  func existing(forKey key: String) -> Object? { entries.withLock { $0[key]?.object } }

  /// Every live object.
  var all: [Object] { entries.withLock { $0.values.compactMap(\.object) } }
}

internal import Synchronization

/// A reference that does not keep its object alive, so that an object goes away when its
/// last user lets go of it. (The code a new process runs to open its first suite uses
/// non-generic ones, see ``WeakRegistry``.)
///
/// `@unchecked`: the `weak` field is a variable, but it is only read and written under the
/// lock of whatever holds it.
struct WeakReference<Object: AnyObject & Sendable>: @unchecked Sendable {
  weak var object: Object?

  init(_ object: Object?) { self.object = object }
}

/// The objects of one kind shared in this process, one per key (a file's or folder's
/// path), held weakly: the first user opens one, later users get the same one while it is
/// alive, and it goes away with its last user.
///
/// A struct over one table type that every registry shares: each generic type a process
/// uses costs it a metadata instantiation the first time (a demangling, a cache insertion,
/// and for a dictionary's storage a conformance lookup), and a new process opening its first
/// suite went through five registries. Generic, each would bring its own class, its
/// `WeakReference<Object>`, that reference's `Optional` and a dictionary storage of them;
/// this way all of them use one set, instantiated once.
struct WeakRegistry<Object: AnyObject & Sendable>: Sendable {
  private let table = WeakTable()

  init() {}

  /// The live object for `key`, or the one `open` makes, registered under `key`. `open` runs
  /// under the registry's lock, so two threads never open one key twice; it must not use
  /// this registry.
  func object(
    forKey key: String, opening open: () throws(AppGroupsError) -> Object
  ) throws(AppGroupsError) -> Object {
    // Only `Object`s are ever put in this table: the downcasts cannot fail.
    let found = try table.object(forKey: key) { () throws(AppGroupsError) -> AnyObject in try open() }
    return unsafeDowncast(found, to: Object.self)
  }

  /// The live object for `key`, if there is one; opens nothing.
  func existing(forKey key: String) -> Object? {
    table.existing(forKey: key).map { unsafeDowncast($0, to: Object.self) }
  }

  /// Every live object.
  var all: [Object] { table.all.map { unsafeDowncast($0, to: Object.self) } }
}

/// A weak reference to any object, not generic, for the reason ``WeakRegistry`` gives: the
/// tables a new process fills at its first open (``WeakRegistry``'s, the change monitor's
/// stores by file name) are all `[String: AnyWeakReference]`, one type instantiated once.
///
/// A class, not a struct: a table's lookup gives an optional reference, which needs no type
/// of its own, where the `Optional` of a struct holding a weak field was instantiated at every
/// new process's first open.
///
/// `@unchecked`: the `weak` field is a variable, but it is set only when the reference is
/// made, and read after that only.
final class AnyWeakReference: @unchecked Sendable {
  private(set) weak var object: AnyObject?

  init(_ object: AnyObject?) { self.object = object }
}

/// ``WeakRegistry``'s table, the same type whatever the registry holds.
private final class WeakTable: Sendable {
  private let entries = Mutex<[String: AnyWeakReference]>([:])

  func object(
    forKey key: String, opening open: () throws(AppGroupsError) -> AnyObject
  ) throws(AppGroupsError) -> AnyObject {
    // The outcome as a pair of optionals, not a `Result`: a `Result<AnyObject, AppGroupsError>`
    // would be one more generic type instantiated at a process's first open.
    let (object, failure): (AnyObject?, AppGroupsError?) = entries.withLock { entries in
      if let existing = entries[key]?.object { return (existing, nil) }
      let opened: AnyObject
      do throws(AppGroupsError) {
        opened = try open()
      } catch {
        return (nil, error)
      }
      // Forget objects that are gone, so that a process opening many keys in turn does
      // not keep an entry for each (amortised: when the table doubles).
      if entries.count >= 64 && entries.count.nonzeroBitCount == 1 {
        entries = entries.filter { $0.value.object != nil }
      }
      entries[key] = AnyWeakReference(opened)
      return (opened, nil)
    }
    if let failure { throw failure }
    return object!
  }

  func existing(forKey key: String) -> AnyObject? { entries.withLock { $0[key]?.object } }

  var all: [AnyObject] { entries.withLock { $0.values.compactMap(\.object) } }
}

internal import Foundation

/// A suite's values as this process holds them: the one type of a store's memory
/// (``SuiteStore/State/values``) and of what its file last read or wrote
/// (``SuiteFile/CommitState/persisted``).
///
/// Read from a binary plist that ``BinaryPropertyListIndex`` accepts, they are the file's
/// bytes and an index of its keys (checked whole when read: a damaged value is found then,
/// as before), with an overlay of the changes read one key at a time since (the journal's
/// records, an atomic update's keys): a value is decoded when it is read, and opening a
/// large suite builds no dictionary. Anything that needs every value (a `set`, a commit, a
/// whole-domain read, a diff against values that are not indexed) takes ``decoded``: the
/// whole file decoded once, shared by every holder of the index, with the overlay on top.
/// Otherwise (a file the index declines, values this process wrote) they are a dictionary.
struct SuiteValues: Sendable, Equatable, ExpressibleByDictionaryLiteral {
  /// The file's bytes and key index; `nil`: the values are `dictionary`.
  private var index: BinaryPropertyListIndex?
  /// With `index`: the values set over it. A key is in at most one of `overlay` and
  /// `removed`. Two collections, not one dictionary of optional values: this dictionary type
  /// is one a process has already made (the entitlement manifest's), and a new process that
  /// applies a journal when it opens a suite does not pay another's first instantiation.
  private var overlay: [String: PropertyListValue] = [:]
  /// With `index`: the keys removed from it.
  private var removed: Set<String> = []
  /// Without `index`: the values.
  private var dictionary: [String: PropertyListValue]
  /// With `index`: how many keys there are, the overlay's changes counted.
  private var indexedCount = 0

  init() { dictionary = [:] }

  init(_ values: [String: PropertyListValue]) { dictionary = values }

  init(dictionaryLiteral elements: (String, PropertyListValue)...) {
    dictionary = Dictionary(elements) { first, _ in first }
  }

  /// The values of an indexed file.
  init(indexed index: BinaryPropertyListIndex) {
    self.index = index
    dictionary = [:]
    indexedCount = index.count
  }

  /// Whether the values are held as an indexed file (for tests and the benchmark).
  var isIndexed: Bool { index != nil }

  var count: Int { index == nil ? dictionary.count : indexedCount }

  var isEmpty: Bool { count == 0 }

  /// The value of `key`: decoded now when it comes from the indexed file.
  func value(forKey key: String) -> PropertyListValue? {
    guard let index else { return dictionary.isEmpty ? nil : dictionary[key] }
    if !overlay.isEmpty, let changed = overlay[key] { return changed }
    if !removed.isEmpty, removed.contains(key) { return nil }
    switch index.lookup(key) {
    case .found(let value): return value
    case .absent: return nil
    // Not ASCII: perhaps canonically equal to an ASCII key; the whole decode answers.
    case .unknown: return index.decoded[key]
    }
  }

  subscript(key: String) -> PropertyListValue? {
    get { value(forKey: key) }
    set {
      if let newValue { updateValue(newValue, forKey: key) } else { removeValue(forKey: key) }
    }
  }

  /// Every key and value: for an indexed file, the whole file decoded (once, shared by every
  /// holder of the index) with the overlay on top.
  var decoded: [String: PropertyListValue] {
    guard let index else { return dictionary }
    var values = index.decoded
    for (key, value) in overlay { values[key] = value }
    for key in removed { values.removeValue(forKey: key) }
    return values
  }

  /// Holds the values as a dictionary from now on (before a run of changes: a `set` changes a
  /// dictionary in place, at a dictionary's cost).
  mutating func decodeWhole() {
    guard index != nil else { return }
    dictionary = decoded
    index = nil
    overlay = [:]
    removed = []
    indexedCount = 0
  }

  /// Sets `value` under `key`. - Returns: the value it replaced.
  @discardableResult
  mutating func updateValue(_ value: PropertyListValue, forKey key: String) -> PropertyListValue? {
    guard index != nil else {
      // A burst of new keys: a small domain grows four times over, not twice, so that each key
      // is hashed again on growth a third as often; from 16,384 keys on, as the dictionary
      // grows by itself, for its memory.
      if dictionary.count == dictionary.capacity && dictionary.count < 16_384 {
        dictionary.reserveCapacity(dictionary.count &* 4)
      }
      return dictionary.updateValue(value, forKey: key)
    }
    let old = self.value(forKey: key)
    overlay[key] = value
    if !removed.isEmpty { removed.remove(key) }
    if old == nil { indexedCount &+= 1 }
    boundOverlay()
    return old
  }

  /// Makes room for `capacity` keys at once, when held as a dictionary.
  mutating func reserveCapacity(_ capacity: Int) {
    guard index == nil, dictionary.capacity < capacity else { return }
    dictionary.reserveCapacity(capacity)
  }

  /// Removes `key`. - Returns: the value it held.
  @discardableResult
  mutating func removeValue(forKey key: String) -> PropertyListValue? {
    guard index != nil else { return dictionary.removeValue(forKey: key) }
    guard let old = value(forKey: key) else { return nil }
    if !overlay.isEmpty { overlay.removeValue(forKey: key) }
    removed.insert(key)
    indexedCount &-= 1
    boundOverlay()
    return old
  }

  /// An overlay that has grown to a good part of the domain is folded into a dictionary: the
  /// index then saves nothing, and every read would look in two places.
  private mutating func boundOverlay() {
    let changed = overlay.count &+ removed.count
    if changed > 64 && changed > indexedCount / 8 { decodeWhole() }
  }

  /// About how many bytes the values take encoded (``SuiteStore/estimate(_:)``): a pass over
  /// every value, so asked for only when needed (a `set`, an atomic update).
  var sizeEstimate: Int {
    decoded.reduce(8) { $0 + PropertyListValue.estimatedEntrySize(key: $1.key, value: $1.value) }
  }

  /// What changed from these values to `new`, key by key. Two indexed files are compared as
  /// bytes, key by key: only the keys whose bytes differ (and the overlays' keys) are
  /// decoded. Otherwise both sides are taken whole.
  func changes(to new: SuiteValues) -> [StoredChange] {
    guard let old = index, let current = new.index else { return Self.changes(from: decoded, to: new.decoded) }
    var keys = old.keysDiffering(from: current)
    if !isPlainIndex || !new.isPlainIndex {
      var seen = Set(keys)
      for key in overlay.keys where seen.insert(key).inserted { keys.append(key) }
      for key in removed where seen.insert(key).inserted { keys.append(key) }
      for key in new.overlay.keys where seen.insert(key).inserted { keys.append(key) }
      for key in new.removed where seen.insert(key).inserted { keys.append(key) }
    }
    var changes: [StoredChange] = []
    for key in keys {
      let before = value(forKey: key)
      let after = new.value(forKey: key)
      if before != after { changes.append(StoredChange(key: key, old: before, new: after)) }
    }
    return changes
  }

  /// What changed from `old` to `new`, key by key: `new`'s keys in its order, then the keys
  /// it no longer holds in `old`'s. One look-up in `old` per key of `new`; `new` is searched
  /// for `old`'s keys only when some of them were not met (a file re-read with the same keys,
  /// the usual case, costs one hash per key, not three).
  static func changes(
    from old: [String: PropertyListValue], to new: [String: PropertyListValue]
  ) -> [StoredChange] {
    var changes: [StoredChange] = []
    var kept = 0
    for (key, value) in new {
      let before = old[key]
      if before != nil { kept &+= 1 }
      if before != value { changes.append(StoredChange(key: key, old: before, new: value)) }
    }
    if kept < old.count {
      for (key, value) in old where new[key] == nil {
        changes.append(StoredChange(key: key, old: value, new: nil))
      }
    }
    return changes
  }

  /// With `index`: whether nothing was changed over it.
  private var isPlainIndex: Bool { overlay.isEmpty && removed.isEmpty }

  static func == (lhs: SuiteValues, rhs: SuiteValues) -> Bool {
    if let a = lhs.index, let b = rhs.index, lhs.isPlainIndex, rhs.isPlainIndex, a === b || a.data == b.data {
      return true
    }
    return lhs.count == rhs.count && lhs.decoded == rhs.decoded
  }
}

internal import Foundation

// A key a binary property list's dictionary holds twice. The decoder notes the first one it
// meets (``BinaryPropertyListReader/repeated``), where it would otherwise keep one of the
// values without a word, so that a suite's file is refused or read in part around it; this
// walk is apart from it, for a document another parser reads (the entitlement manifest,
// `groupctl import`'s check).

extension BinaryPropertyList {
  /// A key that one dictionary holds twice: two of its keys decode to equal strings.
  struct RepeatedKey: Sendable, Equatable {
    /// The key.
    let key: String
    /// The top dictionary's key whose value holds the key; `nil` when the top dictionary
    /// holds it twice.
    var entry: String?
    /// The dictionary's object number.
    let object: Int
    /// The places (0 first) of the two keys in the dictionary.
    let first: Int
    let second: Int

    /// Why a file holding it is not read as it stands: the key, the top-level key whose value
    /// holds it, and both places.
    var reason: String {
      let entry = self.entry.map { " in the value of \($0.debugDescription)" } ?? ""
      return "the key \(key.debugDescription) is given twice\(entry) (keys \(first) and \(second) of"
        + " dictionary object \(object)); a dictionary holds each key once"
    }
  }

  /// A ``RepeatedKey`` held by reference (see ``BinaryPropertyListReader/repeated``).
  final class RepeatedKeyNote {
    let repeated: RepeatedKey
    init(_ repeated: RepeatedKey) { self.repeated = repeated }
  }

  /// The first key, in the order of the file, that the top dictionary of `data`, or one of the
  /// dictionaries that are its values, holds twice; `nil` when there is none, or when `data` is
  /// not a binary property list whose top object is a dictionary with readable keys (the
  /// decoder says what is wrong with it).
  static func repeatedKey(in data: Data) -> RepeatedKey? {
    data.withUnsafeBytes { raw -> RepeatedKey? in
      do throws(AppGroupsError) {
        var reader = try BinaryPropertyListReader(raw)
        return try reader.repeatedKey()
      } catch {
        return nil
      }
    }
  }
}

extension BinaryPropertyListReader {
  /// Notes (in ``repeated``, unless a repeat is noted already) that dictionary `object`, whose
  /// key references start at `start`, holds `key` again at its entry `place`; `entry` is the
  /// top dictionary's key whose value holds it, when the decode started at the top. Out of
  /// line: the decode's rare path.
  @inline(never)
  mutating func noteRepeat(of key: String, in object: Int, at start: Int, place: Int, entry: String?) {
    guard repeated == nil else { return }
    let first = firstPlace(of: key, in: object, at: start, before: place)
    repeated = .init(key: key, entry: entry, object: object, first: first, second: place)
  }

  /// The place (0 first) of `key`'s first entry in dictionary `object`, whose key references
  /// start at `start`, among its entries before `place` (which holds it again); `place` when
  /// none of them can be read as it. Read by a copy of the reader: nothing is spent.
  func firstPlace(of key: String, in object: Int, at start: Int, before place: Int) -> Int {
    var reader = self
    for index in 0..<place where (try? reader.key(in: object, at: start, index: index)) == key {
      return index
    }
    return place
  }

  /// ``BinaryPropertyList/repeatedKey(in:)`` of this file.
  mutating func repeatedKey() throws(AppGroupsError) -> BinaryPropertyList.RepeatedKey? {
    guard let top = try keys(of: topObject) else { return nil }
    var seen: [String: Int] = [:]
    for (index, key) in top.keys.enumerated() {
      if let first = seen.updateValue(index, forKey: key) {
        return .init(key: key, entry: nil, object: topObject, first: first, second: index)
      }
      let value = try reference(from: topObject, at: top.start &+ top.keys.count &* refWidth, index: index)
      guard let fields = try keys(of: value) else { continue }
      var seenFields: [String: Int] = [:]
      for (place, field) in fields.keys.enumerated() {
        if let first = seenFields.updateValue(place, forKey: field) {
          return .init(key: field, entry: key, object: value, first: first, second: place)
        }
      }
    }
    return nil
  }

  /// The keys of object `object`, and where its key references start, when it is a
  /// dictionary; `nil` when it is another kind of object.
  private mutating func keys(of object: Int) throws(AppGroupsError) -> (keys: [String], start: Int)? {
    let offset = try offset(of: object)
    guard byte(at: offset) &>> 4 == 0xD else { return nil }
    let (count, start) = try header(object: object, at: offset)
    try checkRange(object: object, start: start, count: count &* refWidth &* 2, what: "references")
    var keys: [String] = []
    keys.reserveCapacity(count)
    for index in 0..<count {
      keys.append(try key(in: object, at: start, index: index))
    }
    return (keys, start)
  }
}

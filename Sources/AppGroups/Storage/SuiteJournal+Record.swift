// Reading one journal record's payload, `{s: {key: value}, r: [key]}`, into its changes.

extension SuiteJournal {
  /// The changes of a record's payload, the removals first; `nil` when it is not a binary
  /// property list of that shape (a removed key that is not a string included).
  ///
  /// Read in place, the values one by one, not through a decoded dictionary of dictionaries:
  /// a new process that opens a suite with a journal reads each record once, and the two
  /// dictionaries a record would be decoded into cost it their making and filling (and their
  /// types' first instantiation), for changes that are then applied one by one anyway.
  /// What the reader's decode of the dictionaries would have given, it gives: a duplicate
  /// key's first entry decides (the set keys are listed last to first, and the last applied
  /// wins; this package never writes a key twice); an entry
  /// other than `s` and `r` is decoded, so that a record that does not decode is refused
  /// whole.
  static func recordChanges(_ payload: ArraySlice<UInt8>) -> [Change]? {
    var changes: [Change] = []
    return recordChanges(payload, into: &changes) ? changes : nil
  }

  /// ``recordChanges(_:)`` appended to `changes`, which a record that does not read leaves as
  /// they were. One array for a whole journal, grown as arrays grow, not one per record
  /// appended to another (three allocations a record, at a new process's first open).
  /// - Returns: whether the record was read.
  static func recordChanges(_ payload: ArraySlice<UInt8>, into changes: inout [Change]) -> Bool {
    let before = changes.count
    let read = payload.withUnsafeBytes { raw -> Bool in
      do throws(AppGroupsError) {
        var reader = try BinaryPropertyListReader(raw)
        return try reader.journalChanges(into: &changes)
      } catch {
        return false
      }
    }
    if !read && changes.count > before { changes.removeSubrange(before...) }
    return read
  }
}

extension BinaryPropertyListReader {
  /// See ``SuiteJournal/recordChanges(_:)``.
  fileprivate mutating func journalChanges(into changes: inout [SuiteJournal.Change]) throws(AppGroupsError) -> Bool {
    guard let (count, keys) = try enterContainer(topObject, kind: 0xD, depth: 0) else { return false }
    let values = keys &+ count &* refWidth
    var set: Int? = nil
    var removed: Int? = nil
    for index in 0..<count {
      let key = try self.key(in: topObject, at: keys, index: index)
      let object = try reference(from: topObject, at: values, index: index)
      if key == "s" && set == nil {
        set = object
      } else if key == "r" && removed == nil {
        removed = object
      } else {
        _ = try decode(object: object, depth: 1)
      }
    }
    guard let set, let removed else { return false }
    // One container open at a time, as a decoding of the whole record has it: a value set may
    // be the very object that lists the removed keys (a writer may share equal objects).
    guard let (removedCount, removedStart) = try enterContainer(removed, kind: 0xA, depth: 1) else {
      return false
    }
    for index in 0..<removedCount {
      let element = try reference(from: removed, at: removedStart, index: index)
      try spend(element)
      let offset = try offset(of: element)
      let kind = byte(at: offset) &>> 4
      guard kind == 0x5 || kind == 0x6 else { return false }
      changes.append(SuiteJournal.Change(try string(object: element, at: offset), nil))
    }
    open[removed] = false
    guard let (setCount, setKeys) = try enterContainer(set, kind: 0xD, depth: 1) else { return false }
    let setValues = setKeys &+ setCount &* refWidth
    // Last to first: of a duplicate key, the first entry is applied last, and decides.
    for index in (0..<setCount).reversed() {
      let key = try self.key(in: set, at: setKeys, index: index)
      let value = try decode(object: try reference(from: set, at: setValues, index: index), depth: 2)
      changes.append(SuiteJournal.Change(key, value))
    }
    open[set] = false
    open[topObject] = false
    return true
  }

  /// Enters the container `object` when its marker is of `kind` (0xD a dictionary,
  /// 0xA an array): its count and where its references start; `nil` when it is another kind.
  private mutating func enterContainer(
    _ object: Int, kind: UInt8, depth: Int
  ) throws(AppGroupsError) -> (count: Int, start: Int)? {
    let offset = try offset(of: object)
    guard byte(at: offset) &>> 4 == kind else { return nil }
    try spend(object)
    return try enter(object: object, at: offset, isDictionary: kind == 0xD, depth: depth)
  }
}

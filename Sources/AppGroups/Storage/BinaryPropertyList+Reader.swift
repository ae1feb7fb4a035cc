internal import Foundation

// The reader of ``BinaryPropertyList``: objects decoded in place from the file's bytes.

/// A binary property list's trailer and offset table, checked, over the file's bytes.
struct BinaryPropertyListReader {
  let base: UnsafeRawPointer
  /// The file's size.
  let size: Int
  let offsetWidth: Int
  let refWidth: Int
  let objectCount: Int
  let topObject: Int
  /// Where the offset table starts, which is where the objects end.
  let tableOffset: Int
  /// For each object, whether it is a container being decoded: meeting one
  /// again means a cycle. Allocated when a second container is opened inside the first
  /// (until then ``onlyOpen`` is the one open container): a file whose top dictionary
  /// holds no container, as most suites' do, allocates no table (an array whose storage
  /// type the runtime looks up by its metadata on every allocation).
  var open: [Bool] = []
  /// The one container being decoded while ``open`` is not allocated, or -1.
  var onlyOpen = -1
  /// How many more objects may be decoded (counting shared ones each time).
  var budget: Int
  /// How many more bytes of strings and data may be decoded (counting shared ones each
  /// time): the objects' budget alone let a file of 1 MB whose one data object of 1 MiB is
  /// shared 20,000 times be decoded into 20 GB. 64 MiB, and 16 for each byte of the file:
  /// what sharing saves in a file this package or Foundation writes is far below it.
  var bytesLeft: Int
  /// The first key a dictionary decoded so far holds twice (its first value is the one kept):
  /// ``decodeTop()`` refuses such a file and ``salvageTop()`` leaves out its top-level key, as
  /// nothing says which of the values the file means. Noted where the decode meets the repeat,
  /// so a file without one pays nothing for the check; held by reference, so that the reader
  /// stays as small to copy as it was (an inline note made the index's fill copy it with
  /// `memcpy`: 3 K more instructions at a cold open of 1,000 keys).
  var repeated: BinaryPropertyList.RepeatedKey? {
    get { repeatedNote?.repeated }
    set { repeatedNote = newValue.map(BinaryPropertyList.RepeatedKeyNote.init) }
  }
  private var repeatedNote: BinaryPropertyList.RepeatedKeyNote?

  init(_ raw: UnsafeRawBufferPointer) throws(AppGroupsError) {
    let size = raw.count
    guard let base = raw.baseAddress, size >= 8 else {
      throw BinaryPropertyList.corrupt("the file is \(size) bytes, too short for the 8-byte header")
    }
    guard BinaryPropertyListReader.bigEndian(base, at: 0, width: 6) == BinaryPropertyList.magic &>> 16 else {
      throw BinaryPropertyList.corrupt("the file does not start with \"bplist00\"")
    }
    let major = base.load(fromByteOffset: 6, as: UInt8.self)
    let minor = base.load(fromByteOffset: 7, as: UInt8.self)
    guard major == UInt8(ascii: "0"), minor == UInt8(ascii: "0") else {
      let printable = (0x21...0x7E).contains(major) && (0x21...0x7E).contains(minor)
      let version = printable
        ? "\"\(String(decoding: [major, minor], as: UTF8.self))\""
        : "0x\(String(major, radix: 16)) 0x\(String(minor, radix: 16))"
      throw BinaryPropertyList.corrupt("version \(version) is not supported (only \"00\")")
    }
    // The smallest file: header, a one-byte object, a one-byte offset, trailer.
    guard size >= 8 + 1 + 1 + 32 else {
      throw BinaryPropertyList.corrupt("the file is \(size) bytes, too short for an object, an offset table and the 32-byte trailer")
    }
    let trailer = size &- 32
    let offsetWidth = Int(base.load(fromByteOffset: trailer &+ 6, as: UInt8.self))
    let refWidth = Int(base.load(fromByteOffset: trailer &+ 7, as: UInt8.self))
    let objectCount = BinaryPropertyListReader.bigEndian(base, at: trailer &+ 8, width: 8)
    let topObject = BinaryPropertyListReader.bigEndian(base, at: trailer &+ 16, width: 8)
    let tableOffset = BinaryPropertyListReader.bigEndian(base, at: trailer &+ 24, width: 8)
    guard (1...8).contains(offsetWidth) else {
      throw BinaryPropertyList.corrupt("the trailer's offset size is \(offsetWidth) bytes (must be 1 to 8)")
    }
    guard (1...8).contains(refWidth) else {
      throw BinaryPropertyList.corrupt("the trailer's object reference size is \(refWidth) bytes (must be 1 to 8)")
    }
    guard objectCount > 0 else {
      throw BinaryPropertyList.corrupt("the trailer says there are no objects")
    }
    guard topObject < objectCount else {
      throw BinaryPropertyList.corrupt("the top object \(topObject) is not one of the \(objectCount) objects")
    }
    guard tableOffset >= 9, tableOffset <= UInt64(trailer) else {
      throw BinaryPropertyList.corrupt("the offset table offset \(tableOffset) is outside the file's object area (9...\(trailer))")
    }
    let tableSpace = UInt64(trailer) &- tableOffset
    let (tableSize, overflow) = objectCount.multipliedReportingOverflow(by: UInt64(offsetWidth))
    guard !overflow, tableSize == tableSpace else {
      throw BinaryPropertyList.corrupt("an offset table of \(objectCount) offsets of \(offsetWidth) bytes does not fill the \(tableSpace) bytes between offset \(tableOffset) and the trailer")
    }
    // As CoreFoundation requires: the widths must reach every object and the table.
    guard refWidth == 8 || objectCount < 1 << UInt64(refWidth &* 8) else {
      throw BinaryPropertyList.corrupt("object references of \(refWidth) bytes cannot name all \(objectCount) objects")
    }
    guard offsetWidth == 8 || tableOffset < 1 << UInt64(offsetWidth &* 8) else {
      throw BinaryPropertyList.corrupt("offsets of \(offsetWidth) bytes cannot reach the offset table at \(tableOffset)")
    }
    self.base = base
    self.size = size
    self.offsetWidth = offsetWidth
    self.refWidth = refWidth
    // All three are at most the file's size, from the checks above.
    self.objectCount = Int(objectCount)
    self.topObject = Int(topObject)
    self.tableOffset = Int(tableOffset)
    let (budget, budgetOverflow) = size.multipliedReportingOverflow(by: 16)
    self.budget = budgetOverflow ? Int.max : budget
    self.bytesLeft = budgetOverflow ? Int.max : budget &+ BinaryPropertyList.decodedBytesFloor
  }

  /// Reads `width` (1 to 8) bytes at `offset` as a big-endian unsigned integer.
  /// The caller has checked that they are in the file.
  @inline(__always)
  static func bigEndian(_ base: UnsafeRawPointer, at offset: Int, width: Int) -> UInt64 {
    switch width {
    case 1: return UInt64(base.load(fromByteOffset: offset, as: UInt8.self))
    case 2: return UInt64(UInt16(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
    case 4: return UInt64(UInt32(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
    case 8: return UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    default:
      var value: UInt64 = 0
      for i in 0..<width {
        value = value &<< 8 | UInt64(base.load(fromByteOffset: offset &+ i, as: UInt8.self))
      }
      return value
    }
  }

  @inline(__always)
  func byte(at offset: Int) -> UInt8 {
    base.load(fromByteOffset: offset, as: UInt8.self)
  }

  /// Decodes the top object; refuses a file with a dictionary that holds a key twice
  /// (``repeated``), naming the key and its places.
  mutating func decodeTop() throws(AppGroupsError) -> PropertyListValue {
    let value = try decode(object: topObject, depth: 0)
    if let repeated { throw AppGroupsError(.corruptPreferences, repeated.reason) }
    return value
  }

  /// Decodes the top object, which must be a dictionary, one entry at a time: an entry
  /// whose key or value cannot be decoded is left out and reported, and the others are
  /// kept. The file's structure (header, trailer, offset table, the top dictionary's own
  /// references) must be sound, and the whole file stays within the expansion budget.
  mutating func salvageTop() throws(AppGroupsError) -> PropertyListSalvage {
    let offset = try offset(of: topObject)
    let marker = byte(at: offset)
    guard marker &>> 4 == 0xD else {
      throw BinaryPropertyList.corrupt(
        "the top object is \(BinaryPropertyListReader.kindName(marker)), not a dictionary, so it holds no keys to salvage")
    }
    try spend(topObject)
    let top = try open(object: topObject, at: offset, isDictionary: true, depth: 0)
    var salvage = PropertyListSalvage()
    salvage.values.reserveCapacity(top.count)
    // Keys skipped: a key given twice is left out once, at its second entry (neither value
    // is the file's one value for it); a key already left out for its value stays so.
    var skippedKeys: Set<String> = []
    for index in 0..<top.count {
      let key: String
      do throws(AppGroupsError) {
        key = try self.key(in: topObject, at: top.refStart, index: index)
      } catch {
        if budget < 0 || bytesLeft < 0 { throw error }
        salvage.skipped.append(.init(key: nil, index: index, reason: error.message))
        continue
      }
      if skippedKeys.contains(key) { continue }
      if salvage.values.removeValue(forKey: key) != nil {
        let first = firstPlace(of: key, in: topObject, at: top.refStart, before: index)
        let twice = BinaryPropertyList.RepeatedKey(
          key: key, entry: nil, object: topObject, first: first, second: index)
        skippedKeys.insert(key)
        salvage.skipped.append(.init(key: key, index: index, reason: twice.reason))
        continue
      }
      do throws(AppGroupsError) {
        let ref = try reference(from: topObject, at: top.refStart &+ top.count &* refWidth, index: index)
        repeated = nil
        let value = try decode(object: ref, depth: 1)
        if var inValue = repeated {
          // A dictionary in the value holds a key twice: the key's value is not what it says.
          inValue.entry = key
          throw AppGroupsError(.corruptPreferences, inValue.reason)
        }
        salvage.values[key] = value
      } catch {
        // Past the budget the file is built to explode: nothing more is decoded.
        if budget < 0 || bytesLeft < 0 { throw error }
        skippedKeys.insert(key)
        salvage.skipped.append(.init(key: key, index: index, reason: error.message))
      }
    }
    repeated = nil
    close(topObject)
    return salvage
  }

  /// What kind of object a marker starts, for messages.
  static func kindName(_ marker: UInt8) -> String {
    switch marker &>> 4 {
    case 0x0: marker == 0x08 || marker == 0x09 ? "a boolean" : "null or an unknown object"
    case 0x1: "an integer"
    case 0x2: "a real"
    case 0x3: "a date"
    case 0x4: "data"
    case 0x5, 0x6: "a string"
    case 0x8: "a uid"
    case 0xA: "an array"
    case 0xB, 0xC: "a set"
    default: "an object of unknown kind 0x\(String(marker, radix: 16))"
    }
  }

  /// Decodes object `object` and everything in it, at nesting `depth`. Iterative, with an
  /// explicit stack of open containers, so that it needs little of the thread's stack
  /// whatever the nesting (debug builds take kilobytes a frame). The innermost open
  /// container is held apart from the stack, where it is filled. When it throws, the
  /// containers it opened are closed again, so that a salvaging caller can go on.
  mutating func decode(object: Int, depth: Int) throws(AppGroupsError) -> PropertyListValue {
    var current: Frame
    switch try begin(object: object, depth: depth) {
    case .value(let value): return value
    case .container(let frame): current = frame
    }
    var stack: [Frame] = []
    do throws(AppGroupsError) {
      return try fill(&current, &stack, depth: depth)
    } catch {
      close(current.object)
      for frame in stack { close(frame.object) }
      throw error
    }
  }

  /// Fills `current` and the containers in it, with `stack` holding the containers
  /// around it, until the outermost one (at `depth`) is complete.
  @inline(__always)
  private mutating func fill(
    _ current: inout Frame, _ stack: inout [Frame], depth: Int
  ) throws(AppGroupsError) -> PropertyListValue {
    while true {
      if current.next < current.count {
        let index = current.next
        if current.isDictionary {
          let key = try self.key(in: current.object, at: current.refStart, index: index)
          let ref = try reference(
            from: current.object, at: current.refStart &+ current.count &* refWidth, index: index)
          switch try begin(object: ref, depth: depth &+ stack.count &+ 1) {
          case .value(let value):
            // One hash per key; the rare duplicate puts the first value back and is noted.
            if let first = current.entries.updateValue(value, forKey: key) {
              current.entries[key] = first
              noteRepeat(
                of: key, in: current.object, at: current.refStart, place: index,
                entry: depth == 0 ? stack.first?.key : nil)
            }
            current.next &+= 1
          case .container(let child):
            current.key = key
            stack.append(current)
            current = child
          }
        } else {
          let ref = try reference(from: current.object, at: current.refStart, index: index)
          switch try begin(object: ref, depth: depth &+ stack.count &+ 1) {
          case .value(let value):
            current.elements.append(value)
            current.next &+= 1
          case .container(let child):
            stack.append(current)
            current = child
          }
        }
      } else {
        // Complete: hand it to its parent.
        close(current.object)
        let value: PropertyListValue =
          current.isDictionary ? .dictionary(current.entries) : .array(current.elements)
        guard let parent = stack.popLast() else { return value }
        current = parent
        if current.isDictionary {
          if current.entries[current.key] == nil {
            current.entries[current.key] = value
          } else {
            noteRepeat(
              of: current.key, in: current.object, at: current.refStart, place: current.next,
              entry: depth == 0 ? stack.first?.key : nil)
          }
        } else {
          current.elements.append(value)
        }
        current.next &+= 1
      }
    }
  }

  /// Where object `object` (already checked to be a valid number) starts.
  @inline(__always)
  func offset(of object: Int) throws(AppGroupsError) -> Int {
    let entry = tableOffset &+ object &* offsetWidth
    let offset = BinaryPropertyListReader.bigEndian(base, at: entry, width: offsetWidth)
    guard offset >= 8, offset < UInt64(tableOffset) else {
      if offset >= UInt64(size) {
        throw BinaryPropertyList.corrupt("object \(object) offset \(offset) is past the end of the file (\(size) bytes)")
      }
      throw BinaryPropertyList.corrupt("object \(object) offset \(offset) is outside the object area (8..<\(tableOffset))")
    }
    return Int(offset)
  }

  /// Checks that `count` bytes from `start` lie in the object area.
  @inline(__always)
  func checkRange(object: Int, start: Int, count: Int, what: String) throws(AppGroupsError) {
    guard start <= tableOffset, count <= tableOffset &- start else {
      throw BinaryPropertyList.corrupt("object \(object) at offset \(start) needs \(count) bytes of \(what), past the object area's end at \(tableOffset) (the file is \(size) bytes)")
    }
  }

  /// The count of a data, string, array or dictionary object whose marker is
  /// at `offset`, and where its contents start.
  @inline(__always)
  func header(object: Int, at offset: Int) throws(AppGroupsError) -> (count: Int, start: Int) {
    let nibble = Int(byte(at: offset) & 0x0F)
    if nibble != 0x0F { return (nibble, offset &+ 1) }
    let intOffset = offset &+ 1
    guard intOffset < tableOffset else {
      throw BinaryPropertyList.corrupt("object \(object) at offset \(offset) has its length cut off by the end of the object area")
    }
    let marker = byte(at: intOffset)
    guard marker & 0xF0 == 0x10, marker & 0x0F <= 3 else {
      throw BinaryPropertyList.corrupt("object \(object) at offset \(offset) has a length that is not a 1-, 2-, 4- or 8-byte integer (marker 0x\(String(marker, radix: 16)))")
    }
    let width = 1 &<< Int(marker & 0x0F)
    try checkRange(object: object, start: intOffset &+ 1, count: width, what: "length")
    let value = BinaryPropertyListReader.bigEndian(base, at: intOffset &+ 1, width: width)
    guard value <= UInt64(size) else {
      throw BinaryPropertyList.corrupt("object \(object) declares a length of \(BinaryPropertyListReader.describe(value)), which exceeds the file (\(size) bytes)")
    }
    return (Int(value), intOffset &+ 1 &+ width)
  }

  /// A large declared length as a power of two when it is one, for the message.
  static func describe(_ value: UInt64) -> String {
    if value.nonzeroBitCount == 1 && value >= 1 << 16 {
      return "2^\(value.trailingZeroBitCount) (\(value))"
    }
    return "\(value)"
  }

  /// The object a container's `index`th reference names.
  @inline(__always)
  func reference(from container: Int, at start: Int, index: Int) throws(AppGroupsError) -> Int {
    let ref = BinaryPropertyListReader.bigEndian(base, at: start &+ index &* refWidth, width: refWidth)
    guard ref < UInt64(objectCount) else {
      throw BinaryPropertyList.corrupt("object \(container) refers to object \(ref), but there are only \(objectCount) objects")
    }
    return Int(ref)
  }

  @inline(__always)
  mutating func spend(_ object: Int) throws(AppGroupsError) {
    budget &-= 1
    guard budget >= 0 else {
      throw BinaryPropertyList.corrupt("the objects expand to more than 16 for each byte of the \(size)-byte file (containers shared many times over), at object \(object)")
    }
  }

  /// Spends `count` bytes (a string's units, a data object's bytes) of ``bytesLeft``.
  @inline(__always)
  mutating func spendBytes(_ count: Int, object: Int) throws(AppGroupsError) {
    bytesLeft &-= count
    guard bytesLeft >= 0 else {
      throw BinaryPropertyList.corrupt(
        "the strings and data expand to more than \(BinaryPropertyList.decodedBytesFloor) bytes and 16 for each byte of the \(size)-byte file (objects shared many times over), at object \(object)")
    }
  }

  /// A decoded object: a value, or a container opened to be filled.
  fileprivate enum Begun {
    case value(PropertyListValue)
    case container(Frame)
  }

  /// The object's value if it is not a container; otherwise the container,
  /// opened at nesting `depth` (the top object is at 0).
  @inline(__always)
  fileprivate mutating func begin(object: Int, depth: Int) throws(AppGroupsError) -> Begun {
    try spend(object)
    let offset = try offset(of: object)
    let marker = byte(at: offset)
    switch marker &>> 4 {
    case 0x0:
      switch marker {
      case 0x08: return .value(.bool(false))
      case 0x09: return .value(.bool(true))
      case 0x00: throw BinaryPropertyList.corrupt("object \(object) is null, which is not a property-list value")
      default: throw BinaryPropertyList.corrupt("object \(object) has the unknown marker 0x\(String(marker, radix: 16))")
      }
    case 0x1: return .value(try integer(object: object, at: offset))
    case 0x2:
      switch marker & 0x0F {
      case 2:
        try checkRange(object: object, start: offset &+ 1, count: 4, what: "real")
        let bits = UInt32(BinaryPropertyListReader.bigEndian(base, at: offset &+ 1, width: 4))
        return .value(.float(Float(bitPattern: bits)))
      case 3:
        try checkRange(object: object, start: offset &+ 1, count: 8, what: "real")
        return .value(.real(Double(bitPattern: BinaryPropertyListReader.bigEndian(base, at: offset &+ 1, width: 8))))
      default:
        throw BinaryPropertyList.corrupt("object \(object) is a real of \(BinaryPropertyListReader.widthName(marker)) bytes (must be 4 or 8)")
      }
    case 0x3:
      guard marker == 0x33 else {
        throw BinaryPropertyList.corrupt("object \(object) has the unknown marker 0x\(String(marker, radix: 16)) (a date is 0x33)")
      }
      try checkRange(object: object, start: offset &+ 1, count: 8, what: "date")
      let seconds = Double(bitPattern: BinaryPropertyListReader.bigEndian(base, at: offset &+ 1, width: 8))
      // Not a point in time; and Foundation traps describing such a Date.
      guard !seconds.isNaN else {
        throw BinaryPropertyList.corrupt("object \(object) is a date that is not a number (NaN)")
      }
      return .value(.date(Date(timeIntervalSinceReferenceDate: seconds)))
    case 0x4:
      let (count, start) = try header(object: object, at: offset)
      try checkRange(object: object, start: start, count: count, what: "data")
      try spendBytes(count, object: object)
      return .value(.data(Data(bytes: base.advanced(by: start), count: count)))
    case 0x5, 0x6:
      return .value(.string(try string(object: object, at: offset)))
    case 0x8:
      throw BinaryPropertyList.corrupt("object \(object) is a uid (from a keyed archive), which is not a property-list value")
    case 0xA:
      return .container(try open(object: object, at: offset, isDictionary: false, depth: depth))
    case 0xB, 0xC:
      throw BinaryPropertyList.corrupt("object \(object) is a set, which is not a property-list value")
    case 0xD:
      return .container(try open(object: object, at: offset, isDictionary: true, depth: depth))
    default:
      throw BinaryPropertyList.corrupt("object \(object) has the unknown marker 0x\(String(marker, radix: 16))")
    }
  }

  static func widthName(_ marker: UInt8) -> String {
    let exponent = Int(marker & 0x0F)
    return exponent < 8 ? "\(1 << exponent)" : "2^\(exponent)"
  }

  @inline(__always)
  func integer(object: Int, at offset: Int) throws(AppGroupsError) -> PropertyListValue {
    let marker = byte(at: offset)
    let start = offset &+ 1
    switch marker & 0x0F {
    case 0, 1, 2:
      let width = 1 &<< Int(marker & 0x0F)
      try checkRange(object: object, start: start, count: width, what: "integer")
      return .integer(Int(BinaryPropertyListReader.bigEndian(base, at: start, width: width)))
    case 3:
      try checkRange(object: object, start: start, count: 8, what: "integer")
      return .integer(Int(Int64(bitPattern: BinaryPropertyListReader.bigEndian(base, at: start, width: 8))))
    case 4:
      // A signed 128-bit integer, high half first.
      try checkRange(object: object, start: start, count: 16, what: "integer")
      let high = BinaryPropertyListReader.bigEndian(base, at: start, width: 8)
      let low = BinaryPropertyListReader.bigEndian(base, at: start &+ 8, width: 8)
      if high == 0 { return .unsigned(low) }
      guard high == UInt64.max, low >= 1 << 63 else {
        let sign = high >= 1 << 63 ? "below Int64.min" : "above UInt64.max"
        throw BinaryPropertyList.corrupt(
          "object \(object) is a 16-byte integer \(sign), which is not a property-list value here (64 bits at most)")
      }
      return .integer(Int(Int64(bitPattern: low)))
    default:
      throw BinaryPropertyList.corrupt("object \(object) is an integer of \(BinaryPropertyListReader.widthName(marker)) bytes (must be 1, 2, 4, 8 or 16)")
    }
  }

  @inline(__always)
  mutating func string(object: Int, at offset: Int) throws(AppGroupsError) -> String {
    let marker = byte(at: offset)
    let (count, start) = try header(object: object, at: offset)
    try spendBytes(count, object: object)
    let bytes = base.advanced(by: start)
    if marker &>> 4 == 0x5 {
      try checkRange(object: object, start: start, count: count, what: "ASCII string")
      let buffer = UnsafeRawBufferPointer(start: bytes, count: count)
      guard BinaryPropertyList.isASCII(buffer) else {
        throw BinaryPropertyList.corrupt("object \(object) is an ASCII string with a byte of 0x80 or more")
      }
      return String(decoding: buffer, as: UTF8.self)
    }
    // count <= size, so twice it cannot overflow.
    try checkRange(object: object, start: start, count: count &* 2, what: "UTF-16 string")
    if let unit = BinaryPropertyList.unpairedSurrogate(in: bytes, count: count) {
      throw BinaryPropertyList.unpairedSurrogateError(object: object, unit: unit)
    }
    let units = [UInt16](unsafeUninitializedCapacity: count) { buffer, initialized in
      for i in 0..<count {
        buffer[i] = UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: i &* 2, as: UInt16.self))
      }
      initialized = count
    }
    return String(decoding: units, as: UTF16.self)
  }

  /// Checks that a container's references are in the file and that it may
  /// be opened (depth, cycle), and opens it.
  fileprivate mutating func open(
    object: Int, at offset: Int, isDictionary: Bool, depth: Int
  ) throws(AppGroupsError) -> Frame {
    let (count, start) = try enter(object: object, at: offset, isDictionary: isDictionary, depth: depth)
    var frame = Frame(object: object, isDictionary: isDictionary, refStart: start, count: count)
    if isDictionary {
      // A new table of that room (see ``DictionaryRoom``), not `reserveCapacity` on the
      // empty one.
      frame.entries = Dictionary(uniqueKeysWithValues: DictionaryRoom(underestimatedCount: count))
    } else {
      frame.elements.reserveCapacity(count)
    }
    return frame
  }

  /// Checks that a container's references are in the file and that it may be entered
  /// (depth, cycle), and marks it open: its count and where its references start. The
  /// caller closes it (``close(_:)``) when it is done with it.
  @inline(__always)
  mutating func enter(
    object: Int, at offset: Int, isDictionary: Bool, depth: Int
  ) throws(AppGroupsError) -> (count: Int, start: Int) {
    guard depth < BinaryPropertyList.maximumDepth else {
      throw BinaryPropertyList.corrupt("nesting deeper than \(BinaryPropertyList.maximumDepth) (at object \(object))")
    }
    let (count, start) = try header(object: object, at: offset)
    // count <= size and refWidth <= 8, so this cannot overflow.
    let refBytes = isDictionary ? count &* refWidth &* 2 : count &* refWidth
    try checkRange(object: object, start: start, count: refBytes, what: "references")
    if open.isEmpty {
      if onlyOpen < 0 {
        onlyOpen = object
        return (count, start)
      }
      guard onlyOpen != object else { throw Self.cycle(at: object) }
      allocateOpen()
      open[onlyOpen] = true
      onlyOpen = -1
    }
    guard !open[object] else { throw Self.cycle(at: object) }
    open[object] = true
    return (count, start)
  }

  /// Allocates ``open``, which is empty, in place. Assigning a new array over the empty one
  /// made the compiler destroy the old one through `[Bool]`'s metadata, looked up by its
  /// mangled name at a process's first journal record: 21 K instructions at a cold open.
  @inline(__always)
  mutating func allocateOpen() {
    open.append(contentsOf: repeatElement(false, count: objectCount))
  }

  /// Marks container `object`, which ``enter(object:at:isDictionary:depth:)`` opened, as
  /// no longer being decoded.
  @inline(__always)
  mutating func close(_ object: Int) {
    if open.isEmpty {
      if onlyOpen == object { onlyOpen = -1 }
    } else {
      open[object] = false
    }
  }

  /// The error of a container met again inside itself.
  private static func cycle(at object: Int) -> AppGroupsError {
    BinaryPropertyList.corrupt("object \(object) refers to itself (directly or through the containers in it)")
  }

  /// The `index`th key of a dictionary whose key references start at `start`.
  @inline(__always)
  mutating func key(in object: Int, at start: Int, index: Int) throws(AppGroupsError) -> String {
    let keyRef = try reference(from: object, at: start, index: index)
    try spend(keyRef)
    let keyOffset = try offset(of: keyRef)
    let keyMarker = byte(at: keyOffset) &>> 4
    guard keyMarker == 0x5 || keyMarker == 0x6 else {
      throw BinaryPropertyList.corrupt("dictionary object \(object) has a key, object \(keyRef), that is not a string")
    }
    return try string(object: keyRef, at: keyOffset)
  }
}

/// No entries, and room for `underestimatedCount`: what a dictionary of that room is made from.
/// `Dictionary(uniqueKeysWithValues:)` of it is specialised here and allocates the table
/// through its type's cached metadata, where `Dictionary(minimumCapacity:)` and
/// `reserveCapacity(_:)` are the standard library's unspecialised entry points, which look the
/// storage type up in the runtime's metadata cache on every call (a third of the decode of a
/// small suite, callgrind).
struct DictionaryRoom: Sequence, IteratorProtocol {
  let underestimatedCount: Int

  mutating func next() -> (String, PropertyListValue)? { nil }
}

/// An array or dictionary being decoded.
private struct Frame {
  let object: Int
  let isDictionary: Bool
  /// Where its references start: the elements', or the keys' then the values'.
  let refStart: Int
  let count: Int
  /// The index of the next element or entry to decode.
  var next = 0
  var elements: [PropertyListValue] = []
  var entries: [String: PropertyListValue] = [:]
  /// The key of the entry whose value is being decoded.
  var key = ""

  init(object: Int, isDictionary: Bool, refStart: Int, count: Int) {
    self.object = object
    self.isDictionary = isDictionary
    self.refStart = refStart
    self.count = count
  }
}

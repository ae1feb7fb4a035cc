internal import Foundation

/// What a salvaging read recovered from a property-list file whose top object is a
/// dictionary: every top-level key it could decode, and the ones it left out.
///
/// Made by ``BinaryPropertyList/decodeSalvaging(_:)`` and, for any format,
/// ``PropertyListValue/salvaging(propertyListData:)``.
struct PropertyListSalvage: Sendable, Equatable {
  /// A top-level key that was left out, and why.
  struct SkippedKey: Sendable, Hashable, CustomStringConvertible {
    /// The key, or `nil` when the key itself could not be read.
    let key: String?
    /// The entry's place in the file's top dictionary (0 first); for a format read by
    /// Foundation, its place among the keys in sorted order.
    let index: Int
    /// Why its value (or key) was left out: a value this package cannot hold (a
    /// keyed-archiver uid, a set, null, an integer beyond 64 bits, a date that is not a
    /// number) or a damaged object.
    let reason: String

    /// `"key" (reason)`, or `entry 3 of the top dictionary (reason)` when the key could
    /// not be read.
    var description: String {
      if let key { return "\(key.debugDescription) (\(reason))" }
      return "entry \(index) of the top dictionary (\(reason))"
    }
  }

  /// The keys that were read, with their values.
  var values: [String: PropertyListValue] = [:]
  /// The entries left out, in the order of the file.
  var skipped: [SkippedKey] = []
}

/// Apple's binary property-list format ("bplist00"), read and written
/// without Foundation's `PropertyListSerialization`, which is too slow for
/// large domains (about 5 µs a key on Linux).
///
/// Layout: the 8-byte header `bplist00`; the objects, each starting with a
/// marker byte whose high nibble is the type and low nibble a size or count
/// (0xF: an integer object follows with the real count); the offset table,
/// one big-endian offset of `offsetIntSize` bytes for every object; and a
/// 32-byte trailer: 6 unused bytes, `offsetIntSize`, `objectRefSize`, then
/// `numObjects`, `topObject` and `offsetTableOffset`, each 8 bytes big-endian.
/// Containers name their elements by object number in `objectRefSize` bytes.
///
/// The writer follows CFBinaryPList.c: identical strings are written once,
/// integers, references and offsets take the fewest of 1, 2, 4 or 8 bytes,
/// negative integers take 8, an unsigned integer above `Int.max` takes 16
/// (0x14), reals are 8-byte doubles (0x23) and floats 4-byte (0x22), strings
/// are ASCII (0x5n) when every byte is below 0x80 and UTF-16BE (0x6n) otherwise.
/// Dictionary keys are sorted, so equal values encode to equal bytes.
///
/// The reader takes untrusted bytes (a file any process in the group may
/// have written) and either returns a value or throws
/// ``AppGroupsError/Code/corruptPreferences`` with the reason; it never
/// traps. Every length is checked against the file before it is used,
/// containers may nest at most ``maximumDepth`` deep, a container that
/// contains itself is refused, and a file whose shared containers would
/// expand to more than 16 objects for each byte, or whose shared strings and
/// data would expand to more than ``decodedBytesFloor`` bytes and 16 for each
/// byte, is refused, so that a small file cannot make a huge value. Its policies:
/// - null (0x00), uids (0x8n), sets and ordered sets are refused: they are not
///   property-list values here (uids come from `NSKeyedArchiver` archives).
/// - 1-, 2- and 4-byte integers are unsigned, 8-byte ones signed; a 16-byte
///   integer is accepted when its value fits in 64 bits (an `Int`, or an
///   unsigned one up to `UInt64.max`, as CoreFoundation and `plistlib` write).
/// - 4-byte reals are read as `Float`; dates are seconds since 2001-01-01,
///   and a NaN date is refused (Foundation traps describing one). The writer
///   writes whatever it is given, so refuse NaN dates before encoding.
/// - An ASCII string (0x5n) with a byte of 0x80 or more is refused. In a
///   UTF-16 string an unpaired surrogate becomes U+FFFD, as it does when
///   Foundation hands such a string to Swift: refusing it would throw away
///   a whole domain for one damaged character.
/// - A dictionary's keys must be strings; when two keys are equal as Swift
///   strings (the same text, or canonically equivalent), the first one wins, as in CoreFoundation.
///
/// ``decode(_:)`` refuses a whole file for one such object; ``decodeSalvaging(_:)``
/// keeps the top-level keys it can read and reports the others.
enum BinaryPropertyList {
  /// The deepest nesting of arrays and dictionaries the reader accepts.
  static let maximumDepth = 512
  /// The bytes of strings and data any file may decode to, over 16 for each of its bytes
  /// (shared objects counted each time they are met): 64 MiB.
  static let decodedBytesFloor = 64 << 20

  /// Encodes any value (a dictionary in the common case) as a binary property list.
  static func encode(_ value: PropertyListValue) -> Data {
    if let data = encode(value, as: UInt32.self) { return data }
    // Past 4 GiB: offsets of 8 bytes, which always fit.
    return encode(value, as: UInt64.self) ?? Data()
  }

  private static func encode<Index: FixedWidthInteger & UnsignedInteger & BitwiseCopyable>(
    _ value: PropertyListValue, as: Index.Type
  ) -> Data? {
    let expectedObjects: Int
    switch value {
    case .dictionary(let entries): expectedObjects = entries.count &* 2 &+ 1
    case .array(let elements): expectedObjects = elements.count &+ 1
    default: expectedObjects = 1
    }
    var writer = BinaryPropertyListWriter<Index>(expectedObjects: expectedObjects)
    let top = writer.flatten(value)
    return writer.serialize(top: top)
  }

  /// Decodes a binary property list.
  ///
  /// - Throws: ``AppGroupsError/Code/corruptPreferences`` with the reason,
  ///   for every malformed input, and for a dictionary that holds a key twice (which value
  ///   the file means is not said; CoreFoundation keeps one without a word).
  static func decode(_ data: Data) throws(AppGroupsError) -> PropertyListValue {
    let result = data.withUnsafeBytes { raw -> Result<PropertyListValue, AppGroupsError> in
      do throws(AppGroupsError) {
        var reader = try BinaryPropertyListReader(raw)
        return .success(try reader.decodeTop())
      } catch {
        return .failure(error)
      }
    }
    return try result.get()
  }

  /// Decodes a binary property list whose top object is a dictionary, keeping every key
  /// whose value can be read and leaving out (and reporting) the others.
  ///
  /// For a preferences file that another tool wrote with one value this package cannot
  /// hold (a keyed-archiver uid, a set, a 16-byte integer beyond 64 bits), or with one
  /// damaged value, the other keys stay readable instead of the whole file being
  /// refused. A key given twice in the top dictionary is left out, and so is a key whose
  /// value holds a dictionary that gives a key twice: which value the file means is not said.
  ///
  /// - Throws: ``AppGroupsError/Code/corruptPreferences`` with the reason when nothing can
  ///   be salvaged: the header, trailer or offset table is malformed, the top object is not
  ///   a dictionary or its references are out of the file, or the objects expand past the
  ///   budget of 16 for each byte of the file (a file built to explode is not read at all).
  static func decodeSalvaging(_ data: Data) throws(AppGroupsError) -> PropertyListSalvage {
    let result = data.withUnsafeBytes { raw -> Result<PropertyListSalvage, AppGroupsError> in
      do throws(AppGroupsError) {
        var reader = try BinaryPropertyListReader(raw)
        return .success(try reader.salvageTop())
      } catch {
        return .failure(error)
      }
    }
    return try result.get()
  }

  /// "bplist00", big-endian.
  static let magic: UInt64 = 0x6270_6C69_7374_3030

  /// The error for a malformed file. Out of line, with the message built
  /// only when thrown, so that the checks on the hot paths stay small.
  @inline(never)
  static func corrupt(_ reason: @autoclosure () -> String) -> AppGroupsError {
    AppGroupsError(.corruptPreferences, "binary property list: \(reason())")
  }

  /// The index of the first UTF-16 unit of the big-endian string at `bytes` (`count` units)
  /// that is a surrogate without its pair, or `nil` when there is none. Such a string decodes
  /// to another one (U+FFFD in its place), which no reader here may take for what the file
  /// says.
  static func unpairedSurrogate(in bytes: UnsafeRawPointer, count: Int) -> Int? {
    var i = 0
    while i < count {
      let unit = UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: i &* 2, as: UInt16.self))
      if unit & 0xF800 == 0xD800 {
        guard unit < 0xDC00, i &+ 1 < count else { return i }
        let next = UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: (i &+ 1) &* 2, as: UInt16.self))
        guard next & 0xFC00 == 0xDC00 else { return i }
        i &+= 2
      } else {
        i &+= 1
      }
    }
    return nil
  }

  /// The refusal of a UTF-16 string with an unpaired surrogate at `unit`.
  static func unpairedSurrogateError(object: Int, unit: Int) -> AppGroupsError {
    corrupt(
      "object \(object) is a UTF-16 string with an unpaired surrogate at unit \(unit), which a"
        + " string here cannot hold as it is (it would read as U+FFFD)")
  }

  /// Whether every byte is below 0x80, 8 at a time.
  @inline(__always)
  static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    let n = bytes.count
    var high: UInt64 = 0
    var i = 0
    while n &- i >= 8 {
      high |= base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
      i &+= 8
    }
    while i < n {
      high |= UInt64(base.load(fromByteOffset: i, as: UInt8.self))
      i &+= 1
    }
    return high & 0x8080_8080_8080_8080 == 0
  }

  /// The fewest of 1, 2, 4 or 8 bytes that hold `value`, as CFBinaryPList writes.
  static func byteWidth(_ value: UInt64) -> Int {
    if value <= 0xFF { return 1 }
    if value <= 0xFFFF { return 2 }
    if value <= 0xFFFF_FFFF { return 4 }
    return 8
  }
}

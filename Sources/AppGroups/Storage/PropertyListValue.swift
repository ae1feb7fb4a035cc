public import Foundation

/// A property-list value: the only kind of value a suite stores.
///
/// Booleans and integers stay distinct (`.bool(true)` is not `.integer(1)`),
/// on disk and in memory, and so do the widths CoreFoundation keeps apart: a
/// `Float` is a 4-byte ``float(_:)``, not an 8-byte ``real(_:)``, and an
/// unsigned integer above `Int.max` is an ``unsignedInteger(_:)``. Values of
/// different cases are different values (`.float(1.5)` is not `.real(1.5)`).
/// Dictionaries are keyed by strings.
public enum PropertyListValue: Sendable, Hashable {
  case string(String)
  /// A signed integer (1, 2, 4 or 8 bytes on disk).
  case integer(Int)
  /// An unsigned integer above `Int.max`, up to `UInt64.max`, which CoreFoundation and
  /// Python's `plistlib` write as a 16-byte integer (and this package writes back so).
  ///
  /// Integers that fit in `Int` are ``integer(_:)``: the reader and ``init(_:)`` never make
  /// this case for a smaller value, and one made by hand reads back as an ``integer(_:)``.
  case unsignedInteger(UInt64)
  /// A double-precision real (8 bytes on disk).
  case real(Double)
  /// A single-precision real (4 bytes on disk, as CoreFoundation writes a `Float`).
  case float(Float)
  case bool(Bool)
  case date(Date)
  case data(Data)
  case array([PropertyListValue])
  case dictionary([String: PropertyListValue])
}

extension PropertyListValue {
  /// Whether `a` and `b` are stored as the same bytes: `==`, except that strings are compared
  /// by their UTF-8 (`==` finds a composed and a decomposed "é" equal, a file does not) and
  /// reals, floats and dates by their bits (`==` finds -0.0 equal to 0.0, and NaN unequal to
  /// itself). A dictionary's keys are compared as its keys are found. `nil` is identical to
  /// `nil` only.
  static func identical(_ a: PropertyListValue?, _ b: PropertyListValue?) -> Bool {
    switch (a, b) {
    case (nil, nil): return true
    case (.string(let x)?, .string(let y)?): return x.utf8.elementsEqual(y.utf8)
    case (.real(let x)?, .real(let y)?): return x.bitPattern == y.bitPattern
    case (.float(let x)?, .float(let y)?): return x.bitPattern == y.bitPattern
    case (.date(let x)?, .date(let y)?):
      return x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
    case (.array(let x)?, .array(let y)?):
      return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
    case (.dictionary(let x)?, .dictionary(let y)?):
      return x.count == y.count && x.allSatisfy { key, value in y[key].map { identical(value, $0) } ?? false }
    default: return a == b
    }
  }

  /// The deepest a stored value may nest: 255 levels (a scalar is one level, each array or
  /// dictionary around it one more), so that the suite's file, one level more, stays well
  /// within what property-list readers accept (Foundation's stops at 512). A deeper value
  /// is refused when it is set, instead of making the whole file unreadable.
  public static let maximumDepth = 255

  /// Why the value cannot be stored and read back, or `nil` when it can: it nests deeper
  /// than ``maximumDepth``, or holds a date that is not a number (Foundation crashes
  /// describing one, and no reader accepts it back). Iterative: a value nested far deeper
  /// than the stack allows is measured without recursion.
  var unstorableReason: String? {
    switch self {
    case .string, .integer, .unsignedInteger, .real, .float, .bool, .data: return nil
    case .date(let date): return date.timeIntervalSinceReferenceDate.isNaN ? "it holds a date that is not a number" : nil
    case .array, .dictionary: break
    }
    var stack: [(PropertyListValue, Int)] = [(self, 1)]
    while let (value, level) = stack.popLast() {
      if level > Self.maximumDepth {
        return "it nests deeper than \(Self.maximumDepth) levels, more than a property-list reader accepts"
      }
      switch value {
      case .array(let items): for item in items { stack.append((item, level + 1)) }
      case .dictionary(let items): for item in items.values { stack.append((item, level + 1)) }
      case .date(let date) where date.timeIntervalSinceReferenceDate.isNaN:
        return "it holds a date that is not a number"
      default: continue
      }
    }
    return nil
  }

  /// Converts a Swift or Foundation value into a property-list value.
  ///
  /// Accepts `Bool`, every fixed-width integer of up to 64 bits, `Double`,
  /// `Float` (kept as a ``float(_:)``), `String`, `Substring`, `Date`, `Data`,
  /// `URL` (stored as its absolute string), `NSNumber`, arrays of these,
  /// dictionaries keyed by `String`, and ``PropertyListValue`` itself. An
  /// unsigned integer above `Int.max` becomes an ``unsignedInteger(_:)``.
  /// Returns `nil` for anything else.
  public init?(_ value: Any) {
    switch value {
    case let v as PropertyListValue: self = v
    // Before `Int` and `Double`: an NSNumber answers `as? Int` for 1.0 and
    // `as? Double` for 1 alike (Foundation's XML reader returns NSNumbers for
    // <integer> and <real>); its type encoding tells which it is.
    case let v as NSNumber where type(of: value) is NSNumber.Type:
      guard let converted = PropertyListValue.fromNumber(v) else { return nil }
      self = converted
    case let v as Bool where type(of: value) == Bool.self: self = .bool(v)
    case let v as Int: self = .integer(v)
    case let v as String: self = .string(v)
    case let v as Double where type(of: value) == Double.self: self = .real(v)
    case let v as Float where type(of: value) == Float.self: self = .float(v)
    case let v as CGFloat where type(of: value) == CGFloat.self: self = .real(Double(v))
    case let v as Int8: self = .integer(Int(v))
    case let v as Int16: self = .integer(Int(v))
    case let v as Int32: self = .integer(Int(v))
    case let v as Int64: self = .integer(Int(v))
    case let v as UInt8: self = .integer(Int(v))
    case let v as UInt16: self = .integer(Int(v))
    case let v as UInt32: self = .integer(Int(v))
    case let v as UInt: self = .unsigned(UInt64(v))
    case let v as UInt64: self = .unsigned(v)
    case let v as Substring: self = .string(String(v))
    case let v as Date:
      // A date that is not a number: Date.description traps on it.
      guard !v.timeIntervalSinceReferenceDate.isNaN else { return nil }
      self = .date(v)
    case let v as Data: self = .data(v)
    case let v as URL: self = .string(v.absoluteString)
    case let v as [PropertyListValue]: self = .array(v)
    case let v as [String: PropertyListValue]: self = .dictionary(v)
    case let v as [Any]:
      var out: [PropertyListValue] = []
      out.reserveCapacity(v.count)
      for element in v {
        guard let converted = PropertyListValue(element) else { return nil }
        out.append(converted)
      }
      self = .array(out)
    case let v as [String: Any]:
      var out: [String: PropertyListValue] = [:]
      out.reserveCapacity(v.count)
      for (key, element) in v {
        guard let converted = PropertyListValue(element) else { return nil }
        out[key] = converted
      }
      self = .dictionary(out)
    case let v as NSString: self = .string(v as String)
    case let v as NSDate:
      guard !v.timeIntervalSinceReferenceDate.isNaN else { return nil }
      self = .date(v as Date)
    case let v as NSData: self = .data(v as Data)
    case let v as NSArray: 
      guard let converted = PropertyListValue(v.map { $0 }) else { return nil }
      self = converted
    case let v as NSDictionary:
      var out: [String: PropertyListValue] = [:]
      for (key, element) in v {
        guard let key = key as? String, let converted = PropertyListValue(element) else {
          return nil
        }
        out[key] = converted
      }
      self = .dictionary(out)
    default: return nil
    }
  }

  /// An unsigned integer: an ``integer(_:)`` when it fits in `Int`, else an
  /// ``unsignedInteger(_:)``.
  static func unsigned(_ value: UInt64) -> PropertyListValue {
    if let small = Int(exactly: value) { return .integer(small) }
    return .unsignedInteger(value)
  }

  /// The value an NSNumber was made from, by its type encoding.
  private static func fromNumber(_ number: NSNumber) -> PropertyListValue? {
    // NSNumber answers `as? Bool` and `as? Int` alike; its type encoding tells
    // which it was made from.
    switch String(cString: number.objCType) {
    case "c", "B":
      if String(describing: type(of: number)).contains("Bool") {
        return .bool(number.boolValue)
      }
      return .integer(number.intValue)
    case "f": return .float(number.floatValue)
    case "d": return .real(number.doubleValue)
    case "Q", "L", "I", "S", "C": return .unsigned(number.uint64Value)
    default: return .integer(number.intValue)
    }
  }

  /// The value as a Foundation object graph: `String`, `Int`, `UInt64` (an
  /// ``unsignedInteger(_:)``), `Double`, `Float`, `Bool`, `Date`, `Data`,
  /// `[Any]` or `[String: Any]`, as `UserDefaults` returns from `object(forKey:)`.
  public var foundationValue: Any {
    switch self {
    case .string(let v): return v
    case .integer(let v): return v
    case .unsignedInteger(let v): return v
    case .real(let v): return v
    case .float(let v): return v
    case .bool(let v): return v
    case .date(let v): return v
    case .data(let v): return v
    case .array(let v): return v.map(\.foundationValue)
    case .dictionary(let v): return v.mapValues(\.foundationValue)
    }
  }

  /// The name of the value's property-list type, as `defaults read-type` says it:
  /// `string`, `integer`, `float`, `boolean`, `date`, `data`, `array`, `dictionary`.
  public var typeName: String {
    switch self {
    case .string: "string"
    case .integer, .unsignedInteger: "integer"
    case .real, .float: "float"
    case .bool: "boolean"
    case .date: "date"
    case .data: "data"
    case .array: "array"
    case .dictionary: "dictionary"
    }
  }

  /// An estimate of the bytes the value takes in a binary property list,
  /// used for the size limit without encoding the whole domain on every write.
  var estimatedEncodedSize: Int {
    switch self {
    case .string(let v): return v.utf8.count + 4
    case .integer: return 9
    case .unsignedInteger: return 17
    case .real: return 9
    case .float: return 5
    case .bool: return 1
    case .date: return 9
    case .data(let v): return v.count + 4
    case .array(let v): return v.reduce(4) { $0 + $1.estimatedEncodedSize + 2 }
    case .dictionary(let v):
      return v.reduce(4) { $0 + Self.estimatedEntrySize(key: $1.key, value: $1.value) }
    }
  }

  /// The estimated bytes of one dictionary entry, its key and its value (0 for no value):
  /// the one formula behind a dictionary's ``estimatedEncodedSize`` and a suite's size limit.
  static func estimatedEntrySize(key: String, value: PropertyListValue?) -> Int {
    guard let value else { return 0 }
    return key.utf8.count + 6 + value.estimatedEncodedSize
  }
}

public import Foundation

/// A property-list value: the only kind of value a suite stores.
///
/// Booleans and integers stay distinct (`.bool(true)` is not `.integer(1)`),
/// on disk and in memory. Dictionaries are keyed by strings.
public enum PropertyListValue: Sendable, Hashable {
  case string(String)
  case integer(Int)
  case real(Double)
  case bool(Bool)
  case date(Date)
  case data(Data)
  case array([PropertyListValue])
  case dictionary([String: PropertyListValue])
}

extension PropertyListValue {
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
    case .string, .integer, .real, .bool, .data: return nil
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
  /// Accepts `Bool`, every fixed-width integer that fits in `Int`, `Double`,
  /// `Float`, `String`, `Substring`, `Date`, `Data`, `URL` (stored as its
  /// absolute string), `NSNumber`, arrays of these, dictionaries keyed by
  /// `String`, and ``PropertyListValue`` itself. Returns `nil` for anything
  /// else (and for an integer too large for `Int`).
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
    case let v as Float: self = .real(Double(v))
    case let v as Int8: self = .integer(Int(v))
    case let v as Int16: self = .integer(Int(v))
    case let v as Int32: self = .integer(Int(v))
    case let v as Int64: self = .integer(Int(v))
    case let v as UInt8: self = .integer(Int(v))
    case let v as UInt16: self = .integer(Int(v))
    case let v as UInt32: self = .integer(Int(v))
    case let v as UInt:
      guard let i = Int(exactly: v) else { return nil }
      self = .integer(i)
    case let v as UInt64:
      guard let i = Int(exactly: v) else { return nil }
      self = .integer(i)
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

  /// The value an NSNumber was made from, by its type encoding; `nil` for an
  /// unsigned integer too large for `Int`.
  private static func fromNumber(_ number: NSNumber) -> PropertyListValue? {
    // NSNumber answers `as? Bool` and `as? Int` alike; its type encoding tells
    // which it was made from.
    switch String(cString: number.objCType) {
    case "c", "B":
      if String(describing: type(of: number)).contains("Bool") {
        return .bool(number.boolValue)
      }
      return .integer(number.intValue)
    case "f", "d": return .real(number.doubleValue)
    case "Q", "L", "I", "S", "C":
      guard let value = Int(exactly: number.uint64Value) else { return nil }
      return .integer(value)
    default: return .integer(number.intValue)
    }
  }

  /// The value as a Foundation object graph: `String`, `Int`, `Double`,
  /// `Bool`, `Date`, `Data`, `[Any]` or `[String: Any]`, as `UserDefaults`
  /// returns from `object(forKey:)`.
  public var foundationValue: Any {
    switch self {
    case .string(let v): return v
    case .integer(let v): return v
    case .real(let v): return v
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
    case .integer: "integer"
    case .real: "float"
    case .bool: "boolean"
    case .date: "date"
    case .data: "data"
    case .array: "array"
    case .dictionary: "dictionary"
    }
  }

  /// An estimate of the bytes the value takes in a binary property list,
  /// used for the size limit without encoding the whole domain on every write.
  public var estimatedEncodedSize: Int {
    switch self {
    case .string(let v): return v.utf8.count + 4
    case .integer: return 9
    case .real: return 9
    case .bool: return 1
    case .date: return 9
    case .data(let v): return v.count + 4
    case .array(let v): return v.reduce(4) { $0 + $1.estimatedEncodedSize + 2 }
    case .dictionary(let v):
      return v.reduce(4) { $0 + $1.key.utf8.count + 6 + $1.value.estimatedEncodedSize }
    }
  }
}

public import Foundation

/// What a stored property-list value reads as for a typed key.
public enum DecodedPreference<Value: Sendable>: Sendable {
  /// The stored value has the key's type.
  case exact(Value)
  /// The stored value has another type that Apple's getters convert (`"42"` for an `Int`).
  case coerced(Value)
  /// An enum's raw value this build does not know (a newer version wrote it).
  case unknownCase
  /// The stored value has a type that does not convert.
  case wrongType
}

/// A type a ``PreferenceKey`` can hold directly: how it is stored as a property-list value
/// and read back, with Apple's coercions.
///
/// `Bool`, `Int`, `Double`, `String`, `Date`, `Data`, `URL`, and arrays and string-keyed
/// dictionaries of them conform. Enums with `String` or `Int` raw values and `Codable`
/// values have their own ``PreferenceKey`` initialisers instead.
public protocol PreferenceValue: Sendable {
  /// The value as it is stored.
  var propertyListValue: PropertyListValue { get }
  /// Reads a stored value: exactly, through a coercion, or not at all.
  static func decode(_ stored: PropertyListValue) -> DecodedPreference<Self>
  /// The property-list type name of the stored form (`integer`, `string`, …).
  static var storedTypeName: String { get }
}

extension Bool: PreferenceValue {
  public var propertyListValue: PropertyListValue { .bool(self) }
  public static var storedTypeName: String { "boolean" }
  /// A Boolean; a number (0 is `false`); `"YES"`/`"true"`/`"NO"`/`"false"`/a number as text.
  public static func decode(_ stored: PropertyListValue) -> DecodedPreference<Bool> {
    switch stored {
    case .bool(let v): return .exact(v)
    case .integer(let v): return .coerced(v != 0)
    case .real(let v): return .coerced(v != 0)
    case .string(let s):
      switch s.trimmingCharacters(in: .whitespaces).lowercased() {
      case "yes", "true", "y", "t": return .coerced(true)
      case "no", "false", "n", "f": return .coerced(false)
      case let other:
        if let i = Int(other) { return .coerced(i != 0) }
        if let d = Double(other) { return .coerced(d != 0) }
        return .wrongType
      }
    default: return .wrongType
    }
  }
}

extension Int: PreferenceValue {
  public var propertyListValue: PropertyListValue { .integer(self) }
  public static var storedTypeName: String { "integer" }
  /// An integer; a finite real, truncated; a Boolean as 1 or 0; text that reads as a number.
  public static func decode(_ stored: PropertyListValue) -> DecodedPreference<Int> {
    switch stored {
    case .integer(let v): return .exact(v)
    case .real(let v): return Int(exactly: v.rounded(.towardZero)).map { .coerced($0) } ?? .wrongType
    case .bool(let v): return .coerced(v ? 1 : 0)
    case .string(let s):
      let trimmed = s.trimmingCharacters(in: .whitespaces)
      if let i = Int(trimmed) { return .coerced(i) }
      if let d = Double(trimmed), let i = Int(exactly: d.rounded(.towardZero)) { return .coerced(i) }
      return .wrongType
    default: return .wrongType
    }
  }
}

extension Double: PreferenceValue {
  public var propertyListValue: PropertyListValue { .real(self) }
  public static var storedTypeName: String { "float" }
  /// A real; an integer; a Boolean as 1 or 0; text that reads as a number.
  public static func decode(_ stored: PropertyListValue) -> DecodedPreference<Double> {
    switch stored {
    case .real(let v): return .exact(v)
    case .integer(let v): return .coerced(Double(v))
    case .bool(let v): return .coerced(v ? 1 : 0)
    case .string(let s):
      return Double(s.trimmingCharacters(in: .whitespaces)).map { .coerced($0) } ?? .wrongType
    default: return .wrongType
    }
  }
}

extension String: PreferenceValue {
  public var propertyListValue: PropertyListValue { .string(self) }
  public static var storedTypeName: String { "string" }
  /// A string; a number as its decimal text (a Boolean as `"1"`/`"0"`).
  public static func decode(_ stored: PropertyListValue) -> DecodedPreference<String> {
    switch stored {
    case .string(let v): return .exact(v)
    case .integer(let v): return .coerced(String(v))
    case .real(let v): return .coerced(GroupDefaults.describe(v))
    case .bool(let v): return .coerced(v ? "1" : "0")
    default: return .wrongType
    }
  }
}

extension Date: PreferenceValue {
  public var propertyListValue: PropertyListValue { .date(self) }
  public static var storedTypeName: String { "date" }
  /// A date only.
  public static func decode(_ stored: PropertyListValue) -> DecodedPreference<Date> {
    if case .date(let v) = stored { return .exact(v) }
    return .wrongType
  }
}

extension Data: PreferenceValue {
  public var propertyListValue: PropertyListValue { .data(self) }
  public static var storedTypeName: String { "data" }
  /// Data only.
  public static func decode(_ stored: PropertyListValue) -> DecodedPreference<Data> {
    if case .data(let v) = stored { return .exact(v) }
    return .wrongType
  }
}

extension URL: PreferenceValue {
  /// A URL is stored as its absolute string, as `GroupDefaults.set(_:forKey:)` stores it.
  public var propertyListValue: PropertyListValue { .string(absoluteString) }
  public static var storedTypeName: String { "string" }
  /// A string with a scheme; a path (with `~` expanded) becomes a file URL.
  public static func decode(_ stored: PropertyListValue) -> DecodedPreference<URL> {
    guard case .string(let s) = stored, !s.isEmpty else { return .wrongType }
    if let url = URL(string: s), url.scheme != nil { return .exact(url) }
    return .coerced(URL(fileURLWithPath: (s as NSString).expandingTildeInPath))
  }
}

extension Array: PreferenceValue where Element: PreferenceValue {
  public var propertyListValue: PropertyListValue { .array(map(\.propertyListValue)) }
  public static var storedTypeName: String { "array" }
  /// An array whose every element decodes; one element of the wrong type makes the whole
  /// value the wrong type (no element is silently dropped).
  public static func decode(_ stored: PropertyListValue) -> DecodedPreference<[Element]> {
    guard case .array(let items) = stored else { return .wrongType }
    var result: [Element] = []
    result.reserveCapacity(items.count)
    var coerced = false
    for item in items {
      switch Element.decode(item) {
      case .exact(let v): result.append(v)
      case .coerced(let v):
        result.append(v)
        coerced = true
      case .unknownCase, .wrongType: return .wrongType
      }
    }
    return coerced ? .coerced(result) : .exact(result)
  }
}

extension Dictionary: PreferenceValue where Key == String, Value: PreferenceValue {
  public var propertyListValue: PropertyListValue { .dictionary(mapValues(\.propertyListValue)) }
  public static var storedTypeName: String { "dictionary" }
  /// A dictionary whose every value decodes; otherwise the wrong type.
  public static func decode(_ stored: PropertyListValue) -> DecodedPreference<[String: Value]> {
    guard case .dictionary(let items) = stored else { return .wrongType }
    var result: [String: Value] = [:]
    result.reserveCapacity(items.count)
    var coerced = false
    for (key, item) in items {
      switch Value.decode(item) {
      case .exact(let v): result[key] = v
      case .coerced(let v):
        result[key] = v
        coerced = true
      case .unknownCase, .wrongType: return .wrongType
      }
    }
    return coerced ? .coerced(result) : .exact(result)
  }
}

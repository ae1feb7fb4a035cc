public import Foundation

/// Typed getters with Apple's coercions.
extension GroupDefaults {
  /// The string for `key`. A number is converted to its decimal text (a
  /// Boolean to `"1"`/`"0"`, as `NSNumber.stringValue`; a `Float` at its own
  /// precision, so 12.34 stored as a `Float` gives `"12.34"`); other types give `nil`.
  public func string(forKey key: String) -> String? {
    switch value(forKey: key) {
    case .string(let v)?: v
    case .integer(let v)?: String(v)
    case .unsignedInteger(let v)?: String(v)
    case .real(let v)?: Self.describe(v)
    case .float(let v)?: Self.describe(v)
    case .bool(let v)?: v ? "1" : "0"
    default: nil
    }
  }

  /// The integer for `key`: an integer; a real or float, truncated; a Boolean as 1 or 0;
  /// a string that reads as a number (`"42"`, `"4.7"` → 4). Otherwise 0.
  ///
  /// An unsigned integer above `Int.max` (which another tool may have written) gives its
  /// low 64 bits as a signed integer, as on Apple platforms, where `CFNumberGetValue`
  /// truncates a 128-bit number so: 2^64 − 1 gives −1. ``object(forKey:)`` and
  /// ``value(forKey:)`` give it exactly.
  public func integer(forKey key: String) -> Int {
    let value = value(forKey: key)
    if case .integer(let v)? = value { return v }
    return Self.integer(coercing: value)
  }

  /// ``integer(forKey:)`` of a value that is not an integer: a call of its own, so that a
  /// read of an integer keeps a small frame.
  @inline(never)
  private static func integer(coercing value: PropertyListValue?) -> Int {
    switch value {
    case .integer(let v)?: return v
    case .unsignedInteger(let v)?: return Int(truncatingIfNeeded: v)
    case .real(let v)?: return Self.truncate(v)
    case .float(let v)?: return Self.truncate(Double(v))
    case .bool(let v)?: return v ? 1 : 0
    case .string(let v)?:
      let trimmed = v.trimmingCharacters(in: .whitespaces)
      if let i = Int(trimmed) { return i }
      if let d = Double(trimmed) { return Self.truncate(d) }
      return 0
    default: return 0
    }
  }

  /// The double for `key`: a real; a float, widened (12.34 stored as a `Float`
  /// gives `Double(12.34 as Float)`); an integer; a Boolean as 1 or 0; a string
  /// that reads as a number. Otherwise 0.
  public func double(forKey key: String) -> Double {
    switch value(forKey: key) {
    case .real(let v)?: v
    case .float(let v)?: Double(v)
    case .integer(let v)?: Double(v)
    case .unsignedInteger(let v)?: Double(v)
    case .bool(let v)?: v ? 1 : 0
    case .string(let v)?: Double(v.trimmingCharacters(in: .whitespaces)) ?? 0
    default: 0
    }
  }

  /// The float for `key`: a float as stored; otherwise the coercions of
  /// ``double(forKey:)``, narrowed to `Float`.
  public func float(forKey key: String) -> Float {
    if case .float(let v)? = value(forKey: key) { return v }
    return Float(double(forKey: key))
  }

  /// The Boolean for `key`: a Boolean; a number other than 0; a string
  /// `"YES"`/`"true"` (any case) or one that reads as a non-zero number.
  /// Otherwise `false`.
  public func bool(forKey key: String) -> Bool {
    switch value(forKey: key) {
    case .bool(let v)?: return v
    case .integer(let v)?: return v != 0
    case .unsignedInteger(let v)?: return v != 0
    case .real(let v)?: return v != 0
    case .float(let v)?: return v != 0
    case .string(let v)?:
      switch v.trimmingCharacters(in: .whitespaces).lowercased() {
      case "yes", "true", "y", "t": return true
      case "no", "false", "n", "f", "": return false
      case let other: return (Int(other) ?? Double(other).map { $0 != 0 ? 1 : 0 } ?? 0) != 0
      }
    default: return false
    }
  }

  /// The data for `key`, or `nil` when it is not data.
  public func data(forKey key: String) -> Data? {
    if case .data(let v)? = value(forKey: key) { return v }
    return nil
  }

  /// The array for `key` as Foundation objects, or `nil` when it is not an array.
  public func array(forKey key: String) -> [Any]? {
    if case .array(let v)? = value(forKey: key) { return v.map(\.foundationValue) }
    return nil
  }

  /// The array for `key` when every element is a string (numbers are not converted); otherwise `nil`.
  public func stringArray(forKey key: String) -> [String]? {
    guard case .array(let v)? = value(forKey: key) else { return nil }
    var strings: [String] = []
    strings.reserveCapacity(v.count)
    for element in v {
      guard case .string(let s) = element else { return nil }
      strings.append(s)
    }
    return strings
  }

  /// The dictionary for `key` as Foundation objects, or `nil` when it is not a dictionary.
  public func dictionary(forKey key: String) -> [String: Any]? {
    if case .dictionary(let v)? = value(forKey: key) { return v.mapValues(\.foundationValue) }
    return nil
  }

  /// The date for `key`, or `nil` when it is not a date.
  public func date(forKey key: String) -> Date? {
    if case .date(let v)? = value(forKey: key) { return v }
    return nil
  }

  /// The URL for `key`: a string with a scheme is parsed as a URL; a path
  /// (with `~` expanded) becomes a file URL. Otherwise `nil`.
  public func url(forKey key: String) -> URL? {
    guard case .string(let s)? = value(forKey: key), !s.isEmpty else { return nil }
    if let url = URL(string: s), url.scheme != nil { return url }
    return URL(fileURLWithPath: (s as NSString).expandingTildeInPath)
  }

  private static func truncate(_ v: Double) -> Int {
    guard v.isFinite else { return 0 }
    if v >= Double(Int.max) { return Int.max }
    if v <= Double(Int.min) { return Int.min }
    return Int(v)
  }

  static func describe(_ v: Double) -> String {
    if v.isFinite, v == v.rounded(), abs(v) < 1e15 { return String(Int(v)) }
    return String(v)
  }

  /// A float's shortest text that reads back as the same float (`"12.34"`, not the
  /// `"12.34000015258789"` of its widened double); a whole one below 10^7 without a fraction.
  static func describe(_ v: Float) -> String {
    if v.isFinite, v == v.rounded(), abs(v) < 1e7 { return String(Int(v)) }
    return String(v)
  }
}

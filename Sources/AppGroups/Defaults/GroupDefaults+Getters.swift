public import Foundation

/// Typed getters with Apple's coercions.
extension GroupDefaults {
  /// The string for `key`. A number is converted to its decimal text (a
  /// Boolean to `"1"`/`"0"`, as `NSNumber.stringValue`); other types give `nil`.
  public func string(forKey key: String) -> String? {
    switch value(forKey: key) {
    case .string(let v)?: v
    case .integer(let v)?: String(v)
    case .real(let v)?: Self.describe(v)
    case .bool(let v)?: v ? "1" : "0"
    default: nil
    }
  }

  /// The integer for `key`: an integer; a real, truncated; a Boolean as 1 or 0;
  /// a string that reads as a number (`"42"`, `"4.7"` → 4). Otherwise 0.
  public func integer(forKey key: String) -> Int {
    switch value(forKey: key) {
    case .integer(let v)?: return v
    case .real(let v)?: return Self.truncate(v)
    case .bool(let v)?: return v ? 1 : 0
    case .string(let v)?:
      let trimmed = v.trimmingCharacters(in: .whitespaces)
      if let i = Int(trimmed) { return i }
      if let d = Double(trimmed) { return Self.truncate(d) }
      return 0
    default: return 0
    }
  }

  /// The double for `key`: a real; an integer; a Boolean as 1 or 0; a string
  /// that reads as a number. Otherwise 0.
  public func double(forKey key: String) -> Double {
    switch value(forKey: key) {
    case .real(let v)?: v
    case .integer(let v)?: Double(v)
    case .bool(let v)?: v ? 1 : 0
    case .string(let v)?: Double(v.trimmingCharacters(in: .whitespaces)) ?? 0
    default: 0
    }
  }

  /// The float for `key`, with the coercions of ``double(forKey:)``.
  public func float(forKey key: String) -> Float { Float(double(forKey: key)) }

  /// The Boolean for `key`: a Boolean; a number other than 0; a string
  /// `"YES"`/`"true"` (any case) or one that reads as a non-zero number.
  /// Otherwise `false`.
  public func bool(forKey key: String) -> Bool {
    switch value(forKey: key) {
    case .bool(let v)?: return v
    case .integer(let v)?: return v != 0
    case .real(let v)?: return v != 0
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
}

internal import Foundation

/// A namespace for an app's keys: declare each one once, in an extension.
///
/// ```swift
/// extension PreferenceKeys {
///   static let theme = PreferenceKey<Theme>("theme", default: .system)
///   static let fontSize = PreferenceKey<Int>("fontSize", default: 14, range: 8...72)
/// }
/// ```
public enum PreferenceKeys {}

/// What a key does with a value outside its declared range.
public enum RangePolicy: String, Sendable, Hashable {
  /// Reads give the nearest bound; writes store it.
  case clamp
  /// Reads give the key's default; writes throw ``AppGroupsError/Code/outOfRange``.
  case reject
}

/// How a typed read turned out: the outcome of validating the stored value.
public enum ValidationOutcome: String, Sendable, Hashable, CaseIterable {
  /// The stored value has the key's type and is in range.
  case valid
  /// No domain holds the key: the key's default.
  case absent
  /// A value of another type converted as Apple's getters convert (`"42"` for an `Int`).
  case coerced
  /// An enum raw value this build does not know: the key's fallback; the stored value is
  /// left as it is.
  case unknownEnumValue
  /// A value of a type that does not convert: the key's default.
  case wrongType
  /// Outside the range, with ``RangePolicy/clamp``: the nearest bound.
  case clamped
  /// Outside the range, with ``RangePolicy/reject``: the key's default.
  case outOfRange
}

/// A key of a schema without its value type: what ``PreferenceSchema`` and tools need.
public protocol SchemaKey: Sendable {
  /// The key's name in the suite.
  var name: String { get }
  /// The default, as it is registered (never written to disk); `nil` when it cannot be
  /// encoded (a `Codable` default whose encoding throws): then nothing is registered, and
  /// typed reads give the default all the same.
  var registrationValue: PropertyListValue? { get }
  /// The declared type, as a person reads it: `Int`, `Theme (string enum)`, `Layout (codable)`.
  var typeDescription: String { get }
  /// The declared range and policy (`8...72, clamp`), or `nil`.
  var rangeDescription: String? { get }
  /// How a stored value reads for this key.
  func validate(_ stored: PropertyListValue) -> ValidationOutcome
}

/// A typed preference key: its name, its default, and how a stored value is validated.
///
/// ```swift
/// enum Theme: String, Sendable { case light, dark, system }
/// extension PreferenceKeys {
///   static let theme = PreferenceKey<Theme>("theme", default: .system)
///   static let unreadCount = PreferenceKey<Int>("unreadCount", default: 0, range: 0...9_999)
/// }
/// shared[PreferenceKeys.theme] = .dark
/// let theme = shared[PreferenceKeys.theme]      // .dark
/// ```
///
/// The default is a registration value: a read with no stored value gives it, and it is
/// never written to disk. A stored value is validated on every read (see
/// ``ValidationOutcome``); the stored value itself is never changed by a read.
public struct PreferenceKey<Value: Sendable>: SchemaKey {
  // The fields whose size does not depend on `Value` first: a typed read reaches them at
  // fixed offsets.
  /// The key's name in the suite.
  public let name: String
  /// The declared type, as a person reads it: `Int`, `Theme (string enum)`, `Layout (codable)`.
  public let typeDescription: String
  /// The declared range and policy (`8...72, clamp`), or `nil`.
  public let rangeDescription: String?
  @usableFromInline let encodeValue: @Sendable (Value) throws(AppGroupsError) -> PropertyListValue
  @usableFromInline let decodeValue: @Sendable (PropertyListValue) -> DecodedPreference<Value>
  /// Whether the value is in range; if not, the bound to use (clamp) or a rejection.
  @usableFromInline let checkRange: (@Sendable (Value) -> RangeCheck<Value>)?
  /// Whether a stored value of the key's own property-list type is the value itself (a
  /// `Bool`, `Int`, `Double` or `String` key declared as a ``PreferenceValue``): then a read
  /// takes it without calling ``decodeValue``.
  @usableFromInline let decodesPlainly: Bool
  /// What a read gives when no domain holds the key, or its value is of the wrong type or
  /// outside a rejecting range. Registered, never written to disk.
  public let defaultValue: Value
  /// What a read gives for an enum raw value this build does not know.
  public let fallback: Value

  @usableFromInline enum RangeCheck<V> {
    case inRange
    case clamped(V)
    case rejected
  }

  init(
    name: String, defaultValue: Value, fallback: Value, typeDescription: String,
    rangeDescription: String?,
    encode: @escaping @Sendable (Value) throws(AppGroupsError) -> PropertyListValue,
    decode: @escaping @Sendable (PropertyListValue) -> DecodedPreference<Value>,
    checkRange: (@Sendable (Value) -> RangeCheck<Value>)?, decodesPlainly: Bool = false
  ) {
    precondition(!name.isEmpty, "a preference key's name cannot be empty")
    precondition(
      name != PreferenceSchema.markerKey,
      "\(PreferenceSchema.markerKey) is reserved for the schema marker")
    self.name = name
    self.typeDescription = typeDescription
    self.rangeDescription = rangeDescription
    self.encodeValue = encode
    self.decodeValue = decode
    self.checkRange = checkRange
    self.decodesPlainly = decodesPlainly
    self.defaultValue = defaultValue
    self.fallback = fallback
  }

  public var registrationValue: PropertyListValue? { try? encodeValue(defaultValue) }

  /// The stored form of `value`.
  /// - Throws: `.unsupportedValue` when a `Codable` value cannot be encoded.
  public func encode(_ value: Value) throws(AppGroupsError) -> PropertyListValue {
    try encodeValue(value)
  }

  /// The value a stored value reads as, and the outcome. Never changes what is stored.
  public func read(_ stored: PropertyListValue?) -> (value: Value, outcome: ValidationOutcome) {
    guard let stored else { return (defaultValue, .absent) }
    let value: Value
    var outcome = ValidationOutcome.valid
    switch decodeValue(stored) {
    case .exact(let v): value = v
    case .coerced(let v):
      value = v
      outcome = .coerced
    case .unknownCase: return (fallback, .unknownEnumValue)
    case .wrongType: return (defaultValue, .wrongType)
    }
    guard let checkRange else { return (value, outcome) }
    switch checkRange(value) {
    case .inRange: return (value, outcome)
    case .clamped(let bound): return (bound, .clamped)
    case .rejected: return (defaultValue, .outOfRange)
    }
  }

  /// How `stored` reads for this key (see ``read(_:)``).
  public func validate(_ stored: PropertyListValue) -> ValidationOutcome { read(stored).outcome }

  /// The stored form of a value about to be written, after the range check.
  /// - Throws: `.outOfRange` with ``RangePolicy/reject``; `.unsupportedValue` when a
  ///   `Codable` value cannot be encoded.
  func storable(_ value: Value) throws(AppGroupsError) -> (PropertyListValue, clamped: Bool) {
    var value = value
    var clamped = false
    if let checkRange {
      switch checkRange(value) {
      case .inRange: break
      case .clamped(let bound):
        value = bound
        clamped = true
      case .rejected:
        throw AppGroupsError(
          .outOfRange,
          "\(name.debugDescription): the value is outside the key's range (\(rangeDescription ?? "")); nothing was written")
      }
    }
    return (try encodeValue(value), clamped)
  }
}

// MARK: Declaring keys

extension PreferenceKey where Value: PreferenceValue {
  /// A key holding a `Bool`, `Int`, `Double`, `String`, `Date`, `Data`, `URL`, or an array or
  /// string-keyed dictionary of them.
  public init(_ name: String, default defaultValue: Value) {
    self.init(
      name: name, defaultValue: defaultValue, fallback: defaultValue,
      typeDescription: "\(Value.self)", rangeDescription: nil,
      encode: { v throws(AppGroupsError) in v.propertyListValue }, decode: Value.decode,
      checkRange: nil, decodesPlainly: true)
  }
}

extension PreferenceKey where Value: PreferenceValue & Comparable {
  /// A key whose value must lie in `range`: with ``RangePolicy/clamp`` (the default) reads
  /// give and writes store the nearest bound; with ``RangePolicy/reject`` reads give the
  /// default and writes throw ``AppGroupsError/Code/outOfRange``.
  public init(
    _ name: String, default defaultValue: Value, range: ClosedRange<Value>,
    policy: RangePolicy = .clamp
  ) {
    precondition(range.contains(defaultValue), "the default of \(name) is outside its range")
    self.init(
      name: name, defaultValue: defaultValue, fallback: defaultValue,
      typeDescription: "\(Value.self)",
      rangeDescription: "\(range.lowerBound)...\(range.upperBound), \(policy.rawValue)",
      encode: { v throws(AppGroupsError) in v.propertyListValue }, decode: Value.decode,
      checkRange: { value in
        if range.contains(value) { return .inRange }
        if policy == .reject { return .rejected }
        return .clamped(min(max(value, range.lowerBound), range.upperBound))
      })
  }
}

extension PreferenceKey where Value: RawRepresentable, Value.RawValue == String {
  /// A key holding an enum with `String` raw values, stored as its raw value.
  ///
  /// A raw value this build does not know (a newer version wrote it) reads as `fallback`
  /// (the default when not given) and stays on disk: an older process never destroys a
  /// newer one's choice by reading it.
  public init(_ name: String, default defaultValue: Value, fallback: Value? = nil) {
    self.init(
      name: name, defaultValue: defaultValue, fallback: fallback ?? defaultValue,
      typeDescription: "\(Value.self) (string enum)", rangeDescription: nil,
      encode: { v throws(AppGroupsError) in .string(v.rawValue) },
      decode: { stored in
        guard case .string(let raw) = stored else { return .wrongType }
        return Value(rawValue: raw).map { .exact($0) } ?? .unknownCase
      },
      checkRange: nil)
  }
}

extension PreferenceKey where Value: RawRepresentable, Value.RawValue == Int {
  /// A key holding an enum with `Int` raw values, stored as its raw value. An integer this
  /// build does not know reads as `fallback` (the default when not given) and stays on disk.
  public init(_ name: String, default defaultValue: Value, fallback: Value? = nil) {
    self.init(
      name: name, defaultValue: defaultValue, fallback: fallback ?? defaultValue,
      typeDescription: "\(Value.self) (integer enum)", rangeDescription: nil,
      encode: { v throws(AppGroupsError) in .integer(v.rawValue) },
      decode: { stored in
        let raw: Int
        switch stored {
        case .integer(let v): raw = v
        case .string(let s):
          guard let v = Int(s.trimmingCharacters(in: .whitespaces)) else { return .wrongType }
          guard let value = Value(rawValue: v) else { return .unknownCase }
          return .coerced(value)
        default: return .wrongType
        }
        return Value(rawValue: raw).map { .exact($0) } ?? .unknownCase
      },
      checkRange: nil)
  }
}

extension PreferenceKey where Value: Codable {
  /// A key holding a `Codable` value, stored as the property-list value
  /// `PropertyListEncoder` makes of it: a struct is a dictionary that `plutil -p` and
  /// `groupctl read` show field by field, not an opaque blob of data.
  ///
  /// A stored value that does not decode (a field missing or of another type) reads as the
  /// default, with the outcome ``ValidationOutcome/wrongType``.
  public init(codable name: String, default defaultValue: Value) {
    self.init(
      name: name, defaultValue: defaultValue, fallback: defaultValue,
      typeDescription: "\(Value.self) (codable)", rangeDescription: nil,
      encode: CodableStorage.encode, decode: CodableStorage.decode, checkRange: nil)
  }
}

/// How a `Codable` value is stored: `PropertyListEncoder`'s tree, kept as a property-list value.
enum CodableStorage {
  static func encode<V: Encodable>(_ value: V) throws(AppGroupsError) -> PropertyListValue {
    do {
      let data = try PropertyListEncoder().encode([value])
      guard case .array(let items) = try PropertyListValue(propertyListData: data),
        let first = items.first
      else {
        throw AppGroupsError(.unsupportedValue, "the encoder gave no value")
      }
      return first
    } catch let error as AppGroupsError {
      throw AppGroupsError(
        .unsupportedValue, "a \(V.self) cannot be stored as a property list: \(error.message)")
    } catch {
      throw AppGroupsError(
        .unsupportedValue, "a \(V.self) cannot be stored as a property list: \(error)")
    }
  }

  static func decode<V: Decodable>(_ stored: PropertyListValue) -> DecodedPreference<V> {
    // Wrapped in an array, so that a value encoded as a scalar decodes too.
    guard let data = try? PropertyListValue.array([stored]).propertyListData(format: .binary),
      let decoded = try? PropertyListDecoder().decode([V].self, from: data),
      let first = decoded.first
    else { return .wrongType }
    return .exact(first)
  }
}

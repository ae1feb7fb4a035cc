import Foundation

/// The class of an item this keychain keeps.
enum ItemClass: String, Sendable, Hashable {
  case genericPassword = "genp"
  case internetPassword = "inet"

  /// The constant's name, for messages.
  var constantName: String {
    self == .genericPassword ? "kSecClassGenericPassword" : "kSecClassInternetPassword"
  }

  /// The attributes that, with the access group and `kSecAttrSynchronizable`, identify an item
  /// of the class: two items with the same values are one item (`errSecDuplicateItem`). A
  /// missing one counts as empty, as on a device.
  var primaryKey: [String] {
    switch self {
    case .genericPassword: [SecKey.AttrAccount, SecKey.AttrService]
    case .internetPassword:
      [
        SecKey.AttrAccount, SecKey.AttrSecurityDomain, SecKey.AttrServer, SecKey.AttrProtocol,
        SecKey.AttrAuthenticationType, SecKey.AttrPort, SecKey.AttrPath,
      ]
    }
  }

  /// Whether the class has attribute `key` (the ones every class has, and its own).
  func has(_ key: String) -> Bool {
    switch self {
    case .genericPassword: !ItemAttribute.internetOnly.contains(key)
    case .internetPassword: !ItemAttribute.genericOnly.contains(key)
    }
  }
}

/// The value of an item's attribute: one of the property-list scalars the attributes are.
enum AttributeValue: Sendable, Hashable {
  case string(String)
  case data(Data)
  case number(Int)
  case bool(Bool)
  case date(Date)

  /// The value as a Foundation object, for a result dictionary.
  var object: Any {
    switch self {
    case .string(let value): NSString(string: value)
    case .data(let value): NSData(data: value)
    case .number(let value): NSNumber(value: value)
    case .bool(let value): NSNumber(value: value)
    case .date(let value):
      NSDate(timeIntervalSinceReferenceDate: value.timeIntervalSinceReferenceDate)
    }
  }

  /// Whether the two are one value. Strings are one when their UTF-8 bytes are, as a device
  /// compares its columns: `caf\u{e9}` and `cafe\u{301}`, one for Swift's `==` (canonical
  /// equivalence), are two accounts.
  static func == (a: AttributeValue, b: AttributeValue) -> Bool {
    switch (a, b) {
    case (.string(let x), .string(let y)): x.utf8.elementsEqual(y.utf8)
    case (.data(let x), .data(let y)): x == y
    case (.number(let x), .number(let y)): x == y
    case (.bool(let x), .bool(let y)): x == y
    case (.date(let x), .date(let y)): x == y
    default: false
    }
  }

  /// Hashes what ``==(_:_:)`` compares: a string's UTF-8 bytes.
  func hash(into hasher: inout Hasher) {
    switch self {
    case .string(let value):
      hasher.combine(0)
      hasher.combine(value.utf8.count)
      for byte in value.utf8 { hasher.combine(byte) }
    case .data(let value):
      hasher.combine(1)
      hasher.combine(value)
    case .number(let value):
      hasher.combine(2)
      hasher.combine(value)
    case .bool(let value):
      hasher.combine(3)
      hasher.combine(value)
    case .date(let value):
      hasher.combine(4)
      hasher.combine(value)
    }
  }

  /// Whether it equals `other`: strings by their bytes, or without regard to case when asked.
  func matches(_ other: AttributeValue, caseInsensitive: Bool) -> Bool {
    if caseInsensitive, case .string(let a) = self, case .string(let b) = other {
      return a.compare(b, options: .caseInsensitive) == .orderedSame
    }
    return self == other
  }
}

/// The attributes this keychain keeps, by Apple's key, with their kinds and constant names.
enum ItemAttribute {
  enum Kind {
    case string, data, number, bool, date

    var name: String {
      switch self {
      case .string: "a string"
      case .data: "data"
      case .number: "an integer"
      case .bool: "a Boolean"
      case .date: "a date"
      }
    }
  }

  /// Every attribute kept in an item's attribute dictionary (the access group, the
  /// accessibility and `kSecAttrSynchronizable` are kept apart).
  static let kinds: [String: Kind] = [
    SecKey.AttrAccount: .string, SecKey.AttrService: .string, SecKey.AttrLabel: .string,
    SecKey.AttrDescription: .string, SecKey.AttrComment: .string, SecKey.AttrGeneric: .data,
    SecKey.AttrCreator: .number, SecKey.AttrType: .number, SecKey.AttrIsInvisible: .bool,
    SecKey.AttrIsNegative: .bool, SecKey.AttrSecurityDomain: .string, SecKey.AttrServer: .string,
    SecKey.AttrProtocol: .string, SecKey.AttrAuthenticationType: .string, SecKey.AttrPort: .number,
    SecKey.AttrPath: .string, SecKey.AttrCreationDate: .date, SecKey.AttrModificationDate: .date,
  ]

  static let genericOnly: Set<String> = [SecKey.AttrService, SecKey.AttrGeneric]
  static let internetOnly: Set<String> = [
    SecKey.AttrSecurityDomain, SecKey.AttrServer, SecKey.AttrProtocol,
    SecKey.AttrAuthenticationType,
    SecKey.AttrPort, SecKey.AttrPath,
  ]
  /// Set by the keychain, never by the caller.
  static let readOnly: Set<String> = [SecKey.AttrCreationDate, SecKey.AttrModificationDate]

  /// The constant's name of each key, for messages: `kSecAttrAccount (acct)`.
  static let constantNames: [String: String] = [
    SecKey.Class: "kSecClass", SecKey.AttrAccessGroup: "kSecAttrAccessGroup",
    SecKey.AttrAccessible: "kSecAttrAccessible", SecKey.AttrAccessControl: "kSecAttrAccessControl",
    SecKey.AttrCreationDate: "kSecAttrCreationDate",
    SecKey.AttrModificationDate: "kSecAttrModificationDate",
    SecKey.AttrDescription: "kSecAttrDescription", SecKey.AttrComment: "kSecAttrComment",
    SecKey.AttrCreator: "kSecAttrCreator", SecKey.AttrType: "kSecAttrType",
    SecKey.AttrLabel: "kSecAttrLabel", SecKey.AttrIsInvisible: "kSecAttrIsInvisible",
    SecKey.AttrIsNegative: "kSecAttrIsNegative", SecKey.AttrAccount: "kSecAttrAccount",
    SecKey.AttrService: "kSecAttrService", SecKey.AttrGeneric: "kSecAttrGeneric",
    SecKey.AttrSecurityDomain: "kSecAttrSecurityDomain", SecKey.AttrServer: "kSecAttrServer",
    SecKey.AttrProtocol: "kSecAttrProtocol",
    SecKey.AttrAuthenticationType: "kSecAttrAuthenticationType", SecKey.AttrPort: "kSecAttrPort",
    SecKey.AttrPath: "kSecAttrPath", SecKey.AttrSynchronizable: "kSecAttrSynchronizable",
    SecKey.MatchLimit: "kSecMatchLimit", SecKey.MatchCaseInsensitive: "kSecMatchCaseInsensitive",
    SecKey.ReturnData: "kSecReturnData", SecKey.ReturnAttributes: "kSecReturnAttributes",
    SecKey.ReturnRef: "kSecReturnRef", SecKey.ReturnPersistentRef: "kSecReturnPersistentRef",
    SecKey.ValueData: "kSecValueData", SecKey.ValueRef: "kSecValueRef",
    SecKey.ValuePersistentRef: "kSecValuePersistentRef",
    SecKey.UseDataProtectionKeychain: "kSecUseDataProtectionKeychain",
    SecKey.UseAuthenticationUI: "kSecUseAuthenticationUI",
    SecKey.UseOperationPrompt: "kSecUseOperationPrompt",
  ]

  /// `kSecAttrAccount (acct)`, or the key quoted when it is not one of Apple's.
  static func name(_ key: String) -> String {
    if let constant = constantNames[key] { return "\(constant) (\(key))" }
    return KeychainService.quoted(key)
  }
}

/// Whether a query matches synchronizable items, the others, or both.
enum SynchronizableMatch: Sendable, Equatable {
  /// Items that are not synchronizable: a query without `kSecAttrSynchronizable`.
  case no
  /// Synchronizable items only.
  case yes
  /// Both (`kSecAttrSynchronizableAny`).
  case any

  func matches(_ synchronizable: Bool) -> Bool {
    switch self {
    case .no: !synchronizable
    case .yes: synchronizable
    case .any: true
    }
  }
}

/// Which call a dictionary was given to: what it may hold depends on it.
enum Operation: String, Sendable {
  case add = "SecItemAdd"
  case copyMatching = "SecItemCopyMatching"
  case update = "SecItemUpdate"
  case delete = "SecItemDelete"
}

/// A query or an item's description, checked and typed: what a `SecItem` call's dictionary
/// says.
struct ItemQuery: Sendable {
  var itemClass: ItemClass
  /// The attributes given, by Apple's key (not the access group, accessibility or
  /// `kSecAttrSynchronizable`).
  var attributes: [String: AttributeValue] = [:]
  var accessGroup: String?
  var accessibility: Keychain.Accessibility?
  var synchronizable: SynchronizableMatch = .no
  /// `kSecValueData`: the secret of an item to add (ignored in a search, as on a device).
  var secret: Data?
  var returnData = false
  var returnAttributes = false
  var returnRef = false
  var returnPersistentRef = false
  /// `kSecMatchLimit`: `nil` when not given; `Int.max` for all.
  var limit: Int?
  var caseInsensitive = false
  /// `kSecValuePersistentRef`: the item it names.
  var persistentReference: PersistentReference?

  var returnsSomething: Bool { returnData || returnAttributes || returnRef || returnPersistentRef }
}

/// What `SecItemUpdate`'s second dictionary changes.
struct ItemChanges: Sendable {
  var attributes: [String: AttributeValue] = [:]
  var accessGroup: String?
  var accessibility: Keychain.Accessibility?
  var synchronizable: Bool?
  var secret: Data?

  var isEmpty: Bool {
    attributes.isEmpty && accessGroup == nil && accessibility == nil && synchronizable == nil
      && secret == nil
  }
}

/// What an item's persistent reference holds: its class and its identifier.
struct PersistentReference: Sendable, Hashable {
  var itemClass: ItemClass
  var identifier: Data

  /// `genp` or `inet`, then the 16 bytes of the identifier.
  var data: Data { Data(itemClass.rawValue.utf8) + identifier }

  init(itemClass: ItemClass, identifier: Data) {
    self.itemClass = itemClass
    self.identifier = identifier
  }

  init?(_ data: Data) {
    guard data.count == 20,
      let itemClass = ItemClass(rawValue: String(decoding: data.prefix(4), as: UTF8.self))
    else { return nil }
    self.itemClass = itemClass
    identifier = Data(data.dropFirst(4))
  }
}

// MARK: Parsing

/// A scalar value of a dictionary, as Foundation on Linux hands it over: a native Swift value,
/// a Foundation object, or an optional around one.
private enum Scalar {
  case bool(Bool)
  case number(Int)
  case string(String)
  case data(Data)
  case date(Date)
  case other(String)

  init(_ value: Any) {
    if let bool = value as? Bool, type(of: value) == Bool.self {
      self = .bool(bool)
    } else if let string = value as? String {
      self = .string(string)
    } else if let data = value as? Data {
      self = .data(data)
    } else if let date = value as? Date {
      self = .date(date)
    } else if let number = value as? NSNumber {
      // A Boolean NSNumber (kCFBooleanTrue, a Bool bridged) says so by its type encoding.
      let encoding = String(cString: number.objCType)
      if encoding == "c" || encoding == "B" {
        self = .bool(number.boolValue)
      } else if encoding == "f" || encoding == "d" {
        self = .other("a real number")
      } else {
        self = .number(number.intValue)
      }
    } else if let optional = value as? any OptionalProtocol, optional.isNone {
      self = .other("nil")
    } else {
      self = .other("a \(type(of: value))")
    }
  }

  var kindName: String {
    switch self {
    case .bool: "a Boolean"
    case .number: "an integer"
    case .string: "a string"
    case .data: "data"
    case .date: "a date"
    case .other(let name): name
    }
  }
}

private protocol OptionalProtocol {
  var isNone: Bool { get }
}

extension Optional: OptionalProtocol {
  var isNone: Bool { self == nil }
}

extension ItemQuery {
  /// Checks and types `dictionary`, given to `operation`.
  ///
  /// - Throws: `errSecParam` for a missing class, an unknown key, a value of the wrong type or
  ///   a key the call does not take; `errSecNoSuchClass` for an unknown class;
  ///   `errSecUnimplemented` for what this keychain does not keep (certificates, keys,
  ///   identities, access-control objects, item references); `errSecNoSuchAttr` for an
  ///   attribute of the other class; `errSecReadOnlyAttr` for a date set by the caller.
  static func parse(_ dictionary: [String: Any], for operation: Operation) throws(KeychainError)
    -> ItemQuery
  {
    func param(_ message: String) -> KeychainError {
      KeychainError(errSecParam, "\(operation.rawValue): \(message)")
    }
    guard let classValue = dictionary[SecKey.Class] else {
      if let reference = dictionary[SecKey.ValuePersistentRef], operation != .add {
        // A persistent reference names its class.
        guard case .data(let data) = Scalar(reference), let parsed = PersistentReference(data)
        else {
          throw param(
            "\(ItemAttribute.name(SecKey.ValuePersistentRef)) is not a persistent reference")
        }
        var rest = dictionary
        rest[SecKey.Class] = parsed.itemClass.rawValue
        return try parse(rest, for: operation)
      }
      throw param("the dictionary has no \(ItemAttribute.name(SecKey.Class))")
    }
    guard case .string(let className) = Scalar(classValue) else {
      throw param(
        "\(ItemAttribute.name(SecKey.Class)) must be a string, found \(Scalar(classValue).kindName)"
      )
    }
    guard let itemClass = ItemClass(rawValue: className) else {
      if [SecKey.ClassCertificate, SecKey.ClassKey, SecKey.ClassIdentity].contains(className) {
        throw KeychainError(
          errSecUnimplemented,
          "\(operation.rawValue): items of class \(className) (certificates, keys, identities) are"
            + " not kept by this keychain; it keeps generic and internet passwords")
      }
      throw KeychainError(
        errSecNoSuchClass,
        "\(operation.rawValue): there is no item class \(ItemAttribute.name(className))")
    }
    var query = ItemQuery(itemClass: itemClass)
    func bool(_ key: String, _ value: Any) throws(KeychainError) -> Bool {
      guard case .bool(let flag) = Scalar(value) else {
        throw param("\(ItemAttribute.name(key)) must be a Boolean, found \(Scalar(value).kindName)")
      }
      return flag
    }
    for (key, value) in dictionary.sorted(by: { $0.key < $1.key }) where key != SecKey.Class {
      switch key {
      case SecKey.AttrAccessGroup, SecKey.AttrAccessible, SecKey.AttrSynchronizable:
        try query.parseSpecial(key, value, operation)
      case _ where ItemAttribute.kinds[key] != nil:
        if operation == .add && ItemAttribute.readOnly.contains(key) {
          throw KeychainError(
            errSecReadOnlyAttr,
            "\(operation.rawValue): \(ItemAttribute.name(key)) is set by the keychain, not by the caller"
          )
        }
        query.attributes[key] = try attribute(
          key, value, itemClass, operation, stored: operation == .add)
      case SecKey.AttrAccessControl:
        throw KeychainError(
          errSecUnimplemented,
          "\(operation.rawValue): \(ItemAttribute.name(key)) (biometry, user presence) is not"
            + " simulated; use kSecAttrAccessible")
      case SecKey.ValueData:
        guard case .data(let data) = Scalar(value) else {
          throw param("\(ItemAttribute.name(key)) must be data, found \(Scalar(value).kindName)")
        }
        query.secret = data
      case SecKey.ValueRef:
        throw KeychainError(
          errSecUnimplemented,
          "\(operation.rawValue): \(ItemAttribute.name(key)) is not kept by this keychain")
      case SecKey.ValuePersistentRef:
        guard operation != .add else {
          throw param("\(ItemAttribute.name(key)) does not add an item")
        }
        guard case .data(let data) = Scalar(value), let reference = PersistentReference(data),
          reference.itemClass == itemClass
        else {
          throw param(
            "\(ItemAttribute.name(key)) is not a persistent reference of class \(itemClass.rawValue)"
          )
        }
        query.persistentReference = reference
      case SecKey.ReturnData: query.returnData = try bool(key, value)
      case SecKey.ReturnAttributes: query.returnAttributes = try bool(key, value)
      case SecKey.ReturnRef: query.returnRef = try bool(key, value)
      case SecKey.ReturnPersistentRef: query.returnPersistentRef = try bool(key, value)
      case SecKey.MatchLimit:
        guard operation != .add else {
          throw param("\(ItemAttribute.name(key)) is a search key; SecItemAdd takes none")
        }
        switch Scalar(value) {
        case .string(SecKey.MatchLimitOne): query.limit = 1
        case .string(SecKey.MatchLimitAll): query.limit = .max
        case .number(let count) where count > 0: query.limit = count
        default:
          throw param(
            "\(ItemAttribute.name(key)) must be kSecMatchLimitOne, kSecMatchLimitAll or a positive"
              + " number, found \(Scalar(value).kindName)")
        }
      case SecKey.MatchCaseInsensitive:
        guard operation != .add else {
          throw param("\(ItemAttribute.name(key)) is a search key; SecItemAdd takes none")
        }
        query.caseInsensitive = try bool(key, value)
      case SecKey.UseDataProtectionKeychain:
        _ = try bool(key, value)
      case SecKey.UseAuthenticationUI:
        guard case .string(let mode) = Scalar(value),
          [
            SecKey.UseAuthenticationUIAllow, SecKey.UseAuthenticationUIFail,
            SecKey.UseAuthenticationUISkip,
          ]
          .contains(mode)
        else {
          throw param(
            "\(ItemAttribute.name(key)) must be one of the kSecUseAuthenticationUI… values")
        }
      case SecKey.UseOperationPrompt:
        guard case .string = Scalar(value) else {
          throw param(
            "\(ItemAttribute.name(key)) must be a string, found \(Scalar(value).kindName)")
        }
      default:
        throw param("unknown key \(ItemAttribute.name(key))")
      }
    }
    switch operation {
    case .add:
      if query.synchronizable == .any {
        throw param(
          "\(ItemAttribute.name(SecKey.AttrSynchronizable)) cannot be kSecAttrSynchronizableAny in an item"
        )
      }
    case .update:
      if query.returnsSomething {
        throw param("SecItemUpdate returns nothing; the query asks for a result")
      }
    case .delete:
      if let limit = query.limit, limit != .max {
        throw param(
          "\(ItemAttribute.name(SecKey.MatchLimit)) is not taken by SecItemDelete, which deletes every match"
        )
      }
    case .copyMatching:
      break
    }
    return query
  }

  /// The access group, the accessibility and `kSecAttrSynchronizable`.
  fileprivate mutating func parseSpecial(_ key: String, _ value: Any, _ operation: Operation)
    throws(KeychainError)
  {
    let scalar = Scalar(value)
    func param(_ message: String) -> KeychainError {
      KeychainError(errSecParam, "\(operation.rawValue): \(message)")
    }
    switch key {
    case SecKey.AttrAccessGroup:
      guard case .string(let group) = scalar else {
        throw param("\(ItemAttribute.name(key)) must be a string, found \(scalar.kindName)")
      }
      accessGroup = group
    case SecKey.AttrAccessible:
      guard case .string(let raw) = scalar, let value = Keychain.Accessibility(rawValue: raw) else {
        throw param(
          "\(ItemAttribute.name(key)) must be one of the kSecAttrAccessible… values, found"
            + (scalarString(scalar).map { " \($0)" } ?? " \(scalar.kindName)"))
      }
      accessibility = value
    default:  // SecKey.AttrSynchronizable
      switch scalar {
      case .bool(let flag): synchronizable = flag ? .yes : .no
      case .number(0): synchronizable = .no
      case .number(1): synchronizable = .yes
      case .string(SecKey.AttrSynchronizableAny): synchronizable = .any
      default:
        throw param(
          "\(ItemAttribute.name(key)) must be a Boolean or kSecAttrSynchronizableAny, found \(scalar.kindName)"
        )
      }
    }
  }

  /// One attribute's value, checked against its kind and the class, and, when it is to be
  /// `stored` (not searched for), against ``Keychain/maximumAttributeBytes``.
  fileprivate static func attribute(
    _ key: String, _ value: Any, _ itemClass: ItemClass, _ operation: Operation, stored: Bool
  ) throws(KeychainError) -> AttributeValue {
    let typed = try typedAttribute(key, value, itemClass, operation)
    let length: Int
    switch typed {
    case .string(let string): length = string.utf8.count
    case .data(let data): length = data.count
    default: length = 0
    }
    guard stored, length > Keychain.maximumAttributeBytes else { return typed }
    // Its length, never its value: an attribute may be as private as the secret it names.
    throw KeychainError(
      errSecParam,
      "\(operation.rawValue): \(ItemAttribute.name(key)) holds \(length) bytes, more than the"
        + " \(Keychain.maximumAttributeBytes) bytes (16 KiB) an attribute may hold; nothing was"
        + " stored")
  }

  private static func typedAttribute(
    _ key: String, _ value: Any, _ itemClass: ItemClass, _ operation: Operation
  ) throws(KeychainError) -> AttributeValue {
    guard itemClass.has(key) else {
      throw KeychainError(
        errSecNoSuchAttr,
        "\(operation.rawValue): items of class \(itemClass.rawValue) have no \(ItemAttribute.name(key))"
      )
    }
    let scalar = Scalar(value)
    let kind = ItemAttribute.kinds[key] ?? .string
    switch (kind, scalar) {
    case (.string, .string(let string)): return .string(string)
    case (.data, .data(let data)): return .data(data)
    case (.number, .number(let number)): return .number(number)
    case (.bool, .bool(let flag)): return .bool(flag)
    case (.bool, .number(let number)) where number == 0 || number == 1: return .bool(number == 1)
    case (.date, .date(let date)): return .date(date)
    default:
      throw KeychainError(
        errSecParam,
        "\(operation.rawValue): \(ItemAttribute.name(key)) must be \(kind.name), found \(scalar.kindName)"
      )
    }
  }
}

private func scalarString(_ scalar: Scalar) -> String? {
  if case .string(let string) = scalar { return "\"\(string.prefix(40))\"" }
  return nil
}

extension ItemChanges {
  /// Checks and types `SecItemUpdate`'s attributes to update, for items of `itemClass`.
  ///
  /// - Throws: `errSecParam` for an unknown key, a value of the wrong type, or a key that is
  ///   not an attribute or the secret (a class, a search or return key); `errSecNoSuchAttr`,
  ///   `errSecReadOnlyAttr`, `errSecUnimplemented` as ``ItemQuery/parse(_:for:)``.
  static func parse(_ dictionary: [String: Any], itemClass: ItemClass) throws(KeychainError)
    -> ItemChanges
  {
    var changes = ItemChanges()
    func param(_ message: String) -> KeychainError {
      KeychainError(errSecParam, "SecItemUpdate: \(message)")
    }
    for (key, value) in dictionary.sorted(by: { $0.key < $1.key }) {
      switch key {
      case SecKey.AttrAccessGroup, SecKey.AttrAccessible, SecKey.AttrSynchronizable:
        var probe = ItemQuery(itemClass: itemClass)
        try probe.parseSpecial(key, value, .update)
        if key == SecKey.AttrAccessGroup { changes.accessGroup = probe.accessGroup }
        if key == SecKey.AttrAccessible { changes.accessibility = probe.accessibility }
        if key == SecKey.AttrSynchronizable {
          guard probe.synchronizable != .any else {
            throw param(
              "\(ItemAttribute.name(key)) cannot be kSecAttrSynchronizableAny in the attributes to update"
            )
          }
          changes.synchronizable = probe.synchronizable == .yes
        }
      case _ where ItemAttribute.readOnly.contains(key):
        throw KeychainError(
          errSecReadOnlyAttr,
          "SecItemUpdate: \(ItemAttribute.name(key)) is set by the keychain, not by the caller")
      case _ where ItemAttribute.kinds[key] != nil:
        changes.attributes[key] = try ItemQuery.attribute(
          key, value, itemClass, .update, stored: true)
      case SecKey.ValueData:
        guard let data = value as? Data else {
          throw param("\(ItemAttribute.name(key)) must be data, found \(Scalar(value).kindName)")
        }
        changes.secret = data
      case SecKey.AttrAccessControl:
        throw KeychainError(
          errSecUnimplemented, "SecItemUpdate: \(ItemAttribute.name(key)) is not simulated")
      case SecKey.Class:
        throw param(
          "an item's class cannot be changed; the attributes to update hold \(ItemAttribute.name(key))"
        )
      default:
        if ItemAttribute.constantNames[key] != nil {
          throw param("\(ItemAttribute.name(key)) is not an attribute to update")
        }
        throw param("unknown key \(ItemAttribute.name(key))")
      }
    }
    return changes
  }
}

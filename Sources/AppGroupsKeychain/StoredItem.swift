import AppGroups
import AppGroupsKeybag
import Foundation

/// One item as an access group's file keeps it: its class, identifier, accessibility,
/// attributes in the clear (to be searched, as a device keeps them in its database's columns),
/// and its secret sealed with AES-256-GCM under its class's key.
///
/// The seal's associated data is the item's whole identity: the access group, the class, the
/// identifier, the accessibility, `kSecAttrSynchronizable` and every attribute. A sealed
/// secret moved to another item, another group or another class, or an attribute changed on
/// disk, no longer opens: the item reads as damaged, never as another item's secret.
struct StoredItem: Sendable {
  var itemClass: ItemClass
  /// 16 random bytes, fixed for the item's life: what its persistent reference names.
  var identifier: Data
  var accessibility: Keychain.Accessibility
  var synchronizable: Bool
  /// By Apple's key; the creation and modification dates included.
  var attributes: [String: AttributeValue]
  /// The identifier of the class key that sealed the secret (``ClassKey/identifier``).
  var keyIdentifier: Data
  /// Nonce, ciphertext and tag.
  var sealed: Data
  /// ``associatedData(group:)`` as worked out when the item was read or sealed, so that a
  /// read does not work it out again; `nil` until then.
  var knownAssociatedData: [UInt8]? = nil

  /// The values of the class's primary key, a missing one as empty: two items of one group
  /// with equal values (and equal `synchronizable`) are one item.
  var primaryKey: [AttributeValue?] {
    itemClass.primaryKey.map { attributes[$0] ?? Self.emptyValue(for: $0) } + [
      .bool(synchronizable)
    ]
  }

  static func emptyValue(for key: String) -> AttributeValue {
    ItemAttribute.kinds[key] == .number ? .number(0) : .string("")
  }

  /// Whether the item matches `query`'s class, attributes, accessibility,
  /// `kSecAttrSynchronizable` and persistent reference.
  func matches(_ query: ItemQuery) -> Bool {
    guard itemClass == query.itemClass, query.synchronizable.matches(synchronizable) else {
      return false
    }
    if let accessibility = query.accessibility, accessibility != self.accessibility { return false }
    if let reference = query.persistentReference, reference.identifier != identifier {
      return false
    }
    for (key, wanted) in query.attributes {
      guard
        let value = attributes[key]
          ?? (itemClass.primaryKey.contains(key) ? Self.emptyValue(for: key) : nil),
        value.matches(wanted, caseInsensitive: query.caseInsensitive)
      else { return false }
    }
    return true
  }

  // MARK: Sealing

  /// Seals `secret` for an item of `group` under `key`.
  mutating func seal(_ secret: [UInt8], group: String, key: ClassKey) throws(KeychainError) {
    keyIdentifier = try key.identifier()
    let associated = associatedData(group: group)
    knownAssociatedData = associated
    do {
      let box = try Crypto.seal(secret, key: key.bytes, associatedData: associated)
      sealed = Data(box.combined)
    } catch {
      throw KeychainError(errSecInternalComponent, "cannot seal an item: \(error)")
    }
  }

  /// What opening the item's secret found.
  enum Opened {
    case secret([UInt8])
    /// Sealed under a class key the keybag no longer has.
    case keyGone
    /// The tag does not match: its bytes, or its attributes, were changed on disk.
    case damaged
  }

  /// Opens the secret with `key`, checking the whole item.
  func open(group: String, key: ClassKey) -> Opened {
    if let box = SealedBox(combined: Array(sealed)),
      let secret = try? Crypto.open(
        box, key: key.bytes, associatedData: knownAssociatedData ?? associatedData(group: group))
    {
      return .secret(secret)
    }
    // It does not open: under another key (one the keybag no longer has), or changed on disk.
    guard let identifier = try? key.identifier(), identifier == keyIdentifier else {
      return .keyGone
    }
    return .damaged
  }

  /// The associated data of the seal: a fixed label, then each field as its name's length and
  /// bytes, a kind, its value's length and bytes; the attributes sorted by key.
  func associatedData(group: String) -> [UInt8] {
    var bytes = Array("AppGroups keychain item 1\0".utf8)
    func field(_ name: String, _ kind: UInt8, _ value: [UInt8]) {
      append(UInt32(name.utf8.count), to: &bytes)
      bytes += name.utf8
      bytes.append(kind)
      append(UInt32(value.count), to: &bytes)
      bytes += value
    }
    field("agrp", 0, Array(group.utf8))
    field("class", 0, Array(itemClass.rawValue.utf8))
    field("id", 1, Array(identifier))
    field("pdmn", 0, Array(accessibility.rawValue.utf8))
    field("sync", 3, [synchronizable ? 1 : 0])
    for (key, value) in attributes.sorted(by: { $0.key < $1.key }) {
      switch value {
      case .string(let string): field(key, 0, Array(string.utf8))
      case .data(let data): field(key, 1, Array(data))
      case .number(let number): field(key, 2, littleEndian(UInt64(bitPattern: Int64(number))))
      case .bool(let flag): field(key, 3, [flag ? 1 : 0])
      case .date(let date):
        field(key, 4, littleEndian(date.timeIntervalSinceReferenceDate.bitPattern))
      }
    }
    return bytes
  }

  private func append(_ value: UInt32, to bytes: inout [UInt8]) {
    for shift in stride(from: 0, to: 32, by: 8) {
      bytes.append(UInt8(truncatingIfNeeded: value >> shift))
    }
  }

  private func littleEndian(_ value: UInt64) -> [UInt8] {
    stride(from: 0, to: 64, by: 8).map { UInt8(truncatingIfNeeded: value >> $0) }
  }
}

// MARK: The file

/// An access group's file: its items, and the entries it could not read, kept as they are so
/// that nothing is lost when the file is written again.
struct GroupContents: Sendable {
  var items: [StoredItem] = []
  /// Entries of the file that are not items this version reads.
  var unreadable: [PropertyListValue] = []

  /// The format's name, the file's first key.
  static let format = "AppGroups keychain 1"
  /// What every version's format name starts with: a file whose `Format` starts so and is not
  /// ``format`` is another version's keychain, not a damaged one.
  static let formatFamily = "AppGroups keychain "

  /// Reads the file's bytes.
  ///
  /// - Returns: `nil` when the bytes are not this format (not a property list, another
  ///   shape, or another version's format: see ``otherVersion(_:)``); the caller moves a
  ///   damaged file aside and refuses another version's.
  static func decode(_ data: Data, group: String) -> GroupContents? {
    guard let value = try? PropertyListValue(propertyListData: data),
      case .dictionary(let root) = value, root["Format"] == .string(format),
      case .array(let entries) = root["Items"]
    else { return nil }
    var contents = GroupContents()
    for entry in entries {
      if var item = StoredItem(entry) {
        item.knownAssociatedData = item.associatedData(group: group)
        contents.items.append(item)
      } else {
        contents.unreadable.append(entry)
      }
    }
    return contents
  }

  /// The format another version of the keychain wrote `data` in, when it did: a dictionary
  /// whose `Format` is a string that starts with ``formatFamily`` and is not ``format``.
  ///
  /// - Returns: `nil` for this format's files and for damaged ones (not a property list, not a
  ///   dictionary, no such `Format`); the caller refuses the file and leaves it as it is
  ///   otherwise, since this version cannot say what its items are.
  static func otherVersion(_ data: Data) -> String? {
    guard let value = try? PropertyListValue(propertyListData: data),
      case .dictionary(let root) = value, case .string(let name) = root["Format"],
      name.hasPrefix(formatFamily), name != format
    else { return nil }
    return name
  }

  /// The file's bytes: a binary property list.
  func encode() throws(KeychainError) -> Data {
    let root: PropertyListValue = .dictionary([
      "Format": .string(Self.format),
      "Items": .array(items.map(\.propertyList) + unreadable),
    ])
    do {
      return try root.propertyListData(format: .binary)
    } catch {
      throw KeychainError(errSecInternalComponent, "cannot encode the items: \(error.message)")
    }
  }
}

extension StoredItem {
  init?(_ value: PropertyListValue) {
    guard case .dictionary(let fields) = value,
      case .string(let className) = fields["class"], let itemClass = ItemClass(rawValue: className),
      case .data(let identifier) = fields["id"], identifier.count == 16,
      case .string(let pdmn) = fields["pdmn"],
      let accessibility = Keychain.Accessibility(rawValue: pdmn),
      case .bool(let synchronizable) = fields["sync"],
      case .dictionary(let stored) = fields["attributes"],
      case .data(let keyIdentifier) = fields["kid"],
      case .data(let sealed) = fields["data"]
    else { return nil }
    var attributes: [String: AttributeValue] = [:]
    for (key, value) in stored {
      guard let kind = ItemAttribute.kinds[key] else { return nil }
      switch (kind, value) {
      case (.string, .string(let string)): attributes[key] = .string(string)
      case (.data, .data(let data)): attributes[key] = .data(data)
      case (.number, .integer(let number)): attributes[key] = .number(number)
      case (.bool, .bool(let flag)): attributes[key] = .bool(flag)
      case (.date, .date(let date)): attributes[key] = .date(date)
      default: return nil
      }
    }
    self.init(
      itemClass: itemClass, identifier: identifier, accessibility: accessibility,
      synchronizable: synchronizable, attributes: attributes, keyIdentifier: keyIdentifier,
      sealed: sealed)
  }

  var propertyList: PropertyListValue {
    var stored: [String: PropertyListValue] = [:]
    for (key, value) in attributes {
      switch value {
      case .string(let string): stored[key] = .string(string)
      case .data(let data): stored[key] = .data(data)
      case .number(let number): stored[key] = .integer(number)
      case .bool(let flag): stored[key] = .bool(flag)
      case .date(let date): stored[key] = .date(date)
      }
    }
    return .dictionary([
      "class": .string(itemClass.rawValue), "id": .data(identifier),
      "pdmn": .string(accessibility.rawValue), "sync": .bool(synchronizable),
      "attributes": .dictionary(stored), "kid": .data(keyIdentifier), "data": .data(sealed),
    ])
  }
}

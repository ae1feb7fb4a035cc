public import Foundation

/// How a property list is written to a file.
public enum PropertyListFileFormat: Sendable {
  /// Apple's binary format ("bplist00"): compact and fast. The default.
  case binary
  /// XML, for people to read and edit. Dates lose their fractions of a second.
  case xml
}

extension PropertyListValue {
  /// Reads a property list from a file's bytes.
  ///
  /// A binary property list (starting with "bplist") is read by this
  /// package's own reader; anything else (XML, or the old OpenStep text
  /// format, as a hand-edited file may be) by Foundation.
  ///
  /// - Throws: ``AppGroupsError/Code/corruptPreferences`` with the reason
  ///   when the bytes are empty, malformed, or hold something that is not a
  ///   property-list value (such as an integer too large for `Int`).
  public init(propertyListData data: Data) throws(AppGroupsError) {
    if data.starts(with: "bplist".utf8) {
      self = try BinaryPropertyList.decode(data)
      return
    }
    guard !data.isEmpty else {
      throw AppGroupsError(.corruptPreferences, "the property list is empty (0 bytes)")
    }
    let object: Any
    do {
      object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
    } catch {
      var reason = (error as NSError).localizedDescription
      if let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String {
        reason += " \(detail)"
      }
      throw AppGroupsError(
        .corruptPreferences,
        "the \(data.count)-byte property list is neither binary nor valid XML or OpenStep text: \(reason)"
      )
    }
    guard let value = PropertyListValue(object) else {
      throw AppGroupsError(
        .corruptPreferences,
        "the \(data.count)-byte property list holds a value that is not a property-list value here (such as an integer too large for Int)"
      )
    }
    self = value
  }

  /// The value as the bytes of a property-list file.
  ///
  /// Binary is written by this package's own writer; XML by Foundation,
  /// which keeps booleans as `<true/>`/`<false/>` and integers as
  /// `<integer>`, but writes dates to the whole second.
  ///
  /// - Throws: ``AppGroupsError/Code/unsupportedValue`` if Foundation cannot
  ///   write the value as XML. Binary never fails.
  public func propertyListData(format: PropertyListFileFormat = .binary) throws(AppGroupsError) -> Data {
    switch format {
    case .binary:
      return BinaryPropertyList.encode(self)
    case .xml:
      do {
        return try PropertyListSerialization.data(fromPropertyList: foundationValue, format: .xml, options: 0)
      } catch {
        throw AppGroupsError(
          .unsupportedValue,
          "the \(typeName) cannot be written as an XML property list: \((error as NSError).localizedDescription)"
        )
      }
    }
  }
}

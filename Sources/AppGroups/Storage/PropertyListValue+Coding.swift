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
  /// package's own reader, and so is an XML one in the form Apple writes
  /// too; anything else (another XML form, or the old
  /// OpenStep text format, as a hand-edited file may be) by Foundation.
  ///
  /// Foundation's parser reads some XML its own way instead of refusing it: a `<data>` that
  /// is not base64 as empty or partial bytes, a `<date>` out of range as another date, a key
  /// given twice in one dictionary as one of its values. Such a document is refused, as is a
  /// binary one whose dictionary gives a key twice: it is never read as if it said them. XML
  /// after the root value is not looked at here (see
  /// `contentAfterRootValue(in:)`): the root value is read, as Foundation reads it.
  ///
  /// - Throws: ``AppGroupsError/Code/corruptPreferences`` with the reason
  ///   when the bytes are empty, malformed, hold something that is not a
  ///   property-list value here (such as a keyed-archiver uid, a set, or an
  ///   integer beyond 64 bits), or hold a value a parser would misread (the first one, by
  ///   its line in XML: "the <data> on line 7 is not base64 …").
  public init(propertyListData data: Data) throws(AppGroupsError) {
    if data.starts(with: "bplist".utf8) {
      self = try BinaryPropertyList.decode(data)
      return
    }
    if let value = XMLPropertyList.decode(data) {
      self = value
      return
    }
    let object = try Self.foundationObject(data)
    // Only here, where Foundation read the document: the package's own readers refuse what
    // they would misread.
    if let problem = Self.misreadValues(in: data) { throw AppGroupsError(.corruptPreferences, problem) }
    guard let value = PropertyListValue(object) else {
      throw AppGroupsError(
        .corruptPreferences,
        "the \(data.count)-byte property list holds a value that is not a property-list value here (such as an integer beyond 64 bits)"
      )
    }
    self = value
  }

  /// Reads a property list whose top object is a dictionary, keeping every top-level key
  /// whose value can be read and reporting the others, instead of refusing the whole file
  /// for one value.
  ///
  /// A binary property list is read by ``BinaryPropertyList/decodeSalvaging(_:)``; XML
  /// and OpenStep text by Foundation, whose parser refuses a whole file for some bad values
  /// (an `<integer>` beyond 64 bits included: "Integer overflow in <integer>") and misreads
  /// others (``misreadValuesByKey(in:)``): a top-level key whose value holds one of those,
  /// or that is given twice, is left out with the reason, by line. A value that did not
  /// convert would be left out on its own too.
  ///
  /// - Throws: ``AppGroupsError/Code/corruptPreferences`` with the reason when nothing
  ///   can be salvaged: the bytes are empty or malformed as a whole, or the top object is
  ///   not a dictionary.
  static func salvaging(propertyListData data: Data) throws(AppGroupsError) -> PropertyListSalvage {
    if data.starts(with: "bplist".utf8) {
      return try BinaryPropertyList.decodeSalvaging(data)
    }
    let object = try foundationObject(data)
    guard let dictionary = object as? [String: Any] else {
      let what = PropertyListValue(object).map { "a \($0.typeName)" } ?? "\(type(of: object))"
      throw AppGroupsError(
        .corruptPreferences,
        "the \(data.count)-byte property list's root is \(what), not a dictionary, so it holds no keys to salvage")
    }
    // The first reason for each top-level key.
    var misread: [String: String] = [:]
    for problem in misreadValuesByKey(in: data) {
      guard let key = problem.key else { throw AppGroupsError(.corruptPreferences, problem.reason) }
      if misread[key] == nil { misread[key] = problem.reason }
    }
    var salvage = PropertyListSalvage()
    for (index, key) in dictionary.keys.sorted().enumerated() {
      guard let element = dictionary[key] else { continue }
      if let reason = misread[key] {
        salvage.skipped.append(.init(key: key, index: index, reason: reason))
      } else if let value = PropertyListValue(element) {
        salvage.values[key] = value
      } else {
        salvage.skipped.append(
          .init(
            key: key, index: index,
            reason: "its value (\(type(of: element))) is not a property-list value here"))
      }
    }
    return salvage
  }

  /// Parses XML or OpenStep text with Foundation.
  private static func foundationObject(_ data: Data) throws(AppGroupsError) -> Any {
    guard !data.isEmpty else {
      throw AppGroupsError(.corruptPreferences, "the property list is empty (0 bytes)")
    }
    do {
      return try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
    } catch {
      var reason = (error as NSError).localizedDescription
      if let openStep = openStepSyntaxError(in: data) {
        // Foundation's detail is its XML parser's ("Unexpected character {"), which says
        // nothing of OpenStep text: what was found, where, and what was expected instead.
        reason = "in OpenStep text, \(openStep)"
      } else if let notUTF8 = nonUTF8Text(in: data) {
        // Foundation's detail for a byte that is not UTF-8 inside a string names another
        // place ("Unexpected character {") or none ("Unable to convert string").
        reason = "\(notUTF8); a text property list is read as UTF-8"
      } else if let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String {
        reason += " \(detail)"
      }
      throw AppGroupsError(
        .corruptPreferences,
        "the \(data.count)-byte property list is neither binary nor valid XML or OpenStep text:"
          + " \(PrintedText.escapingControls(reason))"
      )
    }
  }

  /// The value as the bytes of a property-list file.
  ///
  /// Binary is written by this package's own writer; XML by Foundation,
  /// which keeps booleans as `<true/>`/`<false/>` and integers as
  /// `<integer>`, writes a float as a `<real>` (read back as a double: XML
  /// has one kind of real; `nan`, `+infinity` and `-infinity` as such), and writes dates to the
  /// whole second. Foundation writes a -0.0 as `0.0`, losing its sign: it is written
  /// `<real>-0.0</real>` here (`XMLPropertyList.restoringNegativeZeros(_:of:)`), which this
  /// package's reader and Foundation's read as -0.0.
  ///
  /// - Throws: ``AppGroupsError/Code/unsupportedValue`` if Foundation cannot
  ///   write the value as XML. Binary never fails.
  public func propertyListData(format: PropertyListFileFormat = .binary) throws(AppGroupsError) -> Data {
    switch format {
    case .binary:
      return BinaryPropertyList.encode(self)
    case .xml:
      do {
        let xml = try PropertyListSerialization.data(fromPropertyList: foundationValue, format: .xml, options: 0)
        return holdsNegativeZero ? XMLPropertyList.restoringNegativeZeros(xml, of: self) : xml
      } catch {
        throw AppGroupsError(
          .unsupportedValue,
          "the \(typeName) cannot be written as an XML property list: \((error as NSError).localizedDescription)"
        )
      }
    }
  }
}

extension PropertyListValue {
  /// Whether the value is or holds a real that is -0.0.
  var holdsNegativeZero: Bool {
    switch self {
    case .real(let number): number == 0 && number.sign == .minus
    case .array(let items): items.contains { $0.holdsNegativeZero }
    case .dictionary(let entries): entries.values.contains { $0.holdsNegativeZero }
    default: false
    }
  }
}

extension XMLPropertyList {
  /// `xml`, Foundation's XML for `value`, with each `<real>0.0</real>` that stands for a -0.0 of
  /// `value` written `<real>-0.0</real>`, and every other byte as it is. Foundation's writer
  /// writes any zero as `0.0`, so a -0.0 read back was 0.0. The document is walked along with
  /// `value`: a dictionary's entries by their keys as written (in whatever order the writer
  /// sorts them), an array's items by their place.
  static func restoringNegativeZeros(_ xml: Data, of value: PropertyListValue) -> Data {
    let offsets = markup(xml) { markup -> [Int] in
      var found: [Int] = []
      guard var element = markup.next() else { return [] }
      if markup.isPlist(element) {
        guard let root = markup.next() else { return [] }
        element = root
      }
      _ = negativeZeros(in: value, at: element, &markup, &found)
      return found
    }
    var restored = xml
    for offset in offsets.reversed() { restored.insert(UInt8(ascii: "-"), at: restored.startIndex + offset) }
    return restored
  }

  /// Walks the value whose opening tag `element` was just read, noting where the text of each
  /// `<real>0.0</real>` standing for a -0.0 of `value` starts; `false` where the document ends
  /// or is not shaped as a value (the walk stops).
  private static func negativeZeros(
    in value: PropertyListValue?, at element: Element, _ markup: inout Markup, _ found: inout [Int]
  ) -> Bool {
    guard !element.closing, let tag = element.tag else { return false }
    if element.empty { return true }
    switch tag {
    case .dict:
      guard case .dictionary(let entries)? = value else { return false }
      while let next = markup.next() {
        if next.closing { return true }
        guard next.tag == .key, !next.empty, let key = markup.text(closing: .key),
          let inner = markup.next(), negativeZeros(in: entries[key], at: inner, &markup, &found)
        else { return false }
      }
      return false
    case .array:
      guard case .array(let items)? = value else { return false }
      var index = 0
      while let next = markup.next() {
        if next.closing { return true }
        guard index < items.count, negativeZeros(in: items[index], at: next, &markup, &found) else { return false }
        index += 1
      }
      return false
    case .real:
      let start = markup.offset
      guard let text = markup.text(closing: .real) else { return false }
      if case .real(let number)? = value, number == 0, number.sign == .minus, text == "0.0" {
        found.append(start)
      }
      return true
    default:
      return markup.text(closing: tag) != nil
    }
  }
}

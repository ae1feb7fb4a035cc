package import Foundation

// What Foundation's XML property-list parser reads its own way instead of refusing: a
// `<data>` whose text is not base64 (it skips the characters it does not know, so
// `<data>@@@</data>` reads as no bytes), a `<date>` whose fields are out of range (it
// normalises them, so month 13 is next year's January), and a key given twice in one
// dictionary (it keeps one of the values; so do the binary reader and Foundation's reader of
// OpenStep text, ``OpenStepPropertyList``), and XML after the root value (after a bare value, as
// `<string>a</string><string>b</string>`, or after `</plist>`), which it drops. A tool that takes a
// file from outside (`groupctl import`) asks here first, and refuses the file rather than
// store values the file does not hold.
extension PropertyListValue {
  /// A value of a property list that a parser would read as something the file does not say,
  /// with the top-level key it sits under.
  struct MisreadValue: Sendable, Equatable {
    /// The top dictionary's key whose value holds it (anywhere inside), or that is given
    /// twice; `nil` when it is under no top-level key (the root is not a dictionary).
    let key: String?
    /// Why, naming its place, as ``misreadValues(in:)`` words it.
    let reason: String
  }

  /// The first value of the property list `data` that a parser would read as something the
  /// file does not say, as a reason naming its place; `nil` when there is none. In XML: a
  /// `<data>` or `<date>` (``XMLPropertyList``'s rules, a year of any width), or a key given
  /// twice in a dictionary, by line; a document in UTF-16 (with its byte order mark, or
  /// without one: ``withByteOrderMark(_:)``) is looked at as its UTF-8 text. In OpenStep
  /// text: a key given twice in a dictionary, by line (``OpenStepPropertyList``). In a binary
  /// property list: a key given twice in the top dictionary or a dictionary that is its value.
  package static func misreadValues(in data: Data) -> String? {
    if data.starts(with: "bplist".utf8) {
      return BinaryPropertyList.repeatedKey(in: data)?.reason
    }
    return misreadXMLValues(in: data, all: false).first?.reason
  }

  /// Every value of the XML or OpenStep-text property list `data` that ``misreadValues(in:)`` would name (a
  /// key given a third time is named again), in the order of the file, each with the
  /// top-level key it sits under: what a salvage of the file leaves out. Empty for a binary
  /// property list, whose reader notes a key given twice itself
  /// (``BinaryPropertyList/decodeSalvaging(_:)``).
  static func misreadValuesByKey(in data: Data) -> [MisreadValue] {
    if data.starts(with: "bplist".utf8) { return [] }
    return misreadXMLValues(in: data, all: true)
  }

  /// The values of the XML document (or OpenStep text) `data` that Foundation's parser
  /// misreads: the first, or with `all` every one.
  private static func misreadXMLValues(in data: Data, all: Bool) -> [MisreadValue] {
    var text = data
    if let utf16 = utf16Text(withByteOrderMark(data)) { text = Data(utf16.utf8) }
    if let repeated = OpenStepPropertyList.repeatedKeys(in: text, all: all) { return repeated }
    return XMLPropertyList.markup(text) { markup -> [MisreadValue] in
      var found: [MisreadValue] = []
      // The open `<dict>`s and `<array>`s: a dictionary's keys so far, with their lines.
      var stack: [[String: Int]?] = []
      // The top dictionary's key whose value is being walked.
      var entry: String?
      // Lines are counted on from the last one counted: each element's is needed for a key.
      var counted = (offset: 0, line: 1)
      func line(at offset: Int) -> Int {
        counted = (offset, markup.line(at: offset, after: offset >= counted.offset ? counted : (0, 1)))
        return counted.line
      }
      while let element = markup.next() {
        guard !element.closing else {
          if element.tag == .dict || element.tag == .array, !stack.isEmpty { stack.removeLast() }
          continue
        }
        var reason: String?
        switch element.tag {
        case .dict? where !element.empty: stack.append([:])
        case .array? where !element.empty: stack.append(nil)
        case .key?:
          guard let key = element.empty ? "" : markup.text(closing: .key) else { return found }
          guard let depth = stack.indices.last, stack[depth] != nil else { continue }
          if depth == 0 { entry = key }
          let here = line(at: element.start)
          if let earlier = stack[depth]?[key] {
            reason = "the key \(key.debugDescription) is given twice in one dictionary (lines"
              + " \(earlier) and \(here)); a dictionary holds each key once"
          } else {
            stack[depth]?[key] = here
          }
        case .data?:
          let content = element.empty ? "" : markup.text(closing: .data)
          if content.flatMap(XMLPropertyList.base64Data) == nil {
            reason = "the <data> on line \(line(at: element.start)) is not base64 (letters,"
              + " digits, + and /, then = padding)"
          }
        case .date?:
          let content = element.empty ? "" : markup.text(closing: .date)
          if !(content.map(isDate) ?? false) {
            let shown = content.map { " (\($0.debugDescription))" } ?? ""
            reason = "the <date> on line \(line(at: element.start))\(shown) is not a date as"
              + " YYYY-MM-DDTHH:MM:SSZ with a month of 1-12, a day of the month, an hour of 0-23"
              + " and minutes and seconds of 0-59"
          }
        default: break
        }
        if let reason {
          found.append(MisreadValue(key: entry, reason: reason))
          if !all { return found }
        }
      }
      return found
    }
  }

  /// What a property list given from outside (a `groupctl write` literal, an imported file)
  /// holds after its root value, as ``trailingContent(in:)`` names it in XML, and
  /// ``OpenStepPropertyList/contentAfterStringsFile(in:)`` after a strings file's last entry;
  /// `nil` for a binary property list, or when only white space, comments and processing
  /// instructions follow.
  ///
  /// Not one of the ``misreadValues(in:)``: the values before it are read as the file says
  /// them. A suite's own file with XML after its root value is read as Foundation reads it,
  /// its root value, so that no key it holds is left out for what follows; a tool that takes
  /// a file from outside asks here and refuses it, so that nothing in it is dropped unsaid.
  package static func contentAfterRootValue(in data: Data) -> String? {
    if data.starts(with: "bplist".utf8) { return nil }
    var text = data
    if let utf16 = utf16Text(withByteOrderMark(data)) { text = Data(utf16.utf8) }
    if let strings = OpenStepPropertyList.contentAfterStringsFile(in: Array(text)) {
      return "in OpenStep text, \(strings)"
    }
    return trailingContent(in: text)
  }

  /// What an XML document (or a bare value, as `groupctl write` takes one: `<string>a</string>`)
  /// holds after its root value, as a reason naming it and its line; `nil` when only white
  /// space, comments and processing instructions follow it, or `text` is not XML. Foundation's
  /// parser reads the first value and drops the rest without a word: after a bare value
  /// (`<string>a</string><string>b</string>` reads as "a") and after `</plist>`; inside
  /// `<plist>` it refuses a second value itself.
  static func trailingContent(in text: Data) -> String? {
    // XML starts with `<`, white space and a byte order mark aside; OpenStep text that starts
    // with `<` is data (`<0aff>`), whose tag is neither `<plist>` nor a value's.
    guard let first = text.firstIndex(where: { !" \t\r\n".utf8.contains($0) && $0 < 0x80 }),
      text[first] == UInt8(ascii: "<")
    else { return nil }
    return XMLPropertyList.markup(text) { markup -> String? in
      guard var element = markup.next(), !element.closing else { return nil }
      let wrapped = markup.isPlist(element)
      if wrapped {
        guard !element.empty, let value = markup.next(), !value.closing, value.tag != nil else { return nil }
        element = value
      } else if element.tag == nil {
        return nil
      }
      let place: String
      // The root value's end: its tags nest, and a value's text holds no tag.
      var depth = element.empty ? 0 : 1
      while depth > 0 {
        guard let inner = markup.next() else { return nil }
        if inner.closing {
          depth -= 1
        } else if !inner.empty {
          depth += 1
        }
      }
      if wrapped {
        // Foundation's parser takes nothing but `</plist>` after the value inside `<plist>`.
        guard let close = markup.next(), close.closing, markup.isPlist(close) else { return nil }
        place = "</plist>"
      } else {
        place = "the root value"
      }
      guard let start = markup.passMisc() else { return nil }
      let rest = String(decoding: text[(text.startIndex + start)...].prefix(200), as: UTF8.self)
      var shown = String(rest.prefix(40))
      if shown.count < rest.count || start + 200 < text.count { shown += "…" }
      return "line \(markup.line(at: start)) holds \"\(PrintedText.escapingControls(shown))\" after"
        + " \(place); a property list holds one value, and Foundation's parser reads the first and"
        + " drops what follows it"
    }
  }

  /// Why Foundation's parser refuses `data` as OpenStep text, saying what was found, where
  /// (line and column) and what was expected there, its control characters escaped; `nil` when
  /// `data` is XML or reads as OpenStep text (``OpenStepPropertyList/syntaxError(in:)``). A
  /// document in UTF-16 with its byte order mark is looked at as its UTF-8 text.
  package static func openStepSyntaxError(in data: Data) -> String? {
    let text = utf16Text(data).map { Array($0.utf8) } ?? Array(data)
    return OpenStepPropertyList.syntaxError(in: text)
  }

  /// Where text that must be UTF-8 is not: the first byte that starts no valid UTF-8
  /// sequence, with its line and column (counted in bytes, from 1), as "the byte 0xFF at line
  /// 1, column 7 is not UTF-8"; `nil` when `data` is UTF-8 throughout, is UTF-16 with its byte
  /// order mark, or is an XML document that declares another encoding.
  package static func nonUTF8Text(in data: Data) -> String? {
    if utf16Text(data) != nil { return nil }
    let bytes = [UInt8](data)
    if bytes.starts(with: Array("<?xml".utf8)) {
      let declaration = String(decoding: bytes.prefix { $0 != UInt8(ascii: ">") }, as: UTF8.self).lowercased()
      if declaration.contains("encoding="), !declaration.contains("utf-8") { return nil }
    }
    var index = 0
    var line = 1
    var lineStart = 0
    while index < bytes.count {
      let byte = bytes[index]
      if byte < 0x80 {
        if byte == UInt8(ascii: "\n") {
          line += 1
          lineStart = index + 1
        }
        index += 1
        continue
      }
      let length =
        switch byte {
        case 0xC2...0xDF: 2
        case 0xE0...0xEF: 3
        case 0xF0...0xF4: 4
        default: 0
        }
      guard length > 0, index + length <= bytes.count,
        String(validating: bytes[index..<(index + length)], as: UTF8.self) != nil
      else {
        let hex = String(byte, radix: 16, uppercase: true)
        return "the byte 0x\(hex.count == 1 ? "0" : "")\(hex) at line \(line), column"
          + " \(index - lineStart + 1) is not UTF-8"
      }
      index += length
    }
    return nil
  }

  /// `data` with a byte order mark when it is an XML document in UTF-16 without one (it
  /// starts `<?` in UTF-16, as XML tells the encoding of a document without a mark), which
  /// Foundation's parser reads only with a mark; else `data` as it is.
  package static func withByteOrderMark(_ data: Data) -> Data {
    if data.starts(with: [0x3C, 0x00, 0x3F, 0x00]) { return Data([0xFF, 0xFE]) + data }
    if data.starts(with: [0x00, 0x3C, 0x00, 0x3F]) { return Data([0xFE, 0xFF]) + data }
    return data
  }

  /// The text of a document in UTF-16 with its byte order mark; `nil` for any other.
  private static func utf16Text(_ data: Data) -> String? {
    guard data.starts(with: [0xFF, 0xFE]) || data.starts(with: [0xFE, 0xFF]) else { return nil }
    return String(data: data, encoding: .utf16)
  }

  /// `[-]Y…Y-MM-DDTHH:MM:SSZ`, as Foundation writes a date (a year of any width, negative
  /// before year 1), each field within its range.
  private static func isDate(_ text: String) -> Bool {
    var u = Array(text.utf8)
    if u.first == UInt8(ascii: "-") { u.removeFirst() }
    guard let dash = u.firstIndex(of: UInt8(ascii: "-")), dash >= 1,
      u.count - dash == 16
    else { return false }
    let tail = Array(u[dash...])
    guard tail[3] == UInt8(ascii: "-"), tail[6] == UInt8(ascii: "T"), tail[9] == UInt8(ascii: ":"),
      tail[12] == UInt8(ascii: ":"), tail[15] == UInt8(ascii: "Z")
    else { return false }
    func number(_ bytes: ArraySlice<UInt8>) -> Int? {
      guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
      var n = 0
      for byte in bytes {
        guard byte >= 0x30 && byte <= 0x39 else { return nil }
        n = n * 10 + Int(byte - 0x30)
      }
      return n
    }
    guard let year = number(u[..<dash]), let month = number(tail[1..<3]),
      let day = number(tail[4..<6]), let hour = number(tail[7..<9]),
      let minute = number(tail[10..<12]), let second = number(tail[13..<15]),
      (1...12).contains(month), hour < 24, minute < 60, second < 60
    else { return false }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    let days = [31, leap || text.hasPrefix("-") ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return (1...days[month - 1]).contains(day)
  }
}

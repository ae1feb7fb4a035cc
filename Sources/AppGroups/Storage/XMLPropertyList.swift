import Foundation

/// A reader of plain XML property lists (Apple's `plist` 1.0), for the files people and
/// administrators write: the entitlement manifest, hand-edited preferences.
///
/// It reads the common form only (UTF-8, the eight value elements, the five named entities
/// and numeric character references, comments) and gives up on anything else — CDATA, a
/// carriage return, a duplicate key, a number or date it does not read exactly — with `nil`,
/// so that the caller asks Foundation's parser, which reads the rest and words the errors.
/// Its lexer also walks the tags of a document Foundation read, tolerantly (``markup(_:_:)``):
/// the manifest's check for a key written twice, which Foundation's parser keeps one of.
/// It exists because Foundation's parser, with the bridging of its result, is most of the
/// time a new process takes to open a group suite.
enum XMLPropertyList {
  /// The value held by `data`, or `nil` when this reader does not take it.
  static func decode(_ data: Data) -> PropertyListValue? {
    data.withUnsafeBytes { raw in
      var parser = Parser(bytes: raw.bindMemory(to: UInt8.self))
      return parser.document()
    }
  }

  /// Walks the document held by `data` with a ``Scanner``, for a caller that needs part of its
  /// values and checks the rest itself: `body`'s answer, or `nil` when `body` gives up.
  static func scan<Result>(_ data: Data, _ body: (inout Scanner) -> Result?) -> Result? {
    data.withUnsafeBytes { raw in
      var scanner = Scanner(parser: Parser(bytes: raw.bindMemory(to: UInt8.self)))
      return body(&scanner)
    }
  }

  /// A walk over a document in the steps ``decode(_:)`` takes, without building the values it
  /// is not asked for (a new process reading the manifest would instantiate a dictionary and
  /// an array of ``PropertyListValue`` for it alone). Each step is the reader's own code, so a
  /// document walked to ``finish()`` with every step succeeding is one ``decode(_:)`` reads,
  /// and reads as the steps said: a dictionary's keys are still to be checked for repeats by
  /// the caller (``decode(_:)`` gives up on a repeated key). `false` or `nil` from a step: the
  /// reader would not take the document as walked; the caller gives up.
  struct Scanner {
    fileprivate var parser: Parser

    /// The prolog and `<plist version="1.0">`, as ``decode(_:)`` takes them.
    mutating func begin() -> Bool { parser.prolog() }

    /// The opening tag of the value at `depth` (the root's is 0; a dictionary's values and an
    /// array's items are one deeper than it): its element and whether it is empty (`<dict/>`).
    mutating func open(depth: Int) -> (Tag, Bool)? { parser.openValue(depth: depth) }

    /// Whether the dictionary or array being walked ends here (its closing tag consumed);
    /// `nil` on an unterminated comment.
    mutating func ends(_ tag: Tag) -> Bool? {
      guard parser.skipMisc() else { return nil }
      switch tag {
      case .dict: return parser.consume("</dict>")
      case .array: return parser.consume("</array>")
      default: return nil
      }
    }

    /// A dictionary's next key, after ``ends(_:)`` said it does not end.
    mutating func key() -> String? {
      guard let (tag, empty) = parser.openTag(), tag == .key, !empty else { return nil }
      return parser.text(closing: .key)
    }

    /// The text of a `<string>` just opened with ``open(depth:)`` (empty: `""`).
    mutating func string(empty: Bool) -> String? {
      empty ? "" : parser.text(closing: .string)
    }

    /// Reads the value at `depth` whole, as ``decode(_:)`` does, and drops it.
    mutating func skipValue(depth: Int) -> Bool { parser.value(depth: depth) != nil }

    /// `</plist>` and nothing after it but white space and comments.
    mutating func finish() -> Bool { parser.epilog() }
  }

  /// Walks the tags of the document held by `data` with a ``Markup`` walk: `body`'s answer.
  static func markup<Result>(_ data: Data, _ body: (inout Markup) -> Result) -> Result {
    data.withUnsafeBytes { raw in
      var markup = Markup(parser: Parser(bytes: raw.bindMemory(to: UInt8.self), tolerant: true))
      return body(&markup)
    }
  }

  /// A tag met by a ``Markup`` walk.
  struct Element {
    /// The element, or `nil` for one the reader does not know (`plist`, or another name).
    let tag: Tag?
    /// Whether it is a closing tag (`</dict>`).
    let closing: Bool
    /// Whether it is an empty element's tag (`<dict/>`).
    let empty: Bool
    /// Where its `<` is in the document.
    let start: Int
  }

  /// A tolerant walk over a document's tags with the reader's lexer, for a document another
  /// parser (Foundation's) has read already: it passes over text and over what ``decode(_:)``
  /// gives up on — `CDATA` sections, processing instructions, a document type, attributes,
  /// carriage returns — as Foundation's parser reads them. It checks no structure: the caller
  /// follows the tags it is given.
  struct Markup {
    fileprivate var parser: Parser

    /// The next tag after the text, comments, `CDATA` sections, processing instructions and
    /// declarations before it; `nil` at the end, or where the markup does not end.
    mutating func next() -> Element? { parser.element() }

    /// The text up to `</closing>`, after an opening tag ``next()`` gave: its references
    /// resolved and its `CDATA` sections' contents taken as they are, as a property-list reader
    /// decodes a string; `nil` when it does not end there, holds other markup (which
    /// Foundation's parser refuses) or is not UTF-8.
    mutating func text(closing: Tag) -> String? { parser.text(closing: closing) }

    /// Where the walk is in the document: the offset of the byte after the last tag or text
    /// it read.
    var offset: Int { parser.at }

    /// Passes over white space, comments and processing instructions, which XML allows after
    /// a document's root element: the offset of the first byte that is none of them, or `nil`
    /// when the document ends first. A comment or an instruction that does not end is not
    /// passed over: its offset is the answer.
    mutating func passMisc() -> Int? {
      while parser.at < parser.bytes.count {
        let start = parser.at
        switch parser.bytes[start] {
        case 0x20, 0x09, 0x0A, 0x0D: parser.at += 1
        case UInt8(ascii: "<") where parser.consume("<!--"):
          guard parser.skip(past: "-->") else {
            parser.at = start
            return start
          }
        case UInt8(ascii: "<") where parser.consume("<?"):
          guard parser.skip(past: "?>") else {
            parser.at = start
            return start
          }
        default: return start
        }
      }
      return nil
    }

    /// Whether `element` is a `<plist>` tag (its name is `plist`, attributes aside).
    func isPlist(_ element: Element) -> Bool {
      let bytes = parser.bytes
      let name = element.start + (element.closing ? 2 : 1)
      guard bytes.count - name > 5, Parser.matches(bytes, name, "plist") else { return false }
      return " \t\r\n/>".utf8.contains(bytes[name + 5])
    }

    /// The line (the first is 1) of the document's byte at `offset`: lines end as XML ends
    /// them, at a line feed, a carriage return and line feed, or a carriage return alone.
    /// `known` is a byte before it whose line is known, counted on from (the start by default).
    func line(at offset: Int, after known: (offset: Int, line: Int) = (0, 1)) -> Int {
      let bytes = parser.bytes
      var line = known.line
      for index in known.offset..<offset {
        if bytes[index] == UInt8(ascii: "\n")
          || (bytes[index] == UInt8(ascii: "\r") && (index + 1 == bytes.count || bytes[index + 1] != UInt8(ascii: "\n")))
        {
          line += 1
        }
      }
      return line
    }
  }

  /// The bytes a `<data>`'s text holds as base64, or `nil` when it is not base64 as this reader
  /// reads it (see ``PropertyListValue/misreadValues(in:)``).
  static func base64Data(_ text: String) -> PropertyListValue? { Parser.data(text) }

  /// The elements the reader knows, matched on the bytes: no `String` is made for a tag's
  /// name, and no literal is copied into an array to compare it (a manifest is read by
  /// every new process that opens a group suite).
  enum Tag {
    case dict, array, `true`, `false`, string, integer, real, date, data, key

    fileprivate init?(_ name: UnsafeBufferPointer<UInt8>) {
      // One comparison after another (each first compares the lengths), not a loop over a
      // table: an array of tags would be one more generic type a new process instantiates.
      func named(_ literal: StaticString) -> Bool { Parser.equal(name, literal) }
      if named("key") {
        self = .key
      } else if named("string") {
        self = .string
      } else if named("dict") {
        self = .dict
      } else if named("array") {
        self = .array
      } else if named("integer") {
        self = .integer
      } else if named("true") {
        self = .true
      } else if named("false") {
        self = .false
      } else if named("real") {
        self = .real
      } else if named("date") {
        self = .date
      } else if named("data") {
        self = .data
      } else {
        return nil
      }
    }

    fileprivate var name: StaticString {
      switch self {
      case .dict: "dict"
      case .array: "array"
      case .true: "true"
      case .false: "false"
      case .string: "string"
      case .integer: "integer"
      case .real: "real"
      case .date: "date"
      case .data: "data"
      case .key: "key"
      }
    }
  }

  fileprivate struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    var at = 0
    /// Whether text takes what Foundation's parser takes and ``decode(_:)`` gives up on
    /// (``Markup``'s walk): `CDATA` sections, control characters and their references, white
    /// space in the closing tag.
    let tolerant: Bool

    init(bytes: UnsafeBufferPointer<UInt8>, tolerant: Bool = false) {
      self.bytes = bytes
      self.tolerant = tolerant
    }

    // MARK: Document

    mutating func document() -> PropertyListValue? {
      guard prolog(), let value = value(), epilog() else { return nil }
      return value
    }

    /// The prolog exactly as Apple writes it (the document type optional; any other is
    /// Foundation's to judge), then `<plist version="1.0">`.
    mutating func prolog() -> Bool {
      guard consume(#"<?xml version="1.0" encoding="UTF-8"?>"#), skipMisc() else { return false }
      if consume(
        #"<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">"#)
      {
        guard skipMisc() else { return false }
      }
      return consume(#"<plist version="1.0">"#)
    }

    /// `</plist>` after the root value, and nothing after it but white space and comments.
    mutating func epilog() -> Bool {
      skipMisc() && consume("</plist>") && skipMisc() && at == bytes.count
    }

    /// Skips white space and comments; `false` on an unterminated comment.
    mutating func skipMisc() -> Bool {
      while at < bytes.count {
        switch bytes[at] {
        case 0x20, 0x09, 0x0A: at += 1
        case UInt8(ascii: "<") where peek("<!--"):
          guard skip(past: "-->") else { return false }
        default: return true
        }
      }
      return true
    }

    // MARK: Values

    mutating func value(depth: Int = 0) -> PropertyListValue? {
      guard let (tag, empty) = openValue(depth: depth) else { return nil }
      switch tag {
      case .dict: return empty ? .dictionary([:]) : dictionary(depth: depth)
      case .array: return empty ? .array([]) : array(depth: depth)
      case .true where empty: return .bool(true)
      case .false where empty: return .bool(false)
      case .string: return empty ? .string("") : text(closing: .string).map { .string($0) }
      case .integer: return empty ? nil : text(closing: .integer).flatMap(Self.integer)
      case .real: return empty ? nil : text(closing: .real).flatMap(Self.real)
      case .date: return empty ? nil : text(closing: .date).flatMap(Self.date)
      case .data: return empty ? .data(Data()) : text(closing: .data).flatMap(Self.data)
      default: return nil
      }
    }

    mutating func dictionary(depth: Int) -> PropertyListValue? {
      var values: [String: PropertyListValue] = [:]
      while true {
        guard skipMisc() else { return nil }
        if consume("</dict>") { return .dictionary(values) }
        guard let (tag, empty) = openTag(), tag == .key else { return nil }
        guard !empty, let key = text(closing: .key) else { return nil }
        guard let value = value(depth: depth + 1), values.updateValue(value, forKey: key) == nil else {
          return nil
        }
      }
    }

    mutating func array(depth: Int) -> PropertyListValue? {
      var items: [PropertyListValue] = []
      while true {
        guard skipMisc() else { return nil }
        if consume("</array>") { return .array(items) }
        guard let item = value(depth: depth + 1) else { return nil }
        items.append(item)
      }
    }

    /// The opening tag of a value at `depth`, after white space and comments.
    mutating func openValue(depth: Int) -> (Tag, Bool)? {
      guard depth < 512, skipMisc(), at < bytes.count, bytes[at] == UInt8(ascii: "<") else { return nil }
      return openTag()
    }

    /// `<name>` or `<name/>` (no attributes) at the cursor: its element and whether it is
    /// empty; `nil` for an element this reader does not know.
    mutating func openTag() -> (Tag, Bool)? {
      guard at < bytes.count, bytes[at] == UInt8(ascii: "<") else { return nil }
      var end = at + 1
      while end < bytes.count, bytes[end] != UInt8(ascii: ">") && bytes[end] != UInt8(ascii: "/") {
        let c = bytes[end]
        guard (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) else { return nil }
        end += 1
      }
      guard end < bytes.count, end > at + 1 else { return nil }
      guard let tag = Tag(UnsafeBufferPointer(rebasing: bytes[(at + 1)..<end])) else { return nil }
      if bytes[end] == UInt8(ascii: "/") {
        guard end + 1 < bytes.count, bytes[end + 1] == UInt8(ascii: ">") else { return nil }
        at = end + 2
        return (tag, true)
      }
      at = end + 1
      return (tag, false)
    }

    /// The text up to `</closing>`, its references resolved; `nil` on markup inside it, an
    /// unknown reference, a carriage return or bytes that are not UTF-8.
    mutating func text(closing: Tag) -> String? {
      var decoded: [UInt8] = []
      var start = at
      var plain = true
      while at < bytes.count {
        let c = bytes[at]
        if c == UInt8(ascii: "<") {
          let end = at
          guard consumeClosingTag(closing.name) else {
            // Tolerant: a CDATA section's contents, as they are, or the closing tag with white
            // space before its `>` (as Foundation's parser takes them).
            guard tolerant else { return nil }
            plain = false
            decoded.append(contentsOf: bytes[start..<end])
            if consume("<![CDATA[") {
              let contents = at
              guard skip(past: "]]>") else { return nil }
              decoded.append(contentsOf: bytes[contents..<(at - 3)])
              start = at
              continue
            }
            guard let element = tag(), element.closing, element.tag == closing else { return nil }
            return decoded.withUnsafeBufferPointer { Self.string($0) }
          }
          if plain { return Self.string(UnsafeBufferPointer(rebasing: bytes[start..<end])) }
          decoded.append(contentsOf: bytes[start..<end])
          return decoded.withUnsafeBufferPointer { Self.string($0) }
        }
        // Control characters (a carriage return included) are Foundation's to judge.
        if c < 0x20 && c != 0x09 && c != 0x0A && !tolerant { return nil }
        if c == UInt8(ascii: "&") {
          plain = false
          decoded.append(contentsOf: bytes[start..<at])
          guard let scalar = reference() else { return nil }
          decoded.append(contentsOf: Array(String(Character(scalar)).utf8))
          start = at
          continue
        }
        at += 1
      }
      return nil
    }

    /// `&lt;` `&gt;` `&amp;` `&quot;` `&apos;` `&#N;` `&#xN;` at the cursor.
    mutating func reference() -> Unicode.Scalar? {
      guard let semicolon = bytes[at...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { return nil }
      let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[(at + 1)..<semicolon]), as: UTF8.self)
      at = semicolon + 1
      switch name {
      case "lt": return "<"
      case "gt": return ">"
      case "amp": return "&"
      case "quot": return "\""
      case "apos": return "'"
      default:
        guard name.hasPrefix("#") else { return nil }
        let digits = name.dropFirst()
        let code = digits.hasPrefix("x") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
        guard let code, code >= 0x20 || code == 0x09 || code == 0x0A || tolerant else { return nil }
        return Unicode.Scalar(code)
      }
    }

    // MARK: Tolerant markup

    /// The next tag, after the text and the markup that is not a tag before it.
    mutating func element() -> Element? {
      while at < bytes.count {
        guard bytes[at] == UInt8(ascii: "<") else {
          at += 1
          continue
        }
        if consume("<![CDATA[") {
          guard skip(past: "]]>") else { return nil }
          continue
        }
        switch passMarkup() {
        case true?: continue
        case false?: return nil
        case nil: return tag()
        }
      }
      return nil
    }

    /// Passes over the comment, processing instruction or declaration at the cursor: `nil`
    /// when there is none, `false` when it does not end.
    mutating func passMarkup() -> Bool? {
      if consume("<!--") { return skip(past: "-->") }
      if consume("<?") { return skip(past: "?>") }
      if consume("<!") {
        // A document type, its internal subset in brackets included.
        var brackets = 0
        while at < bytes.count {
          let c = bytes[at]
          at += 1
          if c == UInt8(ascii: "[") {
            brackets += 1
          } else if c == UInt8(ascii: "]") {
            brackets -= 1
          } else if c == UInt8(ascii: ">") && brackets <= 0 {
            return true
          }
        }
        return false
      }
      return nil
    }

    /// The opening or closing tag at the cursor, attributes included; `nil` when it does not
    /// end. It ends at the first `>`, a quoted one too, as Foundation's parser ends it.
    mutating func tag() -> Element? {
      let start = at
      at += 1
      let closing = consume("/")
      let name = at
      while at < bytes.count, !" \t\r\n/>".utf8.contains(bytes[at]) { at += 1 }
      let tag = Tag(UnsafeBufferPointer(rebasing: bytes[name..<at]))
      guard skip(past: ">") else { return nil }
      return Element(tag: tag, closing: closing, empty: bytes[at - 2] == UInt8(ascii: "/"), start: start)
    }

    // MARK: Cursor

    func peek(_ literal: StaticString) -> Bool {
      guard bytes.count - at >= literal.utf8CodeUnitCount else { return false }
      return Self.matches(bytes, at, literal)
    }

    mutating func consume(_ literal: StaticString) -> Bool {
      guard peek(literal) else { return false }
      at += literal.utf8CodeUnitCount
      return true
    }

    /// `</name>` at the cursor: moves past it.
    mutating func consumeClosingTag(_ name: StaticString) -> Bool {
      let count = name.utf8CodeUnitCount
      guard bytes.count - at >= count + 3, bytes[at] == UInt8(ascii: "<"),
        bytes[at + 1] == UInt8(ascii: "/"), bytes[at + 2 + count] == UInt8(ascii: ">"),
        Self.equal(UnsafeBufferPointer(rebasing: bytes[(at + 2)..<(at + 2 + count)]), name)
      else { return false }
      at += count + 3
      return true
    }

    /// Moves the cursor past the next `literal`; `false` when there is none.
    mutating func skip(past literal: StaticString) -> Bool {
      while bytes.count - at >= literal.utf8CodeUnitCount {
        if consume(literal) { return true }
        at += 1
      }
      return false
    }

    /// `bytes` as a string; `nil` when they are not UTF-8. ASCII (every name a manifest holds)
    /// is taken as it is: `String(validating:as:)` is generic over the encoding and costs
    /// about 1,800 instructions a string, most of a manifest's reading.
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
      var ascii = true
      for byte in bytes where byte >= 0x80 {
        ascii = false
        break
      }
      if ascii { return String(decoding: bytes, as: UTF8.self) }
      return String(validating: bytes, as: UTF8.self)
    }

    static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
      bytes.count == literal.utf8CodeUnitCount && matches(bytes, 0, literal)
    }

    /// Whether `literal`'s bytes are at `start` in `bytes`, which holds that many from there:
    /// an indexed loop (`elementsEqual`, a sequence's iterators, cost about ten times more:
    /// 17 k instructions of a manifest's reading).
    @inline(__always)
    static func matches(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ literal: StaticString) -> Bool {
      let wanted = literal.utf8Start
      for offset in 0..<literal.utf8CodeUnitCount where bytes[start + offset] != wanted[offset] {
        return false
      }
      return true
    }

    // MARK: Scalars

    static func integer(_ text: String) -> PropertyListValue? {
      guard text.utf8.first != UInt8(ascii: "+"), let n = Int(text) else { return nil }
      return .integer(n)
    }

    /// A number as Foundation writes one: digits, with a `-` before and an exponent after them
    /// as they come, or `nan`, `+infinity`, `-infinity` (other spellings go to Foundation).
    static func real(_ text: String) -> PropertyListValue? {
      switch text {
      case "nan": return .real(.nan)
      case "+infinity": return .real(.infinity)
      case "-infinity": return .real(-.infinity)
      default: break
      }
      guard let first = text.utf8.first, first == UInt8(ascii: "-") || (first >= 0x30 && first <= 0x39),
        let n = Double(text), n.isFinite
      else { return nil }
      return .real(n)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`, as Apple writes dates in XML.
    static func date(_ text: String) -> PropertyListValue? {
      let u = Array(text.utf8)
      guard u.count == 20, u[4] == 0x2D, u[7] == 0x2D, u[10] == UInt8(ascii: "T"), u[13] == 0x3A,
        u[16] == 0x3A, u[19] == UInt8(ascii: "Z")
      else { return nil }
      func number(_ range: Range<Int>) -> Int32? {
        var n: Int32 = 0
        for i in range {
          guard u[i] >= 0x30 && u[i] <= 0x39 else { return nil }
          n = n * 10 + Int32(u[i] - 0x30)
        }
        return n
      }
      guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
        let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
        (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
      else { return nil }
      var parts = tm()
      parts.tm_year = year - 1900
      parts.tm_mon = month - 1
      parts.tm_mday = day
      parts.tm_hour = hour
      parts.tm_min = minute
      parts.tm_sec = second
      let seconds = timegm(&parts)
      // A day past the month's end (February 30) is normalised by timegm: refuse it.
      guard parts.tm_mday == day, parts.tm_mon == month - 1 else { return nil }
      return .date(Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    static func data(_ text: String) -> PropertyListValue? {
      // XML's own white space only: anything else (U+0085, a no-break space…) makes the
      // base64 invalid here, and the document goes to Foundation, which reads it its way.
      let compact = String(text.unicodeScalars.filter { !" \t\n\r".unicodeScalars.contains($0) })
      // Padding only at the end: Foundation's property-list reader takes an "=" inside the
      // text as a zero digit and goes on ("…KQ=9" is 12 bytes to it, 11 to `Data`'s decoder):
      // such a document goes to Foundation.
      if let padding = compact.firstIndex(of: "="), compact[padding...].contains(where: { $0 != "=" }) {
        return nil
      }
      return Data(base64Encoded: compact).map { .data($0) }
    }
  }
}

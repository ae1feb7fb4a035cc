internal import Foundation

// The old OpenStep text form of a property list (`{ key = value; list = (a, b); }`), as a
// hand-edited suite file may be, is read by Foundation's parser, which keeps the last value
// of a key given twice in one dictionary without a word. This scanner finds such keys, so
// that the file is refused (or, in a salvage, the top-level key is left out) as the XML and
// binary readers do. It reads only the structure: strings, the punctuation, comments.

/// The keys an OpenStep-text property list gives twice in one dictionary.
enum OpenStepPropertyList {
  /// Every key `text` gives a second (or third…) time in one dictionary, in the order of the
  /// file, with the top-level key it sits under; the first only, unless `all`. `nil` when
  /// `text` is not OpenStep text whose top object is a dictionary: its first character, past
  /// white space and comments, is not `{`, and it is not a strings file (`key = value;`
  /// pairs with no braces around them).
  ///
  /// Escapes are read as Foundation reads them (`\101` is `A`, `\U00e9` is `é`); a key with
  /// one whose character is not known exactly (an octal escape past ASCII, half of a UTF-16
  /// pair) is never named, so a file is never refused for keys that differ. Keys are compared
  /// as Swift strings, by Unicode canonical equivalence, as the dictionary Foundation's parser
  /// makes is read here: two spellings of `é` are one key, and one of their values would be
  /// lost. Where the text stops making sense to the scanner (Foundation read the
  /// file, so that is a form the scanner does not know), it stops and names what it found.
  static func repeatedKeys(in text: Data, all: Bool) -> [PropertyListValue.MisreadValue]? {
    var scanner = Scanner(Array(text))
    var pending: Token?
    switch scanner.nextToken() {
    case .open(dictionary: true)?:
      break
    case .string(let bytes, let line)?:
      // A strings file, `key = value;` with no braces, which Foundation reads as a dictionary.
      var ahead = scanner
      guard ahead.nextToken() == .equals else { return nil }
      pending = .string(bytes, line: line)
    default:
      return nil
    }
    // The open containers: a dictionary's keys so far with their lines, and whether a key
    // comes next (after `{` or `;`); `nil` for an array.
    var stack: [(keys: [String: Int], keyNext: Bool)?] = [([:], true)]
    // The top dictionary's key whose value is being read.
    var entry: String?
    var found: [PropertyListValue.MisreadValue] = []
    while !stack.isEmpty, let token = pending ?? scanner.nextToken() {
      pending = nil
      let depth = stack.count - 1
      switch token {
      case .open(let dictionary):
        stack.append(dictionary ? ([:], true) : nil)
      case .close:
        stack.removeLast()
      case .equals:
        stack[depth]?.keyNext = false
      case .semicolon:
        stack[depth]?.keyNext = true
      case .comma, .data:
        break
      case .string(let bytes, let line):
        guard stack[depth]?.keyNext == true else { continue }
        stack[depth]?.keyNext = false
        // Bytes that are not UTF-8 are left to Foundation (two such keys would both read here
        // as U+FFFD).
        guard let bytes, let key = String(validating: bytes, as: UTF8.self) else { continue }
        if depth == 0 { entry = key }
        if let earlier = stack[depth]?.keys[key] {
          let reason = "the key \(key.debugDescription) is given twice in one dictionary (lines"
            + " \(earlier) and \(line)); a dictionary holds each key once"
          found.append(.init(key: entry, reason: reason))
          if !all { return found }
        } else {
          stack[depth]?.keys[key] = line
        }
      }
    }
    return found
  }

  /// A piece of OpenStep text.
  enum Token: Equatable {
    case open(dictionary: Bool)
    case close
    case equals, semicolon, comma
    /// `<hex>`.
    case data
    /// A string, quoted or not, by its bytes (`nil` when an escape makes them uncertain),
    /// and the line it starts on.
    case string([UInt8]?, line: Int)
  }

  /// Reads OpenStep text a token at a time, counting lines.
  struct Scanner {
    let bytes: [UInt8]
    var index = 0
    var line = 1

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The next token; `nil` at the end, or at a byte that starts none (the scan stops).
    mutating func nextToken() -> Token? {
      skipSpaceAndComments()
      guard index < bytes.count else { return nil }
      let byte = bytes[index]
      index += 1
      switch byte {
      case UInt8(ascii: "{"): return .open(dictionary: true)
      case UInt8(ascii: "("): return .open(dictionary: false)
      case UInt8(ascii: "}"), UInt8(ascii: ")"): return .close
      case UInt8(ascii: "="): return .equals
      case UInt8(ascii: ";"): return .semicolon
      case UInt8(ascii: ","): return .comma
      case UInt8(ascii: "<"):
        guard let end = bytes[index...].firstIndex(of: UInt8(ascii: ">")) else { return nil }
        line += bytes[index..<end].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        index = end + 1
        return .data
      case UInt8(ascii: "\""), UInt8(ascii: "'"):
        return quoted(closedBy: byte)
      default:
        guard Self.isUnquoted(byte) else { return nil }
        let start = index - 1
        while index < bytes.count, Self.isUnquoted(bytes[index]) { index += 1 }
        return .string(Array(bytes[start..<index]), line: line)
      }
    }

    /// A quoted string's bytes, its opening quote read; `nil` when it does not end.
    private mutating func quoted(closedBy quote: UInt8) -> Token? {
      let startLine = line
      var text: [UInt8]? = []
      while index < bytes.count {
        let byte = bytes[index]
        index += 1
        if byte == quote { return .string(text, line: startLine) }
        if byte == 0x0A { line += 1 }
        guard byte == UInt8(ascii: "\\") else {
          text?.append(byte)
          continue
        }
        guard index < bytes.count else { return nil }
        let escaped = bytes[index]
        index += 1
        if escaped == 0x0A { line += 1 }
        guard let scalar = escape(escaped) else {
          text = nil
          continue
        }
        text?.append(contentsOf: String(Character(scalar)).utf8)
      }
      return nil
    }

    /// The character an escape stands for, as Foundation's parser reads it, its letter
    /// `escaped` read (and the digits after it, here); `nil` when it is not known exactly
    /// (an octal escape past ASCII, in the NeXTSTEP encoding, or half of a UTF-16 pair).
    private mutating func escape(_ escaped: UInt8) -> Unicode.Scalar? {
      switch escaped {
      case UInt8(ascii: "0")...UInt8(ascii: "7"):
        // At most three digits.
        var number = Int(escaped - 0x30)
        for _ in 0..<2 {
          guard index < bytes.count, (0x30...0x37).contains(bytes[index]) else { break }
          number = number * 8 + Int(bytes[index] - 0x30)
          index += 1
        }
        return number < 0x80 ? Unicode.Scalar(UInt8(number)) : nil
      case UInt8(ascii: "U"):
        // At most four hexadecimal digits: a UTF-16 unit.
        var number: UInt32 = 0
        for _ in 0..<4 {
          guard index < bytes.count, let digit = Self.hexadecimal(bytes[index]) else { break }
          number = number * 16 + digit
          index += 1
        }
        return Unicode.Scalar(number)
      case UInt8(ascii: "a"): return "\u{07}"
      case UInt8(ascii: "b"): return "\u{08}"
      case UInt8(ascii: "f"): return "\u{0C}"
      case UInt8(ascii: "n"): return "\n"
      case UInt8(ascii: "r"): return "\r"
      case UInt8(ascii: "t"): return "\t"
      case UInt8(ascii: "v"): return "\u{0B}"
      case 0x80...: return nil
      default: return Unicode.Scalar(escaped)
      }
    }

    /// The value of a hexadecimal digit; `nil` for another byte.
    private static func hexadecimal(_ byte: UInt8) -> UInt32? {
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - 0x30)
      case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - 0x61 + 10)
      case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - 0x41 + 10)
      default: return nil
      }
    }

    /// Skips white space, `// …` to the end of the line and `/* … */`.
    private mutating func skipSpaceAndComments() {
      while index < bytes.count {
        let byte = bytes[index]
        if byte == 0x0A {
          line += 1
          index += 1
        } else if byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0B || byte == 0x0C {
          index += 1
        } else if byte == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "/") {
          while index < bytes.count, bytes[index] != 0x0A { index += 1 }
        } else if byte == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "*") {
          index += 2
          while index < bytes.count,
            !(bytes[index] == UInt8(ascii: "*") && index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "/"))
          {
            if bytes[index] == 0x0A { line += 1 }
            index += 1
          }
          index = min(index + 2, bytes.count)
        } else {
          return
        }
      }
    }

    /// Whether `byte` may be part of an unquoted string, as Foundation's parser has it:
    /// letters, digits, `_`, `$`, `/`, `:`, `.` and `-`.
    private static func isUnquoted(_ byte: UInt8) -> Bool {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"):
        return true
      case UInt8(ascii: "_"), UInt8(ascii: "$"), UInt8(ascii: "/"), UInt8(ascii: ":"),
        UInt8(ascii: "."), UInt8(ascii: "-"):
        return true
      default:
        return false
      }
    }
  }
}

// Why Foundation's parser refuses a piece of OpenStep text, in words that say what was found,
// where, and what was expected there: its own reasons name a line at most ("Missing ';' on
// line 1"), and the one shown for a whole file is its XML parser's ("Unexpected character {").
extension OpenStepPropertyList {
  /// What makes `text` not OpenStep text as Foundation's parser reads it: what was found (a
  /// character, or the end of the text), its line and column, and what was expected there
  /// (with where the dictionary, array, data or string it sits in was opened); `nil` when the
  /// text reads (this follows the parser's grammar, which Foundation may still refuse for
  /// another reason, such as its encoding), or when it is XML (it starts with `<` and a tag,
  /// not with `<`, hex digits and white space up to the first `>`).
  ///
  /// The grammar: a value is `{` and `key = value;` pairs (a key alone, `key;`, is its own
  /// value) then `}`, `(` and values separated by commas (one may end the list) then `)`, `<`
  /// and hex digits in pairs then `>`, a string quoted with `"` or `'` (`\` escapes the next
  /// character), or a run of letters, digits and `_$/:.-`; white space, `//` and `/* */`
  /// comments go between. The text holds one value, or `key = value;` pairs with no braces
  /// around them (a strings file); nothing, or only white space, is an empty dictionary.
  static func syntaxError(in text: [UInt8]) -> String? {
    var checker = SyntaxChecker(text)
    return checker.check()
  }

  /// What a strings file (`key = value;` pairs with no braces around them) holds after its
  /// last entry, as a reason naming what was found, its line and column, and where the last
  /// entry ended; `nil` when only white space and comments follow it, or `text` is no strings
  /// file. Foundation's parser reads the entries up to the first thing that is not a key and
  /// drops the rest without a word (`a = 1; } b = 2;` reads as `{ a = 1; }`), where after any
  /// other root value it refuses the text ("Junk after plist"); a quoted key that does not end
  /// is dropped the same way.
  static func contentAfterStringsFile(in text: [UInt8]) -> String? {
    var checker = SyntaxChecker(text)
    return checker.contentAfterStringsFile()
  }

  /// A recursive reading of the grammar that keeps nothing but the places it needs to say.
  private struct SyntaxChecker {
    let bytes: [UInt8]
    var index = 0

    /// Why the text does not read.
    struct Failure: Error {
      let reason: String
    }

    /// What a value is, for a message.
    enum Kind: String {
      case dictionary, array, data, string
    }

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func check() -> String? {
      if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
      let begin = index
      guard skipSpace() else { return nil }
      // XML, which Foundation's XML parser judged: `<` and not hex data up to the first `>`.
      if bytes[index] == UInt8(ascii: "<") {
        let inside = bytes[(index + 1)...].prefix { $0 != UInt8(ascii: ">") }
        guard inside.allSatisfy({ Self.hexadecimal($0) != nil || Self.isDataSpace($0) }) else { return nil }
      }
      do throws(Failure) {
        let kind = try value(depth: 0, required: true, expected: "where a value was expected")
        guard skipSpace() else { return nil }
        guard kind == .string else {
          throw found("where the text should end, after the root \(kind?.rawValue ?? "value")")
        }
        // A string with more after it: a strings file, `key = value;` pairs with no braces.
        index = begin
        try dictionaryContent(depth: 0)
        return nil
      } catch {
        return error.reason
      }
    }

    /// ``OpenStepPropertyList/contentAfterStringsFile(in:)``.
    mutating func contentAfterStringsFile() -> String? {
      if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
      let begin = index
      guard skipSpace(), bytes[index] != UInt8(ascii: "<") else { return nil }
      // A strings file: a string, then more than white space and comments.
      guard (try? value(depth: 0, required: true, expected: "")) == .string, skipSpace() else { return nil }
      index = begin
      var last: Int?
      do throws(Failure) {
        try dictionaryContent(depth: 0) { last = $0 }
      } catch {
        // Only a key that does not end (its closing quote missing) stops the parser's reading
        // of a strings file that it still takes; any other failure is one it refuses, too.
        return error.reason + Self.dropped(after: last.map(place))
      }
      guard skipSpace() else { return nil }
      return found("where a key or the end of the text was expected").reason
        + Self.dropped(after: last.map(place))
    }

    /// What a message about the text after a strings file's entries adds: where the last one
    /// ended, and what the parser does with what follows.
    static func dropped(after last: String?) -> String {
      let entry = last.map { ", after the strings file's last entry (it ends at \($0))" } ?? ""
      return entry + "; Foundation's parser reads a strings file's entries up to there and drops what follows"
    }

    // MARK: Values

    /// The value at the cursor; `nil` (nothing read) when there is none and none is
    /// `required` (an array's items are optional; a dictionary's values are not).
    mutating func value(depth: Int, required: Bool, expected: String) throws(Failure) -> Kind? {
      guard depth <= 512 else {
        throw Failure(reason: "the arrays and dictionaries nest deeper than 512 levels at \(place(index))")
      }
      guard skipSpace() else {
        if required { throw found(expected) }
        return nil
      }
      let start = index
      let byte = bytes[index]
      switch byte {
      case UInt8(ascii: "{"):
        index += 1
        try dictionaryContent(depth: depth)
        guard skipSpace(), bytes[index] == UInt8(ascii: "}") else {
          throw found("where a key or '}' was expected in the dictionary opened at \(place(start))")
        }
        index += 1
        return .dictionary
      case UInt8(ascii: "("):
        index += 1
        try array(depth: depth, start: start)
        return .array
      case UInt8(ascii: "<"):
        index += 1
        try data(start: start)
        return .data
      case UInt8(ascii: "\""), UInt8(ascii: "'"):
        index += 1
        try quoted(byte, start: start)
        return .string
      case _ where Self.isUnquoted(byte):
        while index < bytes.count, Self.isUnquoted(bytes[index]) { index += 1 }
        return .string
      default:
        if required { throw found(expected) }
        return nil
      }
    }

    /// `key = value;` pairs (or `key;`), up to the first thing that is not a key; `entryEnded`
    /// is told the offset of each entry's `;`.
    mutating func dictionaryContent(depth: Int, entryEnded: (Int) -> Void = { _ in }) throws(Failure) {
      while skipSpace() {
        let start = index
        let byte = bytes[index]
        if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
          index += 1
          try quoted(byte, start: start)
        } else if Self.isUnquoted(byte) {
          while index < bytes.count, Self.isUnquoted(bytes[index]) { index += 1 }
        } else {
          return
        }
        let key = keyShown(start..<index)
        guard skipSpace() else { throw found("where '=' or ';' was expected after the key \(key)") }
        if bytes[index] == UInt8(ascii: "=") {
          index += 1
          _ = try value(depth: depth + 1, required: true, expected: "where a value was expected for the key \(key)")
        } else if bytes[index] != UInt8(ascii: ";") {
          throw found("where '=' or ';' was expected after the key \(key)")
        }
        guard skipSpace(), bytes[index] == UInt8(ascii: ";") else {
          throw found("where ';' was expected after the value of the key \(key)")
        }
        entryEnded(index)
        index += 1
      }
    }

    /// An array's items and its `)`, its `(` read.
    mutating func array(depth: Int, start: Int) throws(Failure) {
      let opened = "in the array opened at \(place(start))"
      var count = 0
      while try value(depth: depth + 1, required: false, expected: "") != nil {
        count += 1
        guard skipSpace() else { throw found("where ',' or ')' was expected after item \(count) \(opened)") }
        guard bytes[index] == UInt8(ascii: ",") else {
          guard bytes[index] == UInt8(ascii: ")") else {
            throw found("where ',' or ')' was expected after item \(count) \(opened)")
          }
          index += 1
          return
        }
        index += 1
      }
      guard skipSpace(), bytes[index] == UInt8(ascii: ")") else {
        throw found("where \(count == 0 ? "a value" : "another item") or ')' was expected \(opened)")
      }
      index += 1
    }

    /// Hex digits in pairs, then `>`, its `<` read.
    mutating func data(start: Int) throws(Failure) {
      let opened = "in the data opened at \(place(start))"
      while index < bytes.count {
        let byte = bytes[index]
        if byte == UInt8(ascii: ">") {
          index += 1
          return
        }
        if Self.hexadecimal(byte) != nil {
          index += 1
          guard index < bytes.count, Self.hexadecimal(bytes[index]) != nil else {
            throw found("where the second hex digit of a byte was expected \(opened)")
          }
          index += 1
        } else if Self.isDataSpace(byte) {
          index += 1
        } else if bytes[index...].starts(with: [0xE2, 0x80]), index + 2 < bytes.count,
          bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9
        {
          index += 3
        } else {
          throw found("where a hex digit or '>' was expected \(opened)")
        }
      }
      throw found("where a hex digit or '>' was expected \(opened)")
    }

    /// A quoted string up to its closing `quote`, its opening one read.
    mutating func quoted(_ quote: UInt8, start: Int) throws(Failure) {
      while index < bytes.count {
        let byte = bytes[index]
        index += 1
        if byte == quote { return }
        guard byte == UInt8(ascii: "\\"), index < bytes.count else { continue }
        // The escaped character; an octal or \U escape's digits are characters of no
        // consequence here, read as any other.
        index += 1
      }
      let mark = quote == UInt8(ascii: "'") ? "\"'\"" : "'\"'"
      throw found("where the closing \(mark) was expected for the string opened at \(place(start))")
    }

    // MARK: Places and messages

    /// `found 'x' at line L, column C, where …` (or `found the end of the text …`), `expected`
    /// being the `where …` clause.
    func found(_ expected: String) -> Failure {
      let what: String
      if index >= bytes.count {
        what = "the end of the text"
      } else {
        what = Self.character(in: bytes, at: index)
      }
      return Failure(reason: "found \(what) at \(place(index)), \(expected)")
    }

    /// `line L, column C` of the byte at `offset` (columns count characters; a line ends at
    /// a line feed, a carriage return and line feed, or a carriage return, as the parser
    /// counts lines).
    func place(_ offset: Int) -> String {
      var line = 1
      var column = 1
      var i = 0
      while i < offset, i < bytes.count {
        let byte = bytes[i]
        if byte == 0x0A || byte == 0x0D {
          line += 1
          column = 1
          if byte == 0x0D, i + 1 < offset, bytes[i + 1] == 0x0A { i += 1 }
        } else if byte & 0xC0 != 0x80 {
          column += 1
        }
        i += 1
      }
      return "line \(line), column \(column)"
    }

    /// The key written at `range` as a message shows it: quoted, its control characters
    /// escaped, at most 40 characters.
    func keyShown(_ range: Range<Int>) -> String {
      var text = String(decoding: bytes[range], as: UTF8.self)
      if let first = text.first, first == "\"" || first == "'" { text = String(text.dropFirst().dropLast()) }
      if text.count > 40 { text = String(text.prefix(40)) + "…" }
      return "\"\(PrintedText.escapingControls(text))\""
    }

    /// The character at `offset`, quoted, a control character escaped; a byte that starts no
    /// UTF-8 character by its value.
    static func character(in bytes: [UInt8], at offset: Int) -> String {
      let lead = bytes[offset]
      let length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0
      guard length > 0, offset + length <= bytes.count,
        let text = String(validating: bytes[offset..<(offset + length)], as: UTF8.self)
      else { return "the byte 0x" + String(lead, radix: 16, uppercase: true) }
      let shown = PrintedText.escapingControls(text)
      return text == "'" ? "\"'\"" : "'\(shown)'"
    }

    // MARK: Characters

    /// Passes white space and comments as the parser does: `true` with the cursor on the next
    /// byte, `false` at the end of the text.
    mutating func skipSpace() -> Bool {
      while index < bytes.count {
        let byte = bytes[index]
        if (0x09...0x0D).contains(byte) || byte == 0x20 {
          index += 1
        } else if byte == 0xE2, index + 2 < bytes.count, bytes[index + 1] == 0x80,
          bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9
        {
          index += 3
        } else if byte == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "/") {
          index += 2
          while index < bytes.count, bytes[index] != 0x0A, bytes[index] != 0x0D,
            !(bytes[index] == 0xE2 && index + 2 < bytes.count && bytes[index + 1] == 0x80
              && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9))
          {
            index += 1
          }
        } else if byte == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "*") {
          index += 2
          while index < bytes.count,
            !(bytes[index] == UInt8(ascii: "*") && index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "/"))
          {
            index += 1
          }
          index = min(index + 2, bytes.count)
        } else {
          return true
        }
      }
      return false
    }

    /// White space inside data: space, tab, line feed, carriage return.
    static func isDataSpace(_ byte: UInt8) -> Bool {
      byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    static func hexadecimal(_ byte: UInt8) -> UInt8? {
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - 0x30
      case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - 0x61 + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - 0x41 + 10
      default: return nil
      }
    }

    static func isUnquoted(_ byte: UInt8) -> Bool {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "$"), UInt8(ascii: "/"),
        UInt8(ascii: ":"), UInt8(ascii: "."), UInt8(ascii: "-"):
        return true
      default:
        return false
      }
    }
  }
}

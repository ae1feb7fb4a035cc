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

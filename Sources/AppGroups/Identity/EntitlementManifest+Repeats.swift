import Foundation

// A key written twice in an XML manifest: a bundle identifier with two entries, or a field
// (`executable`, the groups) given twice in one entry. A property-list reader keeps one of the
// two and drops the other without a word, so the manifest would mean what one of its lines
// says and not the other: it is refused instead, naming the key and both lines.
//
// The package's XML reader gives up on a repeated key, and the walk of one entry
// (`EntitlementManifest+Scan.swift`) does too; so this runs only on a manifest Foundation's
// parser read, never on the plain form a new process reads to open its first suite.
extension EntitlementManifest {
  /// A key written twice in the XML manifest `data`: in the root dictionary (a bundle
  /// identifier listed twice) or in one entry's dictionary (a field given twice); the reason,
  /// with both lines, or `nil` when each is written once, or `data` is not XML.
  ///
  /// A tolerant walk over the tags, for a document Foundation's parser has read already:
  /// comments, processing instructions, a document type and `CDATA` sections are passed over
  /// as XML reads them; a key's text is compared as a property-list reader decodes it.
  static func repeatedKeyProblem(in data: Data) -> String? {
    data.withUnsafeBytes { raw -> String? in
      var walk = KeyWalk(bytes: raw.bindMemory(to: UInt8.self))
      return walk.firstRepeat()
    }
  }

  /// The walk of ``repeatedKeyProblem(in:)`` over a document's bytes.
  private struct KeyWalk {
    /// An open `<dict>` or `<array>`; a dictionary's keys so far, with their lines.
    struct Frame {
      var isDictionary: Bool
      var keys: [(name: [UInt8], line: Int)] = []
    }

    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var line = 1
    var stack: [Frame] = []
    /// The root dictionary's key being read: the entry a field belongs to.
    var entry: [UInt8] = []

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func firstRepeat() -> String? {
      if bytes.starts(with: Array("bplist".utf8)) { return nil }
      while let start = next(UInt8(ascii: "<")) {
        let tagLine = line
        if matches("<!--") {
          guard skip(past: "-->") else { return nil }
        } else if matches("<![CDATA[") {
          guard skip(past: "]]>") else { return nil }
        } else if matches("<?") {
          guard skip(past: "?>") else { return nil }
        } else if matches("<!") {
          guard skipDeclaration() else { return nil }
        } else if matches("</") {
          let name = tagName(from: start + 2)
          guard skip(past: ">") else { return nil }
          if (name == "dict" || name == "array"), !stack.isEmpty { stack.removeLast() }
        } else {
          let name = tagName(from: start + 1)
          guard let empty = skipTag() else { return nil }
          switch name {
          case "dict" where !empty: stack.append(Frame(isDictionary: true))
          case "array" where !empty: stack.append(Frame(isDictionary: false))
          case "key" where !empty:
            guard let key = keyText() else { return nil }
            if let problem = record(key, at: tagLine) { return problem }
          default: break
          }
        }
      }
      return nil
    }

    /// Notes `key`, read at `keyLine` in the dictionary being walked; the reason when the
    /// root dictionary or an entry's has it already.
    mutating func record(_ key: [UInt8], at keyLine: Int) -> String? {
      let depth = stack.count
      guard depth == 1 || depth == 2, stack.allSatisfy(\.isDictionary) else { return nil }
      if let earlier = stack[depth - 1].keys.first(where: { $0.name == key }) {
        let name = Names.quotedIfNeeded(String(decoding: key, as: UTF8.self))
        let lines = "lines \(earlier.line) and \(keyLine)"
        if depth == 1 {
          return "entry \(name) is listed twice (\(lines)); a bundle identifier has one entry"
        }
        let owner = Names.quotedIfNeeded(String(decoding: entry, as: UTF8.self))
        return "entry \(owner): \(name) is given twice (\(lines)); a field is given once"
      }
      stack[depth - 1].keys.append((key, keyLine))
      if depth == 1 { entry = key }
      return nil
    }

    /// The next `byte` from the walk's place, counting lines on the way; the walk stops on it.
    mutating func next(_ byte: UInt8) -> Int? {
      while index < bytes.count {
        if bytes[index] == byte { return index }
        if bytes[index] == UInt8(ascii: "\n") { line += 1 }
        index += 1
      }
      return nil
    }

    func matches(_ literal: String) -> Bool {
      let wanted = Array(literal.utf8)
      guard index + wanted.count <= bytes.count else { return false }
      return wanted.indices.allSatisfy { bytes[index + $0] == wanted[$0] }
    }

    /// Moves past the next `literal`, counting lines; `false` when there is none.
    mutating func skip(past literal: String) -> Bool {
      let first = literal.utf8.first!
      while next(first) != nil {
        if matches(literal) {
          index += literal.utf8.count
          return true
        }
        index += 1
      }
      return false
    }

    /// Moves past a `<!DOCTYPE ...>` declaration, its internal subset in brackets included.
    mutating func skipDeclaration() -> Bool {
      var brackets = 0
      while index < bytes.count {
        switch bytes[index] {
        case UInt8(ascii: "\n"): line += 1
        case UInt8(ascii: "["): brackets += 1
        case UInt8(ascii: "]"): brackets -= 1
        case UInt8(ascii: ">") where brackets <= 0:
          index += 1
          return true
        default: break
        }
        index += 1
      }
      return false
    }

    /// The element name starting at `start`.
    func tagName(from start: Int) -> String {
      var end = start
      while end < bytes.count, !" \t\r\n/>".utf8.contains(bytes[end]) { end += 1 }
      return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    /// Moves past an opening tag (quoted attribute values may hold `>`): whether it is empty
    /// (`<dict/>`); `nil` when it does not end.
    mutating func skipTag() -> Bool? {
      var quote: UInt8?
      while index < bytes.count {
        let byte = bytes[index]
        if byte == UInt8(ascii: "\n") { line += 1 }
        if let open = quote {
          if byte == open { quote = nil }
        } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
          quote = byte
        } else if byte == UInt8(ascii: ">") {
          index += 1
          return bytes[index - 2] == UInt8(ascii: "/")
        }
        index += 1
      }
      return nil
    }

    /// A key's text up to `</key>`, its references and `CDATA` sections decoded as a
    /// property-list reader decodes a string's (the package's reader, else Foundation's).
    mutating func keyText() -> [UInt8]? {
      let start = index
      guard skip(past: "</key>") else { return nil }
      let raw = Array(bytes[start..<(index - 6)])
      guard raw.contains(UInt8(ascii: "&")) || raw.contains(UInt8(ascii: "<")) else { return raw }
      let document = Data("<plist version=\"1.0\"><string>".utf8 + raw + "</string></plist>".utf8)
      var decoded = XMLPropertyList.decode(document)
      if decoded == nil,
        let object = try? PropertyListSerialization.propertyList(from: document, format: nil)
      {
        decoded = PropertyListValue(object)
      }
      guard case .string(let text) = decoded else { return raw }
      return Array(text.utf8)
    }
  }
}

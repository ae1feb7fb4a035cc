import Foundation

// A key written twice in a manifest: a bundle identifier with two entries, or a field
// (`executable`, the groups) given twice in one entry. A property-list reader keeps one of the
// two and drops the other without a word, so the manifest would mean what one of its lines
// says and not the other: it is refused instead, naming the key and both lines (in a binary
// manifest, which has no lines, both keys' places in their dictionary).
//
// The package's XML reader gives up on a repeated key, and the walk of one entry
// (`EntitlementManifest+Scan.swift`) does too; so this runs only on a manifest Foundation's
// parser read, never on the plain form a new process reads to open its first suite.
extension EntitlementManifest {
  /// A key written twice in the manifest `data`: in the root dictionary (a bundle identifier
  /// listed twice) or in one entry's dictionary (a field given twice); the reason, with both
  /// lines (both keys' places, in a binary manifest), or `nil` when each is written once.
  ///
  /// An XML manifest's tags are walked with the package's XML lexer in its tolerant mode
  /// (``XMLPropertyList/Markup``), for a document Foundation's parser has read already:
  /// comments, processing instructions, a document type and `CDATA` sections are passed over
  /// as XML reads them; a key's text is compared as a property-list reader decodes it. A binary
  /// manifest's keys are read with the package's binary reader.
  static func repeatedKeyProblem(in data: Data) -> String? {
    if data.starts(with: "bplist".utf8) {
      guard let repeated = BinaryPropertyList.repeatedKey(in: data) else { return nil }
      let places = "keys \(repeated.first) and \(repeated.second) of dictionary object \(repeated.object)"
      return problem(repeated.key, in: repeated.entry, places)
    }
    return XMLPropertyList.markup(data) { markup -> String? in
      // The open `<dict>`s and `<array>`s: a dictionary's keys so far, with their tags' places.
      var stack: [(isDictionary: Bool, keys: [(name: String, start: Int)])] = []
      // The root dictionary's key being read: the entry a field belongs to.
      var entry = ""
      while let element = markup.next() {
        switch element.tag {
        case .dict?, .array?:
          if element.closing {
            if !stack.isEmpty { stack.removeLast() }
          } else if !element.empty {
            stack.append((element.tag == .dict, []))
          }
        case .key? where !element.closing:
          // `<key/>`: the empty key, as `<key></key>` is.
          guard let key = element.empty ? "" : markup.text(closing: .key) else { return nil }
          let depth = stack.count
          guard depth == 1 || depth == 2, stack.allSatisfy(\.isDictionary) else { continue }
          if let earlier = stack[depth - 1].keys.first(where: { $0.name == key }) {
            let lines = "lines \(markup.line(at: earlier.start)) and \(markup.line(at: element.start))"
            return problem(key, in: depth == 1 ? nil : entry, lines)
          }
          stack[depth - 1].keys.append((key, element.start))
          if depth == 1 { entry = key }
        default: break
        }
      }
      return nil
    }
  }

  /// The reason for `key` written twice, at `places`: in the root dictionary when `entry` is
  /// `nil`, in `entry`'s dictionary otherwise.
  private static func problem(_ key: String, in entry: String?, _ places: String) -> String {
    let name = Names.quotedIfNeeded(key)
    guard let entry else {
      return "entry \(name) is listed twice (\(places)); a bundle identifier has one entry"
    }
    return "entry \(Names.quotedIfNeeded(entry)): \(name) is given twice (\(places)); a field is given once"
  }
}

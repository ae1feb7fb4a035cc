/// Text that came from a file name or from another process, as one line of output or of a
/// log shows it. Printed raw, a newline in it would start a line of its own (a forged
/// report or callback) and an escape byte would drive the terminal.
package enum PrintedText {
  /// `text` as it is, or, when it holds a control character (C0, DEL or C1) or a backslash,
  /// in quotes with those escaped (`\n`, `\t`, `\\`, `\U001b`), as ``quotedIfNeeded(_:)``
  /// escapes a string. Used for every path and every text of another process that is
  /// printed or logged.
  package static func shown(_ text: String) -> String {
    let plain = text.unicodeScalars.allSatisfy { !isControl($0) && $0 != "\\" }
    return plain ? text : quoted(text)
  }

  /// `text` with each control character (C0, DEL or C1) written as `\UXXXX` (a newline as
  /// `\n`), and nothing else changed: for a message of another component (a parser's reason)
  /// that may quote bytes of a file.
  package static func escapingControls(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: isControl) else { return text }
    var escaped = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\n": escaped += "\\n"
      case _ where isControl(scalar):
        let digits = String(scalar.value, radix: 16)
        escaped += "\\U" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
      default: escaped.unicodeScalars.append(scalar)
      }
    }
    return escaped
  }

  /// A string bare when it is made only of `A-Z a-z 0-9 _ . / $ : -` (and not empty), else
  /// quoted and escaped, as macOS `defaults read` prints strings and keys.
  package static func quotedIfNeeded(_ string: String) -> String {
    if !string.isEmpty, string.unicodeScalars.allSatisfy(isBareCharacter) { return string }
    return quoted(string)
  }

  /// `string` in quotes, with `\\`, `\"`, `\n`, `\t`, `\r` and other controls (`\UXXXX`)
  /// escaped.
  private static func quoted(_ string: String) -> String {
    var text = "\""
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\\": text += "\\\\"
      case "\"": text += "\\\""
      case "\n": text += "\\n"
      case "\t": text += "\\t"
      case "\r": text += "\\r"
      case _ where isControl(scalar):
        let digits = String(scalar.value, radix: 16)
        text += "\\U" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
      default: text.unicodeScalars.append(scalar)
      }
    }
    return text + "\""
  }

  /// C0 controls, DEL and C1 controls (U+0080–U+009F, which a terminal may take as the
  /// start of an escape sequence).
  private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value)
  }

  /// The characters a string may have and still print without quotes.
  private static func isBareCharacter(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar {
    case "A"..."Z", "a"..."z", "0"..."9", "_", ".", "/", "$", ":", "-": true
    default: false
    }
  }
}

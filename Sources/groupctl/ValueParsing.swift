import AppGroups
import Foundation

/// What `write DOMAIN KEY …` asks for.
enum WriteValue: Hashable, Sendable {
  /// Set the key to this value.
  case value(PropertyListValue)
  /// `-array-add`: append these to the key's array (or start one).
  case arrayAdd([PropertyListValue])
  /// `-dict-add`: merge these into the key's dictionary (or start one).
  case dictAdd([String: PropertyListValue])
}

/// A `defaults`-style type flag, as it may precede a single value.
enum TypeFlag: Sendable {
  case string, integer, float, boolean, date, data

  /// The flag for a word: `-string`, `-int`/`-integer`, `-float`,
  /// `-bool`/`-boolean`, `-date`, `-data`; `nil` for any other word.
  init?(_ word: String) {
    switch word {
    case "-string": self = .string
    case "-int", "-integer": self = .integer
    case "-float": self = .float
    case "-bool", "-boolean": self = .boolean
    case "-date": self = .date
    case "-data": self = .data
    default: return nil
    }
  }
}

/// The collection flags, which take the rest of the words.
private let collectionFlags: Set<String> = ["-array", "-array-add", "-dict", "-dict-add"]

/// Parses the words after `write DOMAIN KEY` (and `force DOMAIN KEY`) the
/// way `defaults write` reads them.
///
/// - A bare word is a string. A word starting with `(`, `{` or `<` is a
///   property-list literal, old-style or XML: `'(a, b)'`, `'{ k = v; }'`,
///   `'<0aff>'`, `'<integer>5</integer>'`. Old-style literals hold only
///   strings, arrays, dictionaries and data, as in `defaults`.
/// - `-string S`, `-int N` / `-integer N`, `-float X`, `-bool B` /
///   `-boolean B` (true, false, yes, no, 1, 0, any case), `-date D`
///   (ISO 8601 such as `2026-11-29T12:00:00Z`, or `2026-11-29 12:00:00 +0000`
///   as `defaults` prints it), `-data HEX` (an even number of hex digits).
/// - `-array V...`, `-array-add V...`: each element is a string, or a typed
///   value when it follows a type flag: `-array -int 1 -int 2`.
/// - `-dict K V...`, `-dict-add K V...`: keys are taken as they are; values
///   as array elements.
///
/// To store a string that looks like a flag or a literal, type it:
/// `-string -int`, `-string '(not a list)'`.
///
/// - Throws: ``ValidationError`` naming the word that is wrong and why.
func parseWriteValue(words: [String]) throws(ValidationError) -> WriteValue {
  guard let first = words.first else { throw ValidationError("missing argument VALUE") }
  var rest = words.dropFirst()
  switch first {
  case "-array":
    return .value(.array(try parseElements(&rest)))
  case "-array-add":
    return .arrayAdd(try parseElements(&rest))
  case "-dict":
    return .value(.dictionary(try parsePairs(&rest, flag: first)))
  case "-dict-add":
    return .dictAdd(try parsePairs(&rest, flag: first))
  default:
    var cursor = words[...]
    let value: PropertyListValue
    if TypeFlag(first) == nil, !ArgumentReader.isOptionLike(first) {
      cursor.removeFirst()
      value = try parseUntyped(first)
    } else {
      value = try parseElement(&cursor)
    }
    if let extra = cursor.first {
      throw ValidationError(
        "unexpected argument '\(extra)' after the value (quote a value that has spaces)")
    }
    return .value(value)
  }
}

/// An untyped VALUE: a string, or a property-list literal when it starts
/// with `(`, `{` or `<`.
func parseUntyped(_ word: String) throws(ValidationError) -> PropertyListValue {
  guard let first = word.first, "({<".contains(first) else { return .string(word) }
  // The literal as a message shows it: a control character in it never reaches the terminal.
  let shown = PrintedText.escapingControls(word)
  let object: Any
  do {
    object = try PropertyListSerialization.propertyList(
      from: Data(word.utf8), options: [], format: nil)
  } catch {
    throw ValidationError(
      "'\(shown)' is not a property-list literal (\(literalFailureReason(error, word: word)));"
        + " use -string to write it as a string")
  }
  guard let value = PropertyListValue(object) else {
    throw ValidationError("'\(shown)' holds a value that is not a property-list value")
  }
  if let bad = invalidBase64(in: word) {
    throw ValidationError(
      "'\(shown)' is not a property-list literal (<data>\(PrintedText.escapingControls(bad))</data> is"
        + " not base64)")
  }
  // What Foundation's reader reads as something the literal does not say (a date out of
  // range, which it moves to another day; a key given twice, of which it keeps one; XML after
  // the value, which it drops) is refused, as `import` refuses it in a file.
  if let problem = PropertyListValue.contentAfterRootValue(in: Data(word.utf8))
    ?? PropertyListValue.misreadValues(in: Data(word.utf8))
  {
    throw ValidationError("'\(shown)' is not a property-list literal (\(problem))")
  }
  return value
}

/// The content of the first `<data>` element of an XML literal that is not base64, or `nil`.
///
/// Foundation's XML reader skips the characters it cannot decode and would store the rest
/// (for `<data>!!!</data>`, no bytes at all) instead of refusing the literal.
func invalidBase64(in literal: String) -> String? {
  var rest = literal[...]
  while let open = rest.range(of: "<data>") {
    guard let close = rest[open.upperBound...].range(of: "</data>") else { return nil }
    let content = rest[open.upperBound..<close.lowerBound]
    let compact = content.filter { !$0.isWhitespace }
    if Data(base64Encoded: String(compact)) == nil { return String(content) }
    rest = rest[close.upperBound...]
  }
  return nil
}

/// Why a literal failed: for `(`, `{`, `<hex>` and a string, what was found where, and what
/// was expected (``PropertyListValue/openStepSyntaxError(in:)``), else the old-style parser's
/// words; the XML parser's for `<tag>`. Control characters are escaped.
private func literalFailureReason(_ error: any Error, word: String) -> String {
  if let openStep = PropertyListValue.openStepSyntaxError(in: Data(word.utf8)) { return openStep }
  return PrintedText.escapingControls(foundationReason(error, word: word))
}

/// The parser's own words for why a literal failed: the old-style parser's
/// for `(`, `{` and `<hex>`, the XML parser's for `<tag>`.
private func foundationReason(_ error: any Error, word: String) -> String {
  let info = (error as NSError).userInfo
  let xml = info[NSDebugDescriptionErrorKey] as? String
  // The old-style parser's error arrives as an unbridged CFError; its text
  // reads `Error Domain=… Code=3840 "<reason>" UserInfo={…}`.
  let oldStyle = info["kCFPropertyListOldStyleParsingError"].flatMap { nested -> String? in
    let text = String(describing: nested)
    guard let start = text.range(of: "Code=3840 \""), let end = text.range(of: "\" UserInfo=")
    else { return nil }
    guard start.upperBound <= end.lowerBound else { return nil }
    return String(text[start.upperBound..<end.lowerBound])
  }
  // `<0a ff>` is old-style data: only hex digits and spaces up to `>`.
  let looksLikeXML =
    word.hasPrefix("<")
    && !word.dropFirst().prefix { $0 != ">" }.allSatisfy { $0.isHexDigit || $0.isWhitespace }
  let reason = looksLikeXML ? (xml ?? oldStyle) : (oldStyle ?? xml)
  return reason ?? "it does not parse"
}

/// Elements of `-array`/`-array-add`: every word left.
private func parseElements(_ words: inout ArraySlice<String>) throws(ValidationError)
  -> [PropertyListValue]
{
  var elements: [PropertyListValue] = []
  while !words.isEmpty { elements.append(try parseElement(&words)) }
  return elements
}

/// Pairs of `-dict`/`-dict-add`: a key as it is, then a value as an element.
///
/// A key given twice is refused, as in a literal (`'{a=1;a=2;}'`): a dictionary holds one of
/// its values, and the other would be dropped without a word. Keys are compared as Swift
/// strings (two spellings of `é` are one key), as the dictionary that holds them compares them.
/// A key the stored dictionary holds is no repetition: `-dict-add` replaces it.
private func parsePairs(_ words: inout ArraySlice<String>, flag: String)
  throws(ValidationError) -> [String: PropertyListValue]
{
  var pairs: [String: PropertyListValue] = [:]
  // The place of each key among the pairs, from 1.
  var places: [String: Int] = [:]
  while let key = words.popFirst() {
    guard !words.isEmpty else { throw ValidationError("key '\(key)' has no value (\(flag))") }
    let place = places.count + 1
    if let earlier = places[key] {
      throw ValidationError(
        "the key \(key.debugDescription) is given twice in \(flag) (pairs \(earlier) and"
          + " \(place)); a dictionary holds each key once")
    }
    places[key] = place
    pairs[key] = try parseElement(&words)
  }
  return pairs
}

/// One element: a bare string, or a type flag and its value.
private func parseElement(_ words: inout ArraySlice<String>) throws(ValidationError)
  -> PropertyListValue
{
  guard let word = words.popFirst() else { throw ValidationError("missing argument VALUE") }
  if let type = TypeFlag(word) {
    guard let text = words.popFirst() else { throw ValidationError("\(word) needs a value") }
    return try parseTyped(text, as: type, flag: word)
  }
  if collectionFlags.contains(word) {
    throw ValidationError(
      "\(word) cannot be nested; write a property-list literal such as '(a, b)' or '{ k = v; }'")
  }
  if ArgumentReader.isOptionLike(word) {
    throw ValidationError(
      "unknown type '\(word)' (use -string, -int, -float, -bool, -date, -data, -array,"
        + " -array-add, -dict or -dict-add; -string '\(word)' writes it as a string)")
  }
  return .string(word)
}

/// A value given after a type flag.
///
/// - Parameter flag: The flag as the user wrote it, for messages.
func parseTyped(_ text: String, as type: TypeFlag, flag: String) throws(ValidationError)
  -> PropertyListValue
{
  switch type {
  case .string:
    return .string(text)
  case .integer:
    if let value = Int(text) { return .integer(value) }
    // Above Int.max, up to UInt64.max: kept exact, as a 16-byte integer on disk.
    if let value = UInt64(text) { return .unsignedInteger(value) }
    let digits = text.drop { $0 == "-" || $0 == "+" }
    if !digits.isEmpty, text.count - digits.count <= 1, digits.allSatisfy(\.isASCIIDigit) {
      throw ValidationError("'\(text)' is out of range for an integer (\(flag))")
    }
    throw ValidationError("'\(text)' is not an integer (\(flag))")
  case .float:
    guard let value = Double(text), !text.contains(where: \.isWhitespace) else {
      throw ValidationError("'\(text)' is not a number (\(flag))")
    }
    guard value.isFinite else {
      throw ValidationError("'\(text)' is not a finite number (\(flag))")
    }
    return .real(value)
  case .boolean:
    switch text.lowercased() {
    case "true", "yes", "1": return .bool(true)
    case "false", "no", "0": return .bool(false)
    default:
      throw ValidationError(
        "'\(text)' is not a boolean (\(flag)): use true, false, yes, no, 1 or 0")
    }
  case .date:
    guard let date = parseDate(text) else {
      throw ValidationError(
        "'\(text)' is not a date (\(flag)): use ISO 8601 such as 2026-11-29T12:00:00Z,"
          + " or 2026-11-29 12:00:00 +0000")
    }
    return .date(date)
  case .data:
    return .data(try parseHex(text, flag: flag))
  }
}

/// Hex digits, two per byte, upper or lower case.
func parseHex(_ text: String, flag: String) throws(ValidationError) -> Data {
  let utf8 = Array(text.utf8)
  guard utf8.count.isMultiple(of: 2) else {
    throw ValidationError("'\(text)' is not hex data (\(flag)): it has an odd number of digits")
  }
  var bytes: [UInt8] = []
  bytes.reserveCapacity(utf8.count / 2)
  var index = 0
  while index < utf8.count {
    guard let high = hexValue(utf8[index]), let low = hexValue(utf8[index + 1]) else {
      let bad = hexValue(utf8[index]) == nil ? utf8[index] : utf8[index + 1]
      let character = String(decoding: [bad], as: UTF8.self)
      throw ValidationError(
        "'\(text)' is not hex data (\(flag)): '\(character)' is not a hex digit")
    }
    bytes.append(high << 4 | low)
    index += 2
  }
  return Data(bytes)
}

private func hexValue(_ byte: UInt8) -> UInt8? {
  switch byte {
  case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
  case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
  case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
  default: nil
  }
}

/// Parses `2026-11-29T12:00:00Z`, `2026-11-29T12:00:00.250+02:00`,
/// `2026-11-29T12:00:00+0200`, and `defaults`' `2026-11-29 12:00:00 +0000`.
/// A time zone (`Z` or an offset) is required: without one the instant is
/// ambiguous.
func parseDate(_ text: String) -> Date? {
  var scanner = DateScanner(Array(text.utf8))
  guard
    let year = scanner.number(digits: 4), scanner.skip("-"),
    let month = scanner.number(digits: 2), scanner.skip("-"),
    let day = scanner.number(digits: 2),
    scanner.skip("T") || scanner.skip("t") || scanner.skip(" "),
    let hour = scanner.number(digits: 2), scanner.skip(":"),
    let minute = scanner.number(digits: 2), scanner.skip(":"),
    let second = scanner.number(digits: 2)
  else { return nil }
  var fraction = 0.0
  if scanner.skip(".") || scanner.skip(",") {
    var scale = 0.1
    var sawDigit = false
    while let digit = scanner.digit() {
      fraction += Double(digit) * scale
      scale /= 10
      sawDigit = true
    }
    guard sawDigit else { return nil }
  }
  _ = scanner.skip(" ")
  let offset: Int
  if scanner.skip("Z") || scanner.skip("z") {
    offset = 0
  } else {
    let sign: Int
    if scanner.skip("+") {
      sign = 1
    } else if scanner.skip("-") {
      sign = -1
    } else {
      return nil
    }
    guard let hours = scanner.number(digits: 2), hours <= 23 else { return nil }
    var minutes = 0
    if scanner.skip(":") {
      guard let value = scanner.number(digits: 2) else { return nil }
      minutes = value
    } else if let value = scanner.number(digits: 2) {
      minutes = value
    }
    guard minutes <= 59 else { return nil }
    offset = sign * (hours * 3600 + minutes * 60)
  }
  guard scanner.atEnd else { return nil }
  guard (1...12).contains(month), (1...daysInMonth(year, month)).contains(day),
    hour <= 23, minute <= 59, second <= 59
  else { return nil }
  let days = daysFromCivil(year: year, month: month, day: day)
  let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
  return Date(timeIntervalSince1970: Double(seconds) + fraction)
}

private struct DateScanner {
  let bytes: [UInt8]
  var index = 0

  init(_ bytes: [UInt8]) { self.bytes = bytes }

  var atEnd: Bool { index == bytes.count }

  mutating func skip(_ character: Unicode.Scalar) -> Bool {
    guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
    index += 1
    return true
  }

  mutating func digit() -> Int? {
    guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
      return nil
    }
    defer { index += 1 }
    return Int(bytes[index] - UInt8(ascii: "0"))
  }

  mutating func number(digits: Int) -> Int? {
    let start = index
    var value = 0
    for _ in 0..<digits {
      guard let digit = digit() else {
        index = start
        return nil
      }
      value = value * 10 + digit
    }
    return value
  }
}

private func isLeapYear(_ year: Int) -> Bool {
  (year.isMultiple(of: 4) && !year.isMultiple(of: 100)) || year.isMultiple(of: 400)
}

private func daysInMonth(_ year: Int, _ month: Int) -> Int {
  switch month {
  case 2: isLeapYear(year) ? 29 : 28
  case 4, 6, 9, 11: 30
  default: 31
  }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
  let y = month <= 2 ? year - 1 : year
  let era = (y >= 0 ? y : y - 399) / 400
  let yearOfEra = y - era * 400
  let monthIndex = month > 2 ? month - 3 : month + 9
  let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
  let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
  return era * 146_097 + dayOfEra - 719_468
}

/// The proleptic Gregorian date of a day counted from 1970-01-01.
func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
  let z = days + 719_468
  let era = (z >= 0 ? z : z - 146_096) / 146_097
  let dayOfEra = z - era * 146_097
  let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
  let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
  let monthIndex = (5 * dayOfYear + 2) / 153
  let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
  let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
  return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
}

extension Character {
  fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

/// The argument domain an app started with the command line `words` would have (`explain`'s
/// and `report`'s ARGS after `--`).
///
/// - Throws: ``ValidationError`` naming the first `-key value` whose value reads as a property
///   list with XML after its root value (which Foundation's parser drops, and an app leaves
///   out), what follows the value and its line.
func argumentDomain(parsing words: [String]) throws(ValidationError) -> [String: PropertyListValue] {
  var refusal: String?
  let values = GroupDefaults.argumentValues(parsing: words) { key, value, reason in
    if refusal == nil {
      refusal =
        "argument -\(PrintedText.escapingControls(key)) '\(PrintedText.escapingControls(value))'"
        + " is not a property-list literal (\(reason))"
    }
  }
  if let refusal { throw ValidationError(refusal) }
  return values
}

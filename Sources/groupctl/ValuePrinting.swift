import AppGroups
import Foundation

// Values printed the way macOS `defaults read` prints them: the old-style
// (OpenStep) property-list text of `-[NSDictionary description]`.
//
// - Dictionaries: `{`, one `key = value;` line per key (keys sorted), `}`.
//   Arrays: `(`, one element per line separated by `,`, `)`. Each level
//   indents by 4 spaces; a nested collection also starts with its own
//   indentation, which gives `defaults`' familiar `key =     {` lines.
// - Strings and keys are bare when made only of `A-Z a-z 0-9 _ . / $ : -`,
//   and quoted otherwise (also when empty), with `\\`, `\"`, `\n`, `\t`, `\r`
//   escaped and other control characters as `\Uxxxx`. Unlike macOS, other
//   non-ASCII characters are printed as they are (UTF-8), not as `\Uxxxx`.
// - Booleans print as 1 and 0, integers in decimal, reals in their shortest
//   round-trip decimal form (without `.0` when whole: `2`, `1.5`, `1e+20`; a negative
//   zero keeps its sign: `-0`).
// - Dates print in UTC as `2026-11-29 12:00:00 +0000` (whole seconds).
// - Data prints in `defaults`' modern form (macOS 10.15 and later):
//   `{length = 2, bytes = 0x0aff}`; past 24 bytes only the first 16 and the
//   last 8 are shown, in groups of 4:
//   `{length = 100, bytes = 0x00010203 04050607 08090a0b 0c0d0e0f ... 5c5d5e5f 60616263 }`.
//   `export` writes the whole value.

/// A value as `defaults read` prints it.
///
/// - Parameters:
///   - value: The value to print.
///   - indent: The nesting level: 0 for a top-level value; each level is 4 spaces.
/// - Returns: The text, without a trailing newline.
func formatDefaults(_ value: PropertyListValue, indent level: Int = 0) -> String {
  let padding = String(repeating: " ", count: 4 * level)
  let inner = String(repeating: " ", count: 4 * (level + 1))
  switch value {
  case .dictionary(let dictionary):
    var text = padding + "{\n"
    for key in dictionary.keys.sorted() {
      guard let element = dictionary[key] else { continue }
      text +=
        inner + quotedIfNeeded(key) + " = " + formatDefaults(element, indent: level + 1) + ";\n"
    }
    return text + padding + "}"
  case .array(let array):
    var text = padding + "(\n"
    text += array.map { inner + formatDefaults($0, indent: level + 1) }.joined(separator: ",\n")
    if !array.isEmpty { text += "\n" }
    return text + padding + ")"
  default:
    return formatScalar(value)
  }
}

/// `defaults read-type`'s answer: `Type is string`, `Type is integer`,
/// `Type is float`, `Type is boolean`, `Type is date`, `Type is data`,
/// `Type is array` or `Type is dictionary`.
func formatReadType(_ value: PropertyListValue) -> String {
  "Type is \(value.typeName)"
}

/// `key = value` on one line, for `watch`: collections print as
/// `(a, b)` and `{ k = v; k2 = v2; }`, scalars as in ``formatDefaults(_:indent:)``.
func formatCompact(key: String, _ value: PropertyListValue) -> String {
  quotedIfNeeded(key) + " = " + formatCompact(value)
}

/// A value on one line: `(a, b)`, `{ k = v; }`, or a scalar as `defaults` prints it.
func formatCompact(_ value: PropertyListValue) -> String {
  switch value {
  case .dictionary(let dictionary):
    guard !dictionary.isEmpty else { return "{}" }
    let pairs = dictionary.keys.sorted().compactMap { key in
      dictionary[key].map { quotedIfNeeded(key) + " = " + formatCompact($0) + ";" }
    }
    return "{ " + pairs.joined(separator: " ") + " }"
  case .array(let array):
    return "(" + array.map(formatCompact).joined(separator: ", ") + ")"
  default:
    return formatScalar(value)
  }
}

/// A non-collection value as `defaults` prints it.
private func formatScalar(_ value: PropertyListValue) -> String {
  switch value {
  case .string(let string): quotedIfNeeded(string)
  case .integer(let integer): String(integer)
  case .unsignedInteger(let integer): String(integer)
  case .real(let real): formatReal(real)
  case .float(let float): formatFloat(float)
  case .bool(let bool): bool ? "1" : "0"
  case .date(let date): formatDate(date)
  case .data(let data): formatData(data)
  case .array, .dictionary: formatCompact(value)
  }
}

/// A string bare when it can be, else quoted and escaped (``PrintedText/quotedIfNeeded(_:)``).
func quotedIfNeeded(_ string: String) -> String { PrintedText.quotedIfNeeded(string) }

/// The shortest decimal that reads back as the same `Double`; whole numbers
/// below 10^15 without a fraction, as `defaults` prints them, and a negative zero with its
/// sign (`-0`, as `%g` prints it; `Int` has no -0, and `0` would read back as +0.0).
func formatReal(_ real: Double) -> String {
  if real.isNaN { return "nan" }
  if real.isInfinite { return real < 0 ? "-inf" : "inf" }
  if real == 0, real.sign == .minus { return "-0" }
  if real == real.rounded(), abs(real) < 1e15 { return String(Int(real)) }
  return "\(real)"
}

/// A float at its own precision (`12.34`, not the `12.34000015258789` of its widened double);
/// a negative zero as `-0`, as ``formatReal(_:)`` prints it.
func formatFloat(_ float: Float) -> String {
  if float.isNaN { return "nan" }
  if float.isInfinite { return float < 0 ? "-inf" : "inf" }
  if float == 0, float.sign == .minus { return "-0" }
  if float == float.rounded(), abs(float) < 1e7 { return String(Int(float)) }
  return "\(float)"
}

/// `2026-11-29 12:00:00 +0000`: the date in UTC, whole seconds. A date beyond the days an
/// `Int` counts (a binary property list holds any finite double) is said in seconds from 1970.
func formatDate(_ date: Date) -> String {
  let interval = date.timeIntervalSince1970
  let dayCount = (interval / 86_400).rounded(.down)
  guard dayCount.magnitude < 1e15 else {
    return "\(formatReal(interval)) seconds from 1970-01-01 00:00:00 +0000"
  }
  let days = Int(dayCount)
  let secondOfDay = min(86_399, max(0, Int((interval - dayCount * 86_400).rounded(.down))))
  let (year, month, day) = civilFromDays(days)
  let hour = secondOfDay / 3600
  let minute = secondOfDay % 3600 / 60
  let second = secondOfDay % 60
  return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2)) "
    + "\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)) +0000"
}

/// `{length = N, bytes = 0x…}`: all bytes up to 24, else the first 16 and
/// the last 8 in groups of 4.
func formatData(_ data: Data) -> String {
  let bytes = [UInt8](data)
  let body: String
  if bytes.count <= 24 {
    body = hexString(bytes[...])
  } else {
    body = grouped(bytes.prefix(16)) + " ... " + grouped(bytes.suffix(8)) + " "
  }
  return "{length = \(bytes.count), bytes = 0x\(body)}"
}

private func grouped(_ bytes: ArraySlice<UInt8>) -> String {
  stride(from: bytes.startIndex, to: bytes.endIndex, by: 4)
    .map { hexString(bytes[$0..<min($0 + 4, bytes.endIndex)]) }
    .joined(separator: " ")
}

private func hexString(_ bytes: ArraySlice<UInt8>) -> String {
  bytes.map { hex(Int($0), width: 2) }.joined()
}

private func hex(_ value: Int, width: Int) -> String {
  let digits = String(value, radix: 16)
  return String(repeating: "0", count: max(0, width - digits.count)) + digits
}

private func pad(_ value: Int, _ width: Int) -> String {
  let digits = String(abs(value))
  return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count))
    + digits
}

import AppGroups
import Foundation

extension StandardInput {
  /// The next line of standard input as its bytes, without its `\n` (and a `\r` before it);
  /// `nil` at the end of input with nothing read. Not Swift's `readLine`, which replaces bytes
  /// that are not UTF-8 with U+FFFD: two different secrets would read as one. Reads one byte
  /// at a time, so that nothing after the line is taken from a later reader of standard input.
  /// Stops after `limit + 1` bytes with no newline among them (a stdin that never ends, such
  /// as `/dev/zero`, is not read for ever): a result longer than `limit` means the line is.
  static func lineBytes(atMost limit: Int = .max) -> [UInt8]? {
    var line: [UInt8] = []
    var sawAny = false
    while line.count <= limit, let byte = FileHandle.standardInput.readData(ofLength: 1).first {
      sawAny = true
      if byte == UInt8(ascii: "\n") { break }
      line.append(byte)
    }
    guard sawAny else { return nil }
    if line.last == UInt8(ascii: "\r") { line.removeLast() }
    return line
  }
}

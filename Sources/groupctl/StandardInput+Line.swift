import AppGroups
import Foundation

extension StandardInput {
  /// A secret typed at a terminal: `prompt` on standard error once echo is off (the order
  /// of readpassphrase(3): a secret typed as soon as the prompt shows is neither echoed nor
  /// flushed by the change of settings), the line read as ``lineBytes(atMost:)`` reads it,
  /// echo turned back on, then a newline on standard error, where the typed line would have
  /// ended. For a standard input that is a terminal (``StandardInput/isTerminal``).
  ///
  /// - Throws: the failed `read(2)`, as ``lineBytes(atMost:)``.
  static func promptedLine(_ prompt: String, atMost limit: Int) throws -> [UInt8]? {
    defer { FileHandle.standardError.write(Data("\n".utf8)) }
    return try withoutEcho {
      FileHandle.standardError.write(Data(prompt.utf8))
      return try lineBytes(atMost: limit)
    }
  }

  /// The next line of standard input as its bytes, without its `\n` (and a `\r` before it);
  /// `nil` at the end of input with nothing read. Not Swift's `readLine`, which replaces bytes
  /// that are not UTF-8 with U+FFFD: two different secrets would read as one. Reads one byte
  /// at a time, so that nothing after the line is taken from a later reader of standard input.
  /// Stops after `limit + 1` bytes with no newline among them (a stdin that never ends, such
  /// as `/dev/zero`, is not read for ever): a result longer than `limit` means the line is.
  ///
  /// - Throws: the failed `read(2)` (standard input is a folder, say), said in a sentence.
  static func lineBytes(atMost limit: Int = .max) throws(CommandFailure) -> [UInt8]? {
    guard var line = try bytes(atMost: limit, oneLine: true) else { return nil }
    if line.last == UInt8(ascii: "\r") { line.removeLast() }
    return line
  }

  /// Everything left on standard input, as its bytes, read in blocks. Stops after `limit + 1`
  /// bytes, as ``lineBytes(atMost:)`` does: a result longer than `limit` means the input is.
  static func allBytes(atMost limit: Int) throws(CommandFailure) -> [UInt8] {
    try bytes(atMost: limit, oneLine: false) ?? []
  }

  /// Standard input's bytes up to the end, or to the first `\n` (not kept) when `oneLine`, and
  /// never more than `limit + 1`; `nil` at the end of input with nothing read.
  private static func bytes(atMost limit: Int, oneLine: Bool) throws(CommandFailure)
    -> [UInt8]?
  {
    var read: [UInt8] = []
    var sawAny = false
    while read.count <= limit {
      let wanted = oneLine ? 1 : min(65_536, limit - read.count) + 1
      let block: [UInt8]
      do {
        block = try StandardInput.read(upTo: wanted)
      } catch {
        throw CommandFailure("standard input could not be read (\(error.code)); nothing was changed")
      }
      guard !block.isEmpty else { break }
      sawAny = true
      if oneLine && block.first == UInt8(ascii: "\n") { break }
      read += block
    }
    return sawAny ? read : nil
  }
}

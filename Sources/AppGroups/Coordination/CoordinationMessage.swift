import Foundation

/// One message between the processes of a coordinated access, written whole to the
/// receiving process's inbox (a FIFO: a write of at most `PIPE_BUF` bytes is never
/// interleaved with another).
///
/// A coordinator *asks* each presenter of the item, in order, and waits for its *answer*;
/// after the access it *tells* every presenter it asked (reacquire, what happened, and what the
/// item looked like when the access ended). One line of text: fields separated by spaces, each
/// percent-escaped.
struct CoordinationMessage: Sendable, Equatable {
  enum Verb: String, Sendable {
    case ask, answer, tell
  }

  /// What an ask asks a presenter to do, in this order.
  struct Ask: OptionSet, Sendable, Hashable {
    let rawValue: UInt32
    static let save = Ask(rawValue: 1)
    static let relinquishToReader = Ask(rawValue: 2)
    static let relinquishToWriter = Ask(rawValue: 4)
    static let accommodateDeletion = Ask(rawValue: 8)
    /// `paths[1]`: the item inside the presented folder.
    static let accommodateSubitemDeletion = Ask(rawValue: 16)
  }

  /// What a tell tells a presenter, in this order.
  struct Tell: OptionSet, Sendable, Hashable {
    let rawValue: UInt32
    static let reacquire = Tell(rawValue: 1)
    /// `paths[1]`: the new path.
    static let didMove = Tell(rawValue: 2)
    static let didChange = Tell(rawValue: 4)
    /// `paths[1]`: the item inside the presented folder.
    static let subitemDidChange = Tell(rawValue: 8)
    /// `paths[1]`, `paths[2]`: the item's old and new paths.
    static let subitemDidMove = Tell(rawValue: 16)
    /// `paths[1]`: the item that appeared.
    static let subitemDidAppear = Tell(rawValue: 32)
  }

  var verb: Verb
  /// The asking process's number for the access; an answer and the tells carry it back.
  var id: UInt64
  /// The sender's inbox (an absolute path): where an answer goes, and who the sender is.
  var from: String
  /// The presenter's registration name.
  var presenter: String
  /// ``Ask`` or ``Tell`` bits; for an answer, 0 (done) or 1 (refused: see ``text``).
  var flags: UInt32
  /// The presented item's absolute path first, then what the flags need.
  var paths: [String]
  /// An answer's refusal: the error's domain, code and description.
  var errorDomain: String = ""
  var errorCode: Int = 0
  /// An answer's refusal's description; a tell that says to reacquire: what the coordinator
  /// saw of the presenter's item when its access ended (``UncoordinatedChanges/Seen``, empty
  /// when it could not look, and in a tell of an earlier build).
  var text: String = ""

  /// The largest message a FIFO takes whole (`PIPE_BUF`).
  static let maximumSize = 4096

  /// The message as one line, newline first and last, or `nil` when it would be longer than
  /// ``maximumSize``. The first newline ends whatever a process that is not the library left
  /// in the inbox without one, so that this message is read as itself (the reader skips an
  /// empty line).
  func encoded() -> [UInt8]? {
    var line: [UInt8] = [UInt8(ascii: "\n")]
    line.reserveCapacity(256)
    func field(_ text: String) {
      if line.count > 1 { line.append(UInt8(ascii: " ")) }
      if text.isEmpty {
        line.append(UInt8(ascii: "-"))
        return
      }
      for byte in text.utf8 {
        if byte <= 0x20 || byte == 0x7f || byte == UInt8(ascii: "%") || byte == UInt8(ascii: "-") {
          line.append(UInt8(ascii: "%"))
          line.append(Self.hexDigit(byte >> 4))
          line.append(Self.hexDigit(byte & 0xf))
        } else {
          line.append(byte)
        }
      }
    }
    field(verb.rawValue)
    field(String(id))
    field(from)
    field(presenter)
    field(String(flags))
    field(errorDomain)
    field(String(errorCode))
    field(text)
    for path in paths { field(path) }
    line.append(UInt8(ascii: "\n"))
    return line.count <= Self.maximumSize ? line : nil
  }

  /// A message read back from one line (without its newline); `nil` when it is not one.
  init?(line: ArraySlice<UInt8>) {
    var fields: [String] = []
    for raw in line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false) {
      if raw.elementsEqual([UInt8(ascii: "-")]) {
        fields.append("")
        continue
      }
      var bytes: [UInt8] = []
      bytes.reserveCapacity(raw.count)
      var index = raw.startIndex
      while index < raw.endIndex {
        let byte = raw[index]
        if byte == UInt8(ascii: "%") {
          guard raw.distance(from: index, to: raw.endIndex) >= 3,
            let high = Self.hexValue(raw[index + 1]), let low = Self.hexValue(raw[index + 2])
          else { return nil }
          bytes.append(high << 4 | low)
          index += 3
        } else {
          bytes.append(byte)
          index += 1
        }
      }
      guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
      fields.append(text)
    }
    guard fields.count >= 8, let verb = Verb(rawValue: fields[0]), let id = UInt64(fields[1]),
      let flags = UInt32(fields[4]), let code = Int(fields[6])
    else { return nil }
    self.verb = verb
    self.id = id
    from = fields[2]
    presenter = fields[3]
    self.flags = flags
    errorDomain = fields[5]
    errorCode = code
    text = fields[7]
    paths = Array(fields[8...])
  }

  init(
    verb: Verb, id: UInt64, from: String, presenter: String, flags: UInt32, paths: [String]
  ) {
    self.verb = verb
    self.id = id
    self.from = from
    self.presenter = presenter
    self.flags = flags
    self.paths = paths
  }

  private static func hexDigit(_ value: UInt8) -> UInt8 {
    value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    default: nil
    }
  }
}

import Foundation

/// This process's command line and environment as text, for `groupctl` and the example
/// programs.
///
/// Swift makes `CommandLine.arguments` and `ProcessInfo`'s environment by replacing every
/// byte that is not UTF-8 with U+FFFD, so `$'tok\xff'` and `$'tok\xfe'` would both arrive as
/// `"tok\u{FFFD}"`: a value stored from them is not the one the user typed, and two different
/// keys would name one. A program that stores what it is given asks here first, and refuses
/// such input instead of storing what it was not given.
public enum CommandLineText {
  /// Why this process's arguments (after the program name), or one of the environment
  /// variables `names`, cannot be taken as text: the first that is not valid UTF-8, named
  /// with its bytes shown (`argument 3 ("h\xffi") is not valid UTF-8; …`), or by its place
  /// alone when `mayBeSecret` says it may be a secret (a password, a token): no message
  /// shows a secret's bytes. `nil` when all are UTF-8.
  ///
  /// - Parameters:
  ///   - names: The environment variables to look at too.
  ///   - mayBeSecret: Whether the argument at an index of the words (the program's name at 0,
  ///     bytes that are not UTF-8 shown as U+FFFD) may be a secret.
  public static func nonUTF8Input(
    environment names: [String] = [], mayBeSecret: ([String], Int) -> Bool = { _, _ in false }
  ) -> String? {
    let argv = CommandLine.unsafeArgv
    let words = (0..<Int(CommandLine.argc)).map { argv[$0].map { String(cString: $0) } ?? "" }
    for index in 1..<Int(CommandLine.argc) {
      guard let argument = argv[index], String(validatingCString: argument) == nil else { continue }
      let shown = mayBeSecret(words, index) ? "not shown: it may be a secret" : "\"\(escaped(argument))\""
      return "argument \(index) (\(shown)) is not valid UTF-8; names, keys, values and paths must be"
        + " UTF-8 text"
    }
    for name in names {
      guard let value = getenv(name), String(validatingCString: value) == nil else { continue }
      return "\(name) (\"\(escaped(value))\") is not valid UTF-8; names, keys, values and paths"
        + " must be UTF-8 text"
    }
    return nil
  }

  /// `bytes` with every byte outside printable ASCII written `\xHH`.
  static func escaped(_ bytes: UnsafePointer<CChar>) -> String {
    var text = ""
    var byte = bytes
    while byte.pointee != 0 {
      let value = UInt8(bitPattern: byte.pointee)
      text += (0x20..<0x7F).contains(value) ? String(UnicodeScalar(value)) : "\\x" + String(value, radix: 16)
      byte += 1
    }
    return text
  }
}

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
  /// with its bytes shown (`argument 2 ("tok\xff") is not valid UTF-8; …`). `nil` when all
  /// are UTF-8.
  public static func nonUTF8Input(environment names: [String] = []) -> String? {
    let argv = CommandLine.unsafeArgv
    for index in 1..<Int(CommandLine.argc) {
      guard let argument = argv[index], String(validatingCString: argument) == nil else { continue }
      return "argument \(index) (\"\(escaped(argument))\") is not valid UTF-8; names, keys, values"
        + " and paths must be UTF-8 text"
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

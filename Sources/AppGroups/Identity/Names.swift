/// Validation of names that come from outside: suite names, group
/// identifiers, bundle identifiers, and the executables a manifest binds.
///
/// Every such name becomes a file or folder name under the root, so it is
/// checked before it touches a path. A valid name is 1...255 UTF-8 bytes of
/// `A-Z a-z 0-9 . _ -`, does not start with `.` or `-`, and contains no `..`.
/// A refusal is an ``AppGroupsError/Code/invalidName`` whose message shows
/// the name escaped (so a NUL or a control character is visible) and the
/// exact reason.
enum Names {
  /// The longest valid name, in UTF-8 bytes: the longest file name Linux allows.
  static let maximumByteCount = 255
  /// What every application group identifier starts with.
  static let groupPrefix = "group."
  /// The global domain's name, as on Apple platforms: no suite may take it.
  static let globalDomain = "NSGlobalDomain"
  /// The longest executable path a manifest may bind (`PATH_MAX`).
  static let maximumExecutableByteCount = 4096

  /// Throws `.invalidName` when `name` is not a valid name.
  ///
  /// - Parameters:
  ///   - name: the name to check.
  ///   - what: what the name is, for the message: "suite name", "bundle identifier"….
  static func validate(_ name: String, as what: String) throws(AppGroupsError) {
    if let reason = problem(with: name) {
      throw AppGroupsError(.invalidName, "invalid \(what) \(quoted(name)): \(reason)")
    }
  }

  /// Throws `.invalidName` when `id` is not a valid name, does not start
  /// with `group.`, or has nothing after it.
  static func validateGroupIdentifier(_ id: String) throws(AppGroupsError) {
    if let reason = groupIdentifierProblem(with: id) {
      throw AppGroupsError(.invalidName, "invalid group identifier \(quoted(id)): \(reason)")
    }
  }

  /// Throws `.invalidName` when `id` is not a valid bundle identifier.
  static func validateBundleIdentifier(_ id: String) throws(AppGroupsError) {
    try validate(id, as: "bundle identifier")
  }

  /// Throws `.invalidName` when `executable` cannot stand in a manifest as an executable
  /// binding: an absolute path, or a bare file name kept from an older manifest, without
  /// control characters.
  static func validateExecutable(_ executable: String) throws(AppGroupsError) {
    if let reason = executableProblem(with: executable) {
      throw AppGroupsError(.invalidName, "invalid executable \(quoted(executable)): \(reason)")
    }
  }

  /// Throws `.invalidName` when `executable` cannot be a new executable binding: it must
  /// name one file, by its absolute path.
  static func validateExecutableBinding(_ executable: String) throws(AppGroupsError) {
    try validateExecutable(executable)
    guard executable.hasPrefix("/") else {
      throw AppGroupsError(
        .invalidName,
        "invalid executable \(quoted(executable)): a bare file name would let any program of"
          + " that name claim the identity; a binding names one file, by its absolute path")
    }
  }

  /// Whether every byte is one of A-Z, a-z, 0-9, '.', '_' and '-', with no two '.' in a row.
  @inline(__always)
  private static func isPlain<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> Bool {
    var previous: UInt8 = 0
    for byte in bytes {
      switch byte {
      case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x5F, 0x2D: break
      case 0x2E where previous != 0x2E: break
      default: return false
      }
      previous = byte
    }
    return true
  }

  /// Why `name` is not a valid name, or `nil` when it is.
  static func problem(with name: String) -> String? {
    let byteCount = name.utf8.count
    if byteCount == 0 { return "empty" }
    if byteCount > maximumByteCount {
      return "longer than \(maximumByteCount) bytes (\(byteCount))"
    }
    // One pass over the bytes settles every valid name (a manifest holds
    // many, and a process checks them all when it opens a suite); only a
    // refused one goes on to the slower walk that names the reason.
    let plain = name.utf8.withContiguousStorageIfAvailable { isPlain($0) } ?? isPlain(name.utf8)
    if plain, let first = name.utf8.first, first != 0x2E, first != 0x2D { return nil }
    var offset = 0
    for scalar in name.unicodeScalars {
      switch scalar.value {
      case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2E, 0x5F, 0x2D:
        break
      case 0x00...0x1F, 0x7F...0x9F:
        return "contains a control character (\(codePoint(scalar))) at offset \(offset)"
      case 0x2F:
        return "contains '/' at offset \(offset)"
      default:
        return "contains \(describe(scalar)) at offset \(offset); "
          + "only A-Z, a-z, 0-9, '.', '_' and '-' are allowed"
      }
      offset += UTF8.width(scalar)
    }
    if name.hasPrefix(".") { return "starts with '.'" }
    if name.hasPrefix("-") { return "starts with '-'" }
    if name.contains("..") { return "contains '..'" }
    return nil
  }

  /// Why `id` is not a valid group identifier, or `nil` when it is.
  static func groupIdentifierProblem(with id: String) -> String? {
    if let reason = problem(with: id) { return reason }
    if !hasGroupPrefix(id) { return "does not start with '\(groupPrefix)'" }
    if id.utf8.count == groupPrefix.utf8.count { return "has nothing after '\(groupPrefix)'" }
    return nil
  }

  /// Whether the valid name `id` starts with ``groupPrefix``. A valid name is ASCII, so its
  /// bytes settle it: `hasPrefix` compares characters, at several times the cost, for each
  /// group of a manifest a new process reads.
  private static func hasGroupPrefix(_ id: String) -> Bool {
    let prefix: StaticString = "group."
    return id.utf8.withContiguousStorageIfAvailable { bytes in
      guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
      for offset in 0..<prefix.utf8CodeUnitCount where bytes[offset] != prefix.utf8Start[offset] {
        return false
      }
      return true
    } ?? id.hasPrefix(groupPrefix)
  }

  /// Why `executable` is not a valid executable binding, or `nil` when it is.
  static func executableProblem(with executable: String) -> String? {
    let byteCount = executable.utf8.count
    if byteCount == 0 { return "empty" }
    if byteCount > maximumExecutableByteCount {
      return "longer than \(maximumExecutableByteCount) bytes (\(byteCount))"
    }
    var offset = 0
    for scalar in executable.unicodeScalars {
      if scalar.value <= 0x1F || (0x7F...0x9F).contains(scalar.value) {
        return "contains a control character (\(codePoint(scalar))) at offset \(offset)"
      }
      offset += UTF8.width(scalar)
    }
    if executable.contains("/") {
      if !executable.hasPrefix("/") {
        return "is a relative path; a binding names one file, by its absolute path"
      }
      if executable.hasSuffix("/") { return "ends with '/'" }
    } else if executable == "." || executable == ".." {
      return "is not a file name"
    }
    return nil
  }

  /// The name as a Swift string literal, shortened when it is very long.
  ///
  /// Every character that does not show as itself is escaped as `\u{…}`
  /// (`\0`, `\t`, `\n`, `\r` for the common ones): C0 and C1 controls, DEL,
  /// and invisible or reordering format characters such as U+202E
  /// RIGHT-TO-LEFT OVERRIDE. Printed raw, a C1 control like U+009B starts a
  /// terminal escape sequence, and a bidirectional override makes a name read
  /// as another.
  static func quoted(_ name: String) -> String {
    let limit = 64
    var text = "\""
    for (index, character) in name.enumerated() {
      if index == limit {
        text += "\"…"
        return text
      }
      for scalar in character.unicodeScalars { text += escaped(scalar) }
    }
    return text + "\""
  }

  private static func escaped(_ scalar: Unicode.Scalar) -> String {
    switch scalar {
    case "\0": return "\\0"
    case "\t": return "\\t"
    case "\n": return "\\n"
    case "\r": return "\\r"
    case "\"": return "\\\""
    case "\\": return "\\\\"
    default:
      guard isVisible(scalar) else { return "\\u{\(String(scalar.value, radix: 16, uppercase: true))}" }
      return String(scalar)
    }
  }

  /// Whether a character shows as itself: not a control, format, separator (other than the
  /// space), private-use, surrogate or unassigned code point.
  private static func isVisible(_ scalar: Unicode.Scalar) -> Bool {
    if scalar == " " { return true }
    switch scalar.properties.generalCategory {
    case .control, .format, .lineSeparator, .paragraphSeparator, .spaceSeparator, .privateUse,
      .surrogate, .unassigned:
      return false
    default:
      return true
    }
  }

  /// The name as it is when it is a valid name, else quoted as ``quoted(_:)`` does.
  static func quotedIfNeeded(_ name: String) -> String {
    problem(with: name) == nil ? name : quoted(name)
  }

  private static func codePoint(_ scalar: Unicode.Scalar) -> String {
    let hex = String(scalar.value, radix: 16, uppercase: true)
    return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
  }

  private static func describe(_ scalar: Unicode.Scalar) -> String {
    guard isVisible(scalar) else { return codePoint(scalar) }
    if scalar.isASCII { return "'\(Character(scalar))'" }
    return "'\(Character(scalar))' (\(codePoint(scalar)))"
  }
}

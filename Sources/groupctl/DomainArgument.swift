/// A DOMAIN as written on the command line, split but not yet checked
/// against the manifest (the library validates the names).
enum DomainArgument: Hashable, Sendable, CustomStringConvertible {
  /// `-g` or `NSGlobalDomain`: the global domain.
  case global
  /// A bundle id: that app's standard suite.
  case app(String)
  /// `group.…`: an application group's shared suite.
  case group(String)
  /// `BUNDLE-ID:SUITE`: a private suite of an app.
  case suite(bundleID: String, name: String)

  /// The name `NSGlobalDomain`, which `-g` stands for.
  static let globalDomainName = "NSGlobalDomain"

  /// Parses a DOMAIN word.
  ///
  /// - Throws: ``ValidationError`` for an empty word or an empty part of
  ///   `BUNDLE-ID:SUITE`.
  init(parsing word: String) throws(ValidationError) {
    if word == "-g" || word == Self.globalDomainName {
      self = .global
      return
    }
    guard !word.isEmpty else { throw ValidationError("DOMAIN is empty") }
    if let colon = word.firstIndex(of: ":") {
      let bundleID = String(word[..<colon])
      let name = String(word[word.index(after: colon)...])
      guard !bundleID.isEmpty, !name.isEmpty, !name.contains(":") else {
        throw ValidationError(
          "'\(word)' is not a domain: a private suite is written BUNDLE-ID:SUITE")
      }
      guard !bundleID.hasPrefix("group.") else {
        throw ValidationError(
          "'\(word)' is not a domain: a group's suite is named by the group id alone")
      }
      self = .suite(bundleID: bundleID, name: name)
    } else if word.hasPrefix("group.") {
      self = .group(word)
    } else {
      self = .app(word)
    }
  }

  /// The domain as the user would write it.
  var description: String {
    switch self {
    case .global: Self.globalDomainName
    case .app(let bundleID): bundleID
    case .group(let groupID): groupID
    case .suite(let bundleID, let name): "\(bundleID):\(name)"
    }
  }
}

import AppGroups

/// A DOMAIN as written on the command line: the library's administered domain,
/// split but not yet checked against the manifest (the library validates the names).
typealias DomainArgument = SuiteResolver.AdministeredDomain

extension SuiteResolver.AdministeredDomain {
  /// Parses a DOMAIN word: `-g` or `NSGlobalDomain`, a bundle id, a `group.` id, or
  /// `BUNDLE-ID:SUITE`.
  ///
  /// - Throws: ``ValidationError`` for an empty word or an empty part of
  ///   `BUNDLE-ID:SUITE`.
  init(parsing word: String) throws(ValidationError) {
    if word == "-g" || word == GroupDefaults.globalDomain {
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
      // The global domain's name is no app's bundle id: it would name a folder of an
      // app called NSGlobalDomain, and the suite would be nobody's.
      guard bundleID != GroupDefaults.globalDomain else {
        throw ValidationError(
          "'\(word)' is not a domain: \(bundleID) is the global domain, which holds no suite of"
            + " its own; a private suite is written BUNDLE-ID:SUITE")
      }
      self = .privateSuite(bundleIdentifier: bundleID, suiteName: name)
    } else if word.hasPrefix("group.") {
      self = .group(word)
    } else {
      self = .standard(bundleIdentifier: word)
    }
  }
}

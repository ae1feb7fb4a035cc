// What an administrator tool (`groupctl` without `--as`) needs of a suite beyond what an app
// may do (the domains themselves are named and found by SuiteResolver's administration).

extension GroupDefaults {
  /// Replaces every value of this suite at once, as
  /// ``setPersistentDomain(_:forName:)`` does for the suite's own name, but
  /// throws the reason when it is refused instead of reporting it.
  ///
  /// The replacement reaches the file as one unit (values other processes
  /// wrote before it are replaced too); call ``synchronize()`` to wait for it.
  ///
  /// - Throws: `.sizeLimitExceeded` when the values are larger than the
  ///   suite's limit; nothing changes then.
  package func replacePersistentDomain(with values: [String: PropertyListValue])
    throws(AppGroupsError)
  {
    try view.suite.replaceAll(with: values)
  }

  /// Keeps this process's own command line out of the argument domain, for a tool whose
  /// words are not an app's (`groupctl`); call it before any suite is opened.
  package static func ignoreLaunchArguments() {
    ProcessDomains.ignoreLaunchArguments()
  }

  /// The argument domain that a process started with `arguments` would
  /// have: each `-key value` pair, the value read as a property list when it
  /// is one written in text (`(a, b)`, `{ k = v; }`, `<integer>1</integer>`,
  /// a quoted string) and as a plain string otherwise. Other words are skipped.
  ///
  /// A value that reads as a property list with XML after its root value, which Foundation's
  /// parser would read as the first value alone, is refused (an app leaves it out and says
  /// so on stderr): `refused` is told its key, the value and the reason naming what follows
  /// the value and its line.
  package static func argumentValues(
    parsing arguments: [String],
    refused: (_ key: String, _ value: String, _ reason: String) -> Void
  ) -> [String: PropertyListValue] {
    ProcessDomains.parseArguments(arguments, refused: refused)
  }
}

import Foundation

/// A suite as a tool that does not open it reads it (`groupctl read`, `export`, `explain`,
/// `report`, `doctor`): through the library's own reader, so that a tool and an app never
/// disagree about a file. Nothing is created, locked or moved aside.
package struct StoredSuite: Sendable {
  /// The values: the plist's, then its journal's records as far as its lock file publishes
  /// them (those behind a damaged header too).
  package var values: [String: PropertyListValue]
  /// The plist's values that cannot be read (a keyed archive's uid, a set), each as
  /// `"key" (reason)`: the other keys are read, as an app reads them.
  package var skipped: [String]
  /// What is wrong with the journal, in words; `nil` when nothing is.
  package var journalDamage: String?
  /// Whether, the journal damaged, its records that check were read (a damaged header, a cut):
  /// not when something else lies at its path.
  package var journalRecordsRead = true
  /// What to say of a journal of another version of the plist at the journal's path (see
  /// ``SuiteJournal/otherVersionProblem(ofSuiteAt:)``), which is not read; `nil` when there is none.
  package var journalOfAnotherVersion: String? = nil
  /// What to say of a journal that the suite's lock file publishes as durable for the plist
  /// read and that is gone (see ``SuiteJournal/goneProblem(ofSuiteAt:version:)``): the changes
  /// acknowledged since the plist was last written whole are lost. `nil` when it is there, or
  /// is gone only for a commit in flight.
  package var journalGone: String? = nil

  /// Reads the suite whose plist is at `plistPath`. Only a regular file is read, as the
  /// library reads it: a symbolic link, a folder or a fifo in its place is unreadable.
  ///
  /// - Returns: `nil` when there is no plist.
  /// - Throws: `.io` when the plist or its journal cannot be read, the message the system's
  ///   reason alone; `.corruptPreferences` when the plist cannot be read as a domain (an app
  ///   that opens the suite moves it aside), the message the reason.
  ///
  /// A commit that lands between the plist's read and its journal's (a compaction that folds
  /// the journal into a new plist and removes it) would leave the old plist without the
  /// journal it was read with: the plist is looked at again after its journal was read, and
  /// read again when it is not the one read (a few times, then as it stands), as an app's open
  /// reads it (``SuiteFile/readingAgainWhileReplaced(plistAt:record:_:)``).
  package static func read(plistAt plistPath: String) throws(AppGroupsError) -> StoredSuite? {
    try SuiteFile.readingAgainWhileReplaced(plistAt: plistPath) { _ throws(AppGroupsError) in
      try readOnce(plistAt: plistPath)
    }
  }

  /// One read of the plist and its journal: the suite, and the plist's identity as read.
  private static func readOnce(plistAt plistPath: String) throws(AppGroupsError) -> (StoredSuite?, FileIdentity?) {
    let contents: PropertyListFile.Contents
    do {
      contents = try PropertyListFile.read(plistPath)
    } catch {
      throw AppGroupsError(.io, error.reason ?? error.code.description, cause: error)
    }
    var suite: StoredSuite
    let identity: FileIdentity
    switch consume contents {
    case .missing:
      return (nil, nil)
    case .unreadable(let reason, _):
      throw AppGroupsError(.corruptPreferences, reason)
    case .values(let values, let read):
      suite = StoredSuite(values: values, skipped: [], journalDamage: nil)
      identity = read
    case .indexed(let index, let read):
      suite = StoredSuite(values: index.decoded, skipped: [], journalDamage: nil)
      identity = read
    case .salvaged(let values, let read, let skipped, _):
      suite = StoredSuite(values: values, skipped: skipped.map(\.description), journalDamage: nil)
      identity = read
    }
    let tail: SuiteJournal.Tail?
    do {
      let latest = SuiteLockFile.peek(atPath: SuiteLockFile.path(of: plistPath))
      tail = try SuiteJournal.read(
        journalOf: plistPath, base: identity, after: nil, published: latest?.journal(of: identity),
        latest: latest.map { ($0.identity, $0.journal) })
    } catch {
      throw AppGroupsError(.io, error.reason ?? error.code.description, cause: error)
    }
    if let tail {
      for change in tail.changes { suite.values[change.key] = change.value }
      let damage = tail.damage.filter { !$0.mayBeInFlight }
      if !damage.isEmpty {
        suite.journalDamage = damage.map(\.description).joined(separator: "; ")
        suite.journalRecordsRead = damage.allSatisfy(\.leavesRecordsReadable)
      }
      // A missing journal may be a compaction's, in flight: said only once looked at again.
      if tail.damage.contains(where: \.isMissing) {
        suite.journalGone = SuiteJournal.goneProblem(ofSuiteAt: plistPath, version: identity)
      }
    } else {
      suite.journalOfAnotherVersion = SuiteJournal.otherVersionProblem(ofSuiteAt: plistPath)
    }
    return (suite, identity)
  }
}

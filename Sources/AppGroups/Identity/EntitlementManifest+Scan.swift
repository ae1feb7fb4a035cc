import Foundation

// The manifest read straight from its XML for one app's entry: what a new process opening its
// first group suite does. Reading it whole (``EntitlementManifest/entry(of:atPath:)``'s other
// way) builds a dictionary and arrays of `PropertyListValue`, whose generic types that process
// instantiates for the manifest alone: about a third of the manifest's reading. This walk
// checks every entry as ``EntitlementManifest/entry(_:_:path:)`` does, on the plain form
// groupctl writes, and gives up (`nil`) on anything else or anything wrong, so that the whole
// reading decides and words the error: what it answers, the whole reading answers too.
extension EntitlementManifest {
  /// The most entries, keys of an entry, or groups of one array the walk takes: each is
  /// checked against those before it for repeats (a search, not a set, whose type a new
  /// process would instantiate for this alone). A larger manifest is read whole.
  static let scanLimit = 64

  /// The entry of `bundleIdentifier` in the manifest `data`, when it is in the plain form this
  /// walk reads and every entry is valid; `nil` otherwise (the manifest is then read whole).
  ///
  /// The plain form: the root a dictionary of entries, each a dictionary whose groups and
  /// keychain access groups are arrays of strings and whose executable, App ID and team are
  /// strings; any other key's value is read as the whole reading reads it, and dropped.
  static func scannedEntry(of bundleIdentifier: String, in data: Data) -> EntryLookup? {
    XMLPropertyList.scan(data) { scanner -> EntryLookup? in
      guard scanner.begin(), let (tag, empty) = scanner.open(depth: 0), tag == .dict else {
        return nil
      }
      var lookup = EntryLookup()
      lookup.present = true
      if !empty {
        var names: [String] = []
        while true {
          guard let ends = scanner.ends(.dict) else { return nil }
          if ends { break }
          guard let name = scanner.key(), names.count < scanLimit, !names.contains(name),
            let entry = scannedEntry(name, &scanner)
          else { return nil }
          names.append(name)
          if name == bundleIdentifier {
            lookup.entry = entry
            lookup.isListed = true
          }
        }
      }
      guard scanner.finish() else { return nil }
      return lookup
    }
  }

  /// The entry of `bundleIdentifier` at the scanner, checked as ``entry(_:_:path:)`` checks
  /// it; `nil` when it is not valid or not in the plain form.
  private static func scannedEntry(
    _ bundleIdentifier: String, _ scanner: inout XMLPropertyList.Scanner
  ) -> Entry? {
    guard Names.problem(with: bundleIdentifier) == nil,
      let (tag, empty) = scanner.open(depth: 1), tag == .dict
    else { return nil }
    var entry = Entry()
    if !empty {
      var keys: [String] = []
      while true {
        guard let ends = scanner.ends(.dict) else { return nil }
        if ends { break }
        guard let key = scanner.key(), keys.count < scanLimit, !keys.contains(key) else {
          return nil
        }
        keys.append(key)
        switch key {
        case applicationGroupsKey:
          guard let groups = scannedStrings(&scanner) else { return nil }
          for group in groups {
            guard Names.groupIdentifierProblem(with: group) == nil else { return nil }
            // Each group once, in the order first written. A valid group is ASCII, whose equal
            // strings have as many bytes: those of another length are passed over at once.
            let count = group.utf8.count
            if !entry.applicationGroups.contains(where: { $0.utf8.count == count && $0 == group }) {
              entry.applicationGroups.append(group)
            }
          }
        case keychainAccessGroupsKey:
          guard let groups = scannedStrings(&scanner) else { return nil }
          for group in groups where !entry.keychainAccessGroups.contains(group) {
            entry.keychainAccessGroups.append(group)
          }
        case executableKey:
          guard let executable = scannedString(&scanner),
            Names.executableProblem(with: executable) == nil
          else { return nil }
          entry.executable = executable
        case applicationIdentifierKey:
          guard let identifier = scannedString(&scanner) else { return nil }
          entry.applicationIdentifier = identifier
        case teamIdentifierKey:
          guard let team = scannedString(&scanner) else { return nil }
          entry.teamIdentifier = team
        default:
          // Another key (Xcode's entitlements carry many): ignored, once it reads.
          guard scanner.skipValue(depth: 2) else { return nil }
        }
      }
    }
    guard keychainEntitlementProblem(entry, bundleIdentifier) == nil else { return nil }
    return entry
  }

  /// A field's `<string>`.
  private static func scannedString(_ scanner: inout XMLPropertyList.Scanner) -> String? {
    guard let (tag, empty) = scanner.open(depth: 2), tag == .string else { return nil }
    return scanner.string(empty: empty)
  }

  /// A field's `<array>` of `<string>`s, at most ``scanLimit`` of them.
  private static func scannedStrings(_ scanner: inout XMLPropertyList.Scanner) -> [String]? {
    guard let (tag, empty) = scanner.open(depth: 2), tag == .array else { return nil }
    var strings: [String] = []
    if empty { return strings }
    while true {
      guard let ends = scanner.ends(.array) else { return nil }
      if ends { return strings }
      guard strings.count < scanLimit, let (tag, empty) = scanner.open(depth: 3), tag == .string,
        let string = scanner.string(empty: empty)
      else { return nil }
      strings.append(string)
    }
  }
}

import AppGroups
import AppGroupsKeychain
import Foundation

/// `groupctl keychain add-generic-password|find-generic-password|delete-generic-password|dump`,
/// with macOS `security`'s flags.
struct KeychainCommand: ParsableCommand {
  /// The subcommand and its flags, taken as security takes them (see ``init(arguments:)``).
  static let words = Argument.rawWords("SUBCOMMAND")

  static let configuration = CommandConfiguration(
    commandName: "keychain",
    abstract: "Add, find, delete and list keychain items, as macOS's security does.",
    arguments: [words],
    usage: """
      keychain add-generic-password -a ACCOUNT -s SERVICE [-w [PASSWORD]] [-U] [-l LABEL] [-G GROUP] [--accessible CLASS]
      keychain find-generic-password [-a ACCOUNT] [-s SERVICE] [-G GROUP] [-w]
      keychain delete-generic-password [-a ACCOUNT] [-s SERVICE] [-G GROUP]
      keychain dump [-G GROUP] [-w]
      """,
    discussion: """
      With --as BUNDLE-ID, groupctl acts as that app: the manifest's keychain access groups \
      and the device's state decide as they do for the app. Without --as it acts as the \
      administrator: every access group, and add needs -G.

      -w with a value is the password to add; -w last, with no value, reads it from \
      standard input (prompting, without echo, on a terminal), so that it never sits in \
      the command line. A password holds at most 1 MiB (1048576 bytes), the most the \
      keychain stores in an item (its SecItemAdd and SecItemUpdate refuse more with \
      errSecDataTooLarge): a secret is a few kilobytes at most, and an access group's items \
      are written again whole at each change. A longer standard input is refused without \
      being read to its end, and nothing is stored. An attribute (-a, -s, -l) holds at most \
      16 KiB (errSecParam), and an access group's file at most 16 MiB: an add that would \
      grow it past that fails with errSecDiskFull, and a file already larger is not read \
      (errSecAllocate) and left as it is; dump then exits with 1 naming it. find prints the \
      item's attributes, or with -w its password only. dump prints every item, never a \
      password unless -w is given; with -w, an item whose data cannot be read (its class \
      locked, say) is printed without it, named on stderr, and dump exits with 1.

      Exits with 44 when no item matches, as security does; any other failure exits with 1 \
      and names the OSStatus and its message.
      """,
    subcommandOptions: [
      OptionHelp("-a ACCOUNT", "The account (kSecAttrAccount)."),
      OptionHelp("-s SERVICE", "The service (kSecAttrService)."),
      OptionHelp("-w [PASSWORD]", "add: the password, or read it; find, dump: print passwords."),
      OptionHelp("-U", "add: update the item if it exists."),
      OptionHelp("-l LABEL", "add: the label (kSecAttrLabel)."),
      OptionHelp("-G GROUP", "The access group (kSecAttrAccessGroup)."),
      OptionHelp(
        "--accessible CLASS",
        "add: when the item can be read, the kSecAttrAccessible… constant's name without its"
          + " prefix: whenUnlocked (default), afterFirstUnlock, whenPasscodeSetThisDeviceOnly, …"),
    ]
  )

  enum Action: String {
    case add = "add-generic-password"
    case find = "find-generic-password"
    case delete = "delete-generic-password"
    case dump
  }

  /// `-w`: absent, given without a value (read it), or given with one.
  enum PasswordOption: Equatable {
    case absent
    case read
    case value(String)
  }

  let arguments: Arguments
  let action: Action
  var account: String?
  var service: String?
  var password: PasswordOption = .absent
  var update = false
  var label: String?
  var group: String?
  var accessibility: Keychain.Accessibility?

  /// Takes security's grammar: the subcommand first, then its flags, each with its value in
  /// the next word; `-w` takes one only for add, and then the next word whatever it is
  /// (`-w -Hunter2`, as security takes it): `-w` last reads the password. Each flag is given
  /// once (``GivenOptions``): `-w X -w Y` is refused, naming `-w` alone.
  init(arguments: Arguments) throws {
    self.arguments = arguments
    var words = arguments[Self.words][...]
    guard let name = words.popFirst() else {
      throw ValidationError(
        "missing subcommand: add-generic-password, find-generic-password,"
          + " delete-generic-password or dump")
    }
    guard let action = Action(rawValue: name) else {
      throw ValidationError(
        "unknown keychain subcommand (not shown: it may be a password); use add-generic-password,"
          + " find-generic-password,"
          + " delete-generic-password or dump")
    }
    self.action = action
    func value(_ option: String) throws(ValidationError) -> String {
      guard let next = words.popFirst() else {
        throw ValidationError("option '\(option)' needs a value")
      }
      return next
    }
    var given = GivenOptions()
    while let word = words.popFirst() {
      if word.hasPrefix("-w=") {
        given.note("-w")
      } else if Self.flags.contains(word) {
        given.note(word)
      }
      switch word {
      case "-a": account = try value(word)
      case "-s": service = try value(word)
      case "-l" where action == .add: label = try value(word)
      case "-G": group = try value(word)
      case "-U" where action == .add: update = true
      case "-w":
        if action == .add, let next = words.first {
          password = .value(next)
          words.removeFirst()
        } else {
          password = .read
        }
      case _ where word.hasPrefix("-w=") && action == .add:
        password = .value(String(word.dropFirst(3)))
      case "--accessible" where action == .add:
        let name = try value(word)
        guard let parsed = Keychain.Accessibility(name: name) else {
          throw ValidationError(
            "--accessible: unknown class '\(name)'; use one of "
              + Keychain.Accessibility.allCases.map(\.description).joined(separator: ", "))
        }
        accessibility = parsed
      default:
        if ArgumentReader.isOptionLike(word) {
          // Shown only when shaped as an option: a word such as -Hunter2 may be a password.
          throw ValidationError(
            ArgumentReader.looksLikeOptionName(word)
              ? "\(action.rawValue) takes no option '\(word)'"
              : "\(action.rawValue) takes no option (not shown: it may be a password)")
        }
        // Not shown: a password typed without -w must not reach a message.
        throw ValidationError(
          "unexpected argument (not shown: it may be a password); a password is given with -w")
      }
    }
    try given.refuseRepeats()
  }

  /// The flags of security's grammar, each given once.
  private static let flags: Set<String> = ["-a", "-s", "-l", "-G", "-U", "-w", "--accessible"]

  func validate() throws {
    if action == .add {
      guard account != nil, service != nil else {
        throw ValidationError("add-generic-password needs -a ACCOUNT and -s SERVICE")
      }
      if globals.identity == nil, group == nil {
        throw ValidationError(
          "the administrator adds an item to a named access group: give -G GROUP, or act as an app"
            + " with --as BUNDLE-ID")
      }
    }
    if action == .delete, account == nil, service == nil {
      throw ValidationError("delete-generic-password needs -a ACCOUNT or -s SERVICE")
    }
  }

  func run() throws {
    let session = KeychainSession(root: globals.containerRoot, identity: try globals.appIdentity())
    do {
      switch action {
      case .add: try add(session)
      case .find: try find(session)
      case .delete: try delete(session)
      case .dump: try dump(session)
      }
    } catch let error as KeychainError {
      if error.code == .itemNotFound {
        printError("groupctl: keychain: The specified item could not be found in the keychain.")
        throw ExitCode(44)
      }
      throw CommandFailure("keychain: \(error)")
    }
  }

  /// The query of the item named by -a, -s and -G.
  private var query: [String: Any] {
    var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword]
    if let account { query[kSecAttrAccount as String] = account }
    if let service { query[kSecAttrService as String] = service }
    if let group { query[kSecAttrAccessGroup as String] = group }
    return query
  }

  private func add(_ session: KeychainSession) throws {
    let secret: Data
    switch password {
    case .absent: secret = Data()
    case .value(let text): secret = Data(text.utf8)
    case .read: secret = try Self.readPassword()
    }
    var changes: [String: Any] = [kSecValueData as String: secret]
    if let label { changes[kSecAttrLabel as String] = label }
    if let accessibility { changes[kSecAttrAccessible as String] = accessibility.rawValue }
    if update {
      try session.updateOrAdd(query, changes)
    } else {
      _ = try session.add(query.merging(changes) { $1 })
    }
    ChangeMade.record()
  }

  private func find(_ session: KeychainSession) throws {
    var query = self.query
    query[kSecReturnAttributes as String] = true
    query[kSecReturnData as String] = password != .absent
    query[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny as String
    let found = try session.copyMatching(query)
    guard let attributes = found as? [String: Any] else {
      throw CommandFailure("keychain: the item came back as \(type(of: found))")
    }
    if password != .absent {
      printOut(Self.printable(attributes[kSecValueData as String] as? Data ?? Data()))
      return
    }
    for line in Self.describe(attributes, root: globals.containerRoot) { printOut(line) }
  }

  private func delete(_ session: KeychainSession) throws {
    // One item, the first found, as security deletes it: by its persistent reference. Found
    // without opening it, as SecItemDelete opens nothing: an item changed on disk (doctor
    // says to delete it) or one locked away by the device's state is deleted too.
    var query = self.query
    query[kSecReturnAttributes as String] = true
    query[kSecReturnPersistentRef as String] = true
    query[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny as String
    let found = try session.firstToDelete(query)
    guard let attributes = found as? [String: Any],
      let reference = attributes[kSecValuePersistentRef as String] as? Data
    else {
      throw CommandFailure("keychain: the item came back as \(type(of: found))")
    }
    var target: [String: Any] = [kSecValuePersistentRef as String: reference]
    target[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny as String
    if let group = attributes[kSecAttrAccessGroup as String] as? String {
      target[kSecAttrAccessGroup as String] = group
    }
    try session.delete(target)
    ChangeMade.record()
    for line in Self.describe(attributes, root: globals.containerRoot) { printOut(line) }
    printOut("password has been deleted.")
  }

  private func dump(_ session: KeychainSession) throws {
    var reports = try session.inventory(secrets: password != .absent)
    if let group { reports = reports.filter { $0.accessGroup == group } }
    var first = true
    // With -w, the items whose data could not be read: named on stderr, and the exit is 1.
    var withoutData: [String] = []
    for report in reports {
      if let problem = report.problem { printError("groupctl: keychain: \(problem)") }
      for entry in report.entries {
        if !first { printOut("") }
        first = false
        printOut("keychain: \(KeychainSession.quoted(report.folder))")
        printOut("class: \"\(entry.itemClass)\"")
        printOut("attributes:")
        var attributes = entry.attributes
        attributes[kSecAttrAccessGroup as String] =
          "<blob>=" + KeychainSession.quoted(entry.accessGroup)
        attributes[kSecAttrAccessible as String] = "<blob>=\"\(entry.accessibility)\""
        attributes[kSecAttrSynchronizable as String] = "<sint32>=\(entry.synchronizable ? 1 : 0)"
        for key in attributes.keys.sorted() { printOut("    \"\(key)\"\(attributes[key] ?? "")") }
        switch entry.state {
        case .readable(let secret?): printOut("data:\n\(Self.printable(secret))")
        case .readable(nil): break
        case .locked:
          printOut("note: locked: the device's state keeps its class closed; attributes unchecked")
        case .damaged:
          printOut("note: damaged: it does not open with its class key (changed on disk)")
        case .keyGone
        where entry.accessibility == Keychain.Accessibility.whenPasscodeSetThisDeviceOnly.rawValue:
          printOut("note: its class key is gone (the passcode was removed)")
        case .keyGone:
          printOut(
            "note: it does not open with this device's keys (sealed under a class key its keybag"
              + " does not have)")
        }
        if password != .absent, let reason = Self.unreadableDataReason(entry) {
          withoutData.append("\(Self.named(entry)): \(reason)")
        }
      }
    }
    for item in withoutData {
      printError("groupctl: keychain: no data for \(item)")
    }
    // Every readable group printed; a group whose file could not be read makes the exit say so.
    let unread = reports.filter { $0.problem != nil }.map(\.accessGroup)
    guard unread.isEmpty else {
      throw CommandFailure(
        "keychain: the items of access \(unread.count == 1 ? "group" : "groups")"
          + " \(unread.joined(separator: ", ")) could not be read (said above)")
    }
    // A backup (`dump -w > file`) that lacks a secret must not pass for a whole one.
    guard withoutData.isEmpty else {
      let items = withoutData.count == 1 ? "1 item" : "\(withoutData.count) items"
      throw CommandFailure(
        "keychain: dump -w: the data of \(items) could not be read (said above); everything"
          + " else is printed, and the dump lacks that data")
    }
  }

  /// An item as a message names it: its service, account and access group, quoted as dump
  /// prints them; never its data.
  static func named(_ entry: KeychainSession.Entry) -> String {
    func attribute(_ key: CFString) -> String {
      guard let printed = entry.attributes[key as String] else { return "none" }
      return printed.hasPrefix("<blob>=") ? String(printed.dropFirst(7)) : printed
    }
    return "service \(attribute(kSecAttrService)), account \(attribute(kSecAttrAccount)),"
      + " access group \(KeychainSession.quoted(entry.accessGroup))"
  }

  /// Why `entry`'s data could not be read, or `nil` when it was.
  static func unreadableDataReason(_ entry: KeychainSession.Entry) -> String? {
    let accessibility =
      Keychain.Accessibility(rawValue: entry.accessibility)?.description ?? entry.accessibility
    switch entry.state {
    case .readable: return nil
    case .locked:
      return "locked: the device's state keeps its class (\(accessibility)) closed; unlock the"
        + " device ('groupctl device unlock') and dump again"
    case .damaged:
      return "damaged: it does not open with its class key (changed on disk; see 'groupctl"
        + " doctor')"
    case .keyGone
    where entry.accessibility == Keychain.Accessibility.whenPasscodeSetThisDeviceOnly.rawValue:
      return "its class key is gone (the passcode was removed): its data is lost"
    case .keyGone:
      return "it does not open with this device's keys (sealed under a class key its keybag"
        + " does not have)"
    }
  }

  /// `security`'s listing of an item's attributes.
  static func describe(_ attributes: [String: Any], root: ContainerRoot) -> [String] {
    let group = attributes[kSecAttrAccessGroup as String] as? String ?? "?"
    var lines = [
      "keychain: " + KeychainSession.quoted(root.keychainFolderURL(forAccessGroup: group).path),
      "class: \"genp\"", "attributes:",
    ]
    for key in attributes.keys.sorted()
    where key != kSecValueData as String && key != kSecValuePersistentRef as String {
      let value = attributes[key]
      let text: String
      switch value {
      // Quoted and escaped as dump prints it: a newline or an escape sequence in an account
      // would print a line of its own, or drive the terminal.
      case let string as String: text = "<blob>=" + KeychainSession.quoted(string)
      case let date as Date: text = "<timedate>=\"\(date)\""
      case let number as NSNumber: text = "<sint32>=\(number.intValue)"
      case let data as Data: text = "<blob>=0x" + data.map { String(format: "%02X", $0) }.joined()
      default: text = "<blob>=<NULL>"
      }
      lines.append("    \"\(key)\"\(text)")
    }
    return lines
  }

  /// A password as `security -w` prints it: the text when it is UTF-8 without a control
  /// character or a line or paragraph separator, else its bytes in hex. A newline or an
  /// escape sequence in an item's data would print a line of its own (a forged entry in
  /// `dump`) or drive the terminal.
  static func printable(_ data: Data) -> String {
    if let text = String(validating: data, as: UTF8.self),
      !text.unicodeScalars.contains(where: { scalar in
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: true
        default: false
        }
      })
    {
      return text
    }
    return data.map { String(format: "%02x", $0) }.joined()
  }

  /// The password from standard input: on a terminal, prompted twice without echo, as
  /// `security` prompts; otherwise everything read, less one final newline (or `\r\n`).
  /// Refuses an input that holds no password (empty, or a newline alone). Never more than
  /// ``Keychain/maximumDataBytes`` (what the keychain stores): a longer input is refused
  /// without being read to its end (`/dev/zero` has none), and nothing is stored.
  static func readPassword() throws -> Data {
    let limit = Keychain.maximumDataBytes
    func refuseOversized(_ bytes: some Collection<UInt8>) throws {
      guard bytes.count > limit else { return }
      throw CommandFailure(
        "keychain: the password read from standard input is longer than \(limit) bytes (1 MiB),"
          + " the most a keychain item's data holds; nothing was stored")
    }
    guard StandardInput.isTerminal else {
      // Two bytes more than the bound: a final "\r\n" that is not the password's.
      var data = try StandardInput.allBytes(atMost: limit + 2)
      if data.last == UInt8(ascii: "\n") {
        data.removeLast()
        if data.last == UInt8(ascii: "\r") { data.removeLast() }
      }
      try refuseOversized(data)
      // Nothing read (an empty file, a command that failed before it wrote, `< /dev/null`) is
      // no password: `-U` would replace the stored one with empty data. An empty password is
      // given as `-w ''`.
      guard !data.isEmpty else {
        throw CommandFailure(
          "keychain: no password was given on standard input (it held nothing but a final"
            + " newline, or nothing at all); nothing was stored (an empty password is given as -w '')")
      }
      return Data(data)
    }
    // The bytes typed, as the non-terminal path keeps them (not readLine's U+FFFD).
    func prompt(_ text: String) throws -> [UInt8] {
      guard let line = try StandardInput.promptedLine(text, atMost: limit) else {
        throw CommandFailure("keychain: no password was given on standard input")
      }
      try refuseOversized(line)
      return line
    }
    let first = try prompt("password data for new item: ")
    let again = try prompt("retype password for new item: ")
    guard first == again else { throw CommandFailure("keychain: the passwords do not match") }
    return Data(first)
  }
}

import AppGroups
import AppGroupsKeychain
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

@Suite("groupctl keychain", .processBound)
struct GroupctlKeychainTests {
  let k: KeychainRoot

  init() throws {
    k = try KeychainRoot()
  }

  @discardableResult
  func run(_ args: [String], as bundleID: String? = nil, stdin: Data? = nil) throws -> (
    status: Int32, stdout: String, stderr: String
  ) {
    try Product.run(
      "groupctl",
      ["--root", k.path] + (bundleID.map { ["--as", $0] } ?? []) + ["keychain"] + args,
      environment: k.environment(), stdin: stdin)
  }

  @Test func addFindDeleteWithSecuritysFlags() throws {
    let secret = "s3cret-\(UUID().uuidString)"
    var result = try run(
      ["add-generic-password", "-a", "alice", "-s", "auth", "-w", secret], as: KeychainRoot.app)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.isEmpty)
    // The widget of the same group finds it; -w prints the password alone.
    result = try run(
      ["find-generic-password", "-a", "alice", "-s", "auth"], as: KeychainRoot.widget)
    #expect(result.status == 0)
    #expect(result.stdout.contains("\"acct\"<blob>=\"alice\""))
    #expect(result.stdout.contains("\"agrp\"<blob>=\"\(KeychainRoot.shared)\""))
    #expect(!result.stdout.contains(secret))
    #expect(
      try run(
        ["find-generic-password", "-a", "alice", "-s", "auth", "-w"], as: KeychainRoot.widget
      ).stdout == secret + "\n")

    // A second add is a duplicate (exit 1, the OSStatus named); -U updates.
    result = try run(
      ["add-generic-password", "-a", "alice", "-s", "auth", "-w", "x"], as: KeychainRoot.app)
    #expect(result.status == 1)
    #expect(
      result.stderr.contains(
        "errSecDuplicateItem (-25299): The specified item already exists in the keychain."))
    #expect(
      try run(
        ["add-generic-password", "-a", "alice", "-s", "auth", "-U", "-w", "second"],
        as: KeychainRoot.app
      ).status == 0)
    #expect(
      try run(["find-generic-password", "-a", "alice", "-w"], as: KeychainRoot.app).stdout
        == "second\n")

    // Nothing matches: 44, as security exits. Another team's app: 44 without the group, 1 with it.
    result = try run(["find-generic-password", "-a", "nobody"], as: KeychainRoot.app)
    #expect(result.status == 44)
    #expect(result.stderr.contains("could not be found in the keychain"))
    #expect(
      try run(["find-generic-password", "-a", "alice"], as: KeychainRoot.intruder).status == 44)
    result = try run(
      ["find-generic-password", "-a", "alice", "-G", KeychainRoot.shared], as: KeychainRoot.intruder
    )
    #expect(result.status == 1)
    #expect(
      result.stderr.contains(
        "errSecMissingEntitlement (-34018): A required entitlement isn't present."))
    #expect(result.stderr.contains("com.example.intruder names access group"))

    // Delete one item; then it is gone.
    result = try run(
      ["delete-generic-password", "-a", "alice", "-s", "auth"], as: KeychainRoot.widget)
    #expect(result.status == 0)
    #expect(result.stdout.hasSuffix("password has been deleted.\n"))
    #expect(
      try run(["delete-generic-password", "-a", "alice", "-s", "auth"], as: KeychainRoot.widget)
        .status == 44)
  }

  @Test func aPasswordReadFromStandardInputNeverSitsInTheCommandLine() throws {
    let secret = "piped-\(UUID().uuidString)"
    let result = try run(
      [
        "add-generic-password", "-a", "bob", "-s", "auth", "--accessible", "afterFirstUnlock", "-w",
      ],
      as: KeychainRoot.app, stdin: Data((secret + "\n").utf8))
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      try run(["find-generic-password", "-a", "bob", "-w"], as: KeychainRoot.app).stdout == secret
        + "\n")
    #expect(
      try run(["find-generic-password", "-a", "bob"], as: KeychainRoot.app).stdout.contains(
        "\"pdmn\"<blob>=\"ck\""))
    let bad = try run(
      ["add-generic-password", "-a", "c", "-s", "auth", "--accessible", "sometimes", "-w", "x"],
      as: KeychainRoot.app)
    #expect(bad.status == 64)
    #expect(
      bad.stderr.contains("unknown class 'sometimes'; use one of whenUnlocked, afterFirstUnlock"))
  }

  /// A standard input with no end (`/dev/zero`) is read no further than the most an item
  /// holds: the add ends at once, names the bound and the input, and stores nothing. It was
  /// read to its end, for ever, into memory.
  @Test func aPasswordFromAStandardInputWithNoEndIsRefusedWithoutReadingItAll() throws {
    // At most 2 GiB of address space: a bound that does not hold fails the test, not the host.
    let child = try ChildProcess.withStandardInput(
      from: "/dev/zero", "groupctl",
      [
        "--root", k.path, "--as", KeychainRoot.app, "keychain", "add-generic-password", "-a",
        "zero", "-s", "auth", "-w",
      ], addressSpaceKiB: 2_097_152, environment: k.environment())
    #expect(child.wait(timeout: 20) == 1)
    let stderr = child.standardError
    #expect(
      stderr.contains(
        "keychain: the password read from standard input is longer than 1048576 bytes (1 MiB),"
          + " the most a keychain item's data holds; nothing was stored"), "\(stderr)")
    #expect(try run(["find-generic-password", "-a", "zero"], as: KeychainRoot.app).status == 44)
  }

  /// The CLI's bound is the store's: a password of exactly the most an item holds (and its
  /// final newline) is stored whole; one byte more is refused, by add and by -U's update,
  /// with the bound named, no byte of it printed, and the item as it was.
  @Test func aPasswordOfTheMostAnItemHoldsIsStoredAndOneByteMoreIsNot() throws {
    let most = Keychain.maximumDataBytes
    #expect(most == 1_048_576)
    let fits = Data(repeating: UInt8(ascii: "a"), count: most)
    var result = try run(
      ["add-generic-password", "-a", "big", "-s", "auth", "-w"], as: KeychainRoot.app,
      stdin: fits + Data("\n".utf8))
    #expect(result.status == 0, "\(result.stderr)")
    let over = Data(repeating: UInt8(ascii: "b"), count: most + 1)
    for (account, update) in [("other", false), ("big", true)] {
      result = try run(
        ["add-generic-password", "-a", account, "-s", "auth"] + (update ? ["-U"] : []) + ["-w"],
        as: KeychainRoot.app, stdin: over)
      #expect(result.status == 1, "\(account): \(result.stderr)")
      #expect(
        result.stderr.contains("is longer than 1048576 bytes (1 MiB), the most a keychain item's"),
        "\(result.stderr)")
      #expect(!result.stderr.contains("bbbb") && !result.stdout.contains("bbbb"))
    }
    #expect(try run(["find-generic-password", "-a", "other"], as: KeychainRoot.app).status == 44)
    let found = try run(["find-generic-password", "-a", "big", "-w"], as: KeychainRoot.app)
    #expect(found.stdout == String(decoding: fits, as: UTF8.self) + "\n", "the item changed")
  }

  /// An argument that is not UTF-8 is refused by its place, its bytes never shown when it may
  /// be a secret: a password after -w, a passcode. They were printed, escaped. Another
  /// argument (a key) is still shown.
  @Test func aPasswordOrPasscodeThatIsNotUTF8IsRefusedWithoutBeingShown() throws {
    let secret = "\"$(printf 's3cr\\377et')\""
    for (words, shown) in [
      ("keychain add-generic-password -a a -s auth -w \(secret)", false),
      ("keychain add-generic-password -a a -s auth -w=\(secret)", false),
      ("device passcode set \(secret)", false),
      ("device unlock --passcode=\(secret)", false),
      ("read \(TestRoot.group) \(secret)", true),
    ] {
      let child = try ChildProcess(
        executable: URL(fileURLWithPath: "/bin/sh"),
        [
          "-c", "exec \"$0\" --root \"$1\" --as \"$2\" \(words)", Product.url("groupctl").path,
          k.path, KeychainRoot.app,
        ], environment: k.environment())
      #expect(child.wait(timeout: 20) == 64, "\(words)")
      let stderr = child.standardError
      #expect(stderr.contains("is not valid UTF-8"), "\(words): \(stderr)")
      #expect(stderr.contains("s3cr\\xffet") == shown, "\(words): \(stderr)")
      #expect(stderr.contains("not shown: it may be a secret") == !shown, "\(words): \(stderr)")
    }
    #expect(try run(["find-generic-password", "-a", "a"], as: KeychainRoot.app).status == 44)
  }

  /// A standard input that cannot be read (here a folder: `EISDIR`) is an error that says
  /// so, exit 1, nothing stored. groupctl crashed (Foundation's `try!`, SIGILL).
  @Test func aPasswordFromAStandardInputThatCannotBeReadIsAnError() throws {
    let child = try ChildProcess.withStandardInput(
      from: "/", "groupctl",
      [
        "--root", k.path, "--as", KeychainRoot.app, "keychain", "add-generic-password", "-a",
        "dir", "-s", "auth", "-w",
      ], environment: k.environment())
    #expect(child.wait(timeout: 20) == 1)
    let stderr = child.standardError
    #expect(
      stderr.contains("standard input could not be read (Is a directory); nothing was changed"),
      "\(stderr)")
    #expect(try run(["find-generic-password", "-a", "dir"], as: KeychainRoot.app).status == 44)
  }

  /// Sixteen `add-generic-password -U` of one new item at once, beside two CPU-bound
  /// processes: every one succeeds (an add that loses to another's add updates that item)
  /// and the item holds one of their passwords. Some failed with errSecDuplicateItem.
  @Test func sixteenWritersOfOneItemWithUAllSucceed() throws {
    let load = try CPULoad()
    defer { withExtendedLifetime(load) {} }
    for round in 0..<3 {
      let writers = try (0..<16).map { index in
        try ChildProcess(
          executable: URL(fileURLWithPath: "/bin/sh"),
          [
            "-c", "echo ready; read go; exec \"$0\" \"$@\"", Product.url("groupctl").path,
            "--root", k.path, "--as", KeychainRoot.app, "keychain", "add-generic-password", "-a",
            "round-\(round)", "-s", "auth", "-U", "-w", "from-\(index)",
          ], environment: k.environment())
      }
      for writer in writers { #expect(writer.waitFor("ready")) }
      for writer in writers { writer.send("go") }
      let statuses = writers.map { $0.wait(timeout: 60) }
      #expect(
        statuses.allSatisfy { $0 == 0 },
        "round \(round): \(statuses) \(writers.map(\.standardError).filter { !$0.isEmpty })")
      let found = try run(
        ["find-generic-password", "-a", "round-\(round)", "-w"], as: KeychainRoot.app)
      #expect(found.status == 0 && found.stdout.hasPrefix("from-"), "\(found)")
    }
  }

  /// find and delete print an attribute with a newline or an escape sequence in it quoted
  /// and escaped, as dump does: an account cannot print an attribute line of its own or drive
  /// the terminal. They printed it raw.
  @Test func findAndDeletePrintControlCharactersEscaped() throws {
    let account = "x\n    \"svce\"<blob>=\"forged\"\u{1B}[31m"
    #expect(
      try run(["add-generic-password", "-a", account, "-s", "esc", "-w", "pw"], as: KeychainRoot.app)
        .status == 0)
    for action in ["find-generic-password", "delete-generic-password"] {
      let result = try run([action, "-s", "esc"], as: KeychainRoot.app)
      #expect(result.status == 0, "\(action): \(result)")
      let lines = result.stdout.split(separator: "\n").map(String.init)
      #expect(
        lines.contains(#"    "acct"<blob>="x\u{a}    \"svce\"<blob>=\"forged\"\u{1b}[31m""#),
        "\(action): \(lines)")
      #expect(!lines.contains(#"    "svce"<blob>="forged""#) && !result.stdout.contains("\u{1B}"))
    }
  }

  @Test func dataWithControlCharactersPrintsAsHex() throws {
    // A group member stores data that would forge an entry and clear the terminal.
    let forged = "x\n\nkeychain: \"/forged\"\nclass: \"genp\"\nattributes:\n    \"acct\"<blob>=\"admin\"\n\u{1B}[2J"
    let hex = Data(forged.utf8).map { String(format: "%02x", $0) }.joined()
    let added = try run(
      ["add-generic-password", "-a", "innocuous", "-s", "s", "-w"], as: KeychainRoot.widget,
      stdin: Data(forged.utf8))
    #expect(added.status == 0, "\(added)")
    #expect(
      try run(["add-generic-password", "-a", "plain", "-s", "s", "-w", "plain-secret"],
        as: KeychainRoot.app
      ).status == 0)
    let dump = try run(["dump", "-w"])
    #expect(dump.status == 0, "\(dump)")
    #expect(dump.stdout.contains("data:\n\(hex)\n"), "\(dump.stdout)")
    #expect(dump.stdout.contains("data:\nplain-secret\n"), "\(dump.stdout)")
    #expect(!dump.stdout.contains("\u{1B}") && !dump.stdout.contains("/forged"), "\(dump.stdout)")
    let find = try run(["find-generic-password", "-a", "innocuous", "-w"], as: KeychainRoot.app)
    #expect(find.stdout == hex + "\n", "\(find)")
    // A tab, a carriage return, a line separator: hex too; printable text as it is.
    for (data, printed) in [
      ("a\tb", "610962"), ("a\rb", "610d62"), ("a\u{2028}b", "61e280a862"), ("caf\u{e9} \u{2603}", "caf\u{e9} \u{2603}"),
    ] {
      #expect(
        try run(["add-generic-password", "-a", "one", "-s", "t", "-U", "-w", data], as: KeychainRoot.app)
          .status == 0)
      #expect(
        try run(["find-generic-password", "-a", "one", "-s", "t", "-w"], as: KeychainRoot.app).stdout
          == printed + "\n")
    }
  }

  @Test func aValueThatStartsWithADashIsTakenAndNeverShown() throws {
    // -w's value is the next word whatever it starts with, as security takes it.
    for (account, password) in [("me", "-Hunter2-Secret"), ("help", "--help"), ("h", "-h")] {
      let added = try run(
        ["add-generic-password", "-a", account, "-s", "S", "-w", password], as: KeychainRoot.app)
      #expect(added.status == 0, "\(added)")
      #expect(!added.stdout.contains("USAGE"), "\(added)")
      #expect(
        try run(["find-generic-password", "-a", account, "-s", "S", "-w"], as: KeychainRoot.app)
          .stdout == password + "\n")
    }
    // A stray word shaped as no option is refused without being shown; an option's name is.
    let stray = try run(["find-generic-password", "-a", "me", "-Hunter2-Secret"], as: KeychainRoot.app)
    #expect(stray.status == 64, "\(stray)")
    #expect(stray.stderr.contains("takes no option (not shown: it may be a password)"), "\(stray)")
    #expect(!stray.stderr.contains("Hunter2"), "\(stray)")
    #expect(try run(["add-generic-password", "--help"]).stdout.contains("USAGE: groupctl keychain"))
    // A device passcode that starts with a dash is a passcode, never shown.
    func device(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
      try Product.run("groupctl", ["--root", k.path, "device"] + args, environment: k.environment())
    }
    let set = try device(["passcode", "set", "-9876secret"])
    #expect(set.status == 0, "\(set)")
    #expect(try device([]).stdout.contains("passcode: set"))
    let clear = try device(["passcode", "clear", "--passcode", "-9876secret"])
    #expect(clear.status == 0, "\(clear)")
    let list = try Product.run(
      "groupctl", ["--root", k.path, "list", "-9876secret"], environment: k.environment())
    #expect(list.status == 64, "\(list)")
    for output in [set.stdout, set.stderr, clear.stdout, clear.stderr, list.stderr] {
      #expect(!output.contains("9876"), "\(output)")
    }
  }

  /// Runs `groupctl keychain ARGS` as the administrator with its standard output sent to
  /// `output` (`/dev/full`, a file).
  func run(_ args: [String], stdoutTo output: String) throws -> (status: Int32, stderr: String) {
    let result = try Product.run(
      "/bin/sh",
      ["-c", "out=$1; shift; exec \"$@\" >\"$out\"", "sh", output, Product.url("groupctl").path,
       "--root", k.path, "keychain"] + args,
      environment: k.environment())
    return (result.status, result.stderr)
  }

  /// `delete-generic-password`'s product is the deletion; its stdout only confirms it. When
  /// that cannot be written, the item is deleted all the same and the exit is 0, saying so (it
  /// was 1, with the item gone). `find`, whose output is its product, still fails.
  @Test func aDeleteWhoseConfirmationCannotBeWrittenDeletesAndSucceeds() throws {
    let secret = "kept-\(UUID().uuidString)"
    #expect(
      try run(["add-generic-password", "-a", "alice", "-s", "auth", "-w", secret], as: KeychainRoot.app)
        .status == 0)
    let found = try run(["find-generic-password", "-a", "alice", "-w"], stdoutTo: "/dev/full")
    #expect(found.status == 1, "\(found.stderr)")
    #expect(!found.stderr.contains("the change is made"), "\(found.stderr)")

    let deleted = try run(["delete-generic-password", "-a", "alice", "-s", "auth"], stdoutTo: "/dev/full")
    #expect(deleted.status == 0, "\(deleted.stderr)")
    #expect(
      deleted.stderr.contains(
        "groupctl: writing to standard output: No space left on device; what was printed is"
          + " incomplete (the change is made and on disk)"), "\(deleted.stderr)")
    #expect(!deleted.stderr.contains(secret))
    #expect(try run(["find-generic-password", "-a", "alice"]).status == 44, "the item is gone")
  }

  /// `dump -w` is a backup: an item whose data cannot be read (its class locked) is printed
  /// without it, named on stderr by service, account and access group with the reason, never
  /// its data, and the exit is 1. It was 0, the `data:` line missing and only a note on stdout.
  @Test func dumpWithWThatCannotReadAnItemsDataNamesItAndFails() throws {
    let locked = "locked-\(UUID().uuidString)"
    let open = "open-\(UUID().uuidString)"
    let passcode = "Zq7pass9Word"
    #expect(
      try Product.run(
        "groupctl", ["--root", k.path, "device", "passcode", "set", passcode],
        environment: k.environment()
      ).status == 0)
    #expect(
      try run(
        ["add-generic-password", "-a", "alice", "-s", "vault", "-w", locked, "--accessible", "whenUnlocked"],
        as: KeychainRoot.app
      ).status == 0)
    #expect(
      try run(
        ["add-generic-password", "-a", "bob", "-s", "sync", "-w", open, "--accessible", "afterFirstUnlock"],
        as: KeychainRoot.app
      ).status == 0)
    #expect(
      try Product.run(
        "groupctl", ["--root", k.path, "device", "lock", "--grace", "0"], environment: k.environment()
      ).status == 0)

    let backup = k.path + "/backup"
    let dump = try run(["dump", "-w"], stdoutTo: backup)
    let printed = try String(contentsOfFile: backup, encoding: .utf8)
    #expect(dump.status == 1, "\(dump.stderr)")
    // Everything that could be read is printed: both items' attributes, the open one's data.
    #expect(printed.contains("\"acct\"<blob>=\"alice\""), "\(printed)")
    #expect(printed.contains("data:\n\(open)\n"), "\(printed)")
    #expect(!printed.contains(locked))
    #expect(
      dump.stderr.contains(
        "groupctl: keychain: no data for service \"vault\", account \"alice\", access group"
          + " \"\(KeychainRoot.shared)\": locked: the device's state keeps its class (whenUnlocked)"
          + " closed"), "\(dump.stderr)")
    #expect(
      dump.stderr.contains("the data of 1 item could not be read (said above)"), "\(dump.stderr)")
    #expect(!dump.stderr.contains("\"bob\""), "the item whose data was read is not named")
    for secret in [locked, open, passcode] { #expect(!dump.stderr.contains(secret)) }

    // Without -w no data is asked for, and none is missing.
    #expect(try run(["dump"]).status == 0)
    // Unlocked, the backup is whole.
    #expect(
      try Product.run(
        "groupctl", ["--root", k.path, "device", "unlock", "--passcode", passcode],
        environment: k.environment()
      ).status == 0)
    let whole = try run(["dump", "-w"])
    #expect(whole.status == 0, "\(whole.stderr)")
    #expect(whole.stdout.contains("data:\n\(locked)\n") && whole.stdout.contains("data:\n\(open)\n"))
  }

  @Test func dumpNeverPrintsASecretWithoutW() throws {
    let secret = "dumped-\(UUID().uuidString)"
    #expect(
      try run(["add-generic-password", "-a", "a", "-s", "s", "-w", secret], as: KeychainRoot.app)
        .status == 0)
    #expect(
      try run(
        ["add-generic-password", "-a", "i", "-s", "s", "-w", secret + "-i"],
        as: KeychainRoot.intruder
      ).status == 0)
    // The administrator sees every group; the app its own.
    let all = try run(["dump"])
    #expect(all.status == 0)
    #expect(!all.stdout.contains(secret))
    #expect(all.stdout.contains("\"agrp\"<blob>=\"\(KeychainRoot.shared)\""))
    #expect(all.stdout.contains("\"agrp\"<blob>=\"ZZZZZ99999.com.example.intruder\""))
    let mine = try run(["dump", "-w"], as: KeychainRoot.app)
    #expect(mine.stdout.contains("data:\n\(secret)\n"))
    #expect(!mine.stdout.contains(secret + "-i"))
    // The administrator adds only to a named group.
    let refused = try run(["add-generic-password", "-a", "x", "-s", "y", "-w", "z"])
    #expect(refused.status == 64)
    #expect(
      try run(["add-generic-password", "-a", "x", "-s", "y", "-w", "z", "-G", KeychainRoot.shared])
        .status == 0)
  }

  @Test(.enabled(if: getuid() == 0, "needs root to mount a small tmpfs"))
  func anAddOntoAFullDiskFailsNamingENOSPCAndKeepsWhatWasThere() throws {
    let sandbox = try Sandbox()
    let mount = sandbox.path + "/disk"
    try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
    let mounted = try ChildProcess(
      executable: URL(fileURLWithPath: "/bin/mount"),
      ["-t", "tmpfs", "-o", "size=512k", "tmpfs", mount])
    try #require(mounted.wait(timeout: 60) == 0, "mount -t tmpfs: \(mounted.standardError)")
    defer {
      let unmount = try? ChildProcess(executable: URL(fileURLWithPath: "/bin/umount"), [mount])
      _ = unmount?.wait(timeout: 60)
    }
    let root = ContainerRoot(path: mount)
    try EntitlementManifest.grantKeychainAccess(
      KeychainRoot.app, keychainAccessGroups: [KeychainRoot.shared],
      teamIdentifier: KeychainRoot.team, root: root)
    func keychain(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
      try Product.run(
        "groupctl", ["--root", mount, "--as", KeychainRoot.app, "keychain"] + args,
        environment: ["APPGROUPS_ROOT": mount])
    }
    #expect(try keychain(["add-generic-password", "-a", "a", "-s", "s", "-w", "old"]).status == 0)
    // Fill the disk to the last block.
    let filler = open(mount + "/filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
    try #require(filler >= 0)
    let block = [UInt8](repeating: 0xAB, count: 4096)
    while block.withUnsafeBytes({ write(filler, $0.baseAddress, $0.count) }) > 0 {}
    close(filler)
    let big = String(repeating: "x", count: 64 * 1024)
    let result = try keychain(["add-generic-password", "-a", "b", "-s", "s", "-w", big])
    #expect(result.status == 1, "\(result.stderr)")
    #expect(result.stderr.contains("errSecIO (-36)"), "\(result.stderr)")
    #expect(result.stderr.contains("No space left on device"), "\(result.stderr)")
    #expect(try keychain(["find-generic-password", "-a", "a", "-w"]).stdout == "old\n")
    #expect(try keychain(["find-generic-password", "-a", "b"]).status == 44)
    let folder = root.keychainFolderURL(forAccessGroup: KeychainRoot.shared)
    #expect(entries(of: folder).filter { $0.contains(".tmp-") } == [])
  }

  /// The count says how many of the groups looked at hold the items: a group an app holds with
  /// no item in it is no group the items are in.
  @Test func doctorSaysHowManyGroupsHoldTheItems() throws {
    #expect(
      try run(["add-generic-password", "-a", "a", "-s", "s", "-w", "x"], as: KeychainRoot.app)
        .status == 0)
    let doctor = try Product.run(
      "groupctl", ["--root", k.path, "doctor"], environment: k.environment())
    #expect(doctor.status == 0, "\(doctor.stdout)")
    let line = doctor.stdout.split(separator: "\n").first { $0.hasPrefix("ok: keychain: ") }
    #expect(line?.hasPrefix("ok: keychain: 1 item in 1 of ") == true, "\(doctor.stdout)")
  }

  @Test func doctorFindsDamagedItemsAndGroupsNoAppHolds() throws {
    #expect(
      try run(["add-generic-password", "-a", "a", "-s", "s", "-w", "x"], as: KeychainRoot.app)
        .status == 0)
    #expect(
      try run(["add-generic-password", "-a", "a", "-s", "s", "-w", "x", "-G", "ABCDE12345.orphan"])
        .status == 0)
    var doctor = try Product.run(
      "groupctl", ["--root", k.path, "doctor"], environment: k.environment())
    #expect(doctor.status == 0, "\(doctor.stdout)")
    #expect(doctor.stdout.contains("ok: keychain: 2 items in "))
    #expect(
      doctor.stdout.contains(
        "note: no app holds keychain access group ABCDE12345.orphan; its 1 item stays on disk"))
    let file = k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared).appendingPathComponent(
      "keychain.plist")
    var plist = try #require(
      try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
        as? [String: Any])
    var items = try #require(plist["Items"] as? [[String: Any]])
    var attributes = try #require(items[0]["attributes"] as? [String: Any])
    attributes["acct"] = "forged"
    items[0]["attributes"] = attributes
    plist["Items"] = items
    try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0).write(
      to: file)
    doctor = try Product.run(
      "groupctl", ["--root", k.path, "doctor"], environment: k.environment())
    #expect(doctor.status == 1)
    #expect(
      doctor.stdout.contains(
        "problem: 1 item of keychain access group \(KeychainRoot.shared) does not open"),
      "\(doctor.stdout)")
  }

  /// An access group's file that is not a keychain file, one moved aside, and one over the size
  /// bound are each said once, in the keychain's words: never read as a preferences file, whose
  /// advice (groupctl import, "the suite reads as empty") would be wrong for it.
  @Test func doctorSpeaksOfAccessGroupFilesAsTheKeychainDoes() throws {
    #expect(
      try run(["add-generic-password", "-a", "a", "-s", "s", "-w", "x"], as: KeychainRoot.app)
        .status == 0)
    let folder = k.root.keychainFolderURL(forAccessGroup: KeychainRoot.shared)
    let file = folder.appendingPathComponent("keychain.plist")
    let doctor = {
      try Product.run("groupctl", ["--root", k.path, "doctor"], environment: k.environment())
    }
    func expectNoPreferencesWords(_ output: String) {
      for words in ["the suite reads as empty", "preferences file", "groupctl import"] {
        #expect(!output.contains(words), "\(output)")
      }
    }

    try Data("not a property list".utf8).write(to: file)
    var report = try doctor()
    #expect(report.status == 1)
    #expect(report.stdout.contains("\(file.path) is not a keychain file"), "\(report.stdout)")
    #expect(report.stdout.contains("(1 not read, said above)"), "\(report.stdout)")
    #expect(report.stdout.contains("1 problem found"), "\(report.stdout)")
    expectNoPreferencesWords(report.stdout)

    // A keychain call moves it aside; doctor names the copy and how to add its items again.
    #expect(
      try run(["add-generic-password", "-a", "b", "-s", "s", "-w", "y"], as: KeychainRoot.app)
        .status == 0)
    report = try doctor()
    #expect(report.status == 1)
    #expect(
      report.stdout.contains(
        "was moved aside by a keychain call: it was not a keychain file, and access group"
          + " \(KeychainRoot.shared) started again empty"), "\(report.stdout)")
    #expect(report.stdout.contains("groupctl keychain add-generic-password"), "\(report.stdout)")
    #expect(report.stdout.contains("1 problem found"), "\(report.stdout)")
    expectNoPreferencesWords(report.stdout)

    // Over the bound: said once, the file not read and left as it is.
    let handle = try FileHandle(forWritingTo: file)
    try handle.truncate(atOffset: UInt64(Keychain.maximumAccessGroupBytes) + 1)
    try handle.close()
    report = try doctor()
    #expect(report.status == 1)
    #expect(
      report.stdout.contains("more than the \(Keychain.maximumAccessGroupBytes) bytes it may hold"),
      "\(report.stdout)")
    #expect(report.stdout.contains("2 problems found"), "\(report.stdout)")
    expectNoPreferencesWords(report.stdout)
    #expect(
      try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? UInt64
        == UInt64(Keychain.maximumAccessGroupBytes) + 1)
  }

  /// An access group's file another version of the keychain wrote (its `Format`
  /// "AppGroups keychain 2") is refused by find, add, delete and dump (exit 1, errSecDecode,
  /// naming the file and its format) and left as it is, byte for byte, nothing moved aside;
  /// doctor names it with the version to use. find moved it aside and exited 44, as if the
  /// group held nothing.
  @Test func aFileOfAnotherVersionIsRefusedByEveryCommandAndLeftAsItIs() throws {
    let secret = "secret-\(UUID().uuidString)"
    #expect(
      try run(["add-generic-password", "-a", "tok", "-s", "s", "-w", secret], as: KeychainRoot.app)
        .status == 0)
    let (file, folder, later) = try k.rewriteSharedGroupFile(format: "AppGroups keychain 2")
    func expectRefused(_ args: [String], as bundleID: String? = KeychainRoot.app) throws {
      let result = try run(args, as: bundleID)
      #expect(result.status == 1, "\(args): \(result)")
      for words in [file.path, "\"AppGroups keychain 2\"", "left as it is"] {
        #expect(result.stderr.contains(words), "\(args): \(result.stderr)")
      }
      if args.first != "dump" {
        #expect(result.stderr.contains("errSecDecode (-26275)"), "\(args): \(result.stderr)")
      }
      #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret))
      #expect(try Data(contentsOf: file) == later, "\(args)")
      let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
      #expect(!names.contains { $0.contains(".unreadable-") }, "\(args): \(names)")
    }
    try expectRefused(["find-generic-password", "-a", "tok", "-s", "s", "-w"])
    try expectRefused(["find-generic-password", "-s", "s"])
    try expectRefused(["add-generic-password", "-a", "b", "-s", "s", "-w", "pw"])
    try expectRefused(["add-generic-password", "-a", "tok", "-s", "s", "-U", "-w", "pw"])
    try expectRefused(["delete-generic-password", "-a", "tok", "-s", "s"])
    try expectRefused(["dump", "-w"], as: nil)

    let doctor = try Product.run(
      "groupctl", ["--root", k.path, "doctor"], environment: k.environment())
    #expect(doctor.status == 1, "\(doctor)")
    #expect(
      doctor.stdout.contains(file.path) && doctor.stdout.contains("\"AppGroups keychain 2\""),
      "\(doctor.stdout)")
    #expect(
      doctor.stdout.contains("use the version of AppGroups that wrote it"), "\(doctor.stdout)")
    #expect(!doctor.stdout.contains("move it aside yourself"), "\(doctor.stdout)")
    #expect(try Data(contentsOf: file) == later)
  }

  @Test(arguments: [
    (["frobnicate"], "unknown keychain subcommand (not shown: it may be a password)"),
    ([], "missing subcommand"),
    (["add-generic-password", "-s", "x"], "needs -a ACCOUNT and -s SERVICE"),
    (["find-generic-password", "-U"], "takes no option '-U'"),
    (["delete-generic-password"], "needs -a ACCOUNT or -s SERVICE"),
    (["find-generic-password", "-a"], "option '-a' needs a value"),
  ])
  func usageErrorsExit64(args: [String], message: String) throws {
    let result = try run(args, as: KeychainRoot.app)
    #expect(result.status == 64)
    #expect(result.stderr.contains(message), "\(result.stderr)")
    // A word typed where the subcommand goes may be a password: it is never shown.
    #expect(!result.stderr.contains("frobnicate"), "\(result.stderr)")
  }

  /// Standard input that holds no password is refused, and the stored one stays: `-U` with an
  /// empty pipe (a command before it that failed) must not replace a secret with empty data.
  /// A final `\r` is the password's unless a newline follows it.
  @Test(arguments: ["", "\n", "\r\n"])
  func anEmptyStandardInputIsNoPassword(input: String) throws {
    #expect(try run(["add-generic-password", "-a", "a", "-s", "s", "-w", "kept"], as: KeychainRoot.app).status == 0)
    let result = try run(
      ["add-generic-password", "-U", "-a", "a", "-s", "s", "-w"], as: KeychainRoot.app, stdin: Data(input.utf8))
    #expect(result.status == 1, "\(result)")
    #expect(result.stderr.contains("no password was given on standard input"), "\(result.stderr)")
    #expect(try run(["find-generic-password", "-a", "a", "-s", "s", "-w"], as: KeychainRoot.app).stdout == "kept\n")
    #expect(
      try run(
        ["add-generic-password", "-U", "-a", "a", "-s", "s", "-w"], as: KeychainRoot.app, stdin: Data("new\r".utf8)
      ).status == 0)
    #expect(
      try run(["find-generic-password", "-a", "a", "-s", "s", "-w"], as: KeychainRoot.app).stdout
        == "6e65770d\n")  // printed as its bytes: a control character
  }
}

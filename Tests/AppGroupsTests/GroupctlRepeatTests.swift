import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// What a command line gives twice, which groupctl would otherwise keep one of without a word:
/// a key of `-dict` or `-dict-add`, and an option or a flag that takes one value. Refused (64)
/// naming it, never its values, before anything is done.
@Suite("groupctl repeats", .processBound)
struct GroupctlRepeatTests {
  // MARK: -dict and -dict-add

  @Test func aDictionaryKeyGivenTwiceOnTheCommandLineIsRefusedAndNothingIsWritten() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", TestRoot.app, "map", "-dict", "a", "0", "b", "kept"])
    for flag in ["-dict", "-dict-add"] {
      for words in [["a", "1", "a", "2"], ["x", "-int", "1", "a", "1", "a", "-string", "2"]] {
        let refused = try g.run(["write", TestRoot.app, "map", flag] + words)
        #expect(refused.status == 64, "\(flag) \(words): \(refused)")
        #expect(
          refused.stderr.contains(
            #"groupctl: the key "a" is given twice in \#(flag) (pairs "#
              + (words.count == 4 ? "1 and 2" : "2 and 3") + "); a dictionary holds each key once"),
          "\(refused.stderr)")
        #expect(refused.stderr.contains("Usage: groupctl"), "\(refused.stderr)")
        // The stored dictionary is as it was.
        let map = try #require(try g.plist(g.appFile())["map"] as? [String: Any])
        #expect(map.count == 2 && map["a"] as? String == "0" && map["b"] as? String == "kept")
      }
      // Two spellings of é are one key (Unicode canonical equivalence), as in a literal.
      let accents = try g.run(["write", TestRoot.app, "map", flag, "\u{E9}", "1", "e\u{301}", "2"])
      #expect(accents.status == 64 && accents.stderr.contains("is given twice in \(flag)"), "\(accents)")
      // force, _parse-value: the same parser, the same refusal.
      let forced = try g.run(["force", TestRoot.app, "map", flag, "a", "1", "a", "2"])
      #expect(flag == "-dict-add" || (forced.status == 64 && forced.stderr.contains("is given twice")), "\(forced)")
      let parsed = try g.run(["_parse-value", flag, "k", "1", "k", "1"])
      #expect(parsed.status == 64 && parsed.stderr.contains(#"the key "k" is given twice"#), "\(parsed)")
    }
    // A key the stored dictionary holds is still replaced by -dict-add (defaults' way): only a
    // key given twice on one command line is refused.
    try g.ok(["write", TestRoot.app, "map", "-dict-add", "a", "new", "c", "3"])
    let map = try #require(try g.plist(g.appFile())["map"] as? [String: Any])
    #expect(map["a"] as? String == "new" && map["b"] as? String == "kept" && map["c"] as? String == "3")
    // An array holds an element twice as given.
    try g.ok(["write", TestRoot.app, "list", "-array", "x", "x"])
    try g.ok(["write", TestRoot.app, "list", "-array-add", "x", "-int", "1", "-int", "1"])
    let list = try #require(try g.plist(g.appFile())["list"] as? [Any])
    #expect(list.map { "\($0)" } == ["x", "x", "x", "1", "1"], "\(list)")
  }

  // MARK: Options and flags

  /// `ROOT` stands for the test's root; `Zq7pass9Word` is a value that may be a secret, never
  /// shown.
  @Test(arguments: [
    (["--root", "ROOT", "--root", "ROOT", "domains"], "--root"),
    (["--root=ROOT", "--root", "ROOT", "domains"], "--root"),
    (["--root", "ROOT", "domains", "--root", "ROOT"], "--root"),
    (["domains", "--root", "ROOT", "--root=ROOT"], "--root"),
    (["--as", "com.example.app", "read", "com.example.app", "--as", "com.example.widget"], "--as"),
    (["list", "--json", "--json"], "--json"),
    (["export", "group.com.example.shared", "-", "--xml", "--xml"], "--xml"),
    (["grant", "com.example.app", "group.a", "--executable", "/bin/a", "--executable=/bin/b"], "--executable"),
    (["grant", "com.example.app", "group.a", "--team", "ABCDE12345", "--team", "ABCDE12345"], "--team"),
    (["device", "unlock", "--passcode", "Zq7pass9Word", "--passcode", "Zq7pass9Wor"], "--passcode"),
    (["device", "lock", "--grace", "1", "--grace", "2"], "--grace"),
    (["run", "--as", "com.example.app", "-v", "--verbose", "--", "true"], "--verbose"),
    (["coordinate", "--read", "a", "--read", "b", "--", "true"], "--read"),
    (
      ["keychain", "add-generic-password", "-a", "a", "-s", "s", "-G", "GRP", "-w", "Zq7pass9Word", "-w", "Zq7pass9Wor"],
      "-w"
    ),
    (
      ["keychain", "add-generic-password", "-a", "a", "-s", "s", "-G", "GRP", "-w=Zq7pass9Word", "-w"],
      "-w"
    ),
    (["keychain", "add-generic-password", "-a", "Zq7pass9Word", "-a", "a2", "-s", "s", "-G", "GRP"], "-a"),
    (["keychain", "find-generic-password", "-s", "s", "-s", "t"], "-s"),
    (["keychain", "find-generic-password", "-w", "-w"], "-w"),
    (["keychain", "add-generic-password", "-a", "a", "-s", "s", "-U", "-U", "-G", "GRP"], "-U"),
  ])
  func anOptionGivenTwiceIsAUsageErrorNamingItAndNothingIsDone(args: [String], option: String)
    throws
  {
    let g = try GroupctlRoot()
    let listed = try g.ok(["list", "--json"])
    let args = args.map { $0.replacingOccurrences(of: "ROOT", with: g.path) }
    let result = try Product.run(
      "groupctl", args, environment: ["APPGROUPS_ROOT": g.path], stdin: Data())
    #expect(result.status == 64, "\(args): \(result)")
    #expect(result.stdout.isEmpty, "\(args): \(result)")
    #expect(
      result.stderr.contains("groupctl: option '\(option)' is given twice"), "\(args): \(result.stderr)")
    #expect(result.stderr.contains("Usage: groupctl"), "\(args): \(result.stderr)")
    #expect(!result.stderr.contains("Zq7pass9Wor"), "\(args): \(result.stderr)")
    // Nothing was done: no device state, no keychain item, no manifest change.
    #expect(!FileManager.default.fileExists(atPath: g.path + "/Device"), "\(args)")
    #expect(try g.run(["keychain", "dump"]).stdout.isEmpty, "\(args)")
    #expect(try g.ok(["list", "--json"]) == listed, "\(args)")
  }

  /// `--passcode CODE --passcode OTHER` tries neither: a wrong code would count toward the
  /// lockout's delays.
  @Test func aPasscodeGivenTwiceIsNotTriedAndNotCounted() throws {
    let g = try GroupctlRoot()
    try g.ok(["device", "passcode", "set", "5555"])
    try g.ok(["device", "lock"])
    for codes in [["5555", "5556"], ["5556", "5555"], ["5555", "5555"]] {
      let result = try g.run(["device", "unlock", "--passcode", codes[0], "--passcode", codes[1]])
      #expect(result.status == 64, "\(codes): \(result)")
      #expect(result.stderr.contains("groupctl: option '--passcode' is given twice"), "\(result.stderr)")
      #expect(!result.stderr.contains("555"), "\(result.stderr)")
    }
    let shown = try g.ok(["device"])
    #expect(shown.contains("state: locked"), "\(shown)")
    #expect(!shown.contains("wrong passcodes"), "none counted: \(shown)")
  }

  /// The keychain's `-w X -w Y` stores neither password.
  @Test func aPasswordGivenTwiceIsNotStored() throws {
    let k = try KeychainRoot()
    let result = try Product.run(
      "groupctl",
      ["--root", k.path, "keychain", "add-generic-password", "-a", "a", "-s", "s", "-G", KeychainRoot.shared,
       "-w", "Zq7pass9Word", "-w", "Zq7pass9Wor"],
      environment: k.environment())
    #expect(result.status == 64, "\(result)")
    #expect(result.stderr.contains("groupctl: option '-w' is given twice"), "\(result.stderr)")
    #expect(!result.stderr.contains("Zq7pass9Wor"), "\(result.stderr)")
    let found = try Product.run(
      "groupctl", ["--root", k.path, "keychain", "find-generic-password", "-a", "a"],
      environment: k.environment())
    #expect(found.status == 44, "\(found)")
  }

  // MARK: What is not a repetition

  /// `APPGROUPS_ROOT` and one `--root` (which wins), options that accumulate, and a `--`'s words.
  @Test func theEnvironmentRepeatableOptionsAndWordsAfterTheTerminatorAreNoRepetition() throws {
    let g = try GroupctlRoot()
    let other = try GroupctlRoot("other\(#function)")
    _ = try Product.run("groupctl", ["--root", other.path, "write", TestRoot.app, "k", "v"])
    for args in [
      ["--root", other.path, "read", TestRoot.app, "k"],
      ["read", TestRoot.app, "k", "--root", other.path],
      ["read", TestRoot.app, "k", "--root=\(other.path)"],
    ] {
      let read = try Product.run("groupctl", args, environment: ["APPGROUPS_ROOT": g.path])
      #expect(read.status == 0 && read.stdout == "v\n", "\(args): \(read)")
    }
    try g.ok(
      ["grant", "com.example.third", "group.com.example.shared", "--team", "ABCDE12345",
       "--keychain-group", "ABCDE12345.one", "--keychain-group", "ABCDE12345.two"])
    let listed = try g.ok(["list", "com.example.third"])
    #expect(listed.contains("ABCDE12345.one") && listed.contains("ABCDE12345.two"), "\(listed)")
    try g.ok(
      ["revoke", "com.example.third", "--keychain-group", "ABCDE12345.one",
       "--keychain-group", "ABCDE12345.two"])
    #expect(!(try g.ok(["list", "com.example.third"])).contains("ABCDE12345.one"))
    // Past `--`, a word is the value's, not groupctl's option (g.ok gives --root already).
    try g.ok(["write", TestRoot.app, "k", "--", "-string", "--root"])
    #expect(try g.ok(["read", TestRoot.app, "k"]) == "--root\n")
  }
}

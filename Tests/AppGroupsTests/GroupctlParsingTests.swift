import AppGroupsTestSupport
import Foundation
import Testing

/// `groupctl`'s command framework, help, and the value parsing and printing
/// of `write`/`read`, driven through the built binary.
@Suite("GroupctlParsing", .processBound)
struct GroupctlParsingTests {
  static let commands = [
    "grant", "revoke", "list", "container", "run", "import-entitlements", "ps", "suspend", "resume",
    "device", "present", "coordinate", "read", "read-type", "write", "delete", "rename", "domains", "find",
    "import", "export", "watch", "explain", "force", "unforce", "report", "schema",
    "doctor", "help", "completion", "keychain",
  ]

  private func groupctl(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String)
  {
    // A root of its own, so that nothing the commands might do touches the repository.
    try Product.run(
      "groupctl", args, environment: ["APPGROUPS_ROOT": "/nonexistent/appgroups-test-root"])
  }

  // MARK: Help

  @Test func overviewListsEveryCommand() throws {
    let help = try groupctl(["--help"])
    #expect(help.status == 0)
    #expect(help.stderr.isEmpty)
    #expect(help.stdout.hasPrefix("OVERVIEW: "))
    let listed = Set(
      help.stdout.split(separator: "\n")
        .filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") && !$0.hasPrefix("  -") }
        .compactMap { $0.split(separator: " ").first.map(String.init) })
    #expect(listed == Set(Self.commands))
    #expect(!help.stdout.contains("_parse-value"))

    for variant in [["help"], ["-h"], ["--root", "/tmp", "--help"]] {
      let other = try groupctl(variant)
      #expect(other.status == 0, "groupctl \(variant)")
      #expect(other.stdout == help.stdout, "groupctl \(variant)")
    }
  }

  /// `groupctl` alone is a usage error: a script that lost its command word must not pass.
  @Test(arguments: [[], ["--root", "/tmp"]])
  func noCommandIsAUsageError(arguments: [String]) throws {
    let bare = try groupctl(arguments)
    #expect(bare.status == 64)
    #expect(bare.stdout.isEmpty)
    #expect(bare.stderr.hasPrefix("groupctl: missing command\nOVERVIEW: "))
    #expect(bare.stderr.contains("USAGE: groupctl [--root DIR]"))
  }

  // MARK: Completion

  /// Runs `script` in bash with `groupctl completion bash` loaded, or `nil` without bash.
  private func inBash(_ script: String) throws -> (status: Int32, stdout: String, stderr: String)? {
    guard FileManager.default.isExecutableFile(atPath: "/bin/bash") else { return nil }
    let completion = try groupctl(["completion", "bash"])
    #expect(completion.status == 0, "\(completion.stderr)")
    return try Product.run("/bin/bash", ["--norc", "--noprofile", "-c", completion.stdout + "\n" + script])
  }

  @Test func bashCompletionParsesAndCompletes() throws {
    let completion = try groupctl(["completion", "bash"])
    #expect(completion.status == 0)
    #expect(completion.stdout.contains("complete -o filenames -F _groupctl groupctl"))
    let check = try Product.run("/bin/bash", ["-n"], stdin: Data(completion.stdout.utf8))
    #expect(check.status == 0, "bash -n: \(check.stderr)")

    // What bash's completion does on TAB: set the words, call the function, read COMPREPLY.
    func complete(_ words: [String]) throws -> [String]? {
      let quoted = words.map { "'\($0)'" }.joined(separator: " ")
      guard
        let result = try inBash(
          "COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _groupctl;"
            + " printf '%s\\n' \"${COMPREPLY[@]}\"")
      else { return nil }
      #expect(result.status == 0, "\(result.stderr)")
      return result.stdout.split(separator: "\n").map(String.init)
    }
    #expect(try complete(["groupctl", "wr"]) == ["write"])
    #expect(try complete(["groupctl", "re"]).map(Set.init) == Set(Self.commands.filter { $0.hasPrefix("re") }))
    #expect(try complete(["groupctl", "--root", "/tmp", "ex"]).map(Set.init) == Set(Self.commands.filter { $0.hasPrefix("ex") }))
    #expect(try complete(["groupctl", "export", "--x"]) == ["--xml"])
    #expect(try complete(["groupctl", "--r"]) == ["--root"])
    #expect(try complete(["groupctl", "help", "gra"]) == ["grant"])
    #expect(try complete(["groupctl", "completion", "z"]) == ["zsh"])
    // Hidden commands are not offered.
    #expect(try complete(["groupctl", "_"]) == [])
  }

  @Test func zshCompletionParses() throws {
    let completion = try groupctl(["completion", "zsh"])
    #expect(completion.status == 0)
    #expect(completion.stdout.hasPrefix("#compdef groupctl\n"))
    for command in Self.commands {
      #expect(completion.stdout.contains("'\(command):"), "\(command) is offered")
    }
    let zsh = ["/usr/bin/zsh", "/bin/zsh"].first { FileManager.default.isExecutableFile(atPath: $0) }
    guard let zsh else { return }  // zsh -n only where zsh is installed
    let check = try Product.run(zsh, ["-n"], stdin: Data(completion.stdout.utf8))
    #expect(check.status == 0, "zsh -n: \(check.stderr)")
  }

  @Test func completionNeedsAKnownShell() throws {
    let fish = try groupctl(["completion", "fish"])
    #expect(fish.status == 64)
    #expect(fish.stderr.contains("unknown shell 'fish' (use bash or zsh)"))
    #expect(try groupctl(["completion"]).status == 64)
  }

  @Test(arguments: commands + ["_parse-value"])
  func helpCommandEqualsHelpFlag(command: String) throws {
    let viaHelp = try groupctl(["help", command])
    let viaFlag = try groupctl([command, "--help"])
    let viaShortFlag = try groupctl([command, "-h"])
    #expect(viaHelp.status == 0)
    #expect(viaFlag.status == 0)
    #expect(viaHelp.stderr.isEmpty)
    #expect(viaHelp.stdout == viaFlag.stdout)
    #expect(viaHelp.stdout == viaShortFlag.stdout)
    #expect(viaHelp.stdout.contains("\nUSAGE: groupctl \(command)"))
    #expect(viaHelp.stdout.contains("GLOBAL OPTIONS:"))
  }

  @Test func commandHelpShowsDiscussionAndOptions() throws {
    let help = try groupctl(["help", "grant"])
    #expect(help.stdout.contains("OVERVIEW: Entitle an app"))
    #expect(help.stdout.contains("USAGE: groupctl grant BUNDLE-ID GROUP-ID... [--executable PATH]"))
    #expect(help.stdout.contains("com.apple.security.application-groups"))
    #expect(help.stdout.contains("\nOPTIONS:\n  --executable PATH"))
    let write = try groupctl(["help", "write"])
    #expect(write.stdout.contains("-dict-add K V..."))
    #expect(write.stdout.contains("       groupctl write DOMAIN KEY -array|-array-add VALUE..."))
  }

  // MARK: Usage errors

  @Test func unknownCommandIsNamedWithSuggestion() throws {
    let result = try groupctl(["wirte", "com.example.app", "k", "v"])
    #expect(result.status == 64)
    #expect(result.stdout.isEmpty)
    #expect(result.stderr.contains("groupctl: unknown command 'wirte'; did you mean 'write'?"))
    #expect(result.stderr.contains("Usage: groupctl"))

    let far = try groupctl(["xyzzyplugh"])
    #expect(far.status == 64)
    #expect(far.stderr.contains("unknown command 'xyzzyplugh'"))
    #expect(!far.stderr.contains("did you mean"))

    let viaHelp = try groupctl(["help", "lsit"])
    #expect(viaHelp.status == 64)
    #expect(viaHelp.stderr.contains("unknown command 'lsit'; did you mean 'list'?"))
  }

  @Test(arguments: [
    (["list", "--bogus"], "--bogus", "Usage: groupctl list"),
    (["list", "--bogus=1"], "--bogus", "Usage: groupctl list"),
    (["--bogus", "list"], "--bogus", "Usage: groupctl [--root DIR]"),
    (["grant", "com.example.app", "-x", "group.a"], "-x", "Usage: groupctl grant"),
    (["read", "--xml"], "--xml", "Usage: groupctl read"),
    (["delete", "com.example.app", "-g"], "-g", "Usage: groupctl delete"),
  ])
  func unknownOptionIsNamed(args: [String], option: String, usage: String) throws {
    let result = try groupctl(args)
    #expect(result.status == 64)
    #expect(result.stdout.isEmpty)
    #expect(result.stderr.contains("groupctl: unknown option '\(option)'"))
    #expect(result.stderr.contains(usage))
  }

  @Test(arguments: [
    (["grant"], "missing argument BUNDLE-ID"),
    (["grant", "com.example.app"], "missing argument GROUP-ID"),
    (["rename", "com.example.app", "old"], "missing argument NEW-KEY"),
    (["read-type", "-g"], "missing argument KEY"),
    (["write", "com.example.app"], "missing argument KEY"),
    (["write", "com.example.app", "k"], "missing argument VALUE"),
    (["import-entitlements", "com.example.app"], "missing argument FILE.entitlements"),
    (["export"], "missing argument DOMAIN"),
    (["doctor", "extra"], "unexpected argument 'extra'"),
    (["read-type", "d", "k", "extra"], "unexpected argument 'extra'"),
    (["explain", "d", "k", "extra"], "unexpected argument 'extra'"),
    (
      ["grant", "com.example.app", "group.a", "--executable"],
      "option '--executable' needs a value (PATH)"
    ),
    (
      ["grant", "com.example.app", "group.a", "--executable="],
      "option '--executable' needs a value (PATH)"
    ),
    (["list", "--json=yes"], "option '--json' takes no value"),
    (["--root"], "option '--root' needs a value (DIR)"),
    (["list", "--as"], "option '--as' needs a value (BUNDLE-ID)"),
    (["container", "com.example.app", "bogus"], "'bogus' is not app, groups or a group id"),
    (["read", ":suite"], "':suite' is not a domain"),
    (["read", "group.a:suite"], "'group.a:suite' is not a domain"),
    (["write", "NSGlobalDomain:x", "k", "v"], "'NSGlobalDomain:x' is not a domain: NSGlobalDomain is the global domain"),
    (
      ["force", "d", "k", "-array-add", "x"], "force sets a whole value: use -array, not -array-add"
    ),
    (["write", "d", "k", "-int", "4x2"], "'4x2' is not an integer (-int)"),
  ])
  func badArgumentsAreUsageErrors(args: [String], message: String) throws {
    let result = try groupctl(args)
    #expect(result.status == 64)
    #expect(result.stdout.isEmpty)
    #expect(result.stderr.contains("groupctl: \(message)"), "\(result.stderr)")
    #expect(result.stderr.contains("Usage: groupctl"))
  }

  /// Valid invocations parse and reach `run()`: whatever they do in an
  /// empty root, they do not fail with a usage error. (`watch` runs until
  /// interrupted; GroupctlWatchTests covers it.) `ROOT` stands for the root.
  @Test(arguments: [
    ["grant", "com.example.app", "group.a", "group.b", "--executable", "/usr/bin/app"],
    ["grant", "--executable=/usr/bin/app", "com.example.app", "group.a"],
    ["revoke", "com.example.app"],
    ["list", "--json"],
    ["--root", "ROOT", "--as", "com.example.app", "read", "com.example.app"],
    ["read", "--root=ROOT", "com.example.app", "--as=com.example.app"],
    ["container", "com.example.app", "group.a"],
    ["import-entitlements", "com.example.app", "App.entitlements"],
    ["read"],
    ["read", "-g"],
    ["read", "NSGlobalDomain", "AppleLocale"],
    ["read", "com.example.app:settings", "k"],
    ["read-type", "group.a", "k"],
    ["write", "-g", "k", "-int", "-5"],
    ["write", "com.example.app", "k", "-array", "-string", "-x", "-int", "1"],
    ["write", "com.example.app", "k", "--", "-string", "--help"],
    ["write", "com.example.app", "--", "-weird-key", "v"],
    ["delete", "com.example.app"],
    ["rename", "group.a", "old", "new"],
    ["domains"],
    ["find", "word"],
    ["import", "group.a", "-"],
    ["export", "group.a", "-", "--xml"],
    ["explain", "group.a", "k", "--as", "com.example.app", "--", "-k", "v", "--flag"],
    ["force", "group.a", "k", "-bool", "yes"],
    ["unforce", "group.a", "k"],
    ["doctor"],
  ])
  func validArgumentsReachRun(args: [String]) throws {
    let sandbox = try Sandbox()
    let root = sandbox.path + "/root"
    let args = args.map { $0.replacingOccurrences(of: "ROOT", with: root) }
    let result = try Product.run(
      "groupctl", args, environment: ["APPGROUPS_ROOT": root], stdin: Data())
    #expect(result.status == 0 || result.status == 1, "\(args): \(result.stderr)")
    #expect(!result.stderr.contains("Usage:"), "\(args): \(result.stderr)")
    #expect(!result.stderr.contains("not implemented"), "\(args): \(result.stderr)")
  }

  // MARK: Values: parsing (write) and printing (read)

  struct ValueCase: Sendable, CustomTestStringConvertible {
    var words: [String]
    var printed: String
    var type: String
    var testDescription: String { words.joined(separator: " ") }

    init(_ words: [String], _ printed: String, _ type: String) {
      self.words = words
      self.printed = printed
      self.type = type
    }
  }

  @Test(arguments: [
    ValueCase(["hello"], "hello", "string"),
    ValueCase(["hello world"], "\"hello world\"", "string"),
    ValueCase(["-"], "-", "string"),
    ValueCase(["-string", "-int"], "-int", "string"),
    ValueCase(["-string", ""], "\"\"", "string"),
    ValueCase(["-string", "a\"b\\c\nd\te"], "\"a\\\"b\\\\c\\nd\\te\"", "string"),
    ValueCase(["-string", "com.example/a_b$c:d-1.5"], "com.example/a_b$c:d-1.5", "string"),
    ValueCase(["-string", "café"], "\"café\"", "string"),
    ValueCase(["-int", "42"], "42", "integer"),
    ValueCase(["-integer", "-7"], "-7", "integer"),
    ValueCase(["-int", "+3"], "3", "integer"),
    ValueCase(["-float", "1.5"], "1.5", "float"),
    ValueCase(["-float", "2"], "2", "float"),
    ValueCase(["-float", "0.1"], "0.1", "float"),
    ValueCase(["-float", "-2.5e-7"], "-2.5e-07", "float"),
    ValueCase(["-float", "1e20"], "1e+20", "float"),
    ValueCase(["-bool", "yes"], "1", "boolean"),
    ValueCase(["-bool", "TRUE"], "1", "boolean"),
    ValueCase(["-boolean", "1"], "1", "boolean"),
    ValueCase(["-bool", "No"], "0", "boolean"),
    ValueCase(["-bool", "false"], "0", "boolean"),
    ValueCase(["-bool", "0"], "0", "boolean"),
    ValueCase(["-date", "2026-11-29T12:00:00Z"], "2026-11-29 12:00:00 +0000", "date"),
    ValueCase(["-date", "2026-11-29 12:00:00 +0000"], "2026-11-29 12:00:00 +0000", "date"),
    ValueCase(["-date", "2026-11-29T14:30:00+02:30"], "2026-11-29 12:00:00 +0000", "date"),
    ValueCase(["-date", "2026-11-29T07:00:00-0500"], "2026-11-29 12:00:00 +0000", "date"),
    ValueCase(["-date", "2024-02-29T23:59:59.750Z"], "2024-02-29 23:59:59 +0000", "date"),
    ValueCase(["-date", "1969-12-31T23:59:59Z"], "1969-12-31 23:59:59 +0000", "date"),
    ValueCase(["-data", "0aFF"], "{length = 2, bytes = 0x0aff}", "data"),
    ValueCase(["-data", ""], "{length = 0, bytes = 0x}", "data"),
    ValueCase(
      ["-data", (0..<28).map { String(format: "%02x", $0) }.joined()],
      "{length = 28, bytes = 0x00010203 04050607 08090a0b 0c0d0e0f ... 14151617 18191a1b }",
      "data"),
    ValueCase(["-array", "a", "b c"], "(\n    a,\n    \"b c\"\n)", "array"),
    ValueCase(["-array"], "(\n)", "array"),
    ValueCase(["-array", "-int", "1", "-bool", "no", "x"], "(\n    1,\n    0,\n    x\n)", "array"),
    ValueCase(["-array-add", "x"], "(\n    x\n)", "array (-array-add)"),
    ValueCase(
      ["-dict", "k", "v", "a b", "-int", "2"], "{\n    \"a b\" = 2;\n    k = v;\n}", "dictionary"),
    ValueCase(["-dict"], "{\n}", "dictionary"),
    ValueCase(["-dict-add", "k", "v"], "{\n    k = v;\n}", "dictionary (-dict-add)"),
    ValueCase(["(a, \"b c\")"], "(\n    a,\n    \"b c\"\n)", "array"),
    ValueCase(["<0aff>"], "{length = 2, bytes = 0x0aff}", "data"),
    ValueCase(["<integer>5</integer>"], "5", "integer"),
    ValueCase(["<true/>"], "1", "boolean"),
    ValueCase(
      ["{ a = 1; b = (x, y); c = { d = e; }; e = ({ f = g; }); }"],
      """
      {
          a = 1;
          b =     (
              x,
              y
          );
          c =     {
              d = e;
          };
          e =     (
                      {
                  f = g;
              }
          );
      }
      """,
      "dictionary"),
  ])
  func valueIsParsedAndPrinted(_ value: ValueCase) throws {
    let result = try groupctl(["_parse-value"] + value.words)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout == "\(value.printed)\nType is \(value.type)\n")
  }

  @Test func compactFormIsOneLine() throws {
    let result = try groupctl(
      ["_parse-value", "--compact", "{ a = (1, \"x y\"); b = {}; c = { d = e; }; f = (); }"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stdout == "{ a = (1, \"x y\"); b = {}; c = { d = e; }; f = (); }\nType is dictionary\n"
    )
  }

  @Test(arguments: [
    (["-int", "4x2"], "'4x2' is not an integer (-int)"),
    (["-integer", "1.5"], "'1.5' is not an integer (-integer)"),
    (
      ["-int", "99999999999999999999"],
      "'99999999999999999999' is out of range for an integer (-int)"
    ),
    (["-int"], "-int needs a value"),
    (["-float", "abc"], "'abc' is not a number (-float)"),
    (["-float", "inf"], "'inf' is not a finite number (-float)"),
    (["-bool", "maybe"], "'maybe' is not a boolean (-bool)"),
    (["-boolean", "2"], "'2' is not a boolean (-boolean)"),
    (["-date", "2026-11-29"], "'2026-11-29' is not a date (-date)"),
    (["-date", "2026-11-29T12:00:00"], "'2026-11-29T12:00:00' is not a date (-date)"),
    (["-date", "2026-02-29T12:00:00Z"], "'2026-02-29T12:00:00Z' is not a date (-date)"),
    (["-date", "2026-11-29T24:00:00Z"], "'2026-11-29T24:00:00Z' is not a date (-date)"),
    (["-data", "0af"], "'0af' is not hex data (-data): it has an odd number of digits"),
    (["-data", "0g"], "'0g' is not hex data (-data): 'g' is not a hex digit"),
    (["-data", "!!!"], "'!!!' is not hex data (-data)"),
    (["<data>!!!</data>"], "'<data>!!!</data>' is not a property-list literal (<data>!!!</data> is not base64)"),
    (["<array><data>AAEC</data><data>%%</data></array>"], "'<array><data>AAEC</data><data>%%</data></array>' is not a property-list literal (<data>%%</data> is not base64)"),
    (["-dict", "k", "v", "k2"], "key 'k2' has no value (-dict)"),
    (["-dict-add", "k"], "key 'k' has no value (-dict-add)"),
    (["-array", "-int", "x"], "'x' is not an integer (-int)"),
    (["-array", "-dict", "k", "v"], "-dict cannot be nested"),
    (["-strin", "x"], "unknown type '-strin'"),
    (["a", "b"], "unexpected argument 'b' after the value"),
    (["-int", "1", "2"], "unexpected argument '2' after the value"),
    (["(a,"], "'(a,' is not a property-list literal (found the end of the text at line 1, column 4, where another item or ')' was expected in the array opened at line 1, column 1)"),
    (["<dict><key>a</key></dict>"], "'<dict><key>a</key></dict>' is not a property-list literal"),
    // Foundation reads these as other values (another day; one of the two values): refused.
    (["<date>2026-02-30T12:00:00Z</date>"], "'<date>2026-02-30T12:00:00Z</date>' is not a property-list literal (the <date> on line 1"),
    (["<array><date>2026-01-01T25:61:61Z</date></array>"], "'<array><date>2026-01-01T25:61:61Z</date></array>' is not a property-list literal (the <date> on line 1"),
    (["<dict><key>a</key><string>1</string><key>a</key><string>2</string></dict>"], "'<dict><key>a</key><string>1</string><key>a</key><string>2</string></dict>' is not a property-list literal (the key \"a\" is given twice"),
    (["{ a = 1; a = 2; }"], "'{ a = 1; a = 2; }' is not a property-list literal (the key \"a\" is given twice"),
    ([], "missing argument VALUE"),
  ])
  func badValueIsUsageErrorNamingIt(words: [String], message: String) throws {
    let result = try groupctl(["_parse-value"] + words)
    #expect(result.status == 64)
    #expect(result.stdout.isEmpty)
    #expect(result.stderr.contains("groupctl: \(message)"), "\(result.stderr)")
    #expect(result.stderr.contains("Usage: groupctl _parse-value"))
  }

  // MARK: The helper itself

  @Test func productRunPassesEnvironmentAndStandardInput() throws {
    #expect(FileManager.default.isExecutableFile(atPath: Product.url("groupctl").path))
    let big = try Product.run(
      "groupctl", ["help", "write"], stdin: Data(repeating: 65, count: 1 << 20))
    #expect(big.status == 0)
  }
}

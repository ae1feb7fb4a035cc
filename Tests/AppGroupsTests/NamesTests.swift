import AppGroupsTestSupport
import Foundation
import Testing

@testable import AppGroups


/// The message of the `.invalidName` error `body` throws, or nil when it throws nothing.
private func invalidNameMessage(_ body: () throws -> Void) -> String? {
  guard let error = caught(body) else { return nil }
  #expect(error.code == .invalidName)
  return error.message
}

@Suite("Names")
struct NamesTests {
  @Test(arguments: [
    "a", "com.example.app", "group.com.example.shared", "A-Z_0.9", "x-", "a.b.c",
    String(repeating: "a", count: 255), "Dots.end.",
  ])
  func acceptsValidNames(_ name: String) throws {
    #expect(Names.problem(with: name) == nil)
    try Names.validate(name, as: "suite name")
  }

  @Test func refusesEmpty() throws {
    let message = try #require(invalidNameMessage { try Names.validate("", as: "suite name") })
    #expect(message == "invalid suite name \"\": empty")
  }

  @Test func refusesLongerThan255Bytes() throws {
    #expect(
      Names.problem(with: String(repeating: "a", count: 256)) == "longer than 255 bytes (256)")
    let long = String(repeating: "b", count: 300)
    let message = try #require(invalidNameMessage { try Names.validate(long, as: "suite name") })
    #expect(message.hasSuffix(": longer than 255 bytes (300)"))
    // Bytes, not characters: 128 two-byte characters are 256 bytes.
    #expect(
      Names.problem(with: String(repeating: "é", count: 128)) == "longer than 255 bytes (256)")
  }

  @Test func refusesSlashWithItsOffset() throws {
    let message = try #require(
      invalidNameMessage { try Names.validate("abc/def", as: "suite name") })
    #expect(message == "invalid suite name \"abc/def\": contains '/' at offset 3")
    #expect(Names.problem(with: "../../etc/x") == "contains '/' at offset 2")
  }

  @Test func refusesDotDot() {
    #expect(Names.problem(with: "a..b") == "contains '..'")
    #expect(Names.problem(with: "..") == "starts with '.'")
  }

  @Test func refusesNULAndShowsIt() throws {
    let message = try #require(invalidNameMessage { try Names.validate("ab\0c", as: "suite name") })
    #expect(message.contains("contains a control character (U+0000) at offset 2"))
    // The NUL is visible, escaped, in the message, and the message has no raw NUL.
    #expect(message.contains(#""ab\0c""#))
    #expect(!message.unicodeScalars.contains("\0"))
  }

  @Test(arguments: ["a\nb", "a\tb", "a\u{1B}b", "a\u{7F}b", "a\u{85}b"])
  func refusesControlCharacters(_ name: String) throws {
    let message = try #require(invalidNameMessage { try Names.validate(name, as: "key") })
    #expect(message.contains("contains a control character"))
    #expect(message.contains("at offset 1"))
    #expect(!message.contains("\n") && !message.contains("\t"))
  }

  @Test func refusesLeadingDotAndDash() {
    #expect(Names.problem(with: ".hidden") == "starts with '.'")
    #expect(Names.problem(with: "-rf") == "starts with '-'")
  }

  @Test func refusesCharactersOutsideTheSet() {
    #expect(
      Names.problem(with: "my suite")
        == "contains ' ' at offset 2; only A-Z, a-z, 0-9, '.', '_' and '-' are allowed")
    let unicode = Names.problem(with: "caf\u{E9}")
    #expect(unicode?.hasPrefix("contains '\u{E9}' (U+00E9) at offset 3") == true)
    // Offsets are in UTF-8 bytes.
    #expect(
      Names.problem(with: "\u{E9}\u{E9}:")?.hasPrefix("contains '\u{E9}' (U+00E9) at offset 0")
        == true)
    #expect(Names.problem(with: "ab:c")?.hasPrefix("contains ':' at offset 2") == true)
    #expect(Names.problem(with: "a\\b")?.hasPrefix("contains '\\' at offset 1") == true)
    #expect(Names.problem(with: "emoji\u{1F600}")?.contains("(U+1F600) at offset 5") == true)
  }

  @Test func messageNamesWhatWasValidated() throws {
    let message = try #require(
      invalidNameMessage { try Names.validate("a b", as: "bundle identifier") })
    #expect(message.hasPrefix("invalid bundle identifier \"a b\": "))
  }

  @Test func groupIdentifiers() throws {
    try Names.validateGroupIdentifier("group.com.example.shared")
    try Names.validateGroupIdentifier("group.x")
    let noPrefix = try #require(
      invalidNameMessage { try Names.validateGroupIdentifier("com.example.shared") })
    #expect(
      noPrefix == "invalid group identifier \"com.example.shared\": does not start with 'group.'")
    let nothingAfter = try #require(
      invalidNameMessage { try Names.validateGroupIdentifier("group.") })
    #expect(nothingAfter.hasSuffix("has nothing after 'group.'"))
    let slash = try #require(invalidNameMessage { try Names.validateGroupIdentifier("group./etc") })
    #expect(slash.hasSuffix("contains '/' at offset 6"))
    #expect(Names.groupIdentifierProblem(with: "Group.x") == "does not start with 'group.'")
  }

  @Test func executables() throws {
    #expect(Names.executableProblem(with: "app") == nil)
    #expect(Names.executableProblem(with: "/usr/local/bin/my app") == nil)
    #expect(Names.executableProblem(with: "") == "empty")
    #expect(Names.executableProblem(with: "bin/app")?.contains("relative path") == true)
    #expect(Names.executableProblem(with: "/bin/") == "ends with '/'")
    #expect(Names.executableProblem(with: "..") == "is not a file name")
    #expect(Names.executableProblem(with: "a\0b")?.contains("control character") == true)
  }
}

@Suite("AppIdentity")
struct AppIdentityTests {
  @Test func validatesTheBundleIdentifier() throws {
    let identity = try AppIdentity(bundleIdentifier: "com.example.app")
    #expect(identity.bundleIdentifier == "com.example.app")
    #expect(identity.executablePath == nil)
    #expect(identity.description == "com.example.app")
    #expect(
      caught { try AppIdentity(bundleIdentifier: "../com.example.app") }?.code == .invalidName)
    #expect(caught { try AppIdentity(bundleIdentifier: "") }?.code == .invalidName)
  }

  @Test func environmentWinsOverFallbackAndExecutable() throws {
    let identity = try AppIdentity.current(
      environment: ["APPGROUPS_BUNDLE_ID": "com.example.widget"],
      executablePath: "/opt/bin/widget", fallback: "com.example.fallback")
    #expect(identity.bundleIdentifier == "com.example.widget")
    #expect(identity.executablePath == "/opt/bin/widget")
    #expect(identity.description == "com.example.widget (/opt/bin/widget)")
  }

  @Test func fallbackThenExecutableName() throws {
    let fromFallback = try AppIdentity.current(
      environment: ["APPGROUPS_BUNDLE_ID": ""], executablePath: "/opt/bin/widget",
      fallback: "com.example.fallback")
    #expect(fromFallback.bundleIdentifier == "com.example.fallback")
    let fromName = try AppIdentity.current(
      environment: [:], executablePath: "/opt/bin/widget", fallback: nil)
    #expect(fromName.bundleIdentifier == "widget")
  }

  @Test func invalidEnvironmentSaysWhereTheNameCameFrom() throws {
    do {
      _ = try AppIdentity.current(
        environment: ["APPGROUPS_BUNDLE_ID": "com/evil"], executablePath: "/bin/x", fallback: nil)
      Issue.record("an invalid APPGROUPS_BUNDLE_ID was accepted")
    } catch {
      #expect(error.code == .invalidName)
      #expect(error.message.contains("from APPGROUPS_BUNDLE_ID"))
      #expect(error.message.contains("contains '/' at offset 3"))
    }
    let unknown = caught {
      try AppIdentity.current(environment: [:], executablePath: nil, fallback: nil)
    }
    #expect(unknown?.code == .invalidName)
  }

  @Test func currentProcess() throws {
    let identity = try AppIdentity.current(fallback: "com.example.tests")
    let path = try #require(identity.executablePath)
    #expect(path.hasPrefix("/"))
    #expect(path == Paths.realPath("/proc/self/exe"))
    if ProcessInfo.processInfo.environment["APPGROUPS_BUNDLE_ID"] == nil {
      #expect(identity.bundleIdentifier == "com.example.tests")
    }
  }

  @Test func executableBindingRule() throws {
    let identity = try AppIdentity(
      bundleIdentifier: "com.example.app", executablePath: "/opt/example/bin/app")
    // A bare name names no file: it matches nothing, its own name included.
    #expect(!identity.runs("app"))
    #expect(!identity.runs("widget"))
    #expect(identity.runs("/opt/example/bin/app"))
    #expect(!identity.runs("/usr/bin/app"))
    let unknown = try AppIdentity(bundleIdentifier: "com.example.app")
    #expect(unknown.runs("anything"))
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// `groupctl run` with a COMMAND it cannot run for what the name is: each refusal names it
/// (quoted when it would not show as itself) and says why, on one line, and exits 1.
@Suite("groupctl run: command names it cannot run", .processBound)
struct GroupctlRunNameTests {
  @Test func anEmptyNameIsRefusedAsEmpty() throws {
    let s = try SandboxRoot()
    let result = try s.run(as: TestRoot.widget, [], [""])
    #expect(result.status == 1)
    #expect(result.stderr == "groupctl: cannot run \"\": the command name is empty\n")
  }

  @Test func aNameHoldingANewlineIsQuotedOnOneLine() throws {
    let s = try SandboxRoot()
    let result = try s.run(as: TestRoot.widget, [], ["no-such\nprogram"])
    #expect(result.status == 1)
    #expect(result.stderr == "groupctl: cannot run \"no-such\\nprogram\": not found in PATH\n")
  }

  @Test func aFolderIsRefusedAsAFolder() throws {
    let s = try SandboxRoot()
    let result = try s.run(as: TestRoot.widget, [], [s.path])
    #expect(result.status == 1)
    #expect(result.stderr == "groupctl: cannot run \(s.path): it is a folder\n")
  }
}

import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// The kernel's keyring, which Landlock does not enclose: an app confined by `groupctl run`
/// reads the class keys (its own items need them) but cannot change them. It could: it put
/// its own key in place of the complete class key (KEYCTL_UPDATE), after which the other
/// apps' items of that class read as "not found", and an item another app added meanwhile,
/// acknowledged, was sealed under the intruder's key and lost at the next reboot.
@Suite("Sandbox: the keyring", .processBound)
struct SandboxKeyringTests {
  @Test(.enabled(if: landlockAvailable, "the kernel offers no Landlock"))
  func aConfinedAppReadsTheClassKeysAndCannotChangeThem() throws {
    let g = try GroupctlRoot()
    // An item of the complete class: the class's key is now in the kernel's keyring.
    try g.ok(
      ["--as", TestRoot.app, "keychain", "add-generic-password", "-a", "a", "-s", "s", "-w"],
      stdin: Data("pw-before\n".utf8))
    let tamper = try g.run(
      ["run", "--as", TestRoot.widget, "--", Product.url("appgroups-worker").path,
       "keyring-tamper", "complete"])
    #expect(tamper.status == 0, "\(tamper)")
    let lines = tamper.stdout.split(separator: "\n").map(String.init)
    #expect(lines.first == "read ok", "\(tamper)")
    #expect(lines.contains { $0.hasPrefix("store: refused ") && $0.contains("Operation not permitted") }, "\(tamper)")
    #expect(lines.contains { $0.hasPrefix("remove: refused ") && $0.contains("Operation not permitted") }, "\(tamper)")
    #expect(lines.last == "done", "\(tamper)")

    // The key is the keybag's: what is sealed before and after opens, in this boot and the next.
    try g.ok(
      ["--as", TestRoot.app, "keychain", "add-generic-password", "-a", "b", "-s", "s", "-w"],
      stdin: Data("pw-after\n".utf8))
    try g.ok(["device", "reboot"])
    for (account, secret) in [("a", "pw-before"), ("b", "pw-after")] {
      let found = try g.run(
        ["--as", TestRoot.app, "keychain", "find-generic-password", "-a", account, "-w"])
      #expect(found.stdout == secret + "\n", "\(found)")
    }
  }
}

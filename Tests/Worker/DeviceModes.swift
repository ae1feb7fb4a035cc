import AppGroups
import AppGroupsKeybag
import Foundation

// appgroups-worker class-key CLASS…   for each class, "key CLASS FINGERPRINT" (16 hex digits of
//                                     PBKDF2 over the key: two processes that print the same
//                                     fingerprint hold the same key; the key itself is never
//                                     printed), or "refused CLASS CODE"; then "done". No wait.

/// `class-key`: asks the keybag of APPGROUPS_ROOT for each class's key.
func runClassKeys(_ names: [String]) -> Never {
  let keybag = Keybag(root: .default)
  for name in names {
    guard let keyClass = Keybag.KeyClass(rawValue: name) else { fail("unknown class \(name)") }
    do {
      var key = try keybag.classKey(keyClass)
      var digest =
        (try? Crypto.deriveKey(passcode: key, salt: Array("fingerprint".utf8), iterations: 1)) ?? []
      Crypto.wipe(&key)
      say("key \(name) \(digest.prefix(8).map { String(format: "%02x", $0) }.joined())")
      Crypto.wipe(&digest)
    } catch {
      say("refused \(name) \(error.code)")
    }
  }
  say("done")
  exit(0)
}

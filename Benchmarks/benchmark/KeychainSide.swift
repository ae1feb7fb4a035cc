// The keychain rows: AppGroups' SecItem calls beside GNOME Keyring's libsecret calls
// (Benchmarks/keyring-peer), each in a child process of its own.
//
//   K1  a warm `SecItemCopyMatching` of one item (its secret returned): wall time per call,
//       in batches (a keychain call here reads the files' identities and asks the keybag for
//       the class key at every call; GNOME Keyring's crosses D-Bus to its daemon)
//   K2  a durable `SecItemAdd` of a new item: wall time per call (written, fsynced and
//       renamed into place before it returns)
import AppGroups
import AppGroupsKeychain
import Foundation
import Glibc

enum KeychainSide {
  /// The bench identity's default access group holds the items: its first application group.
  static func read(_ p: Parameters) {
    scope(p) {
      let item: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "bench",
        kSecAttrAccount as String: "token",
        kSecValueData as String: Data(repeating: 0x73, count: 32),
      ]
      let added = SecItemAdd(item as CFDictionary, nil)
      guard added == errSecSuccess || added == errSecDuplicateItem else {
        fail("K1: SecItemAdd \(added)")
      }
      let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "bench",
        kSecAttrAccount as String: "token", kSecReturnData as String: true,
        kSecMatchLimit as String: kSecMatchLimitOne,
      ]
      func lookup() -> Int {
        var result: AnyObject?
        guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess,
          let data = result as? Data
        else { fail("K1: SecItemCopyMatching failed") }
        return data.count
      }
      guard lookup() == 32 else { fail("K1: the item is not 32 bytes") }
      // calls=N: exactly N lookups, untimed, for counting instructions under callgrind.
      if let calls = p.values["calls"].flatMap({ Int($0) }) {
        var sum = 0
        for _ in 0..<calls { sum &+= lookup() }
        blackHole(sum)
        return
      }
      let count = wallCalibrate(seconds: p.double("batch")) { n in
        var sum = 0
        for _ in 0..<n { sum &+= lookup() }
        blackHole(sum)
      }
      for _ in 0..<p.int("batches") {
        var sum = 0
        let start = monotonicNanoseconds()
        for _ in 0..<count { sum &+= lookup() }
        let elapsed = monotonicNanoseconds() - start
        blackHole(sum)
        emit("sample read \(Double(elapsed) / Double(count))")
      }
    }
  }

  static func add(_ p: Parameters) {
    scope(p) {
      let round = p.values["name"] ?? "r"
      for i in 0..<p.int("adds") {
        let item: [String: Any] = [
          kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "bench-add",
          kSecAttrAccount as String: "\(round)-\(i)",
          kSecValueData as String: Data(repeating: 0x73, count: 32),
        ]
        let start = monotonicNanoseconds()
        let status = SecItemAdd(item as CFDictionary, nil)
        let elapsed = monotonicNanoseconds() - start
        guard status == errSecSuccess else { fail("K2: SecItemAdd \(status)") }
        emit("sample add \(elapsed)")
      }
    }
  }

  /// Acts as the bench identity in BENCH_ROOT, as a process of that app would.
  private static func scope(_ p: Parameters, _ body: () -> Void) {
    setenv(AppIdentity.environmentVariable, AppGroupsSide.bundleID, 1)
    setenv(ContainerRoot.environmentVariable, AppGroupsSide.rootPath(), 1)
    body()
  }

  /// How many calls of `body` take about `seconds` of wall time.
  private static func wallCalibrate(seconds: Double, _ body: (Int) -> Void) -> Int {
    var n = 64
    while true {
      let start = monotonicNanoseconds()
      body(n)
      let elapsed = Double(monotonicNanoseconds() - start) / 1e9
      if elapsed >= seconds / 4 || n >= 1 << 26 {
        return max(Int(Double(n) * seconds / max(elapsed, 1e-9)), 1)
      }
      n *= 4
    }
  }
}

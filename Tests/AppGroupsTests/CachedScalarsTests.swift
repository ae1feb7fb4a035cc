@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Synchronization
import Testing

/// The effective-value cache's scalars read without its lock (``CachedScalars``): each kind
/// reads back as it was put, a slot holds one key exactly, and a read never mixes two
/// entries or answers a value older than one another read of the same thread saw.
@Suite("Cached scalars")
struct CachedScalarsTests {
  static let seed: UInt64 = 0x0F1E_2D3C_4B5A_6978

  static func probe(_ key: String) -> CacheKey.Probe { CacheKey.probe(of: key, seed: seed) }

  @Test func eachScalarKindReadsBackWithItsDomain() {
    let scalars = CachedScalars()
    let entries: [(String, SuiteView.Entry)] = [
      ("int", .found(.integer(-42), .application)),
      ("intMax", .found(.integer(.max), .managed)),
      ("unsigned", .found(.unsignedInteger(.max), .global)),
      ("real", .found(.real(-0.125), .argument)),
      ("float", .found(.float(12.34), .registration)),
      ("yes", .found(.bool(true), .application)),
      ("no", .found(.bool(false), .application)),
      ("absent", .absent),
    ]
    for (key, entry) in entries {
      let probe = Self.probe(key)
      #expect(scalars.entry(probe) == nil)
      scalars.set(entry, for: probe)
      #expect(scalars.entry(probe) == entry, "\(key)")
      scalars.remove(probe)
      #expect(scalars.entry(probe) == nil)
    }
  }

  @Test func onlyScalarsOfKeysThatFitAreHeld() {
    let scalars = CachedScalars()
    let string = Self.probe("string")
    scalars.set(.found(.integer(1), .application), for: string)
    // A string in place of the number: the slot forgets the key.
    scalars.set(.found(.string("text"), .application), for: string)
    #expect(scalars.entry(string) == nil)
    let fits = String(repeating: "k", count: CachedScalars.keyBytes)
    scalars.set(.found(.integer(24), .application), for: Self.probe(fits))
    #expect(scalars.entry(Self.probe(fits)) == .found(.integer(24), .application))
    let long = Self.probe(fits + "k")
    scalars.set(.found(.integer(25), .application), for: long)
    #expect(scalars.entry(long) == nil)
    scalars.removeAll()
    #expect(scalars.entry(Self.probe(fits)) == nil)
  }

  /// Two keys of one slot: the later holds it, the earlier reads as not held (never as the
  /// later's value), and removing the earlier leaves the later.
  @Test func aSlotHoldsOneKeyExactly() throws {
    let (a, b) = try Self.twoKeysOfOneSlot()
    let scalars = CachedScalars()
    scalars.set(.found(.integer(1), .application), for: Self.probe(a))
    scalars.set(.found(.integer(2), .application), for: Self.probe(b))
    #expect(scalars.entry(Self.probe(a)) == nil)
    #expect(scalars.entry(Self.probe(b)) == .found(.integer(2), .application))
    scalars.remove(Self.probe(a))
    #expect(scalars.entry(Self.probe(b)) == .found(.integer(2), .application))
    // Keys one byte apart, and of another length, are other keys.
    #expect(scalars.entry(Self.probe(b + "x")) == nil)
    #expect(scalars.entry(Self.probe(String(b.dropLast()))) == nil)
  }

  /// While one thread puts two keys of one slot in turn (as the cache's lock holder does), a
  /// reader of each sees its own value or nothing: never the other key's, never a torn one.
  @Test func aReadDuringChangesNeverMixesTwoEntries() throws {
    let (a, b) = try Self.twoKeysOfOneSlot()
    let scalars = CachedScalars()
    let (pa, pb) = (Self.probe(a), Self.probe(b))
    let writes = 200_000
    let wrong = Atomic<Int>(0)
    let done = Atomic<Bool>(false)
    DispatchQueue.concurrentPerform(iterations: 3) { worker in
      if worker == 0 {
        for i in 0..<writes {
          // Values of each key told apart by their parity.
          scalars.set(.found(.integer(2 * i), .application), for: pa)
          scalars.set(.found(.integer(2 * i + 1), .global), for: pb)
        }
        done.store(true, ordering: .releasing)
        return
      }
      let (probe, parity, domain) = worker == 1 ? (pa, 0, GroupDefaults.Domain.application) : (pb, 1, .global)
      while !done.load(ordering: .acquiring) {
        guard let entry = scalars.entry(probe) else { continue }
        guard case .found(.integer(let v), let found) = entry, v & 1 == parity, found == domain else {
          wrong.add(1, ordering: .relaxed)
          continue
        }
      }
    }
    #expect(wrong.load(ordering: .relaxed) == 0)
    #expect(scalars.entry(pb) == .found(.integer(2 * writes - 1), .global))
  }

  /// Through the public API: one thread sets a counter up while two read it; each reader
  /// sees it never go back, and the last value once the writer is done.
  @Test func readsOfAKeyBeingSetNeverGoBack() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group)
    d.set(0, forKey: "counter")
    let last = 3_000
    let wentBack = Atomic<Int>(0)
    let done = Atomic<Bool>(false)
    DispatchQueue.concurrentPerform(iterations: 3) { worker in
      if worker == 0 {
        for i in 1...last { d.set(i, forKey: "counter") }
        done.store(true, ordering: .releasing)
        return
      }
      var seen = 0
      while true {
        let finished = done.load(ordering: .acquiring)
        let value = d.integer(forKey: "counter")
        if value < seen || value > last { wentBack.add(1, ordering: .relaxed) }
        seen = max(seen, value)
        if finished { break }
      }
      if seen != last { wentBack.add(1, ordering: .relaxed) }
    }
    #expect(wentBack.load(ordering: .relaxed) == 0)
    #expect(d.integer(forKey: "counter") == last)
  }

  /// A cached number changed by another process reads as the new one once the change is
  /// heard (the monitor forgets the cache; the lock-free copy with it).
  @Test func aCachedNumberChangedByAnotherProcessReadsNew() throws {
    let t = try TestRoot()
    let d = try t.defaults(TestRoot.group, as: TestRoot.widget)
    d.set(1, forKey: "unreadCount")
    #expect(d.synchronize())
    #expect(d.integer(forKey: "unreadCount") == 1)
    #expect(d.integer(forKey: "unreadCount") == 1)  // cached
    let log = ChangeLog()
    let observation = d.observe(["unreadCount"], handler: log.record)
    defer { observation.cancel() }
    #expect(try Product.run("app", ["unread", "9"], environment: t.environment()).status == 0)
    #expect(log.wait { $0.newValue == .integer(9) } != nil)
    #expect(d.integer(forKey: "unreadCount") == 9)
    #expect(d[PreferenceKey<Int>("unreadCount", default: 0)] == 9)
  }

  /// Two keys whose hashes (under ``seed``) share a slot.
  static func twoKeysOfOneSlot() throws -> (String, String) {
    var first: [Int: String] = [:]
    for i in 0..<1_000 {
      let key = "key-\(i)"
      let home = CachedScalars.home(of: probe(key).bits)
      if let other = first[home] { return (other, key) }
      first[home] = key
    }
    throw CancellationError()
  }
}

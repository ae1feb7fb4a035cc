@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// Seeded mutations of valid preferences files and manifests, opened through the public
/// surface (`GroupDefaults`, `EntitlementManifest`) in a worker process: each input is read
/// correctly or refused cleanly (moved aside byte for byte, or `.invalidManifest`); never a
/// crash or a hang. 1,000 inputs of each kind by default (about 5 s);
/// `APPGROUPS_FUZZ_ITERATIONS=100000` for a long run (10 to 60 minutes, with the machine's
/// load); `APPGROUPS_SEED` replays a run, with `SWIFT_DETERMINISTIC_HASHING=1` (the inputs are
/// Foundation's serialization of dictionaries, whose order is the process's hashing).
@Suite("Fuzz: preferences files and manifests", .timeLimit(.minutes(120)))
struct FuzzPropertyListTests {
  static var iterations: Int { FaultSettings.integer("APPGROUPS_FUZZ_ITERATIONS", default: 1_000) }

  // MARK: Inputs

  /// A random property-list value, `depth` levels deep at most.
  static func randomValue(_ random: inout SeededGenerator, depth: Int) -> Any {
    let kinds = depth > 0 ? 9 : 7
    switch Int.random(in: 0..<kinds, using: &random) {
    case 0: return randomString(&random)
    case 1: return Int.random(in: Int.min ... Int.max, using: &random) >> Int.random(in: 0...63, using: &random)
    case 2: return [0.0, -0.0, 1.5, -1e300, 3.25e-300, Double.infinity, 12345.678][Int.random(in: 0..<7, using: &random)]
    case 3: return Bool.random(using: &random)
    case 4: return Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1_000_000_000...1_000_000_000, using: &random)) / 8)
    case 5: return Data((0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
    case 6:
      // Mostly small integers; now and then a float (4 bytes on disk) or an unsigned
      // integer above Int.max (16 bytes on disk).
      switch Int.random(in: 0..<8, using: &random) {
      case 6: return Float(Int.random(in: -300...300, using: &random)) / 8
      case 7: return UInt64.random(in: UInt64(Int.max) + 1 ... UInt64.max, using: &random)
      default: return Int.random(in: -300...300, using: &random)
      }
    case 7:
      return (0..<Int.random(in: 0...5, using: &random)).map { _ in randomValue(&random, depth: depth - 1) }
    default:
      var dictionary: [String: Any] = [:]
      for _ in 0..<Int.random(in: 0...5, using: &random) {
        dictionary[randomString(&random)] = randomValue(&random, depth: depth - 1)
      }
      return dictionary
    }
  }

  static func randomString(_ random: inout SeededGenerator) -> String {
    let alphabets = ["abcdefghijklmnopqrstuvwxyz", "ABC012-_. ", "éüßñ€", "日本語テキスト", "🙂👍🏽", "\u{0}\u{1}\n\t"]
    let alphabet = Array(alphabets[Int.random(in: 0..<alphabets.count, using: &random)])
    return String((0..<Int.random(in: 0...20, using: &random)).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })
  }

  /// A valid preferences file: a dictionary of random values, binary (mostly) or XML.
  static func validPreferences(_ random: inout SeededGenerator) -> Data {
    var values: [String: Any] = [:]
    for _ in 0..<Int.random(in: 0...12, using: &random) {
      values[randomString(&random)] = randomValue(&random, depth: 3)
    }
    let format: PropertyListSerialization.PropertyListFormat =
      Int.random(in: 0..<10, using: &random) < 7 ? .binary : .xml
    return (try? PropertyListSerialization.data(fromPropertyList: values, format: format, options: 0)) ?? Data()
  }

  /// A valid manifest, as `EntitlementManifest` writes it (XML) or in binary.
  static func validManifest(_ random: inout SeededGenerator) -> Data {
    var manifest: [String: Any] = [:]
    let words = ["com", "example", "app", "widget", "shared", "a-b", "x_y", "v2"]
    func name(_ parts: Int) -> String {
      (0..<parts).map { _ in words[Int.random(in: 0..<words.count, using: &random)] }.joined(separator: ".")
    }
    for _ in 0..<Int.random(in: 0...4, using: &random) {
      var entry: [String: Any] = [
        EntitlementManifest.applicationGroupsKey: (0..<Int.random(in: 0...3, using: &random)).map { _ in "group." + name(2) }
      ]
      if Bool.random(using: &random) { entry["executable"] = Bool.random(using: &random) ? "app" : "/usr/bin/widget" }
      if Bool.random(using: &random) { entry["com.apple.developer.other"] = true }
      manifest[name(3)] = entry
    }
    let format: PropertyListSerialization.PropertyListFormat =
      Int.random(in: 0..<10, using: &random) < 7 ? .xml : .binary
    return (try? PropertyListSerialization.data(fromPropertyList: manifest, format: format, options: 0)) ?? Data()
  }

  // MARK: Mutations

  static let interestingBytes: [UInt8] = [0x00, 0x01, 0x0F, 0x10, 0x13, 0x1F, 0x3C, 0x3E, 0x40, 0x4F, 0x5F, 0x6F, 0x7F, 0x80, 0xA0, 0xAF, 0xD0, 0xDF, 0xFE, 0xFF]
  static let interestingWords: [UInt64] = [0, 1, 7, 8, 0xFF, 0xFFFF, 0x7FFF_FFFF, 0xFFFF_FFFF, 1 << 32, 1 << 62, UInt64(Int64.max), UInt64.max]
  static let xmlFragments = ["<array>", "</array>", "<dict>", "</dict>", "<key>", "</key>", "<string>", "</string>", "<integer>", "</integer>", "<real>", "<true/>", "<data>", "<date>", "&amp;", "&#0;", "&#x1;", "<!--", "-->", "<![CDATA[", "]]>", "../", "/", "group.", "\u{0}", "\u{85}", "\u{202E}", "999999999999999999999999"]

  /// One to four random mutations of `input`.
  static func mutate(_ input: Data, _ random: inout SeededGenerator) -> Data {
    var bytes = [UInt8](input)
    // Mostly one mutation, so that many inputs stay close enough to valid to be read.
    for _ in 0..<[1, 1, 1, 1, 2, 2, 3, 4][Int.random(in: 0..<8, using: &random)] {
      let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
      switch Int.random(in: 0..<9, using: &random) {
      case 0 where !bytes.isEmpty:  // flip a bit
        bytes[position] ^= 1 << UInt8.random(in: 0...7, using: &random)
      case 1 where !bytes.isEmpty:  // an interesting byte
        bytes[position] = interestingBytes[Int.random(in: 0..<interestingBytes.count, using: &random)]
      case 2:  // insert random bytes
        let count = Int.random(in: 1...16, using: &random)
        bytes.insert(contentsOf: (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }, at: position)
      case 3 where !bytes.isEmpty:  // delete a range
        let end = min(bytes.count, position + Int.random(in: 1...32, using: &random))
        bytes.removeSubrange(position..<end)
      case 4 where !bytes.isEmpty:  // duplicate a range
        let end = min(bytes.count, position + Int.random(in: 1...64, using: &random))
        bytes.insert(contentsOf: bytes[position..<end], at: Int.random(in: 0...bytes.count, using: &random))
      case 5 where !bytes.isEmpty:  // truncate
        bytes.removeSubrange(position...)
      case 6 where bytes.count >= 32:  // a binary trailer field: sizes, count, top, table offset
        let field = Int.random(in: 0..<4, using: &random)
        if field == 0 {
          bytes[bytes.count - 26 + Int.random(in: 0...1, using: &random)] = UInt8.random(in: 0...16, using: &random)
        } else {
          let word = interestingWords[Int.random(in: 0..<interestingWords.count, using: &random)]
          let start = bytes.count - 24 + (field - 1) * 8
          bytes.replaceSubrange(start..<start + 8, with: CraftedPropertyList.bigEndian(word, size: 8))
        }
      case 7 where !bytes.isEmpty:  // an 8-byte interesting word anywhere
        let word = interestingWords[Int.random(in: 0..<interestingWords.count, using: &random)]
        let end = min(bytes.count, position + 8)
        bytes.replaceSubrange(position..<end, with: CraftedPropertyList.bigEndian(word, size: end - position))
      default:  // an XML fragment
        let fragment = xmlFragments[Int.random(in: 0..<xmlFragments.count, using: &random)]
        bytes.insert(contentsOf: Array(fragment.utf8), at: position)
      }
    }
    return Data(bytes)
  }

  // MARK: Oracle

  /// What Foundation makes of a preferences file: its values, or `nil` when it refuses it.
  /// (A binary set would crash Foundation's bridge in this process: screened first.)
  static func foundationValues(_ data: Data) -> [String: PropertyListValue]? {
    guard !data.isEmpty, PropertyListScreen.problem(with: data) == nil,
      let object = try? PropertyListSerialization.propertyList(from: data, format: nil),
      case .dictionary(let values)? = PropertyListValue(object)
    else { return nil }
    return values
  }

  /// A description that never asks Foundation to describe a date (Date.description traps on
  /// a date that is not a number).
  static func describe(_ values: [String: PropertyListValue]) -> String {
    func text(_ value: PropertyListValue) -> String {
      switch value {
      case .date(let date): return "date(\(date.timeIntervalSinceReferenceDate))"
      case .array(let items): return "[" + items.map(text).joined(separator: ", ") + "]"
      case .dictionary(let items):
        return "{" + items.keys.sorted().map { "\($0.debugDescription): \(text(items[$0] ?? .bool(false)))" }.joined(separator: ", ") + "}"
      default: return "\(value)"
      }
    }
    return text(.dictionary(values))
  }

  /// Equal as property lists, with NaN equal to NaN, of either width: the worker's answer
  /// crosses Foundation's serialization, and CoreFoundation makes every NaN number its one
  /// 64-bit NaN, so a stored 4-byte NaN can come back as a `.real`.
  static func same(_ a: [String: PropertyListValue], _ b: [String: PropertyListValue]) -> Bool {
    func canonical(_ value: PropertyListValue) -> PropertyListValue {
      switch value {
      case .real(let v) where v.isNaN: return .string("NaN")
      case .float(let v) where v.isNaN: return .string("NaN")
      case .array(let items): return .array(items.map(canonical))
      case .dictionary(let items): return .dictionary(items.mapValues(canonical))
      default: return value
      }
    }
    return a.mapValues(canonical) == b.mapValues(canonical)
  }

  // MARK: Tests

  @Test func mutatedPreferencesFilesAreReadCorrectlyOrMovedAsideCleanly() throws {
    let seed = FaultSettings.seed()
    let iterations = Self.iterations
    print("FuzzPropertyListTests (files): seed \(seed) (replay: APPGROUPS_SEED=\(seed) SWIFT_DETERMINISTIC_HASHING=1), \(iterations) inputs")
    var random = SeededGenerator(seed: seed)
    let t = try TestRoot()
    let prober = try Prober(t)
    defer { prober.close() }
    try FileManager.default.createDirectory(at: prober.preferences, withIntermediateDirectories: true)
    var read = 0, refused = 0, salvaged = 0, lenient = 0, failures: [String] = []
    for i in 0..<iterations {
      let input = Self.mutate(Self.validPreferences(&random), &random)
      let name = "fuzz-\(i)"
      let file = prober.file(ofSuite: name)
      try input.write(to: file)
      let (outcome, diagnostics) = try prober.open(name)
      let expected = Self.foundationValues(input)
      let aside = entries(of: prober.preferences).filter { $0.hasPrefix("\(name).plist.unreadable-") }
      func failure(_ what: String) {
        failures.append("input \(i) (seed \(seed)): \(what); input base64 \(input.prefix(4096).base64EncodedString())")
      }
      switch outcome {
      case .values(let values) where aside.isEmpty:
        if let expected {
          if Self.same(values, expected) { read += 1 } else { failure("read \(Self.describe(values)), Foundation reads \(Self.describe(expected))") }
        } else if values.isEmpty && input.isEmpty {
          read += 1
        } else {
          lenient += 1  // a stricter oracle than the reader in place; allowed, counted
        }
        if (try? Data(contentsOf: file)) != input { failure("the file changed without a write") }
      case .values(let values) where !values.isEmpty:
        // Read in part: the keys the salvaging reader could read are live, a copy of the
        // whole file is kept aside byte for byte, the file itself is left as it was, reported.
        let copy = try? Data(contentsOf: prober.preferences.appendingPathComponent(aside[0]))
        if copy != input { failure("the bytes kept aside differ") }
        if (try? Data(contentsOf: file)) != input { failure("a file read in part changed without a write") }
        let salvage = try? PropertyListValue.salvaging(propertyListData: input)
        if let salvage, !Self.same(values, salvage.values) {
          failure("read in part \(Self.describe(values)), the salvaging reader reads \(Self.describe(salvage.values))")
        }
        if !diagnostics.contains(where: { $0.contains("could not be read") }) { failure("not reported") }
        salvaged += 1
      case .values:
        // Refused: moved aside byte for byte, reported, the suite empty.
        let moved = try? Data(contentsOf: prober.preferences.appendingPathComponent(aside[0]))
        if moved != input { failure("the bytes moved aside differ") }
        if !diagnostics.contains(where: { $0.contains("could not be read") }) { failure("not reported") }
        refused += 1
      case .refused(let code, let message):
        failure("the suite was refused: \(code) \(message)")
      case .failed(let why):
        failure("the worker crashed or hung: \(why)")
      }
      for leftover in entries(of: prober.preferences) where leftover.hasPrefix("\(name).plist") {
        try? FileManager.default.removeItem(at: prober.preferences.appendingPathComponent(leftover))
      }
      if failures.count >= 5 { break }
    }
    print("FuzzPropertyListTests (files): \(read) read correctly, \(salvaged) read in part, \(refused) moved aside, \(lenient) read where Foundation refuses")
    #expect(failures == [])
    #expect(read + salvaged + refused + lenient == iterations || !failures.isEmpty)
  }

  @Test func mutatedManifestsAreLoadedCorrectlyOrRefusedCleanly() throws {
    let seed = FaultSettings.seed() &+ 1
    let iterations = Self.iterations
    print("FuzzPropertyListTests (manifests): seed \(seed) (replay: APPGROUPS_SEED=\(seed &- 1) SWIFT_DETERMINISTIC_HASHING=1), \(iterations) inputs")
    var random = SeededGenerator(seed: seed)
    let t = try TestRoot()
    let prober = try Prober(t)
    defer { prober.close() }
    let folder = t.sandbox.url.appendingPathComponent("manifests")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    var loaded = 0, refused = 0, failures: [String] = []
    for i in 0..<iterations {
      let input = Self.mutate(Self.validManifest(&random), &random)
      let file = folder.appendingPathComponent("m-\(i).plist")
      try input.write(to: file)
      let (answer, _) = try prober.ask("manifest \(file.path)", answer: ["manifest "], timeout: 20)
      func failure(_ what: String) {
        failures.append("input \(i) (seed \(seed &- 1)): \(what); input base64 \(input.prefix(4096).base64EncodedString())")
      }
      if let answer, answer.hasPrefix("manifest ok "),
        let data = Data(base64Encoded: String(answer.dropFirst("manifest ok ".count))),
        let groups = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: [String]]
      {
        // Loaded: every name is valid, and every grant is in the file as Foundation reads it.
        let raw = PropertyListScreen.problem(with: input) != nil ? nil
          : (try? PropertyListSerialization.propertyList(from: input, format: nil)) as? [String: Any]
        for (bundle, list) in groups {
          if (try? AppIdentity(bundleIdentifier: bundle)) == nil { failure("accepted bundle id \(bundle.debugDescription)") }
          let entry = raw?[bundle] as? [String: Any]
          let written = entry?[EntitlementManifest.applicationGroupsKey] as? [String] ?? []
          for group in list where !written.contains(group) || !group.hasPrefix("group.") {
            failure("\(bundle) granted \(group.debugDescription), not in the file")
          }
        }
        let rebuilt = EntitlementManifest(entries: groups.mapValues { EntitlementManifest.Entry(applicationGroups: $0) })
        if (try? rebuilt.propertyListData()) == nil { failure("loaded names that cannot be written back") }
        loaded += 1
      } else if let answer, answer.hasPrefix("manifest refused invalidManifest ") {
        refused += 1
      } else {
        failure("answer \(answer ?? "none: the worker crashed or hung")")
      }
      try? FileManager.default.removeItem(at: file)
      if failures.count >= 5 { break }
    }
    print("FuzzPropertyListTests (manifests): \(loaded) loaded, \(refused) refused")
    #expect(failures == [])
  }
}

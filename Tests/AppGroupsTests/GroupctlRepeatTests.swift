import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// What a command line gives twice, which groupctl would otherwise keep one of without a word:
/// a key of `-dict` or `-dict-add`. Refused (64) naming it, before anything is done.
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
}

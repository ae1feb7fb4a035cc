import AppGroups
import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

/// The example `app` and `widget`, run as real processes in a temporary root.
@Suite("Examples: app and widget", .processBound)
struct ExamplesTests {
  /// Starts `widget` (watching) as com.example.widget and waits for its first
  /// entry and its ready line.
  func startWidget(_ t: TestRoot, _ arguments: [String] = []) throws -> ChildProcess {
    let widget = try ChildProcess("widget", arguments, environment: t.environment(as: TestRoot.widget))
    let first = widget.waitForLine { $0.hasPrefix("entry #") }
    #expect(first?.hasPrefix("entry #1 ") == true, "\(widget.standardError)")
    #expect(widget.waitFor("ready"), "\(widget.standardError)")
    return widget
  }

  /// Runs `app` as com.example.app and expects it to succeed.
  func app(_ t: TestRoot, _ arguments: String...) throws {
    let result = try Product.run("app", arguments, environment: t.environment(as: TestRoot.app))
    #expect(result.status == 0, "app \(arguments): \(result.stderr)")
  }

  /// The widget's stdout lines up to and including the first that `matching`
  /// accepts (bounded); the last element is `nil` when none came in time.
  func lines(of widget: ChildProcess, until matching: (String) -> Bool) -> [String?] {
    var seen: [String?] = []
    let last = widget.waitForLine(timeout: 15) { line in
      seen.append(line)
      return matching(line)
    }
    if last == nil { seen.append(nil) }
    return seen
  }

  @Test func theWidgetRendersTheRegisteredDefaultsOnceAndExits() throws {
    let t = try TestRoot()
    let result = try Product.run("widget", ["--once"], environment: t.environment(as: TestRoot.widget))
    #expect(result.status == 0, "\(result.stderr)")
    let lines = result.stdout.split(separator: "\n")
    #expect(lines.count == 1)
    #expect(lines.first?.hasPrefix(#"entry #1 unread=0 theme=system greeting="hi" read=[] token="#) == true)
    #expect(lines.first?.hasSuffix("(start)") == true)
  }

  @Test func aWidgetStartedFirstReRendersWhenTheAppWrites() throws {
    let t = try TestRoot()
    let widget = try startWidget(t)
    let clock = ContinuousClock()
    let start = clock.now
    try app(t, "unread", "3")
    let entry = widget.waitForLine(timeout: 10) { $0.hasPrefix("entry #") }
    let elapsed = clock.now - start
    #expect(entry?.hasPrefix("entry #2 unread=3 theme=system ") == true, "\(widget.standardError)")
    // Bounded: the app's whole run (start, write, fsync, post, exit) and the re-render.
    #expect(elapsed < .seconds(10))

    try app(t, "theme", "dark")
    let next = widget.waitForLine(timeout: 10) { $0.hasPrefix("entry #") }
    #expect(next?.hasPrefix("entry #3 unread=3 theme=dark ") == true)
    try app(t, "read", "item-1")
    let read = widget.waitForLine(timeout: 10) { $0.contains("read=[item-1]") && $0.contains("unread=2") }
    #expect(read != nil)
  }

  @Test func aStoppedWidgetRendersOnceAfterContinue() throws {
    let t = try TestRoot()
    let widget = try startWidget(t)
    widget.signal(SIGSTOP)
    try app(t, "unread", "5")
    try app(t, "theme", "dark")
    try app(t, "set", "greeting", "hello")
    widget.signal(SIGCONT)

    // Everything the widget prints until it has rendered the three writes and
    // said how it resumed (in either order), then until a marker written
    // after that: exactly one entry for the three writes, then the marker's.
    let expected = #"entry #2 unread=5 theme=dark greeting="hello" "#
    var sawEntry = false
    var sawResume = false
    let afterResume = lines(of: widget) { line in
      if line.hasPrefix(expected) { sawEntry = true }
      if line.hasPrefix("resumed: ") { sawResume = true }
      return sawEntry && sawResume
    }
    #expect(sawEntry && sawResume, "\(afterResume)")
    try app(t, "set", "greeting", "marker")
    let rest = lines(of: widget) { $0.contains(#"greeting="marker""#) }
    #expect(rest.last??.hasPrefix("entry #3 ") == true, "\(rest)")
    let entries = (afterResume + rest).compactMap { $0 }.filter { $0.hasPrefix("entry #") }
    #expect(entries.count == 2, "\(entries)")
  }

  @Test func aWidgetResumedWithNoChangeDoesNotReRead() throws {
    let t = try TestRoot()
    let widget = try startWidget(t)
    widget.signal(SIGSTOP)
    widget.signal(SIGCONT)
    let resumed = widget.waitForLine(timeout: 10) { $0.hasPrefix("resumed: ") }
    #expect(resumed?.hasPrefix("resumed: token unchanged (") == true)
    #expect(resumed?.hasSuffix("nothing re-read") == true)
    // Nothing was rendered in between: the next write gives entry #2.
    try app(t, "unread", "4")
    let next = widget.waitForLine(timeout: 10) { $0.hasPrefix("entry #") }
    #expect(next?.hasPrefix("entry #2 unread=4 ") == true, "\(String(describing: next))")
  }

  @Test func theWidgetExitsCleanlyOnSIGTERMAndSIGINT() throws {
    for (signal, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
      let t = try TestRoot()
      let widget = try startWidget(t)
      widget.signal(signal)
      #expect(widget.waitFor("stopped by \(name) after 1 entries"))
      #expect(widget.wait() == 0)
      #expect(widget.process.terminationReason == .exit)
    }
  }

  @Test func theWidgetExitsAfterTheRendersItWasAskedFor() throws {
    let t = try TestRoot()
    let widget = try startWidget(t, ["--renders", "2"])
    try app(t, "unread", "1")
    #expect(widget.waitForLine { $0.hasPrefix("entry #2 unread=1 ") } != nil)
    #expect(widget.wait() == 0)
  }

  @Test func anUnentitledWidgetExitsNonZeroWithTheReason() throws {
    let t = try TestRoot()
    let intruder = t.environment(as: "com.example.intruder")
    let widget = try Product.run("widget", [], environment: intruder)
    #expect(widget.status == 1)
    #expect(widget.stdout.isEmpty)
    #expect(
      widget.stderr.contains(
        "widget: refused: com.example.intruder is not entitled to group.com.example.shared (manifest: "),
      "\(widget.stderr)")
    let app = try Product.run("app", ["unread", "1"], environment: intruder)
    #expect(app.status == 1)
    #expect(app.stderr.contains("com.example.intruder is not entitled to group.com.example.shared"))
  }

  @Test func theAppRegistersItsDefaultsAndRefusesBadUsage() throws {
    let t = try TestRoot()
    let env = t.environment(as: TestRoot.app)
    let show = try Product.run("app", ["show"], environment: env)
    #expect(show.status == 0)
    #expect(show.stdout.hasPrefix(#"unread=0 theme=system greeting="hi" read=[] token="#))
    for arguments in [[], ["unread", "-1"], ["unread"], ["theme", "blue"], ["fly"], ["set", "k"]] {
      let result = try Product.run("app", arguments, environment: env)
      #expect(result.status == 64, "app \(arguments)")
      #expect(result.stderr.contains("usage: app "), "app \(arguments): \(result.stderr)")
    }
    let widget = try Product.run("widget", ["--renders", "0"], environment: t.environment(as: TestRoot.widget))
    #expect(widget.status == 64)
    #expect(widget.stderr.contains("usage: widget"))
  }

  /// Swift would hand the examples `"tok\u{FFFD}"` for the bytes `tok\xff`: a token or a
  /// value stored from that is not the one typed. Each example refuses it, and stores nothing.
  @Test func theExamplesRefuseArgumentsThatAreNotUTF8() throws {
    let t = try TestRoot()
    for (product, arguments, index) in [
      ("app", "set greeting \"$(printf 'h\\377i')\"", 3), ("app", "sign-in \"$(printf 'tok\\377')\"", 2),
      ("notes", "add \"$(printf 'n\\377')\"", 2), ("widget", "--renders \"$(printf '2\\377')\"", 2),
      ("cache-writer", "--group \"$(printf 'g\\377')\"", 2),
    ] {
      let child = try ChildProcess(
        executable: URL(fileURLWithPath: "/bin/sh"),
        ["-c", "\"$PROGRAM\" \(arguments); echo \"exit $?\""],
        environment: t.environment(as: TestRoot.app).merging(["PROGRAM": Product.url(product).path]) { $1 })
      #expect(child.waitFor("exit 64"), "\(product) \(arguments): \(child.standardError)")
      #expect(child.wait() == 0)
      #expect(child.standardError.contains("argument \(index) ("), "\(child.standardError)")
      // A token is a secret: its bytes are never shown.
      let secret = arguments.hasPrefix("sign-in")
      #expect(child.standardError.contains("\\xff") == !secret, "\(child.standardError)")
      #expect(child.standardError.contains("tok") == false, "\(child.standardError)")
      #expect(child.standardError.contains("not shown: it may be a secret") == secret)
      #expect(child.standardError.contains(") is not valid UTF-8"), "\(child.standardError)")
    }
    let root = try ChildProcess(
      executable: URL(fileURLWithPath: "/bin/sh"),
      ["-c", "APPGROUPS_ROOT=\"$(printf '\(t.path)\\377')\" \"$PROGRAM\" show; echo \"exit $?\""],
      environment: ["PROGRAM": Product.url("app").path])
    #expect(root.waitFor("exit 64"), "\(root.standardError)")
    #expect(root.wait() == 0)
    #expect(root.standardError.contains("APPGROUPS_ROOT (\"\(t.path)\\xff\") is not valid UTF-8"))
    #expect(!FileManager.default.fileExists(atPath: t.groupSuiteFile.path))
  }

  @Test func theAppWritesLandOnDiskForOtherProcesses() throws {
    let t = try TestRoot()
    try app(t, "unread", "2")
    try app(t, "read", "a")
    try app(t, "read", "a")
    try app(t, "theme", "light")
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["unreadCount"] as? Int == 1)
    #expect(onDisk["AppGroupsSchemaVersion"] as? Int == 2)
    #expect(onDisk["readItems"] as? [String] == ["a"])
    #expect(onDisk["theme"] as? String == "light")
    try app(t, "reset")
    #expect(try TestRoot.readOnDisk(t.groupSuiteFile).isEmpty)
  }

  @Test func aSuiteVersion1WroteIsMigratedOnceByWhicheverProcessComesFirst() throws {
    let t = try TestRoot()
    // As version 1 of the app left it: the count under "unread", no schema marker.
    let old: [String: Any] = ["unread": 4, "theme": "dark"]
    try FileManager.default.createDirectory(
      at: t.groupSuiteFile.deletingLastPathComponent(), withIntermediateDirectories: true)
    try PropertyListSerialization.data(fromPropertyList: old, format: .binary, options: 0)
      .write(to: t.groupSuiteFile)
    let widget = try Product.run("widget", ["--once"], environment: t.environment(as: TestRoot.widget))
    #expect(widget.status == 0, "\(widget.stderr)")
    #expect(widget.stdout.hasPrefix("entry #1 unread=4 theme=dark "), "\(widget.stdout)")
    #expect(widget.stderr.contains("event=step suite=group.com.example.shared from=0 to=2 step=\"rename unread -> unreadCount\" key=unread stored=integer outcome=renamed"), "\(widget.stderr)")
    #expect(widget.stderr.contains("event=migrated"))
    #expect(!widget.stderr.contains("4"), "a diagnostic carried a value: \(widget.stderr)")
    let show = try Product.run("app", ["show"], environment: t.environment(as: TestRoot.app))
    #expect(show.stdout.hasPrefix("unread=4 theme=dark "))
    #expect(!show.stderr.contains("event=migrated"), "the app migrated again: \(show.stderr)")
    let onDisk = try TestRoot.readOnDisk(t.groupSuiteFile)
    #expect(onDisk["unread"] == nil)
    #expect(onDisk["unreadCount"] as? Int == 4)
    #expect(onDisk["AppGroupsSchemaVersion"] as? Int == 2)
  }
}

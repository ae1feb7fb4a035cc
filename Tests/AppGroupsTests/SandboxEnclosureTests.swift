@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// A project folder holding both a program and the root (`proj/Containers`), as a new user
/// lays one out: com.a is entitled to group.a, com.b to group.b; each container holds a
/// preferences file with a secret.
struct ProjectLayout {
  let project: Sandbox
  let root: ContainerRoot

  init(_ name: String = #function) throws {
    project = try Sandbox(name)
    root = ContainerRoot(path: project.path + "/Containers")
    try groupctl(["grant", "com.a", "group.a"])
    try groupctl(["grant", "com.b", "group.b"])
    try groupctl(["--as", "com.a", "write", "com.a", "mine", "a-own"])
    try groupctl(["--as", "com.b", "write", "com.b", "secret", "hunter2-B"])
    try groupctl(["write", "group.b", "secret", "hunter2-group-b"])
    try Data("notes".utf8).write(to: project.url.appendingPathComponent("notes.txt"))
  }

  func preferences(_ bundleID: String) -> String {
    root.appContainerURL(for: bundleID).path + "/Library/Preferences/\(bundleID).plist"
  }

  func groupPreferences(_ group: String) -> String {
    root.groupContainerURL(for: group).path + "/Library/Preferences/\(group).plist"
  }

  /// Places the program at `source` in the project folder, as `cp` would (a hard link when
  /// the file system allows, which is the same file for the kernel's rules).
  func place(_ source: String, as name: String) throws -> String {
    let destination = project.path + "/" + name
    if link(source, destination) != 0 {
      try FileManager.default.copyItem(atPath: source, toPath: destination)
    }
    return destination
  }

  @discardableResult
  func groupctl(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    let result = try Product.run("groupctl", ["--root", root.path] + arguments)
    #expect(result.status == 0 || arguments.contains("run"), "\(arguments): \(result.stderr)")
    return result
  }
}

@Suite(
  "Sandbox: what the kernel encloses", .processBound,
  .enabled(if: landlockAvailable, "the kernel offers no Landlock"))
struct SandboxEnclosureTests {
  @Test func aRootInsideTheProgramsFolderStaysClosed() throws {
    let p = try ProjectLayout()
    let cat = try p.place("/bin/cat", as: "cat")
    // The reproduction: another app's private preferences through a program that
    // sits beside the root.
    let stolen = try p.groupctl(["run", "--as", "com.a", "--", cat, p.preferences("com.b")])
    #expect(stolen.status == 1)
    #expect(!stolen.stdout.contains("hunter2"), "\(stolen.stdout)")
    #expect(stolen.stderr.contains("Permission denied"), "\(stolen.stderr)")
    // The program itself runs, on what the app may read.
    let own = try p.groupctl(["run", "--as", "com.a", "--", cat, p.preferences("com.a")])
    #expect(own.status == 0, "\(own.stderr)")
    #expect(own.stdout.contains("a-own"))

    // A Swift program there: its own container and group open; everything else in the
    // project, the program's neighbours included, closed.
    let worker = try p.place(SandboxRoot.worker, as: "appgroups-worker")
    let checks: [(String, String, String)] = [
      ("read", p.preferences("com.a"), "ok"),
      ("create", p.root.groupContainerURL(for: "group.a").path + "/new", "ok"),
      ("read", p.preferences("com.b"), "EACCES"),
      ("read", p.groupPreferences("group.b"), "EACCES"),
      ("create", p.root.appContainerURL(for: "com.b").path + "/planted", "EACCES"),
      ("list", p.root.path, "EACCES"),
      ("list", p.project.path, "EACCES"),
      ("read", p.project.path + "/notes.txt", "EACCES"),
      ("create", p.project.path + "/planted", "EACCES"),
    ]
    let result = try p.groupctl(
      ["run", "--as", "com.a", "--", worker, "fs-check"] + checks.flatMap { [$0.0, $0.1] })
    #expect(result.status == 0, "\(result.stderr)")
    let results = SandboxRoot.results(result.stdout)
    for (operation, path, expected) in checks {
      #expect(results["\(operation) \(path)"] == expected, "\(operation) \(path)")
    }
    #expect(!FileManager.default.fileExists(atPath: p.project.path + "/planted"))

    // -v says why the program's folder is not allowed.
    let verbose = try p.groupctl(["run", "-v", "--as", "com.a", "--", cat, "/dev/null"])
    #expect(verbose.status == 0, "\(verbose.stderr)")
    #expect(
      verbose.stderr.contains(
        "groupctl: read-execute \(cat) (the executable alone: its folder holds the root"
          + " \(p.root.path))"), "\(verbose.stderr)")
    #expect(!verbose.stderr.contains("read-execute \(p.project.path) "), "\(verbose.stderr)")
  }

  @Test func aPathGivenToOpenThatHoldsTheRootOrAnotherContainerIsRefused() throws {
    let p = try ProjectLayout()
    for option in ["--ro", "--rw"] {
      let holding = try p.groupctl(["run", "--as", "com.a", option, p.project.path, "--", "/bin/true"])
      #expect(holding.status == 1)
      #expect(
        holding.stderr
          == "groupctl: \(option) \(p.project.path) holds the root \(p.root.path): a sandbox that"
          + " allows a folder allows everything in it, every app's container included, so com.a"
          + " may not have it; allow the files or folders inside it that the program needs, or"
          + " move the root out of it (--root, APPGROUPS_ROOT)\n")
      let other = p.root.groupContainerURL(for: "group.b").path
      let inside = try p.groupctl(["run", "--as", "com.a", option, other, "--", "/bin/true"])
      #expect(inside.status == 1)
      #expect(
        inside.stderr
          == "groupctl: \(option) \(other) is inside the root \(p.root.path) and outside com.a's"
          + " containers: a sandbox opens only the app's own container and the groups the"
          + " manifest entitles it to ('groupctl grant com.a GROUP-ID')\n")
    }
    // A file beside the root, and a folder inside the app's own container, are fine.
    let notes = p.project.path + "/notes.txt"
    let cache = p.root.appContainerURL(for: "com.a").path + "/Library/Caches"
    let allowed = try p.groupctl(
      ["run", "--as", "com.a", "--ro", notes, "--rw", cache, "--", "/bin/cat", notes])
    #expect(allowed.status == 0, "\(allowed.stderr)")
    #expect(allowed.stdout == "notes")
  }

  @Test func aFolderThatHoldsTheRootIsAllowedEntryByEntryAroundIt() throws {
    let p = try ProjectLayout()
    try FileManager.default.createDirectory(
      atPath: p.project.path + "/lib/deeper", withIntermediateDirectories: true)
    // Links to a folder that holds the root, and into the root: left out.
    try FileManager.default.createSymbolicLink(
      atPath: p.project.path + "/up", withDestinationPath: p.project.path)
    try FileManager.default.createSymbolicLink(
      atPath: p.project.path + "/into-root", withDestinationPath: p.root.path + "/Data")
    var ruleset = try SandboxRuleset.app(
      try AppIdentity(bundleIdentifier: "com.a"), root: p.root)
    let before = ruleset.rules
    ruleset.allow(.readExecute, p.project.path, purpose: "a system folder")
    let added = ruleset.rules.dropFirst(before.count).map(\.path)
    #expect(added == [p.project.path + "/lib", p.project.path + "/notes.txt"])
    // Nothing that holds the root, nor the root itself.
    ruleset.allow(.readOnly, p.root.path, purpose: "the root")
    ruleset.allow(.readOnly, "/", purpose: "everything")
    for rule in ruleset.rules {
      // Another test's temporary folder may go between the listing and this look.
      guard let real = Paths.realPath(rule.path) else { continue }
      #expect(real != p.root.path && !p.root.path.hasPrefix(real + "/") && real != "/", "\(rule)")
    }
  }

  @Test func aRootThatABindMountShowsTwiceIsProtectedUnderBothPaths() {
    let mountInfo = """
      27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
      22 27 0:21 / /proc rw,relatime - proc proc rw
      40 27 254:0 /home/u/proj /mnt/work rw,relatime - ext4 /dev/vda rw
      41 27 254:0 /home /srv/home\\040copy rw,relatime - ext4 /dev/vda rw
      42 27 254:1 /home/u/proj /mnt/other-disk rw,relatime - ext4 /dev/vdb rw
      """
    #expect(
      SandboxRuleset.mountAliases(of: "/home/u/proj/Containers", mountInfo: mountInfo)
        == ["/mnt/work/Containers", "/srv/home copy/u/proj/Containers"])
    // Seen from the bind mount, the path on the root file system is the alias.
    #expect(
      SandboxRuleset.mountAliases(of: "/mnt/work/Containers", mountInfo: mountInfo)
        == ["/home/u/proj/Containers", "/srv/home copy/u/proj/Containers"])
    #expect(SandboxRuleset.mountAliases(of: "/proc/self", mountInfo: mountInfo).isEmpty)
  }

  @Test func descriptorsTheCallerOpenedDoNotCrossTheSandbox() throws {
    let p = try ProjectLayout()
    let outside = try Sandbox()
    let readable = outside.path + "/outside.txt"
    let appendable = outside.path + "/log.txt"
    try Data("outside secret\n".utf8).write(to: URL(fileURLWithPath: readable))
    try Data("first line\n".utf8).write(to: URL(fileURLWithPath: appendable))
    // As the shell does: descriptors 5 (read) and 6 (append) opened by the caller.
    let groupctl = Product.url("groupctl").path
    let script = """
      exec 5<'\(readable)' 6>>'\(appendable)'
      '\(groupctl)' --root '\(p.root.path)' run --as com.a -- /bin/sh -c '
        cat <&5 && echo read-5-ok
        echo planted >&6 && echo append-6-ok
        ls /proc/self/fd | tr "\\n" " "; echo
        echo to-stdout; echo to-stderr >&2'
      """
    let result = try Product.run("/bin/sh", ["-c", script])
    #expect(!result.stdout.contains("outside secret"), "\(result.stdout)")
    #expect(!result.stdout.contains("read-5-ok"), "\(result.stdout)")
    #expect(!result.stdout.contains("append-6-ok"), "\(result.stdout)")
    #expect(result.stderr.contains("Bad file descriptor"), "\(result.stderr)")
    #expect(try String(contentsOfFile: appendable, encoding: .utf8) == "first line\n")
    // Standard input, output and error are the caller's, as it opened them; nothing else
    // (ls's own listing of the folder is the fourth).
    #expect(result.stdout.contains("0 1 2 3 \nto-stdout\n"), "\(result.stdout)")
    #expect(result.stderr.hasSuffix("to-stderr\n"), "\(result.stderr)")
  }

  @Test func aListeningSocketOfTheCallersDoesNotCrossTheSandbox() throws {
    let p = try ProjectLayout()
    // The caller (the worker, groupctl's parent) holds a Unix socket listening on an address
    // of its own at 9 and a socket pair's end at 8. Kept, the listener would hand the app
    // every connection meant for the caller, from clients outside the sandbox too.
    let script = "for fd in 8 9; do if [ -e /proc/self/fd/$fd ]; then echo open-$fd;"
      + " else echo closed-$fd; fi; done"
    let result = try Product.run(
      Product.url("appgroups-worker").path,
      [
        "listen-and-run", Product.url("groupctl").path, "--root", p.root.path,
        "run", "--as", "com.a", "--", "/bin/sh", "-c", script,
      ])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("closed-9\n"), "\(result.stdout)")
    // A socket pair the caller made stays, as Foundation's Process needs its end.
    #expect(result.stdout.contains("open-8\n"), "\(result.stdout)")
  }
}

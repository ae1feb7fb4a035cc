import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

@testable import AppGroups


/// The permission bits of `path` (not following a final link), or nil when it does not exist.
private func mode(_ path: String) -> mode_t? {
  var s = stat()
  guard lstat(path, &s) == 0 else { return nil }
  return s.st_mode
}

private func isFolder(_ path: String) -> Bool {
  guard let mode = mode(path) else { return false }
  return mode & S_IFMT == S_IFDIR
}

@Suite("ContainerRoot")
struct ContainerRootTests {
  @Test func layout() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    let base = try #require(Paths.realPath(sandbox.path))
    #expect(root.path == base)
    #expect(root.description == base)
    #expect(root.manifestURL.path == base + "/Entitlements.plist")
    #expect(
      root.appContainerURL(for: "com.example.app").path == base
        + "/Data/Application/com.example.app")
    #expect(
      root.groupContainerURL(for: "group.com.example.shared").path
        == base + "/Shared/AppGroup/group.com.example.shared")
    #expect(root.globalContainerURL.path == base + "/Global")
    #expect(
      root.globalPreferencesURL.path == base
        + "/Global/Library/Preferences/.GlobalPreferences.plist")
    #expect(
      root.managedPreferencesURL(forDomain: "com.example.app").path == base
        + "/Managed/com.example.app.plist")
  }

  @Test func pathsAreAbsoluteStandardizedAndResolved() throws {
    let sandbox = try Sandbox()
    let base = try #require(Paths.realPath(sandbox.path))
    // Relative to the current directory, with `.` and `..` removed.
    let relative = ContainerRoot.resolve("a/./b/../c", currentDirectory: base)
    #expect(relative == base + "/a/c")
    #expect(ContainerRoot(path: base + "//x/./y/..").path == base + "/x")
    // A link in the existing part of the path is resolved.
    let real = sandbox.url.appendingPathComponent("real")
    try FileManager.default.createDirectory(at: real, withIntermediateDirectories: false)
    let link = sandbox.path + "/link"
    #expect(symlink(real.path, link) == 0)
    #expect(ContainerRoot(path: link).path == base + "/real")
    #expect(ContainerRoot(path: link + "/not-yet/deeper").path == base + "/real/not-yet/deeper")
    #expect(ContainerRoot(url: URL(fileURLWithPath: link)) == ContainerRoot(path: base + "/real"))
    let cwd = FileManager.default.currentDirectoryPath
    #expect(
      ContainerRoot(path: "some-root").path
        == ContainerRoot.resolve(cwd + "/some-root", currentDirectory: "/"))
  }

  @Test func environmentChoosesTheDefault() {
    let chosen = ContainerRoot(
      environment: ["APPGROUPS_ROOT": "/tmp/elsewhere"], currentDirectory: "/work")
    #expect(chosen.path == ContainerRoot.resolve("/tmp/elsewhere", currentDirectory: "/"))
    let relative = ContainerRoot(
      environment: ["APPGROUPS_ROOT": "roots/one"], currentDirectory: "/nonexistent-cwd")
    #expect(relative.path == "/nonexistent-cwd/roots/one")
    let unset = ContainerRoot(environment: [:], currentDirectory: "/nonexistent-cwd")
    #expect(unset.path == "/nonexistent-cwd/Containers")
    let empty = ContainerRoot(
      environment: ["APPGROUPS_ROOT": ""], currentDirectory: "/nonexistent-cwd")
    #expect(empty.path == "/nonexistent-cwd/Containers")
    // `.default` reads this process's environment the same way.
    let expected = ContainerRoot(
      environment: ProcessInfo.processInfo.environment,
      currentDirectory: FileManager.default.currentDirectoryPath)
    #expect(ContainerRoot.default == expected)
  }

  @Test func prepareContainerCreatesPrivateFolders() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url.appendingPathComponent("root"))
    let container = root.groupContainerURL(for: "group.com.example.shared")
    let preferences = try root.prepareContainer(at: container)
    #expect(preferences.path == container.path + "/Library/Preferences")
    for path in [
      root.path, root.path + "/Shared", root.path + "/Shared/AppGroup", container.path,
      container.path + "/Library", preferences.path, container.path + "/Library/Caches",
    ] {
      let m = try #require(mode(path), "\(path) missing")
      #expect(m & S_IFMT == S_IFDIR, "\(path)")
      #expect(m & 0o7777 == 0o700, "\(path): \(String(m & 0o7777, radix: 8))")
    }
    // Again: nothing changes, nothing fails.
    #expect(try root.prepareContainer(at: container) == preferences)
    // The global container too.
    let global = try root.prepareContainer(at: root.globalContainerURL)
    #expect(global.appendingPathComponent(".GlobalPreferences.plist") == root.globalPreferencesURL)
    #expect(isFolder(global.path))
  }

  @Test func prepareRootCreatesTheRoot() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(path: sandbox.path + "/a/b")
    try root.prepareRoot()
    #expect(mode(root.path).map { $0 & 0o7777 } == 0o700)
    try root.prepareRoot()
    // A file where the root should be is an error.
    let file = ContainerRoot(path: sandbox.path + "/file")
    #expect(FileManager.default.createFile(atPath: file.path, contents: Data()))
    #expect(caught { try file.prepareRoot() }?.code == .io)
  }

  @Test func containerLinkLeadingOutIsRefused() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url.appendingPathComponent("root"))
    let outside = sandbox.path + "/outside"
    try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
    let container = root.groupContainerURL(for: "group.com.example.shared")
    try FileManager.default.createDirectory(
      at: container.deletingLastPathComponent(), withIntermediateDirectories: true)
    #expect(symlink(outside, container.path) == 0)

    let error = try #require(caught { try root.prepareContainer(at: container) })
    #expect(error.code == .outsideRoot)
    #expect(error.message.contains(container.path))
    #expect(error.message.contains(try #require(Paths.realPath(outside))))
    #expect(error.message.contains("outside the root"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == [])
  }

  @Test func preferencesLinkLeadingOutIsRefused() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url.appendingPathComponent("root"))
    let outside = sandbox.path + "/outside"
    try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
    let container = root.appContainerURL(for: "com.example.app")
    let library = container.appendingPathComponent("Library")
    try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
    #expect(symlink(outside, library.path + "/Preferences") == 0)

    let error = try #require(caught { try root.prepareContainer(at: container) })
    #expect(error.code == .outsideRoot)
    #expect(error.message.contains(library.path + "/Preferences"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == [])
    // Caches was not created either: the refusal comes before any creation.
    #expect(!isFolder(library.path + "/Caches"))
  }

  @Test func cachesLinkBesideARealPreferencesFolderIsRefused() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url.appendingPathComponent("root"))
    // Another container's Caches, inside the root: following the link would find a folder.
    let other = root.groupContainerURL(for: "group.other")
    try root.prepareContainer(at: other)
    let container = root.groupContainerURL(for: "group.com.example.shared")
    try root.prepareContainer(at: container)
    let caches = container.path + "/Library/Caches"
    #expect(rmdir(caches) == 0)
    #expect(symlink(other.path + "/Library/Caches", caches) == 0)

    // Preferences is a real folder reached through real ones; Caches is a link all the same.
    let error = try #require(caught { try root.prepareContainer(at: container) })
    #expect(error.code == .outsideRoot)
    #expect(error.message.contains(caches))
    #expect(error.message.contains("must be real folders"))
  }

  @Test func linkHigherUpLeadingOutIsRefused() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url.appendingPathComponent("root"))
    let outside = sandbox.path + "/outside"
    try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
    try FileManager.default.createDirectory(
      atPath: root.path + "/Shared", withIntermediateDirectories: true)
    #expect(symlink(outside, root.path + "/Shared/AppGroup") == 0)

    let error = caught { try root.prepareContainer(at: root.groupContainerURL(for: "group.x")) }
    #expect(error?.code == .outsideRoot)
    #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == [])
  }

  @Test func linkToAnotherContainerIsRefused() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url.appendingPathComponent("root"))
    let group = root.groupContainerURL(for: "group.secret")
    try root.prepareContainer(at: group)
    let app = root.appContainerURL(for: "com.example.intruder")
    try FileManager.default.createDirectory(
      at: app.deletingLastPathComponent(), withIntermediateDirectories: true)
    #expect(symlink(group.path, app.path) == 0)
    let error = try #require(caught { try root.prepareContainer(at: app) })
    #expect(error.code == .outsideRoot)
    #expect(error.message.contains("must be real folders"))
  }

  @Test func containerOutsideTheRootIsRefused() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url.appendingPathComponent("root"))
    let elsewhere = sandbox.url.appendingPathComponent("elsewhere")
    #expect(caught { try root.prepareContainer(at: elsewhere) }?.code == .outsideRoot)
    let escaping = root.url.appendingPathComponent("Data/Application/../../../elsewhere")
    #expect(caught { try root.prepareContainer(at: escaping) }?.code == .outsideRoot)
    #expect(caught { try root.prepareContainer(at: root.url) }?.code == .outsideRoot)
    #expect(!isFolder(elsewhere.path))
  }

  /// Another process removing the container's `Library` (an `rm -rf` of it) after the open
  /// made it and before `Preferences` and `Caches` are made in it does not fail the open: the
  /// walk is done again from `Library`, and both folders are there.
  @Test func libraryRemovedJustAfterItIsMadeIsMadeAgain() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url.appendingPathComponent("root"))
    let container = root.groupContainerURL(for: "group.com.example.shared")
    let library = container.path + "/Library"
    let removed = Locked(false)
    ContainerRoot.afterMakingLibraryForTesting.withLock {
      $0 = { made in
        guard made == library, !removed.withLock({ let was = $0; $0 = true; return was }) else {
          return
        }
        try? FileManager.default.removeItem(atPath: made)
      }
    }
    defer { ContainerRoot.afterMakingLibraryForTesting.withLock { $0 = nil } }

    let preferences = try root.prepareContainer(at: container)
    #expect(removed.withLock { $0 }, "the hook ran")
    #expect(preferences.path == library + "/Preferences")
    #expect(isFolder(library + "/Preferences"))
    #expect(isFolder(library + "/Caches"))
  }

  @Test func fileWhereAFolderShouldBeIsAnError() throws {
    let sandbox = try Sandbox()
    let root = ContainerRoot(url: sandbox.url)
    let container = root.appContainerURL(for: "com.example.app")
    try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
    #expect(FileManager.default.createFile(atPath: container.path + "/Library", contents: Data()))
    let error = caught { try root.prepareContainer(at: container) }
    #expect(error?.code == .io)
    #expect(error?.message.contains(container.path + "/Library") == true)
  }
}

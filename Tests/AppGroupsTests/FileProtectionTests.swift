import AppGroups
import AppGroupsKeybag
import AppGroupsTestSupport
import Foundation
import Testing

/// Protection classes for files in containers: Apple's spelling, the class in an extended
/// attribute, reads refused as Apple refuses them.
@Suite("File protection", .processBound)
struct FileProtectionTests {
  /// A device with a passcode, and a file URL in its group container.
  func device(_ name: String = #function) throws -> (r: KeybagRoot, folder: URL) {
    let r = try KeybagRoot(name)
    try r.keybag.setPasscode("1234")
    let folder = r.root.groupContainerURL(for: TestRoot.group).appendingPathComponent("Files")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return (r, folder)
  }

  /// The protection class recorded or inherited for `url`, as a raw value.
  func protection(_ url: URL, _ r: KeybagRoot) throws -> String {
    try FileProtection.protection(ofItemAt: url, root: r.root).rawValue
  }

  /// Expects a read of `url` to fail as Apple's does: Cocoa 257, underlying EPERM.
  func expectReadRefused(
    _ url: URL, _ r: KeybagRoot, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    do {
      _ = try FileProtection.read(contentsOf: url, root: r.root)
      Issue.record("\(url.lastPathComponent) was read", sourceLocation: sourceLocation)
    } catch let error as CocoaError {
      #expect(error.code == .fileReadNoPermission, sourceLocation: sourceLocation)
      #expect(error.code.rawValue == 257, sourceLocation: sourceLocation)
      let underlying = error.userInfo[NSUnderlyingErrorKey] as? POSIXError
      #expect(underlying?.code == .EPERM, sourceLocation: sourceLocation)
      let reason = error.userInfo[NSLocalizedFailureReasonErrorKey] as? String
      #expect(reason?.contains("unavailable now") == true, sourceLocation: sourceLocation)
    } catch {
      Issue.record("\(error)", sourceLocation: sourceLocation)
    }
  }

  @Test func eachClassIsReadableWhenTheDeviceStateAllowsIt() throws {
    let (r, folder) = try device()
    let files: [(String, Data.WritingOptions)] = [
      ("a", .completeFileProtection), ("b", .completeFileProtectionUnlessOpen),
      ("c", .completeFileProtectionUntilFirstUserAuthentication), ("d", .noFileProtection),
      ("default", []),
    ]
    for (name, options) in files {
      try FileProtection.write(
        Data(name.utf8), to: folder.appendingPathComponent(name), options: [.atomic, options],
        root: r.root)
    }
    #expect(try protection(folder.appendingPathComponent("a"), r) == "NSFileProtectionComplete")
    #expect(
      try protection(folder.appendingPathComponent("default"), r)
        == "NSFileProtectionCompleteUntilFirstUserAuthentication")
    let attributes = try FileProtection.attributesOfItem(
      atPath: folder.appendingPathComponent("b").path, root: r.root)
    #expect(
      (attributes[.protectionKey] as? FileProtectionType)?.rawValue
        == "NSFileProtectionCompleteUnlessOpen")

    // Locked, in the grace: everything reads. Past it: a and b are refused.
    try r.device.lock(grace: .seconds(60))
    for (name, _) in files {
      #expect(
        try FileProtection.read(contentsOf: folder.appendingPathComponent(name), root: r.root)
          == Data(name.utf8))
    }
    try r.keybag.unlock(passcode: "1234")
    let handle = try FileProtection.open(
      forReadingFrom: folder.appendingPathComponent("a"), root: r.root)
    try r.device.lock(grace: .zero)
    expectReadRefused(folder.appendingPathComponent("a"), r)
    expectReadRefused(folder.appendingPathComponent("b"), r)
    #expect(throws: CocoaError.self) {
      try FileProtection.open(forReadingFrom: folder.appendingPathComponent("a"), root: r.root)
    }
    #expect(try handle.readToEnd() == Data("a".utf8), "a file already open stays readable")
    for name in ["c", "d", "default"] {
      #expect(
        try FileProtection.read(contentsOf: folder.appendingPathComponent(name), root: r.root)
          == Data(name.utf8))
    }
    // While locked: a new class-B file can be written, not replaced; a class-A file cannot.
    try FileProtection.write(
      Data("new".utf8), to: folder.appendingPathComponent("b2"),
      options: .completeFileProtectionUnlessOpen, root: r.root)
    for (name, options) in [
      ("b2", Data.WritingOptions.completeFileProtectionUnlessOpen), ("a2", .completeFileProtection),
    ] {
      do {
        try FileProtection.write(
          Data("x".utf8), to: folder.appendingPathComponent(name), options: options, root: r.root)
        Issue.record("\(name) was written while locked")
      } catch let error as CocoaError {
        #expect(error.code == .fileWriteNoPermission)
        #expect((error.userInfo[NSUnderlyingErrorKey] as? POSIXError)?.code == .EPERM)
      }
    }

    // Before the first unlock: only class none.
    try r.device.reboot()
    for name in ["a", "b", "c", "default"] {
      expectReadRefused(folder.appendingPathComponent(name), r)
    }
    #expect(
      try FileProtection.read(contentsOf: folder.appendingPathComponent("d"), root: r.root)
        == Data("d".utf8))
    try r.keybag.unlock(passcode: "1234")
    for (name, _) in files {
      #expect(
        try FileProtection.read(contentsOf: folder.appendingPathComponent(name), root: r.root)
          == Data(name.utf8))
    }
  }

  @Test func theClassSurvivesAtomicWritesAndFoldersGiveTheirs() throws {
    let (r, folder) = try device()
    let url = folder.appendingPathComponent("token")
    try FileProtection.write(
      Data("1".utf8), to: url, options: [.atomic, .completeFileProtection], root: r.root)
    try FileProtection.write(Data("2".utf8), to: url, options: .atomic, root: r.root)
    #expect(try protection(url, r) == "NSFileProtectionComplete", "a rewrite keeps the class")
    #expect(FileProtection.recordedType(ofPath: url.path)?.rawValue == "NSFileProtectionComplete")
    // Foundation's own atomic write makes a new file, without the attribute.
    try Data("3".utf8).write(to: url, options: [.atomic, .completeFileProtection])
    #expect(FileProtection.recordedType(ofPath: url.path) == nil)
    #expect(try protection(url, r) == "NSFileProtectionCompleteUntilFirstUserAuthentication")

    // A folder's class is its files' when they have none.
    let secrets = folder.appendingPathComponent("Secrets")
    try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
    try FileProtection.setAttributes(
      [.protectionKey: FileProtectionType.complete], ofItemAtPath: secrets.path, root: r.root)
    let inside = secrets.appendingPathComponent("note")
    try FileProtection.write(Data("n".utf8), to: inside, root: r.root)
    #expect(try protection(inside, r) == "NSFileProtectionComplete")
    try r.device.lock(grace: .zero)
    expectReadRefused(inside, r)
  }

  @Test func badInputIsRefusedWithTheReason() throws {
    let (r, folder) = try device()
    let url = folder.appendingPathComponent("f")
    try FileProtection.write(Data("f".utf8), to: url, root: r.root)
    let unknown = #expect(throws: AppGroupsError.self) {
      try FileProtection.setProtection(
        FileProtectionType(rawValue: "NSFileProtectionSometimes"), ofItemAt: url, root: r.root)
    }
    #expect(unknown?.code == .invalidName)
    #expect(unknown?.message.contains("is not a protection class") == true)
    let outside = #expect(throws: AppGroupsError.self) {
      try FileProtection.write(
        Data(), to: URL(fileURLWithPath: "/tmp/outside-\(UUID())"), root: r.root)
    }
    #expect(outside?.code == .outsideRoot)
    let missing = #expect(throws: AppGroupsError.self) {
      try FileProtection.setProtection(
        .complete, ofItemAt: folder.appendingPathComponent("none"), root: r.root)
    }
    #expect(missing?.code == .notFound)
    // An attribute written by hand that names no class: refused, not guessed.
    #expect(FileProtection.writeRawAttribute("bogus", ofPath: url.path))
    let damaged = #expect(throws: AppGroupsError.self) {
      try FileProtection.read(contentsOf: url, root: r.root)
    }
    #expect(damaged?.code == .invalidName)
  }

  @Test func aSandboxedAppIsRefusedByTheLibraryNotByTheKernel() throws {
    let t = try LifecycleRoot()
    try t.g.ok(["device", "passcode", "set", "1234"])
    let url = t.root.groupContainerURL(for: TestRoot.group).appendingPathComponent(
      "Library/Caches/a")
    try FileManager.default.createDirectory(
      at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try FileProtection.write(
      Data("a".utf8), to: url, options: .completeFileProtection, root: t.root)
    try t.g.ok(["device", "lock", "--grace", "0"])
    let run = try t.g.run([
      "run", "--as", TestRoot.widget, "--best-effort", "--",
      Product.url("appgroups-worker").path, "protected-read", url.path,
    ])
    #expect(run.stdout == "library 257 EPERM\nraw ok\n", "\(run)")
  }
}

@testable import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// Whether a C compiler is there to build the programs with libraries of their own.
let compilerAvailable = FileManager.default.isExecutableFile(atPath: "/usr/bin/cc")

/// A folder of programs outside the system folders, and a root elsewhere: com.a is entitled
/// to group.a, com.b has a container of its own.
struct ProgramFolder {
  let folder: Sandbox
  let device: Sandbox
  let root: ContainerRoot

  init(_ name: String = #function) throws {
    folder = try Sandbox(name)
    device = try Sandbox(name + "Root")
    root = ContainerRoot(path: device.path)
    for arguments in [["grant", "com.a", "group.a"], ["grant", "com.b", "group.b"]] {
      let result = try Product.run("groupctl", ["--root", root.path] + arguments)
      #expect(result.status == 0, "\(result.stderr)")
    }
  }

  var path: String { folder.path }

  /// Writes `text` at `relative` (folders made), executable when asked.
  @discardableResult
  func write(_ relative: String, _ text: String, executable: Bool = false) throws -> String {
    let path = folder.path + "/" + relative
    try FileManager.default.createDirectory(
      atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    if executable { chmod(path, 0o755) }
    return path
  }

  /// `cc ARGUMENTS` in the folder; the test fails when it does.
  func compile(_ arguments: [String]) throws {
    let result = try Product.run(
      "/bin/sh", ["-c", "cd '\(folder.path)' && cc " + arguments.joined(separator: " ")])
    #expect(result.status == 0, "cc \(arguments): \(result.stderr)")
  }

  /// `bin/hello`, which prints what `libgreet.so` says, linked with `-rpath RUNPATH`
  /// (`DT_RUNPATH`).
  func buildHello(runpath: String, libraryFolder: String = "lib") throws -> String {
    try write("src/greet.c", "const char *greeting(void) { return \"hello from libgreet\"; }\n")
    try write(
      "src/main.c",
      "#include <stdio.h>\nconst char *greeting(void);\nint main(void) { puts(greeting()); return 0; }\n")
    try FileManager.default.createDirectory(
      atPath: libraryFolder.hasPrefix("/") ? libraryFolder : path + "/" + libraryFolder,
      withIntermediateDirectories: true)
    try FileManager.default.createDirectory(atPath: path + "/bin", withIntermediateDirectories: true)
    try compile(["-shared", "-fPIC", "-o", "'\(libraryFolder)/libgreet.so'", "src/greet.c"])
    try compile([
      "-o", "bin/hello", "src/main.c", "-L'\(libraryFolder)'", "-lgreet",
      "-Wl,-rpath,'\(runpath)'", "-Wl,--enable-new-dtags",
    ])
    return path + "/bin/hello"
  }

  func run(
    _ options: [String] = [], _ command: [String], as bundleID: String = "com.a",
    directory: String? = nil, environment: [String: String] = [:]
  ) throws -> (status: Int32, stdout: String, stderr: String) {
    let groupctl = Product.url("groupctl").path
    let line = ([groupctl, "--root", root.path, "run", "--as", bundleID] + options + ["--"] + command)
      .map { "'\($0)'" }.joined(separator: " ")
    return try Product.run(
      "/bin/sh", ["-c", "cd '\(directory ?? path)' && exec \(line)"], environment: environment)
  }
}

@Suite(
  "Sandbox: what a program needs to start", .processBound,
  .enabled(if: landlockAvailable, "the kernel offers no Landlock"))
struct SandboxProgramTests {
  @Test(.enabled(if: compilerAvailable, "no C compiler"))
  func aProgramWithALibraryOfItsOwnThroughRUNPATHStarts() throws {
    let p = try ProgramFolder()
    let hello = try p.buildHello(runpath: "$ORIGIN/../lib")
    let result = try p.run([], [hello])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout == "hello from libgreet\n")
    #expect(result.stderr.isEmpty, "\(result.stderr)")
    // The library alone, not its folder; the folder's other files stay closed.
    try p.write("lib/private.txt", "private")
    let verbose = try p.run(["-v"], [hello])
    #expect(
      verbose.stderr.contains(
        "groupctl: read-execute \(p.path)/lib/libgreet.so (libgreet.so, needed by \(hello)"
          + " (DT_RUNPATH))"), "\(verbose.stderr)")
    let probe = try p.run([], ["/bin/cat", p.path + "/lib/private.txt"])
    #expect(probe.status == 1)
    #expect(probe.stderr.contains("Permission denied"), "\(probe.stderr)")
  }

  @Test(.enabled(if: compilerAvailable, "no C compiler"))
  func aLibraryTheLoaderFindsWhereGroupctlDoesNotLookIsNamedWithRo() throws {
    let p = try ProgramFolder()
    // A relative RUNPATH is taken by the loader from the current folder; groupctl does not
    // follow one.
    let hello = try p.buildHello(runpath: "lib")
    let refused = try p.run([], [hello])
    #expect(refused.status != 0)
    #expect(refused.stdout.isEmpty)
    #expect(
      refused.stderr.contains(
        "groupctl: note: libgreet.so, needed by \(hello), is in none of the folders groupctl"
          + " follows"), "\(refused.stderr)")
    #expect(refused.stderr.contains("--ro PATH allows a file or folder outside the root"))
    #expect(refused.stderr.contains("error while loading shared libraries: libgreet.so"))
    let allowed = try p.run(["--ro", p.path + "/lib"], [hello])
    #expect(allowed.status == 0, "\(allowed.stderr)")
    #expect(allowed.stdout == "hello from libgreet\n")
  }

  @Test(.enabled(if: compilerAvailable, "no C compiler"))
  func aLibraryInAnotherAppsContainerIsRefusedBeforeTheProgramStarts() throws {
    let p = try ProgramFolder()
    let other = p.root.appContainerURL(for: "com.b").path + "/Library/Caches"
    let hello = try p.buildHello(runpath: other, libraryFolder: other)
    let refused = try p.run([], [hello])
    #expect(refused.status == 1)
    #expect(
      refused.stderr
        == "groupctl: cannot run \(hello) as com.a: the sandbox refuses \(other)/libgreet.so"
        + " (libgreet.so, needed by \(hello) (DT_RUNPATH)), which it needs to start; it lies"
        + " inside the root, where the sandbox opens only the app's containers: move it out of"
        + " the root\n")
    // com.b may read its own container: the loader maps the library from there.
    let own = try p.run([], [hello], as: "com.b")
    #expect(own.status == 0, "\(own.stderr)")
    #expect(own.stdout == "hello from libgreet\n")
  }

  @Test func aScriptWhoseInterpreterChainLivesOutsideTheSystemFoldersRuns() throws {
    let p = try ProgramFolder()
    // tools/bin/mysh (a shell outside /usr), tools/bin/wrapper (a script run by it),
    // scripts/run.sh (run by the wrapper), and tools/lib, the interpreter's library folder.
    let shell = p.path + "/tools/bin/mysh"
    try FileManager.default.createDirectory(
      atPath: p.path + "/tools/bin", withIntermediateDirectories: true)
    try FileManager.default.copyItem(atPath: try #require(Paths.realPath("/bin/sh")), toPath: shell)
    let wrapper = try p.write(
      "tools/bin/wrapper", "#!\(shell)\necho \"wrapper runs $1\"\nexec \(shell) \"$1\"\n",
      executable: true)
    try p.write("tools/lib/data.txt", "interpreter data")
    let script = try p.write(
      "scripts/run.sh", "#!\(wrapper)\necho \"script runs\"; cat \(p.path)/tools/lib/data.txt\n",
      executable: true)
    let result = try p.run([], [script])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout == "wrapper runs \(script)\nscript runs\ninterpreter data")
    let verbose = try p.run(["-v"], [script])
    #expect(verbose.stderr.contains("read-execute \(wrapper) (the interpreter of \(script))"))
    #expect(verbose.stderr.contains("read-execute \(shell) (the interpreter of \(wrapper))"))
    #expect(
      verbose.stderr.contains(
        "read-execute \(p.path)/tools/lib (the libraries of the interpreter \(wrapper))"))

    // Through env, found in PATH.
    let viaEnv = try p.write("scripts/env.sh", "#!/usr/bin/env mysh\necho via env\n", executable: true)
    let found = try p.run(
      [], [viaEnv], environment: ["PATH": p.path + "/tools/bin:/usr/bin:/bin"])
    #expect(found.status == 0, "\(found.stderr)")
    #expect(found.stdout == "via env\n")
  }

  @Test func aMalformedProgramGetsAClearErrorAndNothingRuns() throws {
    let p = try ProgramFolder()
    var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: "/bin/true")))
    bytes = Array(bytes.prefix(200))
    let bad = p.path + "/bad"
    try Data(bytes).write(to: URL(fileURLWithPath: bad))
    chmod(bad, 0o755)
    let result = try p.run([], [bad])
    #expect(result.status == 1)
    #expect(
      result.stderr.hasPrefix("groupctl: cannot run \(bad): \(bad) is not a well-formed ELF file:"),
      "\(result.stderr)")
  }
}

@Suite("Sandbox: reading ELF files and the loader's cache")
struct ELFFileTests {
  @Test func aSystemProgramNamesItsInterpreterAndLibraries() throws {
    let elf = try ELFFile(path: "/bin/sh")
    #expect(elf.is64Bit == (MemoryLayout<Int>.size == 8))
    #expect(elf.interpreter.map { FileManager.default.fileExists(atPath: $0) } == true)
    #expect(elf.needed.contains("libc.so.6"))
    let worker = try ELFFile(path: SandboxRoot.worker)
    #expect(worker.runpath?.contains("$ORIGIN") == true, "\(String(describing: worker.runpath))")
    #expect(worker.needed.contains("libFoundation.so"))
  }

  @Test func theLoadersCacheListsTheCLibrary() throws {
    let data = try Array(Data(contentsOf: URL(fileURLWithPath: "/etc/ld.so.cache")))
    let cache = ProgramDependencies.parseLoaderCache(data)
    let paths = try #require(cache["libc.so.6"])
    #expect(paths.allSatisfy { FileManager.default.fileExists(atPath: $0) }, "\(paths)")
    #expect(ProgramDependencies.parseLoaderCache(Array(data.prefix(100))).isEmpty)
    var damaged = data
    for index in stride(from: 48, to: min(damaged.count, 4096), by: 7) { damaged[index] = 0xff }
    _ = ProgramDependencies.parseLoaderCache(damaged)  // no crash
  }

  @Test func everyPrefixAndEveryDamagedByteOfARealFileIsAnErrorOrAReadingNeverACrash() throws {
    let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: "/bin/true")))
    func parse(_ data: [UInt8]) -> Result<ELFFile, ELFFile.Failure> {
      Result { () throws(ELFFile.Failure) in
        try ELFFile(path: "test", size: UInt64(data.count)) { offset, count in
          guard offset <= UInt64(data.count), UInt64(count) <= UInt64(data.count) - offset else {
            return nil
          }
          return Array(data[Int(offset)..<Int(offset) + count])
        }
      }
    }
    let whole = try parse(bytes).get()
    #expect(whole.needed.contains("libc.so.6"))
    // Cut anywhere in its first 4 KiB (headers, interpreter, dynamic section's start).
    var failures = 0
    for length in 0..<min(bytes.count, 4096) {
      if case .failure(let failure) = parse(Array(bytes.prefix(length))) {
        failures += 1
        #expect(failure.description.hasPrefix("test is not a well-formed ELF file: "))
      }
    }
    #expect(failures > 0)
    // Each header byte set to 0xff, then to 0x7f: never a crash.
    var generator = SystemRandomNumberGenerator()
    for index in 0..<min(bytes.count, 1024) {
      for value: UInt8 in [0xff, 0x7f, UInt8.random(in: 0...255, using: &generator)] {
        var damaged = bytes
        damaged[index] = value
        _ = parse(damaged)
      }
    }
    // Named failures.
    var farHeaders = bytes
    for index in 32..<40 { farHeaders[index] = 0x7f }  // e_phoff
    guard case .failure(let far) = parse(farHeaders) else {
      Issue.record("program headers past the end were read")
      return
    }
    #expect(far.reason.contains("lies past the end of the file"), "\(far)")
    guard case .failure(let notELF) = parse(Array("#!/bin/sh\n".utf8)) else {
      Issue.record("a script was read as ELF")
      return
    }
    #expect(notELF.reason == "no ELF magic number")
  }
}

import Foundation

/// The files a program needs to start, found as the kernel and the dynamic loader find them:
/// a script's interpreter chain (`#!`, followed through `env`, four levels at most), an ELF
/// file's interpreter (`PT_INTERP`) and the libraries it needs (`DT_NEEDED`, and theirs in
/// turn) through `DT_RPATH`, `LD_LIBRARY_PATH`, `DT_RUNPATH` (with `$ORIGIN`),
/// `/etc/ld.so.cache` and the default folders.
///
/// See: man 8 ld.so (the library search order), man 2 execve (interpreter scripts).
struct ProgramDependencies: Sendable {
  /// A file the program needs, by real path, and why.
  struct File: Sendable, Equatable {
    var path: String
    var reason: String
  }

  /// The files, the program's own first, each once.
  var files: [File] = []
  /// The library folders of interpreters installed outside the system folders (`PREFIX/lib`
  /// of `PREFIX/bin/python3`), where they keep what they load at run time.
  var interpreterLibraries: [File] = []
  /// What could not be found or read, one sentence each.
  var notes: [String] = []

  /// The most interpreter scripts followed in a chain (the kernel's own bound is 4 nested
  /// interpreters).
  static let maximumInterpreterDepth = 4
  /// The most shared objects followed.
  static let maximumObjects = 1024

  private var seen: Set<String> = []
  private let environment: [String: String]
  private let currentDirectory: String
  private var cache: [String: [String]]?

  /// The dependencies of the program at `executable`, run with `environment` (its `PATH`,
  /// `LD_LIBRARY_PATH` and `LD_PRELOAD` count).
  ///
  /// - Throws: ``ELFFile/Failure`` when `executable` itself starts like an ELF file but is
  ///   not a well-formed one. Trouble with an interpreter or a library is a note instead:
  ///   the loader skips an unusable library as this does.
  init(
    executable: String, environment: [String: String],
    currentDirectory: String = FileManager.default.currentDirectoryPath
  ) throws(ELFFile.Failure) {
    self.environment = environment
    self.currentDirectory = currentDirectory
    let real = Paths.realPath(executable) ?? executable
    add(real, "the program")
    try program(real, depth: 0, topLevel: true)
  }

  private mutating func add(_ path: String, _ reason: String) {
    guard seen.insert(path).inserted else { return }
    files.append(File(path: path, reason: reason))
  }

  /// A program: a script's interpreter chain, or an ELF file's interpreter and libraries.
  private mutating func program(_ path: String, depth: Int, topLevel: Bool) throws(ELFFile.Failure) {
    guard let head = Self.prefix(of: path, count: 256) else { return }
    if head.starts(with: [UInt8(ascii: "#"), UInt8(ascii: "!")]) {
      script(path, head: head, depth: depth)
    } else if head.starts(with: ELFFile.magic) {
      let elf: ELFFile
      do {
        elf = try ELFFile(path: path)
      } catch {
        if topLevel { throw error }
        notes.append("\(error)")
        return
      }
      executable(path, elf)
    }
  }

  /// The first `count` bytes of the regular file at `path` (fewer when it is shorter); `nil`
  /// when it cannot be read.
  static func prefix(of path: String, count: Int) -> [UInt8]? {
    guard let file = try? OpenFile(existing: path, for: .reading, followingLinks: true),
      let status = try? file.status(), status.isRegularFile
    else { return nil }
    return try? file.read(at: 0, count: count)
  }

  /// `#!INTERPRETER [ARGUMENT]`: the kernel runs INTERPRETER (relative paths are taken from
  /// the current folder); through `env`, the first operand is looked up in `PATH`.
  private mutating func script(_ path: String, head: [UInt8], depth: Int) {
    let line = head.dropFirst(2).prefix { $0 != UInt8(ascii: "\n") }
    let words = String(decoding: line, as: UTF8.self)
      .split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
    guard depth < Self.maximumInterpreterDepth else {
      notes.append("\(path): more than \(Self.maximumInterpreterDepth) nested interpreters")
      return
    }
    guard let named = words.first else {
      notes.append("\(path) starts with #! but names no interpreter")
      return
    }
    var interpreter = named.hasPrefix("/") ? named : currentDirectory + "/" + named
    guard let real = Paths.realPath(interpreter) else {
      notes.append("\(path) names the interpreter \(named), which does not exist")
      return
    }
    add(real, "the interpreter of \(path)")
    interpreterLibrary(real)
    if (real as NSString).lastPathComponent == "env" {
      // `env [-S] [-i] [NAME=VALUE]… PROGRAM`: the kernel passes everything after the
      // interpreter as one argument; `env -S` splits it.
      let operands = words.dropFirst().filter { !$0.hasPrefix("-") && !$0.contains("=") }
      if let name = operands.first {
        let searchPath = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        guard let found = try? Paths.executable(named: name, searchPath: searchPath) else {
          notes.append("\(path) runs \(name) through env, which is not in PATH")
          return
        }
        interpreter = Paths.realPath(found) ?? found
        add(interpreter, "the program env runs for \(path)")
        interpreterLibrary(interpreter)
        try? program(interpreter, depth: depth + 1, topLevel: false)
      }
    }
    try? program(real, depth: depth + 1, topLevel: false)
  }

  /// `PREFIX/lib` of an interpreter at `PREFIX/bin/NAME` outside the system folders.
  private mutating func interpreterLibrary(_ interpreter: String) {
    guard !SandboxRuleset.isBelowSystemFolder(interpreter) else { return }
    let bin = FileSystem.folder(of: interpreter)
    guard (bin as NSString).lastPathComponent == "bin" else { return }
    let library = FileSystem.folder(of: bin) + "/lib"
    guard FileStatus(atPath: library, followingLinks: true)?.kind == .folder,
      !interpreterLibraries.contains(where: { $0.path == library })
    else { return }
    interpreterLibraries.append(
      File(path: library, reason: "the libraries of the interpreter \(interpreter)"))
  }

  /// An ELF executable or library: its interpreter and every library it needs, breadth first.
  private mutating func executable(_ path: String, _ elf: ELFFile) {
    if let interpreter = elf.interpreter {
      if let real = Paths.realPath(interpreter) {
        add(real, "the ELF interpreter of \(path)")
      } else {
        notes.append("\(path) names the ELF interpreter \(interpreter), which does not exist")
      }
    }
    var preload: [String] = []
    if let names = environment["LD_PRELOAD"] {
      preload = names.split(whereSeparator: { $0 == ":" || $0 == " " }).map(String.init)
    }
    var queue: [(path: String, elf: ELFFile, names: [String])] = [(path, elf, preload + elf.needed)]
    var objects = 1
    while !queue.isEmpty {
      let (object, objectELF, names) = queue.removeFirst()
      for name in names {
        let found = locate(name, neededBy: object, objectELF, executable: elf)
        if found.isEmpty {
          notes.append(
            "\(name), needed by \(object), is in none of the folders groupctl follows"
              + " (absolute DT_RPATH and DT_RUNPATH with $ORIGIN, LD_LIBRARY_PATH,"
              + " /etc/ld.so.cache, /lib, /usr/lib); if the program does not start, the sandbox"
              + " may be refusing it where the loader finds it: --ro PATH allows a file or"
              + " folder outside the root")
        }
        for (library, libraryELF, how) in found where !seen.contains(library) {
          add(library, "\(name), needed by \(object) (\(how))")
          objects += 1
          guard objects <= Self.maximumObjects else {
            notes.append("more than \(Self.maximumObjects) shared objects: the rest is not followed")
            return
          }
          queue.append((library, libraryELF, libraryELF.needed))
        }
      }
    }
  }

  /// Where the loader finds `name` for `object`: the first match in the search order, or every
  /// entry of the cache for it (each variant the loader may choose); empty when none.
  private mutating func locate(
    _ name: String, neededBy object: String, _ objectELF: ELFFile, executable: ELFFile
  ) -> [(String, ELFFile, String)] {
    func usable(_ candidate: String) -> (String, ELFFile)? {
      guard let real = Paths.realPath(candidate),
        FileStatus(atPath: real, followingLinks: true)?.kind == .regularFile,
        let elf = try? ELFFile(path: real),
        elf.is64Bit == objectELF.is64Bit, elf.machine == objectELF.machine
      else { return nil }
      return (real, elf)
    }
    if name.contains("/") {
      let path = name.hasPrefix("/") ? name : currentDirectory + "/" + name
      return usable(path).map { [($0.0, $0.1, "by path")] } ?? []
    }
    let origin = FileSystem.folder(of: object)
    var folders: [(String, String)] = []
    if objectELF.runpath == nil {
      for folder in objectELF.rpath ?? [] { folders.append((folder, "DT_RPATH")) }
      if executable.runpath == nil {
        for folder in executable.rpath ?? [] { folders.append((folder, "the program's DT_RPATH")) }
      }
    }
    for folder in (environment["LD_LIBRARY_PATH"] ?? "").split(separator: ":") {
      folders.append((String(folder), "LD_LIBRARY_PATH"))
    }
    for folder in objectELF.runpath ?? [] { folders.append((folder, "DT_RUNPATH")) }
    for (folder, how) in folders {
      guard let expanded = Self.expand(folder, origin: origin) else { continue }
      if let (real, elf) = usable(expanded + "/" + name) { return [(real, elf, how)] }
    }
    let cached = loaderCache()[name, default: []].compactMap(usable)
    if !cached.isEmpty { return cached.map { ($0.0, $0.1, "/etc/ld.so.cache") } }
    for folder in Self.defaultFolders(is64Bit: objectELF.is64Bit) {
      if let (real, elf) = usable(folder + "/" + name) { return [(real, elf, "default folder")] }
    }
    return []
  }

  /// `folder` with `$ORIGIN` (and `${ORIGIN}`) replaced by `origin`; `nil` when it holds
  /// another token (`$LIB`, `$PLATFORM`) or is relative.
  static func expand(_ folder: String, origin: String) -> String? {
    let expanded = folder.replacingOccurrences(of: "${ORIGIN}", with: origin)
      .replacingOccurrences(of: "$ORIGIN", with: origin)
    guard !expanded.contains("$"), expanded.hasPrefix("/") else { return nil }
    return expanded
  }

  static func defaultFolders(is64Bit: Bool) -> [String] {
    var folders: [String] = []
    #if arch(x86_64)
      folders += ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"]
    #elseif arch(arm64)
      folders += ["/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"]
    #endif
    if is64Bit { folders += ["/lib64", "/usr/lib64"] }
    return folders + ["/lib", "/usr/lib"]
  }

  private mutating func loaderCache() -> [String: [String]] {
    if let cache { return cache }
    let parsed = (try? FileSystem.read("/etc/ld.so.cache")?.0).map { Self.parseLoaderCache(Array($0)) }
    cache = parsed ?? [:]
    return cache ?? [:]
  }

  /// The libraries `/etc/ld.so.cache` lists (glibc's format `glibc-ld.so.cache1.1`, possibly
  /// after the old `ld.so-1.7.0` part): each name with its paths, in the cache's order.
  /// Whatever does not hold up is left out.
  static func parseLoaderCache(_ data: [UInt8]) -> [String: [String]] {
    let magic = Array("glibc-ld.so.cache1.1".utf8)
    // The new part starts at 0, or after the old part, 8-aligned: look for it.
    var start: Int?
    var offset = 0
    while offset + magic.count <= min(data.count, 1 << 20) {
      if data[offset..<offset + magic.count].elementsEqual(magic) {
        start = offset
        break
      }
      offset += 4
    }
    guard let base = start, base + 48 <= data.count else { return [:] }
    func u32(_ at: Int) -> Int {
      Int(data[at]) | Int(data[at + 1]) << 8 | Int(data[at + 2]) << 16 | Int(data[at + 3]) << 24
    }
    func string(_ at: Int) -> String? {
      let position = base + at
      guard at >= 0, position < data.count, let end = data[position...].firstIndex(of: 0) else {
        return nil
      }
      return String(decoding: data[position..<end], as: UTF8.self)
    }
    let count = u32(base + 20)
    var libraries: [String: [String]] = [:]
    for index in 0..<min(count, 1 << 20) {
      let entry = base + 48 + index * 24
      guard entry + 24 <= data.count else { break }
      guard let key = string(u32(entry + 4)), let value = string(u32(entry + 8)) else { continue }
      libraries[key, default: []].append(value)
    }
    return libraries
  }
}

extension SandboxRuleset {
  /// Read-execute, each file alone: what the program at `executable` needs to start that no
  /// rule allows yet (its interpreters, its libraries; see ``ProgramDependencies``), and the
  /// `lib` folder of an interpreter installed outside the system folders. Nothing inside the
  /// root, and no folder that holds it.
  ///
  /// - Throws: `.io` when `executable` starts like an ELF file but is not a well-formed one.
  mutating func addProgramFiles(
    _ executable: String, environment: [String: String]
  ) throws(AppGroupsError) {
    let dependencies: ProgramDependencies
    do {
      dependencies = try ProgramDependencies(executable: executable, environment: environment)
    } catch {
      throw AppGroupsError(.io, "cannot run \(executable): \(error)")
    }
    notes += dependencies.notes
    for (index, file) in dependencies.files.enumerated() {
      let rule = Rule(path: file.path, access: .readExecute, purpose: file.reason)
      // Inside the root, the app's containers alone are open, and nothing is run: the
      // program itself is refused by execve, what it loads is checked like the rest.
      if protectedPaths.contains(where: { Self.isWithin(file.path, $0) }) {
        if index > 0 { programFiles.append(rule) }
        continue
      }
      programFiles.append(rule)
      if !allowsRunning(file.path) { append(rule) }
    }
    for library in dependencies.interpreterLibraries where !allowsRunning(library.path) {
      if let held = protectedPath(heldBy: library.path) {
        notes.append("\(library.path) (\(library.reason)) holds the root \(held), so it is left out")
      } else if !protectedPaths.contains(where: { Self.isWithin(library.path, $0) }) {
        allow(.readExecute, library.path, purpose: library.reason)
      }
    }
  }

  /// Whether a read-execute rule already allows `path` (a real path).
  func allowsRunning(_ path: String) -> Bool {
    rules.contains { rule in
      rule.access == .readExecute && Self.isWithin(path, Paths.realPath(rule.path) ?? rule.path)
    }
  }

  /// The files of ``programFiles`` the calling thread cannot open for reading: after
  /// ``restrictCurrentThread(abi:allThreads:)``, what the sandbox refuses the program before it
  /// even starts. Empty when all can be read.
  ///
  /// The corresponding system call is `open(2)`, which Landlock answers `EACCES`.
  public func refusedProgramFiles() -> [Rule] {
    programFiles.filter { rule in
      do throws(SystemCallError) {
        _ = try OpenFile(existing: rule.path, for: .reading, followingLinks: true)
        return false
      } catch {
        return error.code == .permissionDenied
      }
    }
  }
}

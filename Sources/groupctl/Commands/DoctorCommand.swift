import AppGroups
import Foundation

/// `groupctl doctor [--sharing GROUP-ID BUNDLE-ID BUNDLE-ID...]`
struct DoctorCommand: ParsableCommand {
  static let sharingGroup = Argument.option(
    "--sharing", value: "GROUP-ID", help: "Check that the BUNDLE-IDs share GROUP-ID, end to end.")
  static let locks = Argument.flag(
    "--locks", help: "Report stopped processes that hold a lock in a group container.")
  /// The apps of `--sharing GROUP-ID BUNDLE-ID...`.
  static let apps = Argument.positionals("BUNDLE-ID")

  static let configuration = CommandConfiguration(
    commandName: "doctor",
    abstract: "Check the root, manifest, containers and preferences files for problems.",
    arguments: [sharingGroup, locks, apps],
    usage: """
      doctor
      doctor --sharing GROUP-ID BUNDLE-ID BUNDLE-ID...
      doctor --locks
      """,
    discussion: """
      Checks that the manifest loads and that the executables it binds exist; that \
      every folder in the containers is a real folder with mode 0700 and every file \
      has mode 0600 (no symbolic links); that every preferences file, forced or not, \
      can be read; and looks for what crashes and failures leave behind: lock files \
      whose preferences file is gone, temporary files of writers that were stopped \
      mid-write, and unreadable files that were moved aside (*.plist.unreadable-*, \
      *.plist.journal.unreadable-*). \
      Each finding says what to do about it. Files that a running process still has \
      open, or is writing, are left alone.

      With --sharing, checks instead that the apps really share the group: each \
      app's entitlement and executable binding, the group container, and a round \
      trip: each app in turn writes a value in a child process, inside its own \
      Landlock sandbox as groupctl run confines it, and every other app reads it \
      in another child process, inside its sandbox. A verdict per app follows; the \
      value is removed afterwards. Without Landlock the children run unconfined, \
      and a note says so.

      With --locks, looks instead for every process of the machine that is stopped \
      (state T in /proc/PID/stat: suspended, SIGSTOP, a debugger, job control) while it \
      holds a lock (flock, POSIX or OFD) on a file in one of the root's group \
      containers: every other app that needs the file waits for it, the deadlock iOS \
      prevents by terminating such an app (0xdead10cc). One problem line per lock.

      Exits with 0 when it finds no problem and with 1 when it finds one. Notes, \
      such as a lock file left behind when its suite's file was removed (harmless), \
      do not count as problems.
      """
  )

  let arguments: Arguments
  /// `--sharing GROUP-ID BUNDLE-ID...`
  let sharing: (group: String, apps: [String])?

  init(arguments: Arguments) throws {
    self.arguments = arguments
    let apps = arguments[Self.apps]
    if let group = arguments[Self.sharingGroup] {
      sharing = (group, apps)
    } else if let extra = apps.first {
      throw ValidationError("unexpected argument '\(extra)'")
    } else {
      sharing = nil
    }
  }

  func validate() throws {
    try globals.requireAdministrator("doctor")
    if arguments[Self.locks], sharing != nil {
      throw ValidationError("--locks and --sharing are separate checks; give one")
    }
    guard let sharing else { return }
    guard sharing.group.hasPrefix("group.") else {
      throw ValidationError("'\(sharing.group)' is not a group id (group.…)")
    }
    guard sharing.apps.count >= 2 else {
      throw ValidationError("doctor --sharing needs at least two BUNDLE-IDs to share the group")
    }
    guard Set(sharing.apps).count == sharing.apps.count else {
      throw ValidationError("doctor --sharing names an app twice")
    }
    for app in sharing.apps {
      do {
        _ = try AppIdentity(bundleIdentifier: app)
      } catch {
        throw ValidationError(error.message)
      }
    }
  }

  func run() throws {
    if arguments[Self.locks] {
      try checkLocks()
      return
    }
    if let sharing {
      var check = SharingCheck(
        root: globals.containerRoot, group: sharing.group, apps: sharing.apps)
      check.examine()
      for line in check.report() { printOut(line) }
      if check.problemCount > 0 { throw ExitCode.failure }
      return
    }
    var doctor = Doctor(root: globals.containerRoot)
    doctor.examine()
    for line in doctor.report() { printOut(line) }
    if doctor.problemCount > 0 { throw ExitCode.failure }
  }
}

extension DoctorCommand {
  /// `doctor --locks`: stopped processes holding a lock in a group container.
  func checkLocks() throws {
    let root = globals.containerRoot
    // A mistyped root holds no lock: said, and not taken for a clean bill.
    guard FileManager.default.fileExists(atPath: root.path) else {
      warnIfMissing(root)
      throw ExitCode.failure
    }
    let device = Device(root: root)
    device.pruneStaleRecords()
    let apps = device.appsByProcess()
    let hazards = device.stoppedProcessesHoldingLocks()
    for hazard in hazards {
      // A process of an app is named with the app: its first process, which resume takes.
      let app = apps[hazard.pid]
      let who =
        app.map { record in
          record.pid == hazard.pid
            ? "\(record.bundleIdentifier) (\(hazard.pid))"
            : "\(record.bundleIdentifier) (\(record.pid)), its process \(hazard.pid) (\(PrintedText.shown(hazard.name))),"
        } ?? "\(PrintedText.shown(hazard.name)) (\(hazard.pid))"
      for lock in hazard.locks {
        printOut(
          lock.isKeychain
            ? "problem: \(who) is stopped while it holds the keychain's lock of access group"
              + " \(lock.groupIdentifier) (\(lock.shownPath)); every write to the access group waits"
              + " for it (on iOS the keychain daemon holds this lock, not the app)"
            : "problem: \(who) is stopped while it holds \(lock.subject) in"
              + " group \(lock.groupIdentifier) (\(lock.kind.rawValue)); every process that needs"
              + " the file waits for it (0xdead10cc on iOS)")
        printOut(
          "  fix: release the lock before the suspension (AppLifecycle.onSuspend), or"
            + " 'groupctl resume \(app?.pid ?? hazard.pid)'")
      }
    }
    let escaped = device.escapedProcessesHoldingLocks()
    for stray in escaped {
      for lock in stray.locks {
        printOut(
          "problem: \(stray.bundleIdentifier) is suspended, but process \(stray.process),"
            + " which carries its identity outside its process tree, runs on holding a lock on"
            + " \(lock.shownPath) in group \(lock.groupIdentifier) (\(lock.kind.rawValue)); every"
            + " process that needs the file waits for it")
        printOut(
          "  fix: end it ('kill \(stray.process.pid)'), or start it under the app without"
            + " leaving its tree (a double fork from a process 'groupctl run' did not start)")
      }
    }
    // Each lock once: an flock or OFD lock passed on through fork is one lock, held by each
    // stopped process that has the file open (each said above).
    let count = Set(
      (hazards.flatMap(\.locks) + escaped.flatMap(\.locks)).map {
        "\($0.kind) \($0.isExclusive) \($0.start) \($0.path)"
      }
    ).count
    printOut(
      count == 0
        ? "No stopped process holds a lock in a group container of \(root.path)."
        : "\(count) lock(s) held by stopped processes in \(root.path).")
    if count > 0 { throw ExitCode.failure }
  }
}

/// The checks of `groupctl doctor` and what they found.
struct Doctor {
  enum Severity: String {
    case ok, note, problem
  }

  struct Finding {
    var severity: Severity
    var message: String
    var advice: String?
  }

  let root: ContainerRoot
  var findings: [Finding] = []
  /// Every path some running process has open (from `/proc/*/fd`), by path.
  let openFiles: [String: Int32]

  init(root: ContainerRoot) {
    self.root = root
    openFiles = Self.filesOpenByProcesses()
  }

  var problemCount: Int { findings.filter { $0.severity == .problem }.count }

  mutating func add(_ severity: Severity, _ message: String, _ advice: String? = nil) {
    findings.append(Finding(severity: severity, message: message, advice: advice))
  }

  func report() -> [String] {
    var lines: [String] = []
    for finding in findings {
      lines.append("\(finding.severity.rawValue): \(finding.message)")
      if let advice = finding.advice { lines.append("  fix: \(advice)") }
    }
    let count = problemCount
    lines.append(
      count == 0
        ? "No problems found in \(root.path)."
        : "\(count) \(count == 1 ? "problem" : "problems") found in \(root.path).")
    return lines
  }

  // MARK: Checks

  mutating func examine() {
    guard let status = FileStatus(atPath: root.path) else {
      add(
        .problem, "the root \(root.path) does not exist",
        "check --root or APPGROUPS_ROOT; grant and write create the root on first use")
      return
    }
    guard status.kind == .folder else {
      add(.problem, "the root \(root.path) is not a folder", "point --root at a folder")
      return
    }
    let manifest = checkManifest()
    let containers = checkContainers(manifest: manifest)
    checkKeychain(manifest: manifest)
    checkCoordination()
    let (files, folders) = walk(containers)
    add(
      .ok,
      "\(folders) \(folders == 1 ? "folder" : "folders") and \(files)"
        + " \(files == 1 ? "file" : "files") checked under \(root.path)")
  }

  /// Loads the manifest; checks the executables it binds.
  mutating func checkManifest() -> EntitlementManifest? {
    let path = root.manifestURL.path
    checkLeftovers(in: root.path, names: Self.folderEntries(root.path))
    guard FileManager.default.fileExists(atPath: path) else {
      add(
        .note, "no manifest at \(path): no app is entitled to any group",
        "groupctl grant BUNDLE-ID GROUP-ID... makes one")
      return nil
    }
    let manifest: EntitlementManifest
    do {
      manifest = try EntitlementManifest.load(root: root)
    } catch {
      add(
        .problem, "the manifest cannot be used: \(error.message); every group is refused",
        "fix \(path) (plutil -lint \(path) points at the error), or move it aside and grant"
          + " again with groupctl grant")
      return nil
    }
    let groups = Set(manifest.entries.values.flatMap(\.applicationGroups))
    add(
      .ok,
      "manifest \(path): \(manifest.entries.count) \(manifest.entries.count == 1 ? "app" : "apps"),"
        + " \(groups.count) \(groups.count == 1 ? "group" : "groups")")
    for (bundleID, entry) in manifest.entries.sorted(by: { $0.key < $1.key }) {
      if entry.executableIsBareName, let name = entry.executable {
        add(
          .problem,
          "\(bundleID) is bound to '\(name)', a bare file name, which any program of that name"
            + " could claim: it binds no program, so every process is refused \(bundleID)"
            + " until it is bound to one file",
          "groupctl grant \(bundleID) --executable PATH (a bare name is looked up in PATH and"
            + " the absolute path kept)")
        continue
      }
      guard let executable = entry.executable, executable.hasPrefix("/") else { continue }
      if !FileManager.default.isExecutableFile(atPath: executable) {
        add(
          .problem,
          "\(bundleID) is bound to the executable \(executable), which does not exist or is not"
            + " executable: no process can claim \(bundleID)",
          "groupctl grant \(bundleID) GROUP-ID --executable PATH with the right path,"
            + " or groupctl revoke \(bundleID)")
      }
    }
    return manifest
  }

  /// The container folders to walk, with notes on group containers.
  mutating func checkContainers(manifest: EntitlementManifest?) -> [String] {
    let held = Set(manifest?.entries.values.flatMap(\.applicationGroups) ?? [])
    let groupsFolder = root.url.appendingPathComponent("Shared/AppGroup").path
    let present = Set(Self.folderEntries(groupsFolder))
    let missing = held.subtracting(present).count
    if !held.isEmpty {
      add(
        .ok,
        "\(held.count - missing) of \(held.count) group containers exist"
          + (missing > 0 ? " (the others are created when an app first opens them)" : ""))
    }
    if manifest != nil {
      for group in present.subtracting(held).sorted() {
        add(
          .note,
          "no app holds \(group); its container \(groupsFolder)/\(group) stays on disk",
          "remove the container if its data is no longer needed")
      }
    }
    return ["Data", "Shared", "Global", "Managed"].map { root.path + "/" + $0 }
  }

  /// Walks each folder that exists; returns the files and folders seen. In the keychain's
  /// folders (`keychain`), files are checked for their mode and leftovers only: the items file
  /// is the keychain's, read by ``checkKeychain(manifest:)`` as a keychain call reads it, not a
  /// preferences file.
  mutating func walk(_ tops: [String], keychain: Bool = false) -> (files: Int, folders: Int) {
    var files = 0
    var folders = 0
    var stack = tops.filter { FileStatus(atPath: $0) != nil }.reversed().map { $0 }
    while let path = stack.popLast() {
      guard let status = FileStatus(atPath: path) else { continue }
      if status.kind == .symbolicLink {
        checkLink(path)
        continue
      }
      let mode = status.permissions
      if status.kind == .folder && isTemporaryFolder(path) {
        continue  // groupctl run's TMPDIR: the app's own scratch files, any mode
      }
      if status.kind == .folder {
        folders += 1
        if mode != 0o700 {
          add(
            .problem, "\(path) has mode \(Self.octal(mode)), not 0700: other users can reach it",
            "chmod 700 '\(path)'")
        }
        let names = Self.folderEntries(path)
        checkLeftovers(in: path, names: names, keychain: keychain)
        for name in names.sorted().reversed() { stack.append(path + "/" + name) }
        continue
      }
      files += 1
      if mode != 0o600 {
        add(
          .problem, "\(path) has mode \(Self.octal(mode)), not 0600: other users can read it",
          "chmod 600 '\(path)'")
      }
      if path.hasSuffix(".plist") && !keychain { checkPreferencesFile(path) }
    }
    return (files, folders)
  }

  /// Whether `path` is an app container's `tmp` folder, which `groupctl run` makes for TMPDIR.
  func isTemporaryFolder(_ path: String) -> Bool {
    let apps = root.url.appendingPathComponent("Data/Application").path + "/"
    guard path.hasPrefix(apps), path.hasSuffix("/tmp") else { return false }
    return path.dropFirst(apps.count).split(separator: "/").count == 2
  }

  mutating func checkLink(_ path: String) {
    let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?"
    let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    let outside = !(resolved + "/").hasPrefix(root.path + "/")
    add(
      .problem,
      "\(path) is a symbolic link to \(target)"
        + (outside ? ", outside the root" : "") + "; AppGroups refuses to follow it",
      "replace it with a real folder or file (or remove it)")
  }

  /// A preferences file, read as an app reads it (``StoredSuite``): one that cannot be read,
  /// values left out of one that can, a damaged journal, a malformed schema marker.
  mutating func checkPreferencesFile(_ path: String) {
    let managed = path.hasPrefix(root.managedPreferencesDirectoryURL.path + "/")
    guard path != root.manifestURL.path else { return }  // checked by checkManifest
    let suite: StoredSuite
    do {
      guard let read = try StoredSuite.read(plistAt: path) else { return }
      suite = read
    } catch where error.code == .io {
      add(.problem, "\(path) cannot be read: \(error.message)", "check its owner and mode")
      return
    } catch {
      if managed {
        add(
          .problem, "\(path) cannot be read (\(error.message)): its forced values are ignored",
          "fix it, or remove it and force the values again with groupctl force")
      } else {
        add(
          .problem,
          "\(path) cannot be read (\(error.message)); the suite reads as empty, and the next app"
            + " that opens it moves the file aside",
          "look at it (plutil -p '\(path)'); fix it, or move it away and import what you can"
            + " with groupctl import")
      }
      return
    }
    if !suite.skipped.isEmpty {
      add(
        .problem,
        "\(path): \(suite.skipped.count) value(s) cannot be read: \(suite.skipped.joined(separator: ", "));"
          + (managed
            ? " they are not forced; the other keys are"
            : " apps read the other keys; the first app that opens the suite keeps a copy of the"
              + " whole file aside, and the next write leaves these values out"),
        "look at the values (plutil -p '\(path)'), and write them again as property-list values")
    }
    if !managed, let problem = suite.journalOfAnotherVersion {
      add(
        .problem, problem,
        "look at what it holds before the next write keeps it aside; to keep its changes,"
          + " write them again (groupctl write)")
    }
    if !managed, let problem = suite.journalGone {
      add(
        .problem, problem,
        "write again what was lost (groupctl write), if it is known; any write of the suite"
          + " stops its lock file publishing the journal")
    }
    if !managed, let damage = suite.journalDamage {
      add(
        .problem,
        "\(path).journal, the suite's last small commits, cannot be read whole: \(damage);"
          + (suite.journalRecordsRead
            ? " the next write (or the next app that opens the suite) folds what can be read of it"
              + " into the plist and moves it aside"
            : " nothing of it is read; the next write (or the next app that opens the suite) moves"
              + " it aside"),
        "write any key of the suite (groupctl write) to \(suite.journalRecordsRead ? "fold it" : "move it aside")"
          + " now, then look at what was kept aside")
    }
    if !managed, case .malformed(_, let holds) = PreferenceSchema.Marker(suite.values[PreferenceSchema.markerKey]) {
      add(
        .problem,
        "\(path): its schema marker \(PreferenceSchema.markerKey) holds \(holds), not a version"
          + " (an integer of 0 or more): apps that register a schema migrate nothing until it is"
          + " fixed",
        "write the version the values are at (groupctl write DOMAIN \(PreferenceSchema.markerKey)"
          + " -int N), or delete the marker if they were written before any schema")
    }
  }

  /// Lock files whose preferences file is gone, temporary files of stopped
  /// writers, and files moved aside because they could not be read. In a keychain access
  /// group's folder (`keychain`), what is left is said in the keychain's words.
  mutating func checkLeftovers(in folder: String, names: [String], keychain: Bool = false) {
    let present = Set(names)
    for name in names.sorted() {
      let path = folder + "/" + name
      if name.hasSuffix(".plist" + SuiteLockFile.suffix) {
        // An access group's lock file records nothing: alone, it is an empty file.
        guard !keychain else { continue }
        let plist = String(name.dropLast(SuiteLockFile.suffix.count))
        guard !present.contains(plist) else { continue }
        // A suite's lock file is made when the suite is opened, and stays a
        // page of zeros until the first commit records the token in it
        // (Storage/SuiteLockFile.swift): one without its plist is normal for
        // a suite that was opened and never written, or that is open now.
        guard openFiles[path] == nil, !Self.isAllZero(path) else { continue }
        add(
          .note,
          "\(path) was left behind: \(plist) was written once and is gone now, and no process"
            + " has the suite open; it is harmless",
          "rm '\(path)' to tidy up")
      } else if name.hasSuffix(".plist" + SuiteJournal.suffix) {
        // A large suite's journal (Storage/SuiteJournal.swift) names the version of the plist
        // it belongs to; one whose plist is gone is never read again.
        let plist = String(name.dropLast(SuiteJournal.suffix.count))
        guard !present.contains(plist), openFiles[path] == nil else { continue }
        add(
          .note,
          "\(path) was left behind: \(plist) is gone, and the journal of its last small commits"
            + " is never read without it; it is harmless",
          "rm '\(path)' to tidy up")
      } else if name.hasPrefix("."), let range = name.range(of: ".plist.journal.tmp-") ?? name.range(of: ".plist.tmp-") {
        let rest = name[range.upperBound...]
        let pid = rest.split(separator: "-").first.flatMap { Int32($0) }
        if let pid, Processes.exists(pid) {
          add(.note, "\(path) is being written by process \(pid)")
          continue
        }
        add(
          .problem,
          "\(path) is a temporary file left by a writer that was stopped mid-write;"
            + " \(name.dropFirst().prefix(upTo: range.lowerBound)).plist itself is intact",
          "rm '\(path)' (the next write to the \(keychain ? "access group" : "suite") removes it too)")
      } else if let range = name.range(of: ".plist.journal.unreadable-") {
        let original = folder + "/" + name[..<range.lowerBound] + ".plist"
        guard FileStatus(atPath: path)?.kind == .regularFile else {
          add(
            .problem,
            "\(path) stood where the journal of \(original) belongs, and was moved aside",
            "look at it, restore what you need with groupctl write, then delete it")
          continue
        }
        add(
          .problem,
          "\(path) is a suite's journal that could not be read whole, moved aside; the records"
            + " that could be read were folded into \(original), the others were not",
          "look at it (the records are binary property lists after a 40-byte header), restore"
            + " what you need with groupctl write, then delete it")
      } else if let range = name.range(of: ".plist.unreadable-") {
        let original = folder + "/" + name[..<range.lowerBound] + ".plist"
        if keychain {
          let group = URL(fileURLWithPath: folder).lastPathComponent
          add(
            .problem,
            "\(path) was moved aside by a keychain call: it was not a keychain file, and"
              + " access group \(group) started again empty",
            "look at it (plutil -p '\(path)'), add again the items you need with groupctl"
              + " keychain add-generic-password, then delete it")
          continue
        }
        // Read as the library reads it: a copy of a file read in part is not one that
        // started the suite again.
        if let copy = try? StoredSuite.read(plistAt: path), !copy.skipped.isEmpty {
          add(
            .problem,
            "\(path) is a copy of \(original), kept when \(copy.skipped.count) of its values could"
              + " not be read (\(copy.skipped.joined(separator: ", "))); its other"
              + " \(copy.values.count) key(s) stayed in \(original)",
          "look at it (plutil -p '\(path)'), write again what you need of the values left out,"
            + " then delete it")
          continue
        }
        add(
          .problem,
          "\(path) is a preferences file that could not be read and was moved aside;"
            + " \(original) started again empty",
          "look at it (plutil -p '\(path)'), restore what you need with groupctl import or"
            + " groupctl write, then delete it")
      }
    }
  }

  // MARK: File system

  static func folderEntries(_ path: String) -> [String] {
    (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
  }

  /// Whether a file holds only zero bytes (or nothing), or cannot be read.
  static func isAllZero(_ path: String) -> Bool {
    guard let handle = FileHandle(forReadingAtPath: path) else { return true }
    defer { try? handle.close() }
    let data = (try? handle.read(upToCount: 1 << 16)) ?? nil
    return data?.allSatisfy { $0 == 0 } ?? true
  }

  static func octal(_ mode: UInt32) -> String {
    let digits = String(mode, radix: 8)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
  }

  /// The files other processes have open, from `/proc/*/fd`, as far as
  /// this user may look. (A process with a suite open keeps its lock file open.)
  static func filesOpenByProcesses() -> [String: Int32] {
    var open: [String: Int32] = [:]
    let me = Processes.currentID
    for entry in folderEntries("/proc") {
      guard let pid = Int32(entry), pid != me else { continue }
      let folder = "/proc/\(entry)/fd"
      for descriptor in folderEntries(folder) {
        if let target = try? FileManager.default.destinationOfSymbolicLink(
          atPath: folder + "/" + descriptor)
        {
          open[target] = pid
        }
      }
    }
    return open
  }
}

import AppGroups
import Foundation
import Glibc

/// `groupctl doctor`
struct DoctorCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "doctor",
    abstract: "Check the root, manifest, containers and preferences files for problems.",
    usage: "doctor",
    discussion: """
      Checks that the manifest loads and that the executables it binds exist; that \
      every folder in the containers is a real folder with mode 0700 and every file \
      has mode 0600 (no symbolic links); that every preferences file, forced or not, \
      can be read; and looks for what crashes and failures leave behind: lock files \
      whose preferences file is gone, temporary files of writers that were stopped \
      mid-write, and unreadable files that were moved aside (*.plist.unreadable-*). \
      Each finding says what to do about it. Files that a running process still has \
      open, or is writing, are left alone.

      Exits with 0 when it finds no problem and with 1 when it finds one. Notes, \
      such as a lock file left behind when its suite's file was removed (harmless), \
      do not count as problems.
      """
  )

  let globals: GlobalOptions

  init(arguments: inout ArgumentReader, globals: GlobalOptions) throws {
    self.globals = globals
  }

  func validate() throws {
    try globals.requireAdministrator("doctor")
  }

  func run() throws {
    var doctor = Doctor(root: globals.containerRoot)
    doctor.examine()
    for line in doctor.report() { printOut(line) }
    if doctor.problemCount > 0 { throw ExitCode.failure }
  }
}

/// The checks of `groupctl doctor` and what they found.
private struct Doctor {
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
    guard let status = Self.linkStatus(root.path) else {
      add(
        .problem, "the root \(root.path) does not exist",
        "check --root or APPGROUPS_ROOT; grant and write create the root on first use")
      return
    }
    guard Self.isFolder(status) else {
      add(.problem, "the root \(root.path) is not a folder", "point --root at a folder")
      return
    }
    let manifest = checkManifest()
    let containers = checkContainers(manifest: manifest)
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

  /// Walks each folder that exists; returns the files and folders seen.
  mutating func walk(_ tops: [String]) -> (files: Int, folders: Int) {
    var files = 0
    var folders = 0
    var stack = tops.filter { Self.linkStatus($0) != nil }.reversed().map { $0 }
    while let path = stack.popLast() {
      guard let status = Self.linkStatus(path) else { continue }
      if Self.isLink(status) {
        checkLink(path)
        continue
      }
      let mode = status.st_mode & 0o7777
      if Self.isFolder(status) {
        folders += 1
        if mode != 0o700 {
          add(
            .problem, "\(path) has mode \(Self.octal(mode)), not 0700: other users can reach it",
            "chmod 700 '\(path)'")
        }
        let names = Self.folderEntries(path)
        checkLeftovers(in: path, names: names)
        for name in names.sorted().reversed() { stack.append(path + "/" + name) }
        continue
      }
      files += 1
      if mode != 0o600 {
        add(
          .problem, "\(path) has mode \(Self.octal(mode)), not 0600: other users can read it",
          "chmod 600 '\(path)'")
      }
      if path.hasSuffix(".plist") { checkPreferencesFile(path) }
    }
    return (files, folders)
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

  mutating func checkPreferencesFile(_ path: String) {
    let data: Data
    do {
      data = try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
      add(
        .problem, "\(path) cannot be read: \(describeFileError(error))", "check its owner and mode")
      return
    }
    var reason: String?
    do {
      let value = try PropertyListValue(propertyListData: data)
      if case .dictionary = value {
      } else {
        reason = "its root is a \(value.typeName), not a dictionary"
      }
    } catch {
      reason = error.message
    }
    guard let reason else { return }
    let managed = path.hasPrefix(root.managedPreferencesDirectoryURL.path + "/")
    if managed {
      add(
        .problem, "\(path) cannot be read (\(reason)): its forced values are ignored",
        "fix it, or remove it and force the values again with groupctl force")
    } else if path == root.manifestURL.path {
      return  // reported by checkManifest
    } else {
      add(
        .problem,
        "\(path) cannot be read (\(reason)); the suite reads as empty, and the next write moves"
          + " the file aside",
        "look at it (plutil -p '\(path)'); fix it, or move it away and import what you can"
          + " with groupctl import")
    }
  }

  /// Lock files whose preferences file is gone, temporary files of stopped
  /// writers, and files moved aside because they could not be read.
  mutating func checkLeftovers(in folder: String, names: [String]) {
    let present = Set(names)
    for name in names.sorted() {
      let path = folder + "/" + name
      if name.hasSuffix(".plist.lock") {
        let plist = String(name.dropLast(".lock".count))
        guard !present.contains(plist) else { continue }
        // A suite's lock file is made when the suite is opened, and stays a
        // page of zeros until the first commit records the token in it
        // (Storage/SuiteSidecar.swift): one without its plist is normal for
        // a suite that was opened and never written, or that is open now.
        guard openFiles[path] == nil, !Self.isAllZero(path) else { continue }
        add(
          .note,
          "\(path) was left behind: \(plist) was written once and is gone now, and no process"
            + " has the suite open; it is harmless",
          "rm '\(path)' to tidy up")
      } else if name.hasPrefix("."), let range = name.range(of: ".plist.tmp-") {
        let rest = name[range.upperBound...]
        let pid = rest.split(separator: "-").first.flatMap { Int32($0) }
        if let pid, kill(pid, 0) == 0 || errno == EPERM {
          add(.note, "\(path) is being written by process \(pid)")
          continue
        }
        add(
          .problem,
          "\(path) is a temporary file left by a writer that was stopped mid-write;"
            + " \(name.dropFirst().prefix(upTo: range.lowerBound)).plist itself is intact",
          "rm '\(path)' (the next write to the suite removes it too)")
      } else if let range = name.range(of: ".plist.unreadable-") {
        let original = folder + "/" + name[..<range.lowerBound] + ".plist"
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

  static func linkStatus(_ path: String) -> stat? {
    var status = stat()
    return lstat(path, &status) == 0 ? status : nil
  }

  static func isFolder(_ status: stat) -> Bool { status.st_mode & S_IFMT == S_IFDIR }
  static func isLink(_ status: stat) -> Bool { status.st_mode & S_IFMT == S_IFLNK }

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

  static func octal(_ mode: mode_t) -> String {
    let digits = String(mode, radix: 8)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
  }

  /// The files other processes have open, from `/proc/*/fd`, as far as
  /// this user may look. (A process with a suite open keeps its lock file open.)
  static func filesOpenByProcesses() -> [String: Int32] {
    var open: [String: Int32] = [:]
    let me = getpid()
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

import AppGroups
import Foundation

/// The checks of `groupctl doctor --sharing`: entitlements, bindings, the
/// group container, and a round trip between the apps' sandboxed processes.
struct SharingCheck {
  let root: ContainerRoot
  let group: String
  let apps: [String]
  var findings: [(severity: String, message: String, advice: String?)] = []
  /// The apps found unable to share, with the first reason.
  var failed: [String: String] = [:]

  init(root: ContainerRoot, group: String, apps: [String]) {
    self.root = root
    self.group = group
    self.apps = apps
  }

  var problemCount: Int { findings.filter { $0.severity == "problem" }.count }

  mutating func add(_ severity: String, _ message: String, _ advice: String? = nil) {
    findings.append((severity, message, advice))
  }

  mutating func fail(_ app: String, _ message: String, _ advice: String? = nil) {
    add("problem", message, advice)
    if failed[app] == nil { failed[app] = message }
  }

  func report() -> [String] {
    var lines: [String] = []
    for finding in findings {
      lines.append("\(finding.severity): \(finding.message)")
      if let advice = finding.advice { lines.append("  fix: \(advice)") }
    }
    for app in apps {
      if let reason = failed[app] {
        lines.append("verdict: \(app) does NOT share \(group): \(reason)")
      } else {
        lines.append("verdict: \(app) shares \(group)")
      }
    }
    lines.append(
      failed.isEmpty
        ? "Sharing of \(group) works for \(apps.count) apps in \(root.path)."
        : "Sharing of \(group) does not work for \(failed.count) of \(apps.count) apps in"
          + " \(root.path).")
    return lines
  }

  mutating func examine() {
    let manifest: EntitlementManifest
    do {
      manifest = try EntitlementManifest.load(root: root)
    } catch {
      for app in apps { failed[app] = "the manifest cannot be used" }
      add(
        "problem", "the manifest cannot be used: \(error.message); every group is refused",
        "fix \(root.manifestURL.path), or grant again with groupctl grant")
      return
    }
    var entitled: [String] = []
    for app in apps {
      guard let entry = manifest.entries[app] else {
        fail(
          app, "\(app) has no entry in the manifest \(root.manifestURL.path)",
          "groupctl grant \(app) \(group)")
        continue
      }
      guard entry.applicationGroups.contains(group) else {
        fail(
          app, "\(app) is not entitled to \(group) (it holds: "
            + (entry.applicationGroups.isEmpty
              ? "nothing" : entry.applicationGroups.joined(separator: ", ")) + ")",
          "groupctl grant \(app) \(group)")
        continue
      }
      entitled.append(app)
      checkBinding(app, entry.executable)
    }

    let container = root.groupContainerURL(for: group).path
    let existed = FileManager.default.fileExists(atPath: container)
    add(
      existed ? "ok" : "note",
      existed
        ? "the group container \(container) exists"
        : "the group container \(container) does not exist yet; the round trip creates it")

    var abi: Int?
    do {
      abi = try AppSandbox.landlockABI()
      add("ok", "the round trip runs each app inside its Landlock sandbox (ABI \(abi ?? 0))")
    } catch {
      add("note", "\(error.message); the round trip runs unconfined")
    }
    guard entitled.count >= 2 else {
      // Its problem is already counted against the others.
      for app in entitled { failed[app] = "no other app named here is entitled to \(group)" }
      return
    }
    roundTrip(entitled, confined: abi != nil)
  }

  mutating func checkBinding(_ app: String, _ executable: String?) {
    guard let executable else {
      add(
        "note",
        "\(app) is entitled to \(group) and bound to no executable: any process that sets"
          + " \(AppIdentity.environmentVariable)=\(app) is \(app)",
        "groupctl grant \(app) \(group) --executable PATH binds it")
      return
    }
    guard executable.hasPrefix("/") else {
      fail(
        app,
        "\(app) is bound to '\(executable)', a bare file name, which binds no program: no"
          + " process can claim \(app)",
        "groupctl grant \(app) --executable PATH binds it to one file")
      return
    }
    guard FileManager.default.isExecutableFile(atPath: executable) else {
      fail(
        app,
        "\(app) is bound to the executable \(executable), which does not exist or is not"
          + " executable: no process can claim \(app)",
        "groupctl grant \(app) \(group) --executable PATH with the right path")
      return
    }
    add(
      "ok",
      "\(app) is entitled to \(group) and bound to the executable \(executable)")
  }

  /// Each app writes a value, inside its sandbox; every other app reads it, inside its own.
  mutating func roundTrip(_ members: [String], confined: Bool) {
    let nonce = String(UInt64.random(in: 1...UInt64.max), radix: 36)
    let key = "AppGroupsSharingCheck-\(nonce)"
    defer { _ = Self.groupctl(["--root", root.path, "delete", group, key]) }
    for writer in members {
      let value = "from-\(writer)-\(nonce)"
      let write = Self.groupctl(
        sandboxed(writer, confined: confined) + ["write", group, key, "-string", value])
      guard write.status == 0 else {
        fail(
          writer,
          "\(writer) cannot write \(group) from its sandbox (exit \(write.status)): "
            + Self.firstLine(write.stderr),
          "run groupctl run --as \(writer) -v -- … to see its sandbox's rules")
        continue
      }
      add("ok", "\(writer) wrote \(key) in \(group) from a child process")
      for reader in members where reader != writer {
        let read = Self.groupctl(sandboxed(reader, confined: confined) + ["read", group, key])
        let seen = Self.unquoted(read.stdout)
        if read.status == 0 && seen == value {
          add("ok", "\(reader) read the value \(writer) wrote, in another child process")
        } else {
          fail(
            reader,
            "\(reader) did not read the value \(writer) wrote (exit \(read.status)"
              + (read.status == 0 ? ", read \(seen)" : ": \(Self.firstLine(read.stderr))") + ")")
        }
      }
    }
  }

  func sandboxed(_ app: String, confined: Bool) -> [String] {
    ["--root", root.path, "--as", app, "_sandboxed"] + (confined ? [] : ["--best-effort"]) + ["--"]
  }

  static func firstLine(_ text: String) -> String {
    text.split(separator: "\n").first.map(String.init) ?? "(no message)"
  }

  /// What `groupctl read` printed for a string, without its quotes.
  static func unquoted(_ text: String) -> String {
    var value = text.trimmingCharacters(in: .whitespacesAndNewlines)
    if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
      value = String(value.dropFirst().dropLast())
    }
    return value
  }

  /// Runs this `groupctl` with `arguments` and waits for it.
  static func groupctl(_ arguments: [String]) -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: Paths.realPath("/proc/self/exe") ?? "")
    process.arguments = arguments
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    do {
      try process.run()
    } catch {
      return (1, "", "cannot start groupctl: \(error)")
    }
    // Both are a few lines: the pipes cannot fill.
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (
      process.terminationStatus, String(decoding: out, as: UTF8.self),
      String(decoding: err, as: UTF8.self)
    )
  }
}

import Foundation

/// Confines a process to its app's containers with the kernel's Landlock,
/// as Apple's App Sandbox confines an app on a device.
///
/// Inside the sandbox, the app's own container and the group containers the
/// manifest entitles it to are read-write; the manifest, the global and
/// managed preferences and what any program needs to run are read-only; all
/// else is denied by the kernel with `EACCES`, to root too (see
/// ``SandboxRuleset/app(_:root:executable:readOnly:readWrite:)`` for the list).
/// From Landlock ABI 6 on, the process also cannot signal processes outside
/// its sandbox or connect to their abstract Unix sockets (`EPERM`).
///
/// Landlock confines the thread that asks, and the threads and processes it
/// creates afterwards. Threads that already run stay unconfined, unless the
/// kernel can restrict them all at once (Landlock ABI 8 and later). So call
/// ``restrictCurrentProcess(identity:root:readOnly:readWrite:)`` first thing in `main`, before
/// anything starts a thread (Dispatch, Swift concurrency, `GroupDefaults`):
///
/// ```swift
/// // main.swift
/// import AppGroups
///
/// do {
///   try AppSandbox.restrictCurrentProcess(identity: .current(), root: .default)
/// } catch {
///   FileHandle.standardError.write(Data("cannot confine myself: \(error)\n".utf8))
///   exit(1)
/// }
/// let defaults = GroupDefaults(suiteName: "group.com.example.shared")
/// ```
///
/// To confine another program, restrict and then `execve(2)` it, as
/// `groupctl run --as BUNDLE-ID -- COMMAND` does: the exec leaves only the
/// confined thread.
///
/// Setting the environment variable ``unavailableVariable`` to `1` makes
/// this process behave as if the kernel had no Landlock, to test what a
/// program does then.
public enum AppSandbox {
  /// `APPGROUPS_LANDLOCK_UNAVAILABLE`: when `1`, ``landlockABI()`` reports
  /// that the kernel offers no Landlock, whatever it offers.
  public static let unavailableVariable = "APPGROUPS_LANDLOCK_UNAVAILABLE"

  /// The highest Landlock ABI the running kernel offers (1 for Linux 5.13; 7
  /// for Linux 6.15 and later, where 8 adds restricting all threads at once).
  ///
  /// The corresponding system call is `landlock_create_ruleset(2)` with
  /// `LANDLOCK_CREATE_RULESET_VERSION`.
  ///
  /// - Throws: `.sandboxUnavailable` saying why: the kernel was built without
  ///   Landlock, it is turned off at boot (the `lsm=` kernel parameter), or
  ///   ``unavailableVariable`` is set.
  public static func landlockABI() throws(AppGroupsError) -> Int {
    if ProcessInfo.processInfo.environment[unavailableVariable] == "1" {
      throw AppGroupsError(
        .sandboxUnavailable,
        "Landlock is unavailable: \(unavailableVariable)=1 makes this process behave as if the"
          + " kernel had none")
    }
    do {
      return try Landlock.abiVersion()
    } catch {
      let reason =
        switch error.code {
        case .noFunction: "this kernel was built without it"
        case .notSupported:
          "this kernel has it turned off (add landlock to the lsm= boot parameter)"
        default: "\(error)"
        }
      throw AppGroupsError(
        .sandboxUnavailable, "Landlock is unavailable: \(reason) (\(error))", cause: error)
    }
  }

  /// Confines the current process to `identity`'s sandbox in `root`, for
  /// good: nothing can lift it.
  ///
  /// Checks the identity's executable binding, creates the app's container
  /// and entitled group containers if missing, restricts the process with
  /// ``SandboxRuleset/app(_:root:executable:readOnly:readWrite:)`` (the
  /// executable's folder from `identity`, else `/proc/self/exe`), and sets
  /// `TMPDIR` to the container's private `tmp` folder.
  ///
  /// Call it before any other thread starts: on a kernel before Landlock ABI
  /// 8 it refuses to run when the process already has other threads, as
  /// those would stay unconfined; from ABI 8 on it restricts them all.
  ///
  /// - Parameters:
  ///   - identity: who this process is, usually ``AppIdentity/current(fallback:)``.
  ///   - root: the root holding the manifest and containers.
  ///   - readOnly: more paths the process may read.
  ///   - readWrite: more paths the process may read and write.
  /// - Returns: the Landlock ABI used.
  /// - Throws: `.sandboxUnavailable` when the kernel offers no Landlock or
  ///   other threads already run; `.executableMismatch` when the manifest
  ///   binds the identity to another executable; the errors of
  ///   ``SandboxRuleset/app(_:root:executable:readOnly:readWrite:)``; `.io`
  ///   when a Landlock call fails. Nothing is restricted when it throws.
  @discardableResult
  public static func restrictCurrentProcess(
    identity: AppIdentity,
    root: ContainerRoot = .default,
    readOnly: [String] = [],
    readWrite: [String] = []
  ) throws(AppGroupsError) -> Int {
    let abi = try landlockABI()
    let threads = threadCount()
    if threads > 1 && abi < Landlock.allThreadsABI {
      let others =
        threads == 2 ? "1 other thread already runs" : "\(threads - 1) other threads already run"
      throw AppGroupsError(
        .sandboxUnavailable,
        "cannot confine this process: \(others), and Landlock ABI \(abi) restricts only the"
          + " calling thread (ABI \(Landlock.allThreadsABI) restricts them all); call"
          + " AppSandbox.restrictCurrentProcess at the top of main, before anything starts"
          + " a thread")
    }
    _ = try SuiteResolver(identity: identity, root: root).resolve(suiteName: nil)
    let executable = identity.executablePath ?? Paths.realPath("/proc/self/exe")
    let ruleset = try SandboxRuleset.app(
      identity, root: root, executable: executable, readOnly: readOnly, readWrite: readWrite)
    try ruleset.restrictCurrentThread(abi: abi, allThreads: true)
    if let temporary = ruleset.temporaryDirectory {
      Processes.setEnvironmentVariable("TMPDIR", to: temporary)
    }
    return abi
  }

  /// The number of threads of this process, from `/proc/self/task`.
  static func threadCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 1
  }
}

extension SandboxRuleset {
  /// Restricts the calling thread, and the threads and processes it creates
  /// afterwards, to this ruleset, for good; the kernel's keyring, which Landlock does
  /// not enclose, is left to them for reading keys only (the class keys cannot be
  /// replaced or destroyed).
  ///
  /// The corresponding system calls are `landlock_create_ruleset(2)`,
  /// `landlock_add_rule(2)` and `landlock_restrict_self(2)`, after
  /// `prctl(PR_SET_NO_NEW_PRIVS)`, then `seccomp(2)` (`SECCOMP_SET_MODE_FILTER`).
  ///
  /// - Parameters:
  ///   - abi: the Landlock ABI to use, as ``AppSandbox/landlockABI()`` returns.
  ///   - allThreads: restrict every thread of the process when the kernel
  ///     can (ABI 8 and later); otherwise only the calling thread.
  /// - Throws: `.io` naming the call and path that failed; nothing is
  ///   restricted then.
  public func restrictCurrentThread(abi: Int, allThreads: Bool = false) throws(AppGroupsError) {
    do {
      try Landlock.restrict(
        abi: abi, rules: rules.map { Landlock.PathRule(path: $0.path, rights: $0.access.rights) },
        allThreads: allThreads)
    } catch {
      throw AppGroupsError(io: error, "cannot apply the sandbox's Landlock ruleset")
    }
  }

  /// The rights Landlock ABI `abi` gives `access`, by their kernel names
  /// (`read_file`, `make_reg`, …), as `groupctl run -v` prints them.
  public static func rightNames(of access: Access, abi: Int) -> [String] {
    access.rights.intersection(Landlock.Rights.handled(abi: abi)).names
  }

  /// The rights every rule-less path is denied under Landlock ABI `abi`.
  public static func handledRightNames(abi: Int) -> [String] {
    Landlock.Rights.handled(abi: abi).names
  }

  /// What a confined process may not reach outside its sandbox under
  /// Landlock ABI `abi` (from ABI 6): `signal` (it cannot signal other
  /// processes) and `abstract_unix_socket` (it cannot connect to their
  /// abstract Unix sockets).
  public static func scopeNames(abi: Int) -> [String] {
    let scopes = Landlock.Scopes.handled(abi: abi)
    return [(Landlock.Scopes.signal, "signal"), (.abstractUnixSocket, "abstract_unix_socket")]
      .filter { scopes.contains($0.0) }.map(\.1)
  }
}

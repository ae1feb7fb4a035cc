import CAppGroupsLinux
import Glibc

/// The kernel's Landlock interface: which ABI it offers, the file-system
/// rights each ABI handles, and a ruleset applied to the calling thread.
///
/// See: man 7 landlock; Documentation/userspace-api/landlock.rst.
enum Landlock {
  /// `LANDLOCK_ACCESS_FS_*` from `<linux/landlock.h>`. The installed header
  /// stops at ABI 2, so the newer rights are spelled here.
  struct Rights: OptionSet, Sendable, Hashable {
    let rawValue: UInt64

    static let execute = Rights(rawValue: 1 << 0)
    static let writeFile = Rights(rawValue: 1 << 1)
    static let readFile = Rights(rawValue: 1 << 2)
    static let readDir = Rights(rawValue: 1 << 3)
    static let removeDir = Rights(rawValue: 1 << 4)
    static let removeFile = Rights(rawValue: 1 << 5)
    static let makeChar = Rights(rawValue: 1 << 6)
    static let makeDir = Rights(rawValue: 1 << 7)
    static let makeReg = Rights(rawValue: 1 << 8)
    static let makeSock = Rights(rawValue: 1 << 9)
    static let makeFifo = Rights(rawValue: 1 << 10)
    static let makeBlock = Rights(rawValue: 1 << 11)
    static let makeSym = Rights(rawValue: 1 << 12)
    /// ABI 2: link or rename a file into another folder.
    static let refer = Rights(rawValue: 1 << 13)
    /// ABI 3: truncate(2), ftruncate(2), open(2) with O_TRUNC.
    static let truncate = Rights(rawValue: 1 << 14)
    /// ABI 5: ioctl(2) on a character or block device opened afterwards.
    static let ioctlDev = Rights(rawValue: 1 << 15)

    /// The rights that apply to a file (the others need a folder).
    static let fileRights: Rights = [execute, writeFile, readFile, truncate, ioctlDev]

    /// Every file-system right the kernel with this ABI knows, all of which a
    /// ruleset handles (denies unless a rule allows).
    static func handled(abi: Int) -> Rights {
      var rights = Rights(rawValue: (1 << 13) - 1)
      if abi >= 2 { rights.insert(.refer) }
      if abi >= 3 { rights.insert(.truncate) }
      if abi >= 5 { rights.insert(.ioctlDev) }
      return rights
    }

    /// The rights' short names, in bit order.
    var names: [String] {
      let all: [(Rights, String)] = [
        (.execute, "execute"), (.writeFile, "write_file"), (.readFile, "read_file"),
        (.readDir, "read_dir"), (.removeDir, "remove_dir"), (.removeFile, "remove_file"),
        (.makeChar, "make_char"), (.makeDir, "make_dir"), (.makeReg, "make_reg"),
        (.makeSock, "make_sock"), (.makeFifo, "make_fifo"), (.makeBlock, "make_block"),
        (.makeSym, "make_sym"), (.refer, "refer"), (.truncate, "truncate"),
        (.ioctlDev, "ioctl_dev"),
      ]
      return all.filter { contains($0.0) }.map(\.1)
    }
  }

  /// `LANDLOCK_SCOPE_*` (ABI 6): what a confined process may not reach
  /// outside its sandbox.
  struct Scopes: OptionSet, Sendable, Hashable {
    let rawValue: UInt64

    /// Connecting to an abstract Unix socket bound outside the sandbox.
    static let abstractUnixSocket = Scopes(rawValue: 1 << 0)
    /// Sending a signal to a process outside the sandbox.
    static let signal = Scopes(rawValue: 1 << 1)

    /// Every scope the kernel with this ABI knows.
    static func handled(abi: Int) -> Scopes { abi >= 6 ? [.abstractUnixSocket, .signal] : [] }
  }

  /// `LANDLOCK_RESTRICT_SELF_TSYNC` (ABI 8): restrict every thread of the
  /// process at once, not only the calling one.
  static let restrictAllThreadsFlag: UInt32 = 1 << 3
  /// The first ABI that offers ``restrictAllThreadsFlag``.
  static let allThreadsABI = 8

  /// The highest ABI the running kernel offers.
  ///
  /// See: man 2 landlock_create_ruleset (LANDLOCK_CREATE_RULESET_VERSION;
  /// ENOSYS: not built in; EOPNOTSUPP: built in but turned off at boot).
  ///
  /// - Throws: the failed call.
  static func abiVersion() throws(SystemCallError) -> Int {
    Int(try valueOrErrno("landlock_create_ruleset") { cappgroups_landlock_abi_version() })
  }

  /// One rule: `rights` on `path` and everything beneath it.
  struct PathRule: Sendable {
    var path: String
    var rights: Rights
  }

  /// Builds a ruleset handling every file-system right and scope of `abi`,
  /// adds `rules`, and restricts the calling thread (and, with
  /// `allThreads`, every thread).
  ///
  /// Each path is opened with `O_PATH` (following symbolic links, so a rule
  /// on a link allows its target); on a file only the file rights are kept; a path
  /// that no longer exists is left out.
  /// Nothing is restricted when a step fails.
  ///
  /// - Throws: the failed call, naming the path for a rule.
  static func restrict(
    abi: Int, rules: [PathRule], allThreads: Bool
  ) throws(SystemCallError) {
    let handled = Rights.handled(abi: abi)
    // See: man 2 landlock_create_ruleset
    let ruleset = try valueOrErrno("landlock_create_ruleset") {
      cappgroups_landlock_create_ruleset(handled.rawValue, Scopes.handled(abi: abi).rawValue)
    }
    defer { close(ruleset) }
    for rule in rules {
      // See: man 2 open (O_PATH: no access to the file is needed to name it). A path gone
      // since the ruleset was made allows nothing: it is left out.
      let descriptor: CInt
      do {
        descriptor = try valueOrErrno("open", path: rule.path) { cappgroups_open_path(rule.path) }
      } catch where error.errno == ENOENT || error.errno == ENOTDIR {
        continue
      }
      defer { close(descriptor) }
      var status = stat()
      _ = try valueOrErrno("fstat", path: rule.path) { Status.open(descriptor, &status) }
      var rights = rule.rights.intersection(handled)
      if status.fileType != FileMode.folder { rights.formIntersection(Rights.fileRights) }
      guard !rights.isEmpty else { continue }
      // See: man 2 landlock_add_rule
      _ = try valueOrErrno("landlock_add_rule", path: rule.path) {
        cappgroups_landlock_add_path_rule(ruleset, descriptor, rights.rawValue)
      }
    }
    let flags = allThreads && abi >= allThreadsABI ? restrictAllThreadsFlag : 0
    // See: man 2 landlock_restrict_self
    _ = try valueOrErrno("landlock_restrict_self") {
      cappgroups_landlock_restrict_self(ruleset, flags)
    }
    // The keyring, which Landlock does not enclose: the class keys can be read, not changed.
    // See: man 2 seccomp, man 2 keyctl
    _ = try valueOrErrno("seccomp") { cappgroups_keyring_read_only(flags == 0 ? 0 : 1) }
  }
}

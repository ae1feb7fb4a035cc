import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

@testable import AppGroups

/// The system calls a new process's first open makes through the package's own paths rather
/// than the Glibc overlay's or the standard library's: they answer as the calls they replace.
@Suite("Calls on a cold open")
struct ColdOpenCallsTests {
  // MARK: open(2) through the C target

  @Test func aMissingFileIsTheSameErrorAsBefore() throws {
    let sandbox = try Sandbox()
    let path = sandbox.path + "/missing"
    let error = #expect(throws: SystemCallError.self) { try FileSystem.open(path, O_RDONLY) }
    #expect(error?.call == "open")
    #expect(error?.path == path)
    #expect(error?.errno == ENOENT)
    // What the variadic `open` of the C library says for the same call.
    errno = 0
    #expect(Glibc.open(path, O_RDONLY | O_CLOEXEC) == -1)
    #expect(error?.errno == errno)
    #expect(try FileSystem.openUnlessMissing(path, O_RDONLY) == nil)
  }

  @Test func otherRefusalsKeepTheirErrorNumbers() throws {
    let sandbox = try Sandbox()
    let file = sandbox.path + "/file"
    #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
    // O_EXCL on a file that is there.
    let exists = #expect(throws: SystemCallError.self) {
      try FileSystem.open(file, O_WRONLY | O_CREAT | O_EXCL)
    }
    #expect(exists?.errno == EEXIST)
    // A file where a folder is asked for, also when a missing file would be no error.
    let notFolder = #expect(throws: SystemCallError.self) {
      try FileSystem.openUnlessMissing(file + "/below", O_RDONLY)
    }
    #expect(notFolder?.errno == ENOTDIR)
    #expect(notFolder?.path == file + "/below")
    // O_NOFOLLOW on a symbolic link.
    let link = sandbox.path + "/link"
    #expect(symlink(file, link) == 0)
    let followed = #expect(throws: SystemCallError.self) {
      try FileSystem.open(link, O_RDONLY | O_NOFOLLOW)
    }
    #expect(followed?.errno == ELOOP)
  }

  /// The process's file mode creation mask, read without changing it (other tests create
  /// files meanwhile).
  private static func currentUmask() throws -> mode_t {
    let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
    let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Umask:") })
    let digits = line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces)
    return try #require(mode_t(digits, radix: 8))
  }

  @Test func aCreatedFileHasTheModeAskedForAndEveryDescriptorClosesOnExec() throws {
    let sandbox = try Sandbox()
    let mask = try Self.currentUmask()
    for (name, mode) in [("default", mode_t(0o600)), ("shared", mode_t(0o640))] {
      let path = sandbox.path + "/" + name
      let fd =
        name == "default"
        ? try FileSystem.open(path, O_WRONLY | O_CREAT | O_EXCL)
        : try FileSystem.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: mode)
      defer { FileSystem.close(fd) }
      var status = stat()
      #expect(fstat(fd, &status) == 0)
      #expect(status.st_mode & 0o7777 == mode & ~mask, "\(name)")
      #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0, "\(name)")
    }
    let read = try #require(try FileSystem.openUnlessMissing(sandbox.path + "/default", O_RDONLY))
    defer { FileSystem.close(read) }
    #expect(fcntl(read, F_GETFD) & FD_CLOEXEC != 0)
  }

  // MARK: A directory's parent, by bytes

  /// The parent as the watcher computed it before, through `Substring`'s UTF-8 view.
  private static func reference(_ path: String) -> String? {
    let slash = UInt8(ascii: "/")
    var trimmed = Substring(path).utf8
    while trimmed.count > 1, trimmed.last == slash { trimmed = trimmed.dropLast() }
    guard !(trimmed.count == 1 && trimmed.first == slash),
      let index = trimmed.lastIndex(of: slash)
    else { return nil }
    if index == trimmed.startIndex { return "/" }
    return String(Substring(trimmed[..<index]))
  }

  @Test func parentsOfPaths() {
    let cases: [(String, String?)] = [
      ("/a/b", "/a"), ("/a", "/"), ("/", nil), ("///", nil), ("", nil), ("a", nil),
      ("a/b", "a"), ("/a/b/", "/a"), ("/a/b//", "/a"), ("/a//b", "/a/"), ("//a", "/"),
      ("/caf\u{E9}/\u{1F600}", "/caf\u{E9}"), ("/a\u{0}b/c", "/a\u{0}b"), ("/a/b\u{0}", "/a"),
    ]
    for (path, parent) in cases {
      #expect(WatcherEngine.parent(of: path) == parent, "\(path.debugDescription)")
    }
  }

  @Test func parentsAgreeWithTheFormerWayOnEveryShortPath() {
    // Every path of up to five pieces from an alphabet with slashes, a letter, a two-byte
    // letter, an emoji and a NUL.
    let alphabet = ["/", "a", "\u{E9}", "\u{1F600}", "\u{0}"]
    var paths = [""]
    for _ in 0..<5 {
      paths += paths.flatMap { path in alphabet.map { path + $0 } }
    }
    var checked = Set<String>()
    for path in paths where checked.insert(path).inserted {
      #expect(WatcherEngine.parent(of: path) == Self.reference(path), "\(path.debugDescription)")
    }
    #expect(checked.count > 3000)
  }

  // MARK: Whether a signal is blocked

  @Test func aBlockedSignalIsSeenBlockedAndThenNot() {
    var block = sigset_t()
    sigemptyset(&block)
    sigaddset(&block, SIGUSR2)
    var previous = sigset_t()
    #expect(pthread_sigmask(SIG_BLOCK, &block, &previous) == 0)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    #expect(Threads.blocks(SIGUSR2))
    #expect(pthread_sigmask(SIG_UNBLOCK, &block, nil) == 0)
    #expect(!Threads.blocks(SIGUSR2))
    // Every signal this thread blocks now, as the C library's own calls see them.
    var current = sigset_t()
    #expect(pthread_sigmask(SIG_BLOCK, nil, &current) == 0)
    for signal in CInt(1)...CInt(31) {
      #expect(Threads.blocks(signal) == (sigismember(&current, signal) == 1), "signal \(signal)")
    }
  }

  @Test func aNumberThatIsNoSignalIsNotBlocked() {
    // As `sigismember(3)`'s refusal (-1) was read before: not blocked.
    var block = sigset_t()
    sigfillset(&block)
    var previous = sigset_t()
    #expect(pthread_sigmask(SIG_BLOCK, &block, &previous) == 0)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    #expect(Threads.blocks(SIGTERM))
    for number: CInt in [0, -1, 65, 1000] {
      #expect(!Threads.blocks(number), "\(number)")
    }
  }
}

// cache-writer: an app that keeps a cache file in its group container, locked, the way an
// SQLite database or MMKV keeps its lock file. Suspended while it holds the lock, it is
// terminated with 0xdead10cc on iOS and by `groupctl suspend` here.
//
//   cache-writer [--lock flock|posix|ofd|none] [--release-on-suspend] [--group GROUP-ID]
//
//   --lock KIND            how the cache file is locked: flock(2) (the default), a POSIX record
//                          lock (fcntl F_SETLK), an open file description lock (F_OFD_SETLK),
//                          or none
//   --release-on-suspend   the fixed version: gives the lock back when the app is about to be
//                          suspended (AppLifecycle.onSuspend, in a background activity) and
//                          takes it again on resume (AppLifecycle.onResume)
//   --group GROUP-ID       the group whose container holds Library/Caches/cache.db
//                          (default: group.com.example.shared)
//
// It prints "locked PATH (KIND)", then "ready", and waits until SIGTERM or SIGINT. With
// --release-on-suspend it prints "suspension notice: N s to get ready", "released PATH for
// the suspension" and "locked PATH again after the resume". Exit status: 0 on SIGTERM/SIGINT,
// 64 usage error, 1 refused or failed.
//
// Identity: APPGROUPS_BUNDLE_ID, else com.example.cache-writer. Root: APPGROUPS_ROOT, else
// Containers/ in the current directory.
import AppGroups
import CommandLineText
import Foundation

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String, status: Int32 = 1) -> Never {
  FileHandle.standardError.write(Data("cache-writer: \(message)\n".utf8))
  exit(status)
}

let usage =
  "usage: cache-writer [--lock flock|posix|ofd|none] [--release-on-suspend] [--group GROUP-ID]"

enum LockKind: String, Sendable { case flock, posix, ofd, none }

struct Options {
  var kind = LockKind.flock
  var releaseOnSuspend = false
  var group = "group.com.example.shared"
}

func parse(_ list: [String]) -> Options {
  var options = Options()
  var arguments = list[...]
  while let argument = arguments.popFirst() {
    switch argument {
    case "--lock":
      guard let text = arguments.popFirst(), let value = LockKind(rawValue: text) else {
        fail("--lock needs flock, posix, ofd or none\n\(usage)", status: 64)
      }
      options.kind = value
    case "--release-on-suspend": options.releaseOnSuspend = true
    case "--group":
      guard let value = arguments.popFirst() else { fail("--group needs a GROUP-ID", status: 64) }
      options.group = value
    case "--help", "-h":
      say(usage)
      exit(0)
    default:
      fail("unknown argument \(argument.debugDescription)\n\(usage)", status: 64)
    }
  }
  return options
}
// Swift turns bytes that are not UTF-8 into U+FFFD in CommandLine.arguments: a value stored
// from them would not be the one typed. Refused, as groupctl refuses them.
if let problem = CommandLineText.nonUTF8Input(
  environment: [ContainerRoot.environmentVariable, AppIdentity.environmentVariable])
{
  fail(problem, status: 64)
}
let options = parse(Array(CommandLine.arguments.dropFirst()))

// SIGTERM and SIGINT end the wait below; every thread inherits the mask.
var stopSignals = sigset_t()
sigemptyset(&stopSignals)
sigaddset(&stopSignals, SIGTERM)
sigaddset(&stopSignals, SIGINT)
pthread_sigmask(SIG_BLOCK, &stopSignals, nil)

let identity: AppIdentity
let path: String
do {
  identity = try AppIdentity.current(fallback: "com.example.cache-writer")
  let container = try SuiteResolver(identity: identity, root: .default)
    .container(forSecurityApplicationGroupIdentifier: options.group)
  let caches = container.appendingPathComponent("Library/Caches")
  try FileManager.default.createDirectory(at: caches, withIntermediateDirectories: true)
  path = caches.appendingPathComponent("cache.db").path
} catch {
  fail("refused: \(error)")
}
/// The cache file and its lock.
final class CacheFile: Sendable {
  let path: String
  let kind: LockKind
  let fd: Int32

  init(path: String, kind: LockKind) {
    self.path = path
    self.kind = kind
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fail("cannot open \(path): \(String(cString: strerror(errno)))") }
  }

  /// `F_OFD_SETLK` from <fcntl.h> (Glibc shows it to C only with _GNU_SOURCE).
  static let ofdSetLock: Int32 = 37

  /// Takes (`true`) or gives back (`false`) the cache file's lock.
  func setLocked(_ locked: Bool) -> Bool {
    switch kind {
    case .none: return true
    case .flock: return flock(fd, locked ? LOCK_EX | LOCK_NB : LOCK_UN) == 0
    case .posix, .ofd:
      var request = flock()
      request.l_type = Int16(locked ? F_WRLCK : F_UNLCK)
      request.l_whence = Int16(SEEK_SET)
      return fcntl(fd, kind == .posix ? F_SETLK : Self.ofdSetLock, &request) == 0
    }
  }
}

let cache = CacheFile(path: path, kind: options.kind)
guard cache.setLocked(true) else {
  fail("cannot lock \(path): \(String(cString: strerror(errno)))")
}
say("locked \(path) (\(options.kind.rawValue))")

var observations: [Observation] = []
if options.releaseOnSuspend {
  // The fixed version: no lock in the group container across a suspension.
  AppLifecycle.start(identity: identity)
  observations.append(
    AppLifecycle.onSuspend { notice in
      let grace = notice.deadline.timeIntervalSince(notice.received)
      say("suspension notice: \(Int(grace.rounded(.up))) s to get ready")
      // The last write and the unlock happen on another queue: the background activity
      // keeps the suspension waiting for them.
      let activity = AppLifecycle.beginBackgroundActivity(named: "close the cache")
      DispatchQueue.global().async {
        _ = cache.setLocked(false)
        say("released \(cache.path) for the suspension")
        activity.end()
      }
    })
  observations.append(
    AppLifecycle.onResume {
      if cache.setLocked(true) { say("locked \(cache.path) again after the resume") }
    })
}
say("ready")

var number: Int32 = 0
sigwait(&stopSignals, &number)
say("stopped by \(number == SIGINT ? "SIGINT" : "SIGTERM")")
exit(0)

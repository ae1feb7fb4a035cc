import Foundation
import Glibc

/// Fault injection for the package's own tests, driven by the environment so that spawned
/// processes can be steered.
///
/// Each hook is an optional closure, `nil` unless a test asked for it: a call site checks it
/// inline (`TestHooks.whileHoldingLock?(path)`) and calls nothing when it is off. A hook that
/// holds one thread of a process until another reaches a point (``lookAcrossMove``) is an
/// optional object with a method per side, called the same way. A release build has none at
/// all.
package enum TestHooks {
  /// `APPGROUPS_TEST_PAUSE_IN_COMMIT=<path>`: a commit, once it holds the lock, creates
  /// `<path>` and raises SIGSTOP on itself, so that a test can observe other processes while
  /// this one holds the lock, then SIGCONT it.
  static let whileHoldingLock = hook("APPGROUPS_TEST_PAUSE_IN_COMMIT")

  /// `APPGROUPS_TEST_PAUSE_BEFORE_RENAME=<path>`: a commit, once its temporary file is
  /// written and synced but not yet renamed over the plist, creates `<path>` and raises
  /// SIGSTOP on itself, so that a test can kill it there and find the temporary file left
  /// behind.
  static let beforeRename = hook("APPGROUPS_TEST_PAUSE_BEFORE_RENAME")

  /// `APPGROUPS_TEST_PAUSE_AFTER_RENAME=<path>`: a commit, once its new plist is renamed in
  /// place and before its token moves, creates `<path>` and raises SIGSTOP on itself, so that
  /// a test can read the token while the file in place is one the token does not describe yet.
  static let afterRename = hook("APPGROUPS_TEST_PAUSE_AFTER_RENAME")

  /// `APPGROUPS_TEST_PAUSE_BEFORE_PUBLISH=<path>`: a commit appended to a journal, once its
  /// record is written and synced but its length not yet published in the token record,
  /// creates `<path>` and raises SIGSTOP on itself, so that a test can look at what other
  /// processes read then, and kill it there.
  static let beforePublish = hook("APPGROUPS_TEST_PAUSE_BEFORE_PUBLISH")

  /// `APPGROUPS_TEST_PAUSE_BEFORE_JOURNAL_READ=<path>`: a read of a suite's plist with its
  /// journal (an app's open of the suite, a re-read), once the plist is read and before its
  /// journal is, creates `<path>` and raises SIGSTOP on itself, so that a test can land a
  /// commit between the two reads; unless `<path>` exists: a test removes it to stop the next
  /// read, and leaves it to let every later one go on.
  static let beforeJournalRead = hook("APPGROUPS_TEST_PAUSE_BEFORE_JOURNAL_READ", unlessMarked: true)

  /// `APPGROUPS_TEST_PAUSE_BEFORE_ANSWER=<path>`: an app preparing for a suspension, once its
  /// drain is over and before it writes its ready file, creates `<path>` and raises SIGSTOP on
  /// itself: its answer comes too late for the suspender.
  static let beforeAnswer = hook("APPGROUPS_TEST_PAUSE_BEFORE_ANSWER")

  /// `APPGROUPS_TEST_DELAY_AFTER_CLAIM_RELEASE=<milliseconds>`: a coordinated access, once
  /// it has let its claims go and left the suspension barrier, sleeps that long on its thread
  /// before it returns, as a thread kept from the CPU there would: a suspension prepared
  /// meanwhile finds no lock to wait for, and the app is stopped at once.
  static let afterClaimRelease: (@Sendable () -> Void)? = {
    #if DEBUG
      guard let text = ProcessInfo.processInfo.environment["APPGROUPS_TEST_DELAY_AFTER_CLAIM_RELEASE"],
        let milliseconds = UInt32(text)
      else { return nil }
      return { usleep(milliseconds * 1000) }
    #else
      return nil
    #endif
  }()

  /// `APPGROUPS_TEST_PAUSE_BEFORE_KEYBAG_SAVE=<path>`: a change of the keybag, just before
  /// its file is written, creates `<path>` and raises SIGSTOP on itself, so that a test can
  /// kill it between the keybag's write and the device state's.
  package static let beforeKeybagSave = hook("APPGROUPS_TEST_PAUSE_BEFORE_KEYBAG_SAVE")

  /// `APPGROUPS_TEST_PAUSE_BEFORE_MKFIFO=<path>`: a FIFO being made (a coordination inbox),
  /// once nothing but a FIFO is found at its path and before `mkfifo(3)`, creates `<path>` and
  /// raises SIGSTOP on itself, so that a test can put a file there in that window.
  static let beforeMakingFifo = hook("APPGROUPS_TEST_PAUSE_BEFORE_MKFIFO")

  /// `APPGROUPS_TEST_PAUSE_BEFORE_TELL=<path>`: a presenter's process, once it has read a
  /// coordinator's tell and before it handles it, creates `<path>` and raises SIGSTOP on
  /// itself, so that a test can change the item without coordination after the coordinated
  /// access ended and before the presenter heard that it did; unless `<path>` exists: the
  /// first tell stops, every later one goes on.
  static let beforeTell = hook("APPGROUPS_TEST_PAUSE_BEFORE_TELL", unlessMarked: true)

  /// `APPGROUPS_TEST_LOOK_ACROSS_MOVE=<path>`: a presenter's look at its item after an event
  /// in its folder (a change made without coordination?) that finds the item gone, and the
  /// presenter's following of a coordinated move of that item, made to interleave: the move
  /// waits until such a look has begun, the look waits until the move is followed, then ends
  /// and creates `<path>`. The window in which a look begun before a move ends after it, made
  /// wide: what the look saw is of the old path.
  static let lookAcrossMove: LookAcrossMove? = {
    #if DEBUG
      ProcessInfo.processInfo.environment["APPGROUPS_TEST_LOOK_ACROSS_MOVE"].map(LookAcrossMove.init)
    #else
      nil
    #endif
  }()

  /// The two sides of ``lookAcrossMove``, each waiting for the other for 10 seconds at most.
  final class LookAcrossMove: @unchecked Sendable {
    private let marker: String
    private let condition = NSCondition()
    // Read and written only while `condition` is locked.
    private var lookBegan = false
    private var moveFollowed = false

    init(marker: String) { self.marker = marker }

    /// A look found the item gone: the move may go on; the look waits until it was followed.
    func lookBegins() {
      condition.lock()
      defer { condition.unlock() }
      lookBegan = true
      condition.broadcast()
      let deadline = Date(timeIntervalSinceNow: 10)
      while !moveFollowed, condition.wait(until: deadline) {}
    }

    /// The look is over: `<path>` says so.
    func lookEnded() {
      let fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
      if fd >= 0 { close(fd) }
    }

    /// A move of the item is about to be followed: it waits until a look has begun.
    func moveBegins() {
      condition.lock()
      defer { condition.unlock() }
      let deadline = Date(timeIntervalSinceNow: 10)
      while !lookBegan, condition.wait(until: deadline) {}
    }

    /// The move was followed: a look waiting goes on.
    func moveEnded() {
      condition.withLock {
        moveFollowed = true
        condition.broadcast()
      }
    }
  }

  /// The hook the environment variable `name` asks for: writes the path it is called with
  /// to the marker file the variable names, then stops the process; `unlessMarked`: only
  /// when it creates the marker file (none is there).
  private static func hook(_ name: String, unlessMarked: Bool = false) -> (@Sendable (String) -> Void)? {
    #if DEBUG
      guard let marker = ProcessInfo.processInfo.environment[name] else { return nil }
      return { path in
        let fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC | (unlessMarked ? O_EXCL : 0), 0o600)
        if unlessMarked && fd < 0 && errno == EEXIST { return }
        if fd >= 0 {
          _ = path.withCString { write(fd, $0, strlen($0)) }
          close(fd)
        }
        raise(SIGSTOP)
      }
    #else
      return nil
    #endif
  }
}

import AppGroups
import Foundation

// appgroups-worker stop-after-open SUITE   opens SUITE and, as soon as the open returns, sends
//                                          itself SIGTSTP (a terminal's stop: no request);
//                                          prints "sent", then "resumed" when the library's
//                                          onResume handler runs after the SIGCONT; exits on
//                                          "quit" or at the end of stdin.

/// `stop-after-open`: a suspension notice sent at the first instant after the open.
func runStopAfterOpen(_ suiteName: String?) -> Never {
  let resumed = AppLifecycle.onResume { say("resumed") }
  let defaults = open(suiteName)
  kill(getpid(), SIGTSTP)
  say("sent")
  while let line = readLine(), line != "quit" {}
  withExtendedLifetime((defaults, resumed)) {}
  exit(0)
}

import AppGroups
import Foundation
import Synchronization

/// `groupctl watch DOMAIN [KEY...]`
struct WatchCommand: ParsableCommand {
  /// Empty: every key.
  static let keys = Argument.positionals("KEY")

  static let configuration = CommandConfiguration(
    commandName: "watch",
    abstract: "Print a domain's changes as they happen, one key = value line each.",
    arguments: [Argument.domain, keys],
    discussion: """
      Says "watching DOMAIN (Ctrl-C to stop)" on standard error once it is \
      watching, then prints one line per changed key on standard output, as soon as \
      any process changes it, until interrupted (SIGINT or SIGTERM; exit status 0). \
      With KEYs, only those keys.

      A line is KEY = VALUE with the value on one line (arrays as (a, b), \
      dictionaries as { k = v; }), or KEY deleted when no layer holds the key any \
      more. The value is the one the domain's apps read: a forced (managed) value \
      first, then the suite's own, then NSGlobalDomain's.
      """
  )

  let arguments: Arguments

  func run() throws {
    let resolved = try ResolvedDomain(domain, globals: globals, readsData: false)
    // Refuse an unreadable file instead of letting the library move it aside.
    _ = try resolved.storedValues()
    // Take SIGINT and SIGTERM before the library opens a suite, so that it
    // leaves them to us: they end the watch with status 0.
    let stop = DispatchSemaphore(value: 0)
    let sources = Processes.interceptInterruptAndTerminate(on: .global()) { stop.signal() }
    let defaults = try resolved.open()
    let output = LineWriter()
    let keys = arguments[Self.keys]
    let observation = defaults.observe(keys.isEmpty ? nil : keys) { changes in
      for change in changes {
        if let value = change.newValue {
          output.write(formatCompact(key: change.key, value))
        } else {
          output.write(quotedIfNeeded(change.key) + " deleted")
        }
      }
    }
    printError("watching \(domain) (Ctrl-C to stop)")
    stop.wait()
    observation.cancel()
    for source in sources { source.cancel() }
  }
}

import AppGroups
import AppGroupsKeybag
import Foundation

/// `groupctl device [passcode set CODE|- | passcode clear | lock | unlock | reboot]`
struct DeviceCommand: ParsableCommand {
  static let passcodeOption = Argument.option(
    "--passcode", value: "CODE|-", help: "The current passcode (- reads it from stdin).")
  static let graceOption = Argument.option(
    "--grace", value: "SECONDS",
    help: "lock: how long class complete stays available (default 10; 0 to 3600). reboot: how"
      + " long apps have to exit (default 5; 0 to 60).")
  /// The action and its words: `passcode set NEW-CODE`, `lock`, …, taken as they are: a new
  /// code may start with `-` (`passcode set -9876secret`), and no word is shown in a message.
  static let words = Argument.rawWords("ACTION")

  static let configuration = CommandConfiguration(
    commandName: "device",
    abstract: "Show or change the device state: passcode, lock, unlock, reboot.",
    arguments: [passcodeOption, graceOption, words],
    usage: """
      device
      device passcode set NEW-CODE|- [--passcode CODE|-]
      device passcode clear --passcode CODE|-
      device lock [--grace SECONDS]
      device unlock [--passcode CODE|-]
      device reboot [--grace SECONDS]
      """,
    discussion: """
      The root is one simulated device, with a lock state (before-first-unlock, \
      unlocked, locked) and, optionally, a passcode. A root that has no device state yet \
      is a new device: unlocked, no passcode. Every running app of the device hears each \
      change at once (ProtectedData).

        device            prints the state, whether a passcode is set, whether
                          protected data (class complete) is available, the boot
                          session, and the wrong passcodes given in a row
        passcode set      sets the passcode, or changes it (--passcode: the current
                          one); the device must be unlocked
        passcode clear    clears it (--passcode: the current one); the keys of the
                          passcode-set class are destroyed: what they sealed is lost
        lock              locks the device; with a passcode, class complete stays
                          available for the grace period (default 10 s, as iOS),
                          then goes
        unlock            unlocks it, with --passcode when one is set
        reboot            terminates the apps 'groupctl run' started (SIGTERM, then
                          SIGKILL after the grace, default 5 s), drops every
                          unwrapped key, and starts the device: before-first-unlock
                          with a passcode, unlocked without one

      A passcode is 4 characters or more (at most 128 bytes), with no control character \
      and no space at either end. A passcode given as an argument is visible to every \
      process of the machine (/proc/PID/cmdline) and stays in the shell's history: give - \
      instead to read it from stdin, one line (on a terminal: prompted for on stderr, with \
      echo off; a new one twice). When both the new code and --passcode are \
      -, stdin holds the current code on its first line and the new one on its second.

      A wrong or missing code exits with 1, says why, and changes nothing but the count of \
      wrong codes: after five in a row, attempts are heard only after a delay (1 min, then \
      5, 15, 15, then 60 min each), as on iOS. Changing the device while another process \
      changes it waits for it (5 s at most): two shells locking and unlocking at once end \
      in a state one of them asked for.
      """
  )

  enum Action {
    case show
    case setPasscode(new: String)
    case clearPasscode
    case lock
    case unlock
    case reboot
  }

  let arguments: Arguments
  let action: Action
  let passcode: String?
  let grace: Duration?

  init(arguments: Arguments) throws {
    self.arguments = arguments
    passcode = arguments[Self.passcodeOption]
    let graceText = arguments[Self.graceOption]
    var words = arguments[Self.words][...]
    func next(_ name: String) throws(ValidationError) -> String {
      guard let word = words.popFirst() else { throw ValidationError("missing argument \(name)") }
      return word
    }
    switch words.popFirst() {
    case nil: action = .show
    case "passcode":
      let what = try next("set|clear")
      switch what {
      case "set": action = .setPasscode(new: try next("NEW-CODE|-"))
      case "clear": action = .clearPasscode
      default:
        throw ValidationError(
          "unknown passcode action (\(Self.notShown)); expected 'set' or 'clear'")
      }
    case "lock": action = .lock
    case "unlock": action = .unlock
    case "reboot": action = .reboot
    case let other?:
      _ = other
      throw ValidationError(
        "unknown device action (\(Self.notShown)); expected passcode, lock, unlock or reboot")
    }
    switch (action, graceText) {
    case (_, nil):
      grace = nil
    case (.lock, let text?):
      grace = try .seconds(text, of: "--grace", from: 0, upTo: 3600)
    case (.reboot, let text?):
      grace = try .seconds(text, of: "--grace", from: 0, upTo: 60)
    default:
      throw ValidationError("--grace applies to 'device lock' and 'device reboot' only")
    }
    switch action {
    case .show, .lock, .reboot:
      if passcode != nil {
        throw ValidationError("--passcode applies to 'unlock' and 'passcode set|clear' only")
      }
    case .clearPasscode:
      if passcode == nil {
        throw ValidationError(
          "passcode clear needs the current passcode: --passcode CODE, or --passcode - to read it from stdin"
        )
      }
    case .setPasscode, .unlock:
      break
    }
    if !words.isEmpty {
      throw ValidationError(
        "unexpected argument (\(Self.notShown)); a passcode is given with --passcode CODE, or"
          + " --passcode - to read it from standard input")
    }
  }

  /// What is said when the state said "a passcode is set" and the keybag, read under the
  /// device's lock, holds none (a `passcode set` stopped before the keybag was sealed with
  /// the new code): the device has none now.
  static let noPasscodeInKeybag =
    "the keybag holds no passcode (a passcode set was stopped before the keybag was sealed"
    + " with it): the device has none; set one again with 'device passcode set'"

  /// What a message says instead of a word of the command line that may be a passcode
  /// (`device unlock 1234`): no message shows one.
  static let notShown = "not shown: it may be a passcode"

  func validate() throws {
    try globals.requireAdministrator("device")
  }

  func run() throws {
    let root = globals.containerRoot
    let keybag = Keybag(root: root)
    var input = PasscodeInput()
    switch action {
    case .show:
      show(root: root, keybag: keybag)
    case .setPasscode(let new):
      // The current code first: with both on stdin, it is the first line.
      let current = try passcode.map { try input.resolve($0, what: "the current passcode") }
      let code = try input.resolve(new, what: "the new passcode", retyped: true)
      try keybag.setPasscode(code, current: current)
      ChangeMade.record()
      printOut(current == nil ? "passcode set" : "passcode changed")
    case .clearPasscode:
      let current = try input.resolve(passcode ?? "-", what: "the current passcode")
      try keybag.clearPasscode(current: current)
      ChangeMade.record()
      printOut("passcode cleared; the passcode-set class's keys are destroyed")
    case .lock:
      let device = Device(root: root)
      let grace = grace ?? DeviceState.defaultGrace
      let outcome = try device.lockTelling(grace: grace)
      switch outcome {
      case .locked, .graceShortened: ChangeMade.record()
      case .graceKept, .unchanged:
        ChangeMade.record(
          "the device was already \(device.state.lockState); nothing was changed")
      }
      switch outcome {
      case .locked:
        let state = device.state
        if !state.hasPasscode {
          printOut("locked; no passcode is set, so every class stays available")
        } else if grace == .zero {
          printOut("locked; protected data (class complete) is unavailable now")
        } else {
          printOut(
            "locked; protected data (class complete) stays available for \(Self.spoken(grace))")
        }
      case .graceShortened:
        printOut(
          grace == .zero
            ? "already locked; the earlier lock's grace is cut short: protected data (class"
              + " complete) is unavailable now"
            : "already locked; the earlier lock's grace is cut short: protected data (class"
              + " complete) stays available for \(Self.spoken(grace))")
      case .graceKept(let left):
        printOut(Self.keptGrace(left: left, asked: grace))
      case .unchanged:
        printOut("already \(device.state.lockState)")
      }
    case .unlock:
      let code = try passcode.map { try input.resolve($0, what: "the passcode") }
      let said = DeviceState.current(root: root).hasPasscode
      let changed = try keybag.unlock(passcode: code)
      ChangeMade.record(
        changed ? ChangeMade.onDisk : "the device was already unlocked; nothing was changed")
      // The line, then the note on it, in that order wherever both go.
      var lines = ImmediateLines()
      lines.write(changed ? "unlocked" : "already unlocked")
      if said && !DeviceState.current(root: root).hasPasscode {
        printError("groupctl: note: \(Self.noPasscodeInKeybag)")
      }
      try lines.finish()
    case .reboot:
      try reboot(root: root, keybag: keybag)
    }
  }

  /// `device reboot`: a line per app ended, then the state the device started in, each
  /// written at once; the notes on that state after it, on stderr, whatever standard output
  /// is (a terminal, a pipe, a file, one closed).
  private func reboot(root: ContainerRoot, keybag: Keybag) throws {
    let device = Device(root: root)
    let terminations = try device.reboot(grace: grace ?? .seconds(5))
    ChangeMade.record()
    var lines = ImmediateLines()
    for termination in terminations {
      let record = termination.record
      let app = "\(record.bundleIdentifier) (\(record.pid))"
      switch termination.ending {
      case .exited: lines.write("terminated: \(app) exited")
      case .killed: lines.write("terminated: \(app) killed after the grace period")
      case .survived: printError("groupctl: \(app) could not be signalled; it still runs")
      }
    }
    let said = device.state.hasPasscode
    // The keys a device needs without its passcode, for the apps launched next; and the
    // state brought in line with the keybag before it is told. (Without a keyring, that is
    // said when a key is asked for.)
    let prepared = Result { () throws(KeybagError) in try keybag.prepare() }
    let state = device.state
    lines.write(
      "rebooted: \(state.lockState), \(state.hasPasscode ? "passcode set" : "no passcode")")
    if case .failure(let error) = prepared, error.code != .keyringUnavailable {
      printError("groupctl: note: \(error.message)")
    }
    if said && !state.hasPasscode {
      printError("groupctl: note: \(Self.noPasscodeInKeybag)")
    }
    try lines.finish()
  }

  private func show(root: ContainerRoot, keybag: Keybag) {
    let path = DeviceStateFile.path(root: root)
    let exists = FileManager.default.fileExists(atPath: path)
    let state = DeviceState.current(root: root)
    var lockLine = "state: \(state.lockState)"
    if !exists { lockLine += " (a new device: no device state yet)" }
    printOut(lockLine)
    printOut("passcode: \(state.hasPasscode ? "set" : "none")")
    let protected: String
    if !state.hasPasscode {
      protected = "available (no passcode)"
    } else if state.isProtectedDataAvailable {
      if state.lockState == .locked {
        let left = Double(state.graceEnd &- DeviceState.now()) / 1e9
        protected = String(format: "available for %.1f s more (the grace after the lock)", left)
      } else {
        protected = "available"
      }
    } else if state.lockState == .beforeFirstUnlock {
      protected =
        "unavailable (before first unlock: classes complete and"
        + " completeUntilFirstUserAuthentication, preferences included)"
    } else {
      protected = "unavailable (class complete)"
    }
    printOut("protected data: \(protected)")
    if exists { printOut("boot session: \(state.bootSession)") }
    if let attempts = try? keybag.attempts(), attempts.failed > 0 {
      var line = "wrong passcodes: \(attempts.failed) in a row"
      if let retry = attempts.retryAfter {
        let wait = Duration.seconds(max(retry.timeIntervalSinceNow, 0))
        line += "; the next attempt is heard in \(Self.spoken(wait))"
      }
      printOut(line)
    }
  }

  /// What `lock` says when the device was locked already with a grace that ends no later
  /// than the one asked for: `left` of it remained. One as long as the grace asked for, to
  /// the tenth of a second shown, is said to end as that one would, not to be lengthened.
  static func keptGrace(left: Duration, asked: Duration) -> String {
    let shown = tenths(left)
    let why =
      shown == tenths(asked)
      ? "the earlier lock's grace, which ends when the one asked for would"
      : "the earlier lock's grace, which a longer one does not lengthen"
    return
      "already locked; protected data (class complete) stays available for \(shown) s more (\(why))"
  }

  /// `duration` in seconds, to the tenth: `599.9`.
  static func tenths(_ duration: Duration) -> String {
    let seconds =
      Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    return String(format: "%.1f", seconds)
  }

  static func spoken(_ duration: Duration) -> String {
    let seconds =
      Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    if seconds >= 60 && seconds.truncatingRemainder(dividingBy: 60) == 0 {
      return "\(Int(seconds) / 60) min"
    }
    if seconds == seconds.rounded() { return "\(Int(seconds)) s" }
    return String(format: "%.1f s", seconds)
  }
}

/// Passcodes given on the command line or, for `-`, read from stdin one line each: on a
/// terminal, prompted on stderr with echo off, as the keychain's `-w` reads a password.
struct PasscodeInput {
  /// `value` itself, or for `-` the next line of stdin; on a terminal, with `retyped`, typed
  /// twice (a new passcode typed unseen), and refused when the two differ.
  mutating func resolve(_ value: String, what: String, retyped: Bool = false) throws -> String {
    guard value == "-" else { return value }
    let limit = Keybag.maximumPasscodeBytes
    let typed: [UInt8]?
    if StandardInput.isTerminal {
      typed = try StandardInput.promptedLine("\(what): ", atMost: limit)
      if retyped, typed != nil,
        try StandardInput.promptedLine("retype \(what): ", atMost: limit) != typed
      {
        throw CommandFailure("\(what) and its retyping differ; nothing was changed")
      }
    } else {
      typed = try StandardInput.lineBytes(atMost: limit)
    }
    guard let line = typed else {
      throw CommandFailure("\(what) was to be read from stdin (-), but stdin has no line left")
    }
    guard line.count <= limit else {
      throw CommandFailure(
        "\(what) read from stdin is longer than \(limit) bytes, the most a passcode holds;"
          + " nothing was changed")
    }
    // As on the command line: text, never bytes made into U+FFFD (two passcodes would be one).
    guard let text = String(validating: line, as: UTF8.self) else {
      throw CommandFailure("\(what) read from stdin is not valid UTF-8 text; nothing was changed")
    }
    return text
  }
}

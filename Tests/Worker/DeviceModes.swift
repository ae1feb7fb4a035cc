import AppGroups
import AppGroupsKeybag
import Foundation

// appgroups-worker class-key CLASS…   for each class, "key CLASS FINGERPRINT" (16 hex digits of
//                                     PBKDF2 over the key: two processes that print the same
//                                     fingerprint hold the same key; the key itself is never
//                                     printed), or "refused CLASS CODE"; then "done". No wait.

/// `class-key`: asks the keybag of APPGROUPS_ROOT for each class's key.
func runClassKeys(_ names: [String]) -> Never {
  let keybag = Keybag(root: .default)
  for name in names {
    guard let keyClass = Keybag.KeyClass(rawValue: name) else { fail("unknown class \(name)") }
    do {
      var key = try keybag.classKey(keyClass)
      var digest =
        (try? Crypto.deriveKey(passcode: key, salt: Array("fingerprint".utf8), iterations: 1)) ?? []
      Crypto.wipe(&key)
      say("key \(name) \(digest.prefix(8).map { String(format: "%02x", $0) }.joined())")
      Crypto.wipe(&digest)
    } catch {
      say("refused \(name) \(error.code)")
    }
  }
  say("done")
  exit(0)
}

// appgroups-worker device-watch       starts the app's lifecycle (as opening a suite does) and
//                                     hears the device as an app: "ready", then for each
//                                     NotificationCenter post "note will|did available=BOOL
//                                     left=MS" (BOOL: ProtectedData.isAvailable then; MS: what
//                                     is left of the grace, for will), and for each event of
//                                     ProtectedData.observe "event KIND STATE"; exits on "quit"
//                                     or at the end of stdin.

/// `device-watch`: an app that hears the device.
func runDeviceWatch() -> Never {
  AppLifecycle.start(identity: identity, root: .default)
  let center = NotificationCenter.default
  for (name, word) in [
    (ProtectedData.willBecomeUnavailableNotification, "will"),
    (ProtectedData.didBecomeAvailableNotification, "did"),
  ] {
    _ = center.addObserver(forName: name, object: nil, queue: nil) { note in
      let event = note.userInfo?[ProtectedData.eventKey] as? DeviceEvent
      let left = event?.deadline.map { Int(($0.timeIntervalSinceNow * 1000).rounded()) } ?? -1
      say("note \(word) available=\(ProtectedData.isAvailable) left=\(left)")
    }
  }
  let observation = ProtectedData.observe { event in
    say("event \(event.kind.rawValue) \(event.state.lockState)")
  }
  say("ready")
  while let line = readLine(), line != "quit" {}
  observation.cancel()
  exit(0)
}

// appgroups-worker protected-read PATH   reads PATH through FileProtection ("library ok" or
//                                        "library COCOA-CODE UNDERLYING-ERRNO") and with a
//                                        plain open(2) and read(2) ("raw ok" or "raw ERRNO");
//                                        no wait.

/// `protected-read`: what the library says of a protected file, and what the kernel says.
func runProtectedRead(_ path: String) -> Never {
  do {
    _ = try FileProtection.read(contentsOf: URL(fileURLWithPath: path))
    say("library ok")
  } catch let error as CocoaError {
    let underlying = (error.userInfo[NSUnderlyingErrorKey] as? POSIXError)?.code.rawValue ?? 0
    say("library \(error.code.rawValue) \(errnoName(underlying))")
  } catch {
    say("library error \(error)")
  }
  let fd = open(path, O_RDONLY)
  var byte: UInt8 = 0
  if fd < 0 {
    say("raw \(errnoName(errno))")
  } else {
    say(read(fd, &byte, 1) < 0 ? "raw \(errnoName(errno))" : "raw ok")
    close(fd)
  }
  exit(0)
}

// appgroups-worker keyring-tamper CLASS   as an app that ignores the library: reads the
//                                     class's key from the kernel's keyring ("read ok" or
//                                     "read failed"), then tries to destroy it and to put 32
//                                     zero bytes in its place, printing "remove: done|refused
//                                     MESSAGE" and "store: done|refused MESSAGE"; then
//                                     "done". The key itself is never printed.

/// `keyring-tamper`: what a process can do to the device's class keys in the kernel's keyring.
func runKeyringTamper(_ name: String) -> Never {
  let state = DeviceState.current()
  let keyring = DeviceKeyring(deviceIdentifier: state.deviceIdentifier, rootPath: ContainerRoot.default.path)
  if var key = try? keyring.load(name: name, session: state.bootSession) {
    say("read ok")
    Crypto.wipe(&key)
  } else {
    say("read failed")
  }
  let attempts: [(String, () throws(DeviceKeyring.Failure) -> Void)] = [
    ("remove", { () throws(DeviceKeyring.Failure) in
      try keyring.remove(name: name, session: state.bootSession)
    }),
    ("store", { () throws(DeviceKeyring.Failure) in
      try keyring.store([UInt8](repeating: 0, count: 32), name: name, session: state.bootSession)
    }),
  ]
  for (what, attempt) in attempts {
    do throws(DeviceKeyring.Failure) {
      try attempt()
      say("\(what): done")
    } catch {
      say("\(what): refused \(error.message)")
    }
  }
  say("done")
  exit(0)
}

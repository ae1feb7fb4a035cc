import AppGroups
import Foundation

/// A BUNDLE-ID|PID argument of `suspend` and `resume`: the app's one running process, or a
/// process id.
enum AppTarget: Equatable, CustomStringConvertible {
  case pid(Int32)
  case bundle(String)

  /// Parses the argument: all digits is a pid, anything else a bundle id.
  init(parsing word: String) throws(ValidationError) {
    if word.allSatisfy(\.isASCII), word.allSatisfy(\.isNumber) {
      guard let pid = Int32(word), pid > 0 else {
        throw ValidationError("'\(word)' is not a process id (1 to \(Int32.max))")
      }
      self = .pid(pid)
      return
    }
    do {
      _ = try AppIdentity(bundleIdentifier: word)
    } catch {
      throw ValidationError(error.message)
    }
    self = .bundle(word)
  }

  var description: String {
    switch self {
    case .pid(let pid): "process \(pid)"
    case .bundle(let bundle): bundle
    }
  }

  /// The process the target names on `device`.
  ///
  /// - Throws: ``CommandFailure`` when a bundle id has no running process, or several.
  func resolve(on device: Device) throws -> Int32 {
    switch self {
    case .pid(let pid): return pid
    case .bundle(let bundle):
      let apps = device.runningApps().filter { $0.record.bundleIdentifier == bundle }
      guard let first = apps.first else {
        throw CommandFailure(
          "\(bundle) is not running on \(device.root.path) ('groupctl run --as \(bundle)'"
            + " launches it; 'groupctl ps' lists what runs)")
      }
      guard apps.count == 1 else {
        let pids = apps.map { String($0.record.pid) }.joined(separator: ", ")
        throw CommandFailure("\(bundle) runs as \(apps.count) processes (\(pids)); name one by its PID")
      }
      return first.record.pid
    }
  }
}

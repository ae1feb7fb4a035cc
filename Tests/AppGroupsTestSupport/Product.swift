public import Foundation

/// The package's built executables (`groupctl`, `app`, `widget`), found
/// beside the running test binary and run as child processes.
///
/// ```swift
/// let result = try Product.run("groupctl", ["--help"])
/// #expect(result.status == 0)
/// ```
public enum Product {
  /// The folder holding the test binary and the products built with it:
  /// `.build/debug` or `.build/release`. Taken from the running executable,
  /// never from `#filePath`, so a release test run never picks up a stale
  /// debug binary.
  public static var directory: URL {
    if let executable = Bundle.main.executableURL {
      return executable.resolvingSymlinksInPath().deletingLastPathComponent()
    }
    return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
      .deletingLastPathComponent()
  }

  /// The built executable called `name`; an absolute path (such as `/bin/bash`) as it is.
  public static func url(_ name: String) -> URL {
    if name.hasPrefix("/") { return URL(fileURLWithPath: name, isDirectory: false) }
    return directory.appendingPathComponent(name, isDirectory: false)
  }

  /// Runs a built executable to completion.
  ///
  /// Both pipes are read to the end (stderr on its own thread) before
  /// waiting for the child, so a chatty child cannot block on a full pipe.
  ///
  /// - Parameters:
  ///   - name: The product, such as `groupctl`.
  ///   - args: The arguments, without the program name.
  ///   - environment: Variables set over the test process's own environment.
  ///   - stdin: The child's standard input; `/dev/null` when `nil`.
  ///   - timeout: How long the child may run. One still running then (or
  ///     whose output is still held open by a process it started) is killed
  ///     with SIGKILL, its status is 128 + 9, and its stderr ends with a line
  ///     that says so.
  /// - Returns: The exit status (128 + the signal number when killed by a
  ///   signal), and stdout and stderr decoded as UTF-8.
  /// - Throws: When the executable cannot be started.
  public static func run(
    _ name: String,
    _ args: [String],
    environment: [String: String] = [:],
    stdin: Data? = nil,
    timeout: TimeInterval = 120
  ) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = url(name)
    process.arguments = args
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }

    // Standard input from a file, not a pipe: nothing to write while the
    // child runs, and no SIGPIPE when the child does not read it all.
    var inputFile: URL?
    var input: FileHandle?
    defer {
      try? input?.close()
      if let inputFile { try? FileManager.default.removeItem(at: inputFile) }
    }
    if let stdin {
      let file = FileManager.default.temporaryDirectory
        .appendingPathComponent("product-stdin-\(UUID().uuidString)")
      try stdin.write(to: file)
      inputFile = file
      input = try FileHandle(forReadingFrom: file)
      process.standardInput = input
    } else {
      process.standardInput = FileHandle.nullDevice
    }

    let output = Spawn.pipe()
    let errors = Spawn.pipe()
    process.standardOutput = output
    process.standardError = errors
    try Spawn.run(process)

    let outputReader = PipeDrain(output.fileHandleForReading)
    let errorReader = PipeDrain(errors.fileHandleForReading)
    let deadline = DispatchTime.now() + timeout
    var timedOut = false
    if !outputReader.wait(until: deadline) || !errorReader.wait(until: deadline) {
      timedOut = true
      kill(process.processIdentifier, SIGKILL)
    }
    // After a kill, a process the child started may still hold a pipe open:
    // what did not arrive by then is left out rather than waited for.
    let outputData = outputReader.wait(until: .now() + 10) ? outputReader.data : Data()
    var errorData = errorReader.wait(until: .now() + 10) ? errorReader.data : Data()
    process.waitUntilExit()
    if timedOut {
      errorData.append(Data("\n[test support: \(name) \(args) still running after \(timeout) s; killed]\n".utf8))
    }

    let status =
      process.terminationReason == .uncaughtSignal
      ? 128 + process.terminationStatus : process.terminationStatus
    return (
      status,
      String(decoding: outputData, as: UTF8.self),
      String(decoding: errorData, as: UTF8.self)
    )
  }
}

/// Reads a pipe to its end on a thread of its own.
private final class PipeDrain: @unchecked Sendable {
  // `data` is appended to only by the reading thread before `done` is signalled, and read
  // only after `wait()` has seen the signal.
  private(set) var data = Data()
  private let done = DispatchSemaphore(value: 0)

  init(_ handle: FileHandle) {
    Spawn.drain(handle) { [self] chunk in
      if chunk.isEmpty { done.signal() } else { data.append(chunk) }
    }
  }

  /// Whether the pipe reached its end by `deadline`; `data` is complete once it has.
  func wait(until deadline: DispatchTime) -> Bool {
    guard done.wait(timeout: deadline) == .success else { return false }
    done.signal()  // later waits return at once
    return true
  }
}

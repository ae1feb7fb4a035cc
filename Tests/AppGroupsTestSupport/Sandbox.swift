import AppGroupsTesting
public import Foundation

/// A unique temporary root for one test, deleted when the test ends.
public final class Sandbox: Sendable {
  public let url: URL

  public init(_ name: String = #function) throws {
    let base = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
    let safe = name.filter { $0.isLetter || $0.isNumber }
    url = base.appendingPathComponent("appgroups-\(safe.prefix(40))-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }

  public var path: String { url.path }

  /// Removed as a ``TemporaryAppGroup``'s root is: changes a test left pending land first.
  deinit { TemporaryAppGroup.removeFolder(atPath: url.path) }
}

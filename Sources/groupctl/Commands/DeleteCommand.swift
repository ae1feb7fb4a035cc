import AppGroups
import Foundation

/// `groupctl delete DOMAIN [KEY]`
struct DeleteCommand: ParsableCommand {
  /// `nil`: the whole domain.
  static let key = Argument.optionalPositional("KEY")

  static let configuration = CommandConfiguration(
    commandName: "delete",
    abstract: "Delete a key, or every key of a domain.",
    arguments: [Argument.domain, key],
    discussion: """
      A key that is not in the domain, or a domain that does not exist, exits with \
      1; a key an administrator forces cannot be deleted (see unforce). Running apps \
      see the change at once.
      """
  )

  let arguments: Arguments

  func run() throws {
    WriteInterruption.take()
    let resolved = try ResolvedDomain(domain, globals: globals)
    guard let key = arguments[Self.key] else {
      guard let values = try resolved.storedValues(), !values.isEmpty else {
        throw CommandFailure("Domain \(domain) does not exist")
      }
      let defaults = try resolved.open()
      try defaults.replacePersistentDomain(with: [:])
      try resolved.synchronize(defaults)
      ChangeMade.record()
      return
    }
    try resolved.requireNotForced(key)
    // A key that is not there is said before anything is opened: a mistyped domain or root
    // creates nothing (a container, a lock file, a root).
    guard try resolved.storedValues()?[key] != nil else {
      throw CommandFailure("The domain/default pair of (\(domain), \(key)) does not exist")
    }
    let defaults = try resolved.open()
    // Check and remove under the suite's lock, against what is on disk now.
    try defaults.update(forKey: key) { current throws(CommandFailure) in
      guard current != nil else {
        throw CommandFailure("The domain/default pair of (\(domain), \(key)) does not exist")
      }
      return nil
    }
    try resolved.synchronize(defaults)
    ChangeMade.record()
  }
}

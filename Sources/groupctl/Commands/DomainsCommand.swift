import AppGroups
import Foundation

/// `groupctl domains`
struct DomainsCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "domains",
    abstract: "List every domain that has preferences in the root.",
    arguments: [],
    discussion: """
      One domain per line, sorted, as DOMAIN arguments are written: bundle ids \
      (standard suites), BUNDLE-ID:SUITE (private suites), group ids, and \
      NSGlobalDomain. (defaults prints them on one line, separated by commas.) \
      Empty domains are left out; with --as, only the domains that app may open.
      """
  )

  let arguments: Arguments

  func run() throws {
    let scan = try DomainScan(globals: globals)
    for (resolved, _) in scan.domains {
      printOut(resolved.domain.description)
    }
    try scan.finish()
  }
}

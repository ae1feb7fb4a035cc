import AppGroups
import Foundation

extension Doctor {
  /// File coordination: who presents and coordinates what, and the hazards: a presenter
  /// whose app is stopped (every coordinated access of its item fails after its bound), a
  /// stopped process holding a coordinated access, registrations of processes that are gone.
  mutating func checkCoordination() {
    for presenter in CoordinationStatus.presenters(root: root) {
      if !presenter.isLive {
        add(
          .note,
          "a presenter of \(presenter.shownPath) registered by \(PrintedText.shown(presenter.bundleIdentifier))"
            + " (\(presenter.pid)) is left from a process that is gone",
          "harmless: coordinators skip it, and the next one removes it"
            + " (\(presenter.registrationPath))")
      } else if presenter.isStopped {
        add(
          .problem,
          "\(PrintedText.shown(presenter.bundleIdentifier)) (\(presenter.pid)) is stopped while it presents"
            + " \(presenter.shownPath): every coordinated read or write of it fails after the"
            + " coordinator's bound (it would wait forever on iOS)",
          "remove presenters in AppLifecycle.onSuspend and add them again in onResume, or"
            + " 'groupctl resume \(presenter.pid)'")
      } else {
        add(.ok, "\(PrintedText.shown(presenter.bundleIdentifier)) (\(presenter.pid)) presents \(presenter.shownPath)")
      }
    }
    for access in CoordinationStatus.accesses(root: root) {
      if access.isStopped {
        add(
          .problem,
          "\(access.bundleIdentifier.map(PrintedText.shown) ?? "process") (\(access.pid)) is stopped while it"
            + " coordinates a \(access.isWrite ? "write" : "read") of \(access.item): every"
            + " other access of it waits",
          "end coordinated accesses before a suspension, or 'groupctl resume \(access.pid)'")
      } else {
        add(.ok, "\(access)")
      }
    }
    for line in CoordinationStatus.reports(root: root).suffix(5) {
      add(.note, "reported: \(line)")
    }
  }
}

import AppGroupsTestSupport
import Foundation
import Testing

extension TestRoot {
  /// A suite holding `kept = yes`, then a worker running `arguments` on it that stops when its
  /// commit has written and named its temporary file, before the rename (it creates `marker`
  /// first; the caller waits for it). The worker's own syncs are not waited for.
  func workerPausedBeforeRename(_ arguments: [String]) throws -> (ChildProcess, marker: String) {
    let env = environment().merging(["APPGROUPS_WORKER_NO_WAIT": "1"]) { $1 }
    let first = try Product.run("appgroups-worker", ["set", TestRoot.group, "kept", "yes"], environment: env)
    #expect(first.status == 0, "\(first.stderr)")
    let marker = sandbox.url.appendingPathComponent("before-rename").path
    let worker = try ChildProcess(
      "appgroups-worker", arguments,
      environment: env.merging(["APPGROUPS_TEST_PAUSE_BEFORE_RENAME": marker]) { $1 })
    return (worker, marker)
  }
}

@testable import groupctl
import Testing

/// What `groupctl device lock` says of an earlier lock's grace that it keeps: one the grace
/// asked for equals is not said to be "a longer one" (spawned, the two cannot be made to
/// meet: the grace runs down between the locks; ``GroupctlDeviceTests`` runs the command).
@Suite("groupctl device lock: a kept grace")
struct GroupctlLockGraceTests {
  @Test(arguments: [
    (Duration.seconds(600), "600.0"), (.milliseconds(599_960), "600.0"),
    (.milliseconds(12_300), "12.3"),
  ])
  func aGraceAsLongAsTheOneAskedForIsSaidToEndWithIt(left: Duration, shown: String) {
    let asked = Duration.seconds(Double(shown) ?? 0)
    let said = DeviceCommand.keptGrace(left: left, asked: asked)
    #expect(
      said
        == "already locked; protected data (class complete) stays available for \(shown) s more"
        + " (the earlier lock's grace, which ends when the one asked for would)", "\(said)")
  }

  @Test func aLongerGraceIsSaidNotToLengthenIt() {
    let said = DeviceCommand.keptGrace(left: .milliseconds(599_940), asked: .seconds(600))
    #expect(
      said
        == "already locked; protected data (class complete) stays available for 599.9 s more"
        + " (the earlier lock's grace, which a longer one does not lengthen)", "\(said)")
  }
}

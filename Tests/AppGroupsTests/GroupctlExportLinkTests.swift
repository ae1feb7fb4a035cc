import AppGroups
import AppGroupsTestSupport
import Foundation
import Testing

/// `groupctl export DOMAIN PATH` where PATH is a symbolic link to nothing: refused, naming the
/// link and what it leads to, and the link stays a link (it was replaced by a regular file).
@Suite("groupctl export to a link to nothing", .processBound)
struct GroupctlExportLinkTests {
  @Test func anExportToADanglingLinkIsRefusedAndTheLinkStays() throws {
    let g = try GroupctlRoot()
    try g.ok(["write", TestRoot.group, "greeting", "hello"])
    for destination in [g.path + "/missing.plist", "missing-too.plist", g.path + "/no-folder/x.plist"] {
      let link = g.path + "/link-\(UUID().uuidString).plist"
      try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: destination)
      let exported = try g.run(["export", TestRoot.group, link])
      #expect(exported.status == 1, "\(destination): \(exported.stderr)")
      #expect(
        exported.stderr.contains(
          "cannot write \(link): it is a symbolic link to \(destination), which does not exist"),
        "\(exported.stderr)")
      #expect(FileStatus(atPath: link)?.kind == .symbolicLink, "the link is still a link")
      #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == destination)
      #expect(FileStatus(atPath: link, followingLinks: true) == nil, "nothing was created")
    }
    // A link to a file that exists is written through, as before.
    let target = g.path + "/target.plist"
    let link = g.path + "/live.plist"
    try Data("old".utf8).write(to: URL(fileURLWithPath: target))
    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
    try g.ok(["export", TestRoot.group, link])
    #expect(FileStatus(atPath: link)?.kind == .symbolicLink)
    #expect(try TestRoot.readPlist(URL(fileURLWithPath: target))["greeting"] as? String == "hello")
  }
}

#if canImport(XCTest)
  import AppGroups
  public import XCTest

  extension XCTestCase {
    /// Makes a ``TemporaryAppGroup`` for this test, removed when the test ends (a teardown
    /// block), and runs `body` inside its scope: `GroupDefaults(suiteName:)`,
    /// `ContainerRoot.default` and `AppIdentity.current()` answer with its root and identity.
    ///
    /// ```swift
    /// func testUnreadCountIsShared() throws {
    ///   try withTemporaryAppGroup(groups: ["group.com.example.shared"]) { device in
    ///     let shared = try XCTUnwrap(GroupDefaults(suiteName: "group.com.example.shared"))
    ///     shared.set(3, forKey: "unreadCount")
    ///   }
    /// }
    /// ```
    ///
    /// - Throws: `AppGroupsError` when the root cannot be made, or what `body` throws.
    public func withTemporaryAppGroup<Result>(
      groups: [String], as bundleIdentifier: String = "com.example.app",
      _ body: (TemporaryAppGroup) throws -> Result
    ) throws -> Result {
      let group = try TemporaryAppGroup(groups: groups, as: bundleIdentifier, label: name)
      addTeardownBlock { group.remove() }
      return try TemporaryAppGroup.$current.withValue(group) {
        try group.withScope { () throws -> Result in try body(group) }
      }
    }
  }
#endif

import AppGroups
public import Testing

/// A Swift Testing trait that gives each test (each case of a parameterized test) a
/// ``TemporaryAppGroup`` of its own, made before the test and removed after it.
///
/// ```swift
/// @Test(.appGroup("group.com.example.shared"))
/// func unreadCountIsShared() throws {
///   let shared = try #require(GroupDefaults(suiteName: "group.com.example.shared"))
///   shared.set(3, forKey: "unreadCount")
///   #expect(TemporaryAppGroup.current?.root == ContainerRoot.default)
/// }
/// ```
///
/// On a suite, every test in it gets its own root. Inside the test, ``TemporaryAppGroup/current``
/// is the root, and the library's process-wide lookups answer with it (see
/// ``TemporaryAppGroup``).
public struct AppGroupTrait: TestTrait, SuiteTrait, TestScoping {
  /// The groups the test's manifest grants.
  public let groups: [String]
  /// The identity the test acts as.
  public let bundleIdentifier: String

  /// A trait granting `bundleIdentifier` the application groups `groups`; the same as
  /// ``Trait/appGroup(_:as:)``.
  public init(groups: [String], bundleIdentifier: String = "com.example.app") {
    self.groups = groups
    self.bundleIdentifier = bundleIdentifier
  }

  /// Each test in a suite gets its own root.
  public var isRecursive: Bool { true }

  /// Makes the test's root, runs the test inside its scope, and removes the root.
  ///
  /// - Throws: what the test throws, or `AppGroupsError` when the root cannot be made (the
  ///   test then does not run).
  public func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    let group = try TemporaryAppGroup(groups: groups, as: bundleIdentifier, label: test.name)
    defer { group.remove() }
    try await TemporaryAppGroup.$current.withValue(group) {
      try await group.withScope { try await function() }
    }
  }
}

extension Trait where Self == AppGroupTrait {
  /// A temporary root of the test's own, whose manifest entitles `bundleIdentifier` to
  /// `groups`; see ``AppGroupTrait``.
  public static func appGroup(_ groups: String..., as bundleIdentifier: String = "com.example.app")
    -> Self
  {
    AppGroupTrait(groups: groups, bundleIdentifier: bundleIdentifier)
  }
}

extension TemporaryAppGroup {
  /// The root of the test running now, inside a test that has the ``AppGroupTrait`` (or
  /// inside `XCTestCase.withTemporaryAppGroup`); `nil` elsewhere.
  @TaskLocal public static var current: TemporaryAppGroup?
}

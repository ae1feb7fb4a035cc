@testable import AppGroups
import AppGroupsTestSupport
import Testing

/// A suite's view adds a change handler to each layer's store it reads (its suite, the
/// global domain once a read reaches it), and removes every one when it goes.
@Suite("Defaults: a view's change handlers", .processBound)
struct ViewHandlerTests {
  @Test func aViewThatGoesRemovesItsHandlerFromEveryLayersStore() throws {
    let t = try TestRoot()
    var defaults: GroupDefaults? = try t.defaults(TestRoot.group)
    // A key no layer holds: the read reaches the global domain, whose store the view opens.
    #expect(defaults?.string(forKey: "held-by-no-layer") == nil)
    let suite = try #require(defaults?.view.suite)
    let global = try #require(defaults?.view.openedGlobal)
    func handlers(_ store: SuiteStore) -> Int { store.state.withLock { $0.changeHandlers.count } }
    #expect(handlers(suite) == 1 && handlers(global) == 1)
    defaults = nil
    #expect(handlers(suite) == 0, "the suite's store")
    #expect(handlers(global) == 0, "the global domain's store")
  }
}

import Testing

extension Trait where Self == TimeLimitTrait {
  /// The time limit of a suite whose tests run child processes: a backstop
  /// for the whole run, not the measure of one test.
  ///
  /// Swift Testing starts a test's clock when it schedules the test, and a
  /// test that waits for a child holds one of the cooperative threads (two on
  /// a two-core machine) while it waits. That keeps the number of process
  /// tests running at once small, but it also means a test's clock counts the
  /// time it queued behind the others: with the whole suite beside two
  /// CPU-bound processes, a one-minute limit failed tests that had not yet
  /// started. Every wait inside a test is bounded on its own (a handshake, a
  /// child's exit, ``Product/run(_:_:environment:stdin:timeout:)``) and fails
  /// naming what it waited for; this limit only stops a run that hangs anyway.
  static var processBound: Self { .timeLimit(.minutes(10)) }
}

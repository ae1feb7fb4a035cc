/// The root and identity that ``ContainerRoot/default`` and ``AppIdentity/current(fallback:)``
/// answer inside a scope, in place of `APPGROUPS_ROOT` and `APPGROUPS_BUNDLE_ID`.
///
/// The environment belongs to the whole process, so tests running side by side in one process
/// cannot each set it; a task-local value can. `AppGroupsTesting` sets these for the test it
/// scopes. Like every task-local value, they reach child tasks but not work handed to a
/// Dispatch queue or a thread of its own.
package enum ScopedEnvironment {
  /// The root ``ContainerRoot/default`` answers, when set.
  @TaskLocal package static var root: ContainerRoot?
  /// The identity ``AppIdentity/current(fallback:)`` answers, when set.
  @TaskLocal package static var identity: AppIdentity?
}

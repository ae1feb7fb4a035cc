public import AppGroups

/// The `AppGroupsError` `body` throws, or nil when it throws nothing (or another error).
public func caught<T>(_ body: () throws -> T) -> AppGroupsError? {
  do {
    _ = try body()
    return nil
  } catch {
    return error as? AppGroupsError
  }
}

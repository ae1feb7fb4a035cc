import Synchronization

/// `@testable import AppGroups` makes the library's internal `Mutex` (the standard one made
/// visible to the thread sanitizer, `Sources/AppGroups/System/Mutex.swift`) visible here,
/// next to `Synchronization.Mutex`: this module's own name settles which one tests mean.
typealias Mutex<Value: ~Copyable> = Synchronization.Mutex<Value>

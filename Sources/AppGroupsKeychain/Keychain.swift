/// AppGroupsKeychain: the shared keychain of the simulated device (issue 17).
///
/// Items live in the root, encrypted with AES-256-GCM under the keybag's class keys
/// (``AppGroupsKeybag``); apps reach them through access groups their entitlements name.
/// This module links the system's libcrypto; the preference core (`AppGroups`) never does.
enum Keychain {}

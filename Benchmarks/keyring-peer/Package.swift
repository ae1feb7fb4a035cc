// swift-tools-version:6.2
// The GNOME Keyring side of the benchmark's keychain rows, not part of the AppGroups package:
// it needs libsecret and the keyring daemon (Debian: `apt-get install libsecret-1-dev
// gnome-keyring dbus`), which `swift build` of AppGroups never does.
//
//   swift build -c release --package-path Benchmarks/keyring-peer
//   .build/release/benchmark            # then finds and runs it beside the other sides
import PackageDescription

let package = Package(
  name: "keyring-peer",
  targets: [
    .systemLibrary(
      name: "CSecret", pkgConfig: "libsecret-1", providers: [.apt(["libsecret-1-dev"])]),
    // libsecret's store and lookup take their attributes as C variadic arguments, which Swift
    // cannot pass: two small functions pass them.
    .target(name: "CKeyring", dependencies: ["CSecret"]),
    .executableTarget(name: "keyring-peer", dependencies: ["CKeyring"]),
  ],
  swiftLanguageModes: [.v6]
)

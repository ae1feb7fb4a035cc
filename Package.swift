// swift-tools-version:6.2
import PackageDescription

let package = Package(
  name: "AppGroups",
  products: [
    .library(name: "AppGroups", targets: ["AppGroups"]),
    .library(name: "AppGroupsTesting", targets: ["AppGroupsTesting"]),
    .library(name: "AppGroupsKeychain", targets: ["AppGroupsKeychain", "AppGroupsKeybag"]),
    .executable(name: "groupctl", targets: ["groupctl"]),
  ],
  targets: [
    // The only C: what Swift cannot call or see on Linux.
    .target(
      name: "CAppGroupsLinux",
      cSettings: [.define("_GNU_SOURCE")]
    ),
    .target(
      name: "AppGroups",
      dependencies: ["CAppGroupsLinux"]
    ),
    // The system's libcrypto (OpenSSL 3), for the keybag and the keychain only: the
    // preference core never links it.
    .systemLibrary(
      name: "CAppGroupsCrypto",
      pkgConfig: "libcrypto",
      providers: [.apt(["libssl-dev"])]
    ),
    // The system's libsqlite3, for the notes example only: the library never links it.
    .systemLibrary(
      name: "CSQLite",
      pkgConfig: "sqlite3",
      providers: [.apt(["libsqlite3-dev"])]
    ),
    // The device's keybag: class keys wrapped by a key derived from the passcode.
    .target(name: "AppGroupsKeybag", dependencies: ["AppGroups", "CAppGroupsCrypto"]),
    // The shared keychain: SecItem calls, access groups, items encrypted per class.
    .target(name: "AppGroupsKeychain", dependencies: ["AppGroups", "AppGroupsKeybag"]),
    // For the tests of apps that use AppGroups: a temporary root, identity and manifest per test.
    .target(name: "AppGroupsTesting", dependencies: ["AppGroups"]),
    // This process's arguments and environment as text: refused when they are not UTF-8.
    .target(name: "CommandLineText"),
    .executableTarget(
      name: "groupctl",
      dependencies: ["AppGroups", "AppGroupsKeybag", "AppGroupsKeychain", "CommandLineText"]),
    .target(name: "ExampleSchema", dependencies: ["AppGroups"], path: "Examples/ExampleSchema"),
    // The examples' keychain wrapper, written as iOS code is (only its import differs).
    .target(
      name: "ExampleKeychain", dependencies: ["AppGroupsKeychain"], path: "Examples/ExampleKeychain"),
    .executableTarget(
      name: "app",
      dependencies: ["AppGroups", "AppGroupsKeychain", "ExampleSchema", "ExampleKeychain", "CommandLineText"],
      path: "Examples/app"),
    .executableTarget(
      name: "widget",
      dependencies: ["AppGroups", "AppGroupsKeychain", "ExampleSchema", "ExampleKeychain", "CommandLineText"],
      path: "Examples/widget"),
    .executableTarget(
      name: "cache-writer", dependencies: ["AppGroups", "CommandLineText"], path: "Examples/cache-writer"),
    .executableTarget(
      name: "notes", dependencies: ["AppGroups", "CSQLite", "CommandLineText"], path: "Examples/notes"),
    .executableTarget(
      name: "benchmark", dependencies: ["AppGroups", "AppGroupsKeychain"], path: "Benchmarks/benchmark"),
    .executableTarget(
      name: "appgroups-worker", dependencies: ["AppGroups", "AppGroupsKeybag"], path: "Tests/Worker"),
    .executableTarget(
      name: "appgroups-keychain-worker",
      dependencies: ["AppGroups", "AppGroupsKeychain", "ExampleKeychain"], path: "Tests/KeychainWorker"),
    .target(
      name: "AppGroupsTestSupport",
      dependencies: ["AppGroups", "AppGroupsTesting"],
      path: "Tests/AppGroupsTestSupport"
    ),
    .testTarget(
      name: "AppGroupsTests",
      dependencies: [
        "AppGroups", "AppGroupsTesting", "AppGroupsTestSupport", "ExampleSchema", "groupctl",
        "AppGroupsKeybag", "AppGroupsKeychain", "ExampleKeychain",
        "app", "widget", "appgroups-worker", "cache-writer", "appgroups-keychain-worker", "notes",
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
  guard target.name != "CAppGroupsLinux" else { continue }
  target.swiftSettings = (target.swiftSettings ?? []) + [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
  ]
}

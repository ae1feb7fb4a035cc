// swift-tools-version:6.2
// The GNOME dconf side of the benchmark, not part of the AppGroups package: it needs
// libdconf (Debian: `apt-get install libdconf-dev dconf-service dbus`), which
// `swift build` of AppGroups never does.
//
//   swift build -c release --package-path Benchmarks/dconf-peer
//   .build/release/benchmark            # then finds and runs it beside the other two sides
import PackageDescription

let package = Package(
  name: "dconf-peer",
  targets: [
    .systemLibrary(
      name: "CDconf", pkgConfig: "dconf", providers: [.apt(["libdconf-dev"])]),
    .executableTarget(name: "dconf-peer", dependencies: ["CDconf"]),
  ],
  swiftLanguageModes: [.v6]
)

// swift-tools-version:6.2
// A measuring program, not part of the AppGroups package: propagation
// latency from a write in one process to an observer's callback in another.
//
//   swift run -c release --package-path .ci/latency latency [SAMPLES] [FOLDER]
import PackageDescription

/// A path dependency is named after its folder: the clone's, whatever it is.
let appGroups = #filePath.split(separator: "/").dropLast(3).last.map(String.init) ?? "AppGroups"

let package = Package(
  name: "latency",
  dependencies: [.package(path: "../..")],
  targets: [
    .executableTarget(
      name: "latency", dependencies: [.product(name: "AppGroups", package: appGroups)])
  ],
  swiftLanguageModes: [.v6]
)

// benchmark: AppGroups against Foundation's UserDefaults, measures P1–P9 (P1′ and P9: typed
// keys and migrations), in one run so the ratio holds on a noisy machine.
//
//   swift build -c release --product benchmark && .build/release/benchmark
//   .build/release/benchmark --quick        # the CI smoke test: well under a minute
//   .build/release/benchmark --rounds N     # more or fewer rounds
//   Benchmarks/watcher-wake-cost.sh         # P5/P8's watcher: instructions per change heard
//
// Every measure runs in a fresh child process (this binary, re-executed in a
// hidden mode: `benchmark __child <side> <mode> name=value…`) so that each
// side starts cold, Foundation's HOME is a temporary folder, and the
// cross-process measures (P5, P8) have real processes on both ends. Beside them, every round,
// the disk's floor for a durable commit and P8's fan-out floor (FanoutFloor.swift): what this
// machine does at best for the same work with bare system calls.
import Glibc

let arguments = Array(CommandLine.arguments.dropFirst())
signal(SIGPIPE, SIG_IGN)

if arguments.first == "__child" {
  guard arguments.count >= 3 else { fail("__child SIDE MODE [name=value…]") }
  let parameters = Parameters(Array(arguments.dropFirst(3)))
  switch arguments[1] {
  case "appgroups": AppGroupsSide.run(arguments[2], parameters)
  case "foundation": FoundationSide.run(arguments[2], parameters)
  case "files": CoordinationSide.run(arguments[2], parameters)
  case "floor": FanoutFloor.run(arguments[2], parameters)
  default: fail("unknown side \(arguments[1])")
  }
  emit("done")
  exit(0)
}

let usage = """
  usage: benchmark [--quick] [--rounds N] [--only P1,P2,…] [--keep] [--no-dconf] [--no-settle]
    --quick     the CI smoke test: fewer rounds and samples, smaller sizes (well under a minute)
    --rounds N  rounds per measure (full run: 5)
    --only …    run only these measures (P1…P9, P11; F1, F2: file coordination); P8 also measures
                its fan-out floor (the same fan-out done with bare system calls)
    --keep      keep the temporary folder, for running a child mode by hand under a profiler
    --no-dconf  leave out the dconf column (run when Benchmarks/dconf-peer is built)
    --no-settle do not write back the disk's dirty data (sync) before each measured child
  """
var configuration = arguments.contains("--quick") ? Configuration.quickRun : Configuration.full
var index = 0
while index < arguments.count {
  switch arguments[index] {
  case "--quick":
    break
  case "--rounds":
    index += 1
    guard index < arguments.count, let n = Int(arguments[index]), n > 0 else { fail("--rounds needs a positive number") }
    configuration.rounds = n
  case "--only":
    index += 1
    guard index < arguments.count else { fail("--only needs a list such as P1,P6") }
    configuration.only = Set(arguments[index].uppercased().split(separator: ",").map(String.init))
  case "--keep":
    configuration.keep = true
  case "--no-dconf":
    configuration.dconfPeer = nil
  case "--no-settle":
    configuration.settles = false
  case "--help", "-h":
    print(usage)
    exit(0)
  default:
    fail("unknown argument \(arguments[index])\n\(usage)")
  }
  index += 1
}
Coordinator(configuration: configuration).run()

#!/bin/bash
# The user-space cost of P10's measured region, a new process's `GroupDefaults(suiteName:)` and
# first read of the 1,000-key group suite, counted in instructions by valgrind's callgrind,
# which this noisy machine cannot disturb.
#
#   swift build -c release --product benchmark && Benchmarks/cold-open-cost.sh [RUNS]
#
# BENCHMARK=<path> measures another build of the benchmark (a base to compare with).
#
# The benchmark prepares the suite (`--only P7`: its load children are P10's) and keeps its
# folder; a `load` child then runs under callgrind RUNS times (2 unless told), collecting
# inside the harness's `AppGroupsSide.open` and `GroupDefaults.integer(forKey:)`: the open
# and the first read, as the child's own clock times them. A child that fails (a suite that
# is not the one prepared reads `unreadCount` as 0, not 42) fails the script: its count
# would be of another path.
set -euo pipefail
runs=${1:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/Benchmarks/callgrind-prepare.sh"
prepare cold-open-cost --quick --only P7
suite=group.bench.keys-1000  # the suite P10's children load, as the harness names it

for run in $(seq "$runs"); do
  out=$work/callgrind.$run
  if ! valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
    --toggle-collect='$s9benchmark13AppGroupsSideO4open_8rootPath*' \
    --toggle-collect='$s9AppGroups13GroupDefaultsC7integer6forKey*' \
    "$work/benchmark" __child appgroups load suite=$suite keys=1000 > "$work/load.out" 2> "$work/load.err"
  then
    echo "cold-open-cost: the load child failed:" >&2
    grep -v '^==' "$work/load.err" >&2
    exit 1
  fi
  grep -q '^sample load ' "$work/load.out" || { echo "cold-open-cost: the load child timed nothing" >&2; exit 1; }
  total=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/load.err")
  echo "open and first read, run $run: $(( total / 1000 )).$(( total % 1000 / 100 ))k instructions"
done

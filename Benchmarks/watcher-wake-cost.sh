#!/bin/bash
# The user-space cost of one change heard by a watching process (P5/P8's watcher), counted in
# instructions by valgrind's callgrind, which this noisy machine cannot disturb.
#
#   swift build -c release --product benchmark && Benchmarks/watcher-wake-cost.sh [N]
#
# BENCHMARK=<path> measures another build of the benchmark (a base to compare with).
#
# A `watch` child runs under callgrind while two `pings` children (other processes) commit
# changes of the watched key: the first change alone, and only once the watcher has told of it
# the rest, 100 ms apart so that each is heard on its own (under load, a first change still
# being handled under callgrind when the next arrives would be heard together with it); the
# same with 1 change and with none. Printed: the first change's cost (the runtime's first uses
# included) and the cost per change after it, from the inotify event to the observer's
# callback returning and what follows (the notification), every thread of the watcher.
set -euo pipefail
count=${1:-100}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/Benchmarks/callgrind-prepare.sh"
prepare watcher-wake-cost --only P5 --rounds 1
suite=group.bench.notify  # P5's suite, which --only P5 prepared

# Waits until the watcher has told of $1 changes, a minute at most.
wait_for_changes() {
  for _ in $(seq 600); do [ "$(grep -c '^got' "$work/watch.out")" -ge "$1" ] && break; sleep 0.1; done
}

# Instructions of a watcher that hears $1 changes.
instructions() {
  local out=$work/watch.out
  : > "$out"
  coproc WATCHER {
    valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.$1" \
      "$work/benchmark" __child appgroups watch suite=$suite > "$out" 2> "$work/watch.err"
  }
  for _ in $(seq 600); do grep -q ready "$out" && break; sleep 0.1; done
  grep -q ready "$out" || { echo "watcher-wake-cost: the watcher did not start" >&2; exit 1; }
  # The first change alone, then the rest once it was told (it runs slowly under callgrind).
  # Two `pings` processes in every run, with no change to send or not: what the watcher hears
  # of their opening and ending is the same in each, and drops out of the differences.
  local first=$(( $1 > 0 ? 1 : 0 ))
  "$work/benchmark" __child appgroups pings suite=$suite count=$first gapMicros=0 > /dev/null
  wait_for_changes "$first"
  "$work/benchmark" __child appgroups pings suite=$suite count=$(( $1 - first )) gapMicros=100000 > /dev/null
  wait_for_changes "$1"
  local heard
  heard=$(grep -c '^got' "$out" || true)
  [ "$heard" -eq "$1" ] || { echo "watcher-wake-cost: heard $heard of $1 changes" >&2; exit 1; }
  eval "exec ${WATCHER[1]}>&-"
  wait "$WATCHER_PID"
  callgrind_annotate "$work/callgrind.$1" | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}

none=$(instructions 0)
one=$(instructions 1)
many=$(instructions $((count + 1)))
# In thousands, to a tenth.
thousands() { echo "$(( $1 / 1000 )).$(( $1 % 1000 / 100 ))k"; }
echo "first change heard: $(thousands $(( one - none ))) instructions"
echo "each change after it (n = $count): $(thousands $(( (many - one) / count ))) instructions"

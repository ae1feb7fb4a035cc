# Sourced by the scripts that count a path's instructions with callgrind (cold-open-cost.sh,
# watcher-wake-cost.sh), after `here` is set to the package's folder.
#
#   prepare NAME ARGUMENT...
#
# Makes a work folder, copies the benchmark into it without its debug information (valgrind
# cannot read the release build's), runs the copy with ARGUMENT... --no-dconf --keep to prepare
# the suites and keep their folder, and exports BENCH_ROOT, HOME and XDG_CONFIG_HOME for the
# children the script then runs there. Sets `work` and `kept`; both go when the script exits.
# BENCHMARK=<path> names another build of the benchmark (a base to compare with).
prepare() {
  local name=$1
  shift
  work=$(mktemp -d "/tmp/appgroups-$name-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  cp "${BENCHMARK:-$here/.build/release/benchmark}" "$work/benchmark"
  strip -g "$work/benchmark"
  kept=$("$work/benchmark" "$@" --no-dconf --keep 2>&1 | sed -n 's/.*kept \([^ ]*\) .*/\1/p')
  [ -d "$kept" ] || { echo "$name: the benchmark kept no folder" >&2; exit 1; }
  trap 'rm -rf "$work" "$kept"' EXIT
  export BENCH_ROOT=$kept/root HOME=$kept/home-appgroups XDG_CONFIG_HOME=$kept/home-appgroups/.config
}

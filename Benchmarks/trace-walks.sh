#!/bin/bash
# Traces issue 23's two walks on the debug build with valgrind's callgrind and counts their
# crossings and files (the rule is in trace-walks.py):
#
#   swift build --product groupctl && Benchmarks/trace-walks.sh
#
# Walk 1, a `set` to `fsync`: `groupctl write` of a key to a suite that exists, collected
# inside `GroupDefaults.stage` (the set) and inside `SuiteStore.commitPending` (the commit,
# reached from the commit queue's `flush()` or from the write's synchronize: the same body),
# up to the first `fsync` (callgrind dumps before it; what the commit does after is left
# out). The queue hop, which callgrind cannot see as a call, is added as one crossing.
# Walk 2, another process's commit to an observer: `groupctl watch` of the suite while a
# second `groupctl write` commits, collected inside the watcher thread's loop
# (`WatcherEngine.run`: the wake, inotify's events read, their handling) up to the call of
# the observer's closure (callgrind dumps before it).
# Everything runs in a temporary root, with HOME in it.
#
# The same script traces the code as it stood before the storage wing was rebuilt (45ce154,
# where the temporary file is written by FileSystem.writeAtomically and WatcherEngine is a
# private class): check that commit out in a worktree of its own, build groupctl there, and
# run this script with BIN naming that build and SOURCES its Sources/AppGroups.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$here/.build/x86_64-unknown-linux-gnu/debug}
work=$(mktemp -d /tmp/appgroups-trace-walks-XXXXXX)
watcher=
cleanup() {
  [ -n "$watcher" ] && kill "$watcher" 2>/dev/null && wait "$watcher" 2>/dev/null
  [ -n "${KEEP:-}" ] && echo "kept $work" >&2 && return
  rm -rf "$work"
}
trap cleanup EXIT
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config
unset APPGROUPS_ROOT APPGROUPS_BUNDLE_ID
mkdir -p "$HOME"
root=$work/root
app=com.example.app
suite=group.com.example.trace
groupctl() { "$bin/groupctl" --root "$root" "$@"; }
# valgrind cannot read the debug build's debug information (DWARF 5): a copy without it is
# traced, and the post-processor finds each function's file in the original.
cp "$bin/groupctl" "$work/groupctl"
strip -g "$work/groupctl"
groupctl grant "$app" "$suite" > /dev/null 2>&1
groupctl grant com.example.widget "$suite" > /dev/null 2>&1
# The suite, its folder and lock file exist before the traced write: its first-time set-up is
# not the walk.
groupctl --as "$app" write "$suite" seed 1

# Callgrind, collecting inside the functions given; the dumps go to $1.*.
trace() {
  local out=$1; shift
  exec valgrind --tool=callgrind --callgrind-out-file="$out.%p" --compress-strings=no --compress-pos=no --separate-callers=6 \
    --collect-atstart=no "$@"
}
# The first dump of $1 (before the first call of --dump-before's function), when it holds $2.
dump_with() { local dump; dump=$(ls "$1".*.1) && grep -q -F "fn=$2" "$dump" && echo "$dump"; }

# Walk 1.
( trace "$work/walk1" \
  --toggle-collect='$s9AppGroups13GroupDefaultsC5stage_6forKey*' \
  --toggle-collect='$s9AppGroups10SuiteStoreC13commitPending7timeout*' \
  --dump-before=fsync \
  "$work/groupctl" --root "$root" --as "$app" write "$suite" greeting -string hello ) 2> "$work/walk1.err" \
  || { cat "$work/walk1.err" >&2; exit 1; }
dump1=$(dump_with "$work/walk1" '$s9AppGroups10SuiteStoreC13commitPending7timeout' || true)
[ -n "$dump1" ] || { echo "trace-walks: walk 1 left no dump with the commit" >&2; exit 1; }
# The cut: the first fsync is the temporary file's, in FileSystem.writeUnnamed (the next dump
# starts in it).
grep -q -E "fn=fsync'\\\$s9AppGroups10FileSystemO(12writeUnnamed|15writeAtomically)" "${dump1%.1}.2" \
  || { echo "trace-walks: walk 1's first fsync is not the temporary file's" >&2; exit 1; }

# Walk 2: the watcher under callgrind, told of one commit by another process.
coproc WATCH {
  trace "$work/walk2" \
    --toggle-collect='$s9AppGroups13WatcherEngine*C3run*' \
    --dump-before='$s8groupctl12WatchCommandV3runyyKFySay9AppGroups13GroupDefaultsC6ChangeVGYbcfU0_' \
    "$work/groupctl" --root "$root" --as com.example.widget watch "$suite" greeting 2>&1
}
watcher=$WATCH_PID
for _ in $(seq 600); do
  read -r -t 1 line <&"${WATCH[0]}" || continue
  case $line in watching*) break ;; esac
done
groupctl --as "$app" write "$suite" greeting -string goodbye
for _ in $(seq 600); do
  read -r -t 1 line <&"${WATCH[0]}" || continue
  case $line in *goodbye*) break ;; esac
done
kill "$watcher"; wait "$watcher" 2>/dev/null || true; watcher=
dump2=$(dump_with "$work/walk2" '$s9AppGroups13WatcherEngine' || true)
[ -n "$dump2" ] || { echo "trace-walks: walk 2 left no dump with the watcher" >&2; exit 1; }

post=$here/Benchmarks/trace-walks.py
sources=${SOURCES:-$here/Sources/AppGroups}
cat <<'HEADER'
# Issue 23's two walks, traced by Benchmarks/trace-walks.sh (callgrind, debug build).
# A crossing is a distinct caller-type -> callee-type pair of hand-written code (the queue hop
# counts as one); the standard library, Foundation, Dispatch, compiler-made members,
# constants, once-per-process set-up and the Mutex stand-in are left out, and a closure is
# its enclosing function's type. Files: the distinct source files of the code the walk ran.
# Each crossing: caller -> callee [caller's files -> callee's files], one call for example.
# Each walk ends with a second, coarser count, calibrated on the code before the rebuild (the
# rule is in trace-walks.py): it gives that code's walks the issue's own figures.
# (What a walk meets depends a little on timing: whether a notification is already waiting,
# which events one wake-up reads; a run can differ from another by a crossing or two.)

HEADER
python3 "$post" "Walk 1: a set to fsync" "$sources" "$bin/groupctl" "$dump1" \
  '$s9AppGroups13GroupDefaultsC5stage_6forKey,$s9AppGroups10SuiteStoreC13commitPending7timeout' \
  "SuiteStore>SuiteStore"
echo
python3 "$post" "Walk 2: another process's commit to an observer" "$sources" "$bin/groupctl" "$dump2" \
  '$s9AppGroups13WatcherEngine*C3run'

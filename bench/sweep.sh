#!/usr/bin/env bash
# The speed-up of `storsim sweep` on several processors over one, on two sweeps of eight
# 1 M-request points each: the bench2g SSD under its w100 and r90 traces, and under two
# synthetic workloads (random writes; 90 % random reads), each with four GC victim policies.
# Each sweep runs with --jobs 1 and --jobs N in turn, ROUNDS times, into fresh folders; prints
# each run's wall and CPU time and the peak resident memory of the whole process (from
# /usr/bin/time). A trace point parses its trace on a second thread (--parse-thread), so with
# --jobs 1 the traces' sweep already keeps a second processor partly busy; the synthetic one
# does not.
#
#   bench/sweep.sh BINARY [JOBS] [ROUNDS]
#
# The traces are generated as bench/reference_set.sh generates them, into $REFSET_CACHE
# (default /tmp/storsim-refset); needs ../shared beside the repository.
set -euo pipefail
bin=$(realpath "$1")
jobs=${2:-2}
rounds=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=$root/../shared
cache=${REFSET_CACHE:-/tmp/storsim-refset}
mkdir -p "$cache"
. "$root/bench/common.sh"
bench2g_traces "$shared" "$cache"
work=$(mktemp -d /tmp/storsim-sweep-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat > "$work/traces.toml" <<SPEC
name = "bench2g traces"
devices = ["bench2g"]
workloads = ["$cache/w100_1m.trace", "$cache/r90_1m.trace"]
[grid]
"ssd.page.gc_policy" = ["greedy", "random", "fifo", "cost-benefit"]
SPEC
cat > "$work/synthetic.toml" <<SPEC
name = "bench2g synthetic"
devices = ["bench2g"]
workloads = [
  "synthetic:rw=randwrite,bs=4k,iodepth=32,requests=1000000,span=1300m",
  "synthetic:rw=randrw,rwmixread=90,bs=4k,iodepth=32,requests=1000000,span=1300m",
]
[grid]
"ssd.page.gc_policy" = ["greedy", "random", "fifo", "cost-benefit"]
SPEC
for spec in traces synthetic; do
  for round in $(seq "$rounds"); do
    for j in 1 "$jobs"; do
      rm -rf "$work/out"
      /usr/bin/time -f "$spec jobs $j round $round: %e s wall, %U s user, %M KiB peak RSS" \
        "$bin" sweep "$work/$spec.toml" --out "$work/out" --jobs "$j" --quiet
    done
  done
done

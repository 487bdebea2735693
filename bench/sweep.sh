#!/usr/bin/env bash
# The speed-up of `storsim sweep` on several processors over one: eight 1 M-request points (the
# bench2g SSD under its w100 and r90 traces, with four GC victim policies), run with --jobs 1
# and --jobs N in turn, ROUNDS times, into fresh folders. Prints each run's wall time and the
# peak resident memory of the whole process (from /usr/bin/time).
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
for t in w100:0:2000000:1 r90:90:25000:2; do
  IFS=: read -r name pct iat seed <<<"$t"
  trace=$cache/${name}_1m.trace
  [ -s "$trace" ] || python3 "$shared/bench/gen_trace.py" --lba-pages 341000 --read-pct "$pct" \
    --iat-ns "$iat" --prefill --prefill-gap-ns 2000000 --seed "$seed" -o "$trace"
done
work=$(mktemp -d /tmp/storsim-sweep-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat > "$work/spec.toml" <<SPEC
name = "bench2g sweep"
devices = ["bench2g"]
workloads = ["$cache/w100_1m.trace", "$cache/r90_1m.trace"]
[grid]
"ssd.page.gc_policy" = ["greedy", "random", "fifo", "cost-benefit"]
SPEC
for round in $(seq "$rounds"); do
  for j in 1 "$jobs"; do
    rm -rf "$work/out"
    /usr/bin/time -f "jobs $j round $round: %e s wall, %M KiB peak RSS" \
      "$bin" sweep "$work/spec.toml" --out "$work/out" --jobs "$j" --quiet
  done
done

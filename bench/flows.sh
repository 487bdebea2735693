#!/usr/bin/env bash
# Multi-flow and host-interface speed (docs/PERFORMANCE.md, "Issue #27"): bench2g under its
# w100 and r90 traces, one flow each on a build from before the flows work (BEFORE) and on this
# one (AFTER), the same traces behind the NVMe interface (`bench2g:nvme`), and the two traces
# as two flows of one run, with the parse thread on and off. Interleaved, ROUNDS times; prints
# each run's wall and user CPU seconds and peak resident memory (KB) from /usr/bin/time.
#
#   bench/flows.sh BEFORE_BINARY AFTER_BINARY [ROUNDS]
#
# With FLOWS_BEFORE=1 the two-flow runs go on BEFORE too (a build that has flows), to compare
# two builds of the multi-flow engine.
#
# The traces are generated as bench/reference_set.sh generates them, into $REFSET_CACHE
# (default /tmp/storsim-refset); needs ../shared beside the repository.
set -euo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
rounds=${3:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=$root/../shared
cache=${REFSET_CACHE:-/tmp/storsim-refset}
mkdir -p "$cache"
. "$root/bench/common.sh"
bench2g_traces "$shared" "$cache"
out=$(mktemp /tmp/storsim-flows-bench.XXXXXX.json)
trap 'rm -f "$out"' EXIT
timed() {
  local label=$1
  shift
  /usr/bin/time -f "$label %e s wall %U s user %M KB" "$@" --quiet --json "$out"
}
for _ in $(seq "$rounds"); do
  for t in w100 r90; do
    timed "one-flow $t before" "$before" simulate --device bench2g \
      --workload "$cache/${t}_1m.trace" --parse-thread off
    timed "one-flow $t after" "$after" simulate --device bench2g \
      --workload "$cache/${t}_1m.trace" --parse-thread off
    timed "nvme $t after" "$after" simulate --device bench2g:nvme \
      --workload "$cache/${t}_1m.trace" --parse-thread off
  done
  for parse in on off; do
    if [ "${FLOWS_BEFORE:-0}" = 1 ]; then
      timed "two-flows parse-$parse before" "$before" simulate --device bench2g \
        --flow "$cache/w100_1m.trace" --flow "$cache/r90_1m.trace" --parse-thread "$parse"
    fi
    timed "two-flows parse-$parse after" "$after" simulate --device bench2g \
      --flow "$cache/w100_1m.trace" --flow "$cache/r90_1m.trace" --parse-thread "$parse"
  done
done

#!/usr/bin/env bash
# Die scheduling (issue 38 §1): a read-heavy flow beside a write-heavy one on one drive, under
# each die scheduling policy; reports the reader's p50/p99/p99.9 latency and the writer's
# throughput as a table (table.md) and the runs' report page with its plots.
# Usage: run.sh quick|full OUT
set -euo pipefail

size=${1:?usage: run.sh quick|full OUT}
out=${2:?usage: run.sh quick|full OUT}
storsim=${STORSIM:-storsim}
here=$(dirname "$0")
case "$size" in
quick) seconds=0.2 ;;
full) seconds=2 ;;
*)
    echo "run.sh: unknown size '$size' (quick or full)" >&2
    exit 2
    ;;
esac
mkdir -p "$out"

# The policies compared; suspend takes the defaults of docs/models/die-scheduling.md.
policies=(fifo read-priority suspend)
for policy in "${policies[@]}"; do
    "$storsim" simulate --quiet --device "$here/device.toml" \
        --set "ssd.die_scheduling=\"$policy\"" \
        --workload "$here/flows-$size.toml" --json "$out/$policy.json"
done

runs=("${policies[@]/#/$out/}")
python3 "$here/table.py" "$seconds" "${runs[@]}" > "$out/table.md"
cat "$out/table.md"
# The report page compares the three runs (latency CDFs, percentiles); full also writes each
# plot as SVG and PNG.
plots=()
[ "$size" = full ] && plots=(--plots "$out/plots")
"$storsim" report "${runs[@]/%/.json}" --out "$out/report.html" \
    "${plots[@]+"${plots[@]}"}" >/dev/null

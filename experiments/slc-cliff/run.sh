#!/usr/bin/env bash
# The SLC cache's write cliff (issue 38 §2): a whole-drive sequential fill in 1 MiB writes at
# QD1 from empty, as SSD reviews run it, and two bursts a minute apart; plots throughput
# against gigabytes written and over time, with the cache's occupancy (plot.py).
# Usage: run.sh OUT
set -euo pipefail

out=${1:?usage: run.sh OUT}
storsim=${STORSIM:-storsim}
here=$(dirname "$0")
mkdir -p "$out"

# The device's logical capacity in MiB: the fill writes all of it once.
capacity=$("$storsim" simulate --quiet --device "$here/device.toml" \
    --workload 'synthetic:rw=write,bs=1m,iodepth=1,requests=1' --json - |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["device"]["capacity_bytes"] // 2**20)')

"$storsim" simulate --quiet --device "$here/device.toml" \
    --workload "synthetic:rw=write,bs=1m,iodepth=1,requests=$capacity" \
    --window 100ms --json "$out/fill.json"
"$storsim" simulate --quiet --device "$here/device.toml" \
    --workload "$here/flows-burst.toml" --window 100ms --json "$out/bursts.json"
python3 "$here/plot.py" "$out/fill.json" "$out/bursts.json" "$out"

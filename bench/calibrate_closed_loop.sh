#!/usr/bin/env bash
# The closed loop of calibration for docs/PERFORMANCE.md: `storsim calibrate` measures a FUSE
# file served by `storsim emulate` with a known `linear` device (A = 2000/3000/3500/5000 µs,
# B = 20/24/30/36 µs per KiB for SR/RR/SW/RW), against a zero-latency baseline, and the table
# says how far the fitted A and B are from the truth. On a quiet machine every figure is within
# 3 %; the test `closed_loop_through_the_emulator_recovers_a_known_linear_device` holds the same
# calibration to that figure, retrying, and to 10 % when the machine stays busy.
# Needs root (FUSE mounts) and a `dist` build (SKIP_BUILD=1 uses the one there is).
#
#   bench/calibrate_closed_loop.sh [RUNS]     (default 3 runs)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
. bench/common.sh
storsim_binary
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

{
  printf 'model = "linear"\ncapacity_bytes = 268435456\n'
  for t in sr:2000:20 rr:3000:24 sw:3500:30 rw:5000:36; do
    IFS=: read -r op a b <<<"$t"
    printf '[linear.%s]\na_us = %s.0\nb_us_per_kib = %s.0\n' "$op" "$a" "$b"
  done
} > "$work/truth.toml"
{
  printf 'model = "linear"\ncapacity_bytes = 268435456\n'
  for op in sr rr sw rw; do printf '[linear.%s]\na_us = 0.0\nb_us_per_kib = 0.0\n' "$op"; done
} > "$work/zero.toml"

for name in truth zero; do
  mkdir -p "$work/$name"
  "$bin" emulate --device "$work/$name.toml" --fuse "$work/$name" --backing none \
    > "$work/$name.out" 2> "$work/$name.err" &
  pids+=($!)
  until grep -q '^fuse: ' "$work/$name.out" 2>/dev/null; do sleep 0.05; done
done

echo "| run | load | SR A / B error | RR A / B error | SW A / B error | RW A / B error | worst |"
echo "|---|---|---|---|---|---|---|"
for run in $(seq 1 "$runs"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  "$bin" calibrate --target "$work/truth/disk" --baseline "$work/zero/disk" --allow-writes \
    --sizes 4k,8k,12k,16k,24k,32k,48k,64k,96k,128k --repeats 5 --requests-per-run 4 \
    --statistic min --out "$work/m.toml" --report "$work/r.json" > /dev/null 2>&1
  python3 - "$work/r.json" "$run" "$load" <<'PY'
import json, sys
report, run, load = sys.argv[1:4]
truth = {"sr": (2000, 20), "rr": (3000, 24), "sw": (3500, 30), "rw": (5000, 36)}
patterns = {p["pattern"]: p["fit"] for p in json.load(open(report))["calibration"]["patterns"]}
cells, worst = [], 0.0
for name, (a, b) in truth.items():
    fit = patterns[name]
    ea, eb = (fit["a_us"] - a) / a * 100, (fit["b_us_per_kib"] - b) / b * 100
    worst = max(worst, abs(ea), abs(eb))
    cells.append(f"{ea:+.2f} % / {eb:+.2f} %")
print(f"| {run} | {load} | " + " | ".join(cells) + f" | {worst:.2f} % |")
PY
done

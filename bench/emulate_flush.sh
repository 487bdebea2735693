#!/usr/bin/env bash
# Reply lateness with file backing under a flushing workload, for docs/PERFORMANCE.md: fio's nbd
# engine, 4 KiB random reads and writes at iodepth 8 with a FLUSH after every 8 writes
# (`--fsync=8`), and the same without flushes, against `storsim emulate --backing file:...` with
# a `linear` model at 100 µs per request. The backing file lives in a fresh directory under
# TMPDIR (default /tmp), so its fdatasync goes to whatever disk holds that.
#
# Takes the binaries to compare and runs them interleaved, ROUNDS times each (default 3), so
# that a change of the machine's load hits both alike. Needs fio with the nbd engine.
#
#   bench/emulate_flush.sh SECONDS ROUNDS BINARY...
#   bench/emulate_flush.sh 5 3 /tmp/storsim-before "$CARGO_TARGET_DIR/dist/storsim"
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?seconds per run}
rounds=${2:?rounds}
shift 2
. bench/common.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
linear_device "$work/lin100.toml" 100.0

run() { # BINARY FSYNC
  local bin=$1 fsync=$2
  rm -f "$work"/backing* "$work/out.txt"
  "$bin" emulate --device "$work/lin100.toml" --size 1g --nbd 127.0.0.1:0 \
    --backing "file:$work/backing" --json "$work/emu.json" > "$work/out.txt" 2> "$work/err.txt" &
  local pid=$!
  until grep -q '^nbd: ' "$work/out.txt" 2>/dev/null; do sleep 0.05; done
  local uri
  uri=$(sed -n 's/^nbd: //p' "$work/out.txt")
  fio --name=b --ioengine=nbd --uri="$uri" --rw=randrw --bs=4k --iodepth=8 --fsync="$fsync" \
    --size=1g --time_based --runtime="$seconds" --output-format=json > "$work/fio.json"
  kill -INT "$pid"; wait "$pid"
  python3 - "$bin" "$fsync" "$work/emu.json" <<'EOF'
import json, sys
bin, fsync, path = sys.argv[1:4]
e = json.load(open(path))
r, l = e["requests"], e["lateness"]["lateness_ns"]
us = lambda ns: f"{ns / 1000:.1f}"
print(f"| {bin} | {fsync} | {r['replied']} | {r['flush']} | {r.get('store_thread', '-')} "
      f"| {us(l['p50'])} | {us(l['p99'])} | {us(l['p999'])} | {us(l['max'])} "
      f"| {us(e['intake_ns']['p50'])} | {us(e['intake_ns']['p99'])} |")
EOF
}

echo "| binary | fsync | replies | flushes | store thread | lateness p50 | p99 | p99.9 | max (us) | intake p50 | p99 (us) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for _ in $(seq "$rounds"); do
  for fsync in 8 0; do
    for bin in "$@"; do
      run "$bin" "$fsync"
    done
  done
done

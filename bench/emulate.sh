#!/usr/bin/env bash
# Emulator benchmarks for docs/PERFORMANCE.md: reply lateness with a `linear` model at 100 µs
# service time, and the emulator's own ceiling with a zero-latency model, through NBD (fio's nbd
# engine) and through FUSE + a direct-I/O loop device (fio's libaio engine), at iodepth 1 and
# 32. Needs root (FUSE mount, losetup), fio with the nbd engine, and a `dist` build.
#
# The fio columns are fio's total latency (submission to completion): its nbd engine counts much
# of a request's time as submission latency, so completion latency alone would understate it.
# The load column is the 1-minute load average when the row's run began.
#
# FUSE_TRANSPORT chooses the FUSE mount's transport (`--fuse-transport`): auto (the default),
# dev-fuse or io-uring; the FUSE rows' labels say which one the mount used. FRONTENDS limits the
# runs to some front ends (default "nbd fuse"). PACING_CPU=N runs the pacing thread on CPU N
# (`--pacing-cpu N`) and fio on the other CPUs. SKIP_BUILD=1 uses the `dist` binary already
# built, so that interleaved runs do not rebuild it (with LTO, a minute of both cores) whenever
# another crate of the workspace changed in between.
#
#   bench/emulate.sh [SECONDS]      (default 10 s per run)
#   FUSE_TRANSPORT=dev-fuse bench/emulate.sh 5
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
transport=${FUSE_TRANSPORT:-auto}
frontends=${FRONTENDS:-nbd fuse}
pacing=()
on_host=()
if [ -n "${PACING_CPU:-}" ]; then
  pacing=(--pacing-cpu "$PACING_CPU")
  others=$(python3 -c "import os; print(','.join(str(c) for c in sorted(os.sched_getaffinity(0)) if c != $PACING_CPU))")
  on_host=(taskset -c "$others")
fi
. bench/common.sh
storsim_binary
work=$(mktemp -d)
trap 'umount -l "$work/fuse" 2>/dev/null || true; rm -rf "$work"' EXIT

linear_device "$work/lin100.toml" 100.0
linear_device "$work/zero.toml" 0.0

report() { # LABEL FIO_JSON EMULATOR_JSON LOAD
  python3 - "$@" <<'EOF'
import json, sys
label, fio_path, emu_path, load = sys.argv[1:5]
text = open(fio_path).read()
job = json.loads(text[text.index('{'):])["jobs"][0]["read"]
emu = json.load(open(emu_path))
lat = emu["lateness"]["lateness_ns"]
us = lambda ns: f"{ns / 1000:.1f}"
print(f"| {label} | {job['iops']:.0f} | {us(job['lat_ns']['mean'])} | {us(job['lat_ns']['percentile']['50.000000'])} "
      f"| {us(lat['p50'])} | {us(lat['p99'])} | {us(lat['p999'])} | {us(lat['max'])} "
      f"| {emu['lateness']['late']} / {emu['requests']['replied']} | {us(emu['intake_ns']['p50'])} | {load} |")
EOF
}

# Starts the emulator with the given front-end arguments and waits for the line starting with
# PREFIX on its standard output. The file is removed first: the shell truncates it only once
# the emulator's process starts, and the previous run's line must not be read in between.
start() { # MODEL PREFIX FRONT-END-ARGS...
  local model=$1 prefix=$2
  shift 2
  rm -f "$work/out.txt"
  "$bin" emulate --device "$work/$model.toml" --size 1g "${pacing[@]}" "$@" \
    --json "$work/emu.json" > "$work/out.txt" 2> "$work/err.txt" &
  pid=$!
  until grep -q "^$prefix" "$work/out.txt" 2>/dev/null; do sleep 0.05; done
}

echo "| run | IOPS | fio lat mean (us) | fio lat p50 (us) | lateness p50 | p99 | p99.9 | max (us) | late / replies | intake p50 (us) | load |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for model in lin100 zero; do
  for depth in 1 32; do
    if [[ " $frontends " == *" nbd "* ]]; then
      load=$(cut -d' ' -f1 /proc/loadavg)
      start "$model" 'nbd: ' --nbd 127.0.0.1:0
      uri=$(sed -n 's/^nbd: //p' "$work/out.txt")
      "${on_host[@]}" fio --name=b --ioengine=nbd --uri="$uri" --rw=randread --bs=4k --iodepth="$depth" \
        --size=1g --time_based --runtime="$seconds" --lat_percentiles=1 \
        --output-format=json > "$work/fio.json"
      kill -INT "$pid"; wait "$pid"
      report "nbd, $model, QD$depth" "$work/fio.json" "$work/emu.json" "$load"
    fi
    if [[ " $frontends " == *" fuse "* ]]; then
      load=$(cut -d' ' -f1 /proc/loadavg)
      mkdir -p "$work/fuse"
      start "$model" 'fuse: ' --fuse "$work/fuse" --fuse-transport "$transport"
      if grep -q 'over io_uring' "$work/err.txt"; then used=io-uring; else used=dev-fuse; fi
      loop=$(losetup --direct-io=on -f --show "$work/fuse/disk")
      "${on_host[@]}" fio --name=b --filename="$loop" --ioengine=libaio --direct=1 --rw=randread --bs=4k \
        --iodepth="$depth" --time_based --runtime="$seconds" --lat_percentiles=1 \
        --output-format=json > "$work/fio.json"
      losetup -d "$loop"
      kill -INT "$pid"; wait "$pid"
      report "fuse+loop ($used), $model, QD$depth" "$work/fio.json" "$work/emu.json" "$load"
    fi
  done
done

#!/usr/bin/env bash
# Wu (seed 003), Table 4.10: the same encoding job on simulated CPUs 1x to 20x as fast as this
# machine's, over a simulated disk, with `storsim cosim --cpu-speed`. Usage: cpu-speed.sh quick|full OUT
set -euo pipefail

size=${1:?usage: cpu-speed.sh quick|full OUT}
out=${2:?usage: cpu-speed.sh quick|full OUT}
storsim=${STORSIM:-storsim}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The thesis ran 5 encoders on the 300-frame sequence at 1x..10x, 12x..20x. ROUNDS sets the
# computation per frame: about 150 ms of this project's build machine per frame, some four
# times the disk's time per frame, so that at 1x the job is CPU-bound as the thesis' was
# (99.7 % CPU, 28.9 % disk).
case "$size" in
quick) procs=2 frames=6 rounds=430 speeds="1 2 4 8 16" ;;
full) procs=5 frames=300 rounds=430 speeds="1 2 3 4 5 6 7 8 9 10 12 14 16 18 20" ;;
*)
    echo "cpu-speed.sh: unknown size '$size' (quick or full)" >&2
    exit 2
    ;;
esac
# The thesis' disk, an IBM 08K0383, has no preset; the IBM Ultrastar 18ES with DiskSim's
# validated parameters is a SCSI disk of the same maker and years.
device=${DEVICE:-disksim-ibm18es}

mkdir -p "$out/disk"
"${CC:-cc}" -O2 -o "$out/encode" "$here/encode.c"
# The raw video exists before the run, as the thesis' did: cosim lays it out first.
rm -f "$out"/disk/*
"$out/encode" prepare "$out/disk" "$frames"

for speed in $speeds; do
    rm -f "$out"/disk/out-*
    "$storsim" cosim --device "$device" --dir "$out/disk" --cpu-speed "$speed" --quiet \
        --report "$out/cpu-speed-${speed}x.json" -- \
        "$out/encode" run "$out/disk" "$frames" "$rounds" "$procs"
done

# Encoding time: the job's virtual time. The CPU is busy whenever some encoder computes, that
# is in all virtual time not skipped; the disk is busy for the model's busy time.
python3 - "$out" $speeds <<'SUMMARY'
import json, sys
out, speeds = sys.argv[1], sys.argv[2:]
rows = []
for speed in speeds:
    with open(f"{out}/cpu-speed-{speed}x.json") as f:
        run = json.load(f)
    virtual = run["time"]["virtual_elapsed_ns"]
    cpu = 100 * (1 - run["time"]["skipped_virtual_ns"] / virtual)
    disk = 100 * run["device"]["counters"]["busy_ns"] / virtual
    rows.append((speed, virtual / 1e9, cpu, disk))
with open(f"{out}/cpu-speed.csv", "w") as f:
    f.write("cpu_speed,encoding_time_s,speedup,cpu_busy_pct,disk_busy_pct\n")
    for speed, seconds, cpu, disk in rows:
        f.write(f"{speed},{seconds:.6f},{rows[0][1] / seconds:.3f},{cpu:.2f},{disk:.2f}\n")
SUMMARY
echo "cpu-speed.sh: wrote $out/cpu-speed.csv and $out/cpu-speed-*x.json"

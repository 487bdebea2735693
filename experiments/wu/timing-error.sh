#!/usr/bin/env bash
# Wu (seed 003), Figs 4.6-4.7: how late the emulator's replies leave against the instants the
# model gives (Δt), and Δt over the response time (Δt/t), under vdbench-like profiles driven by
# fio over NBD on a Unix socket. Usage: timing-error.sh quick|full OUT
set -euo pipefail

size=${1:?usage: timing-error.sh quick|full OUT}
out=${2:?usage: timing-error.sh quick|full OUT}
storsim=${STORSIM:-storsim}

# The thesis submitted 18 vdbench profiles for 3 minutes each: access random or mixed (80 %
# random, 20 % sequential), reads, writes or half of each, requests small (4 KiB), uniform
# (4 KiB steps over 4-128 KiB) or large (128 KiB). quick runs three of them, 2 s each.
case "$size" in
quick)
    seconds=2
    profiles="random:read:small mixed:rw:uniform random:write:large"
    ;;
full)
    seconds=180
    profiles=""
    for access in random mixed; do
        for op in read write rw; do
            for bs in small uniform large; do
                profiles+="$access:$op:$bs "
            done
        done
    done
    ;;
*)
    echo "timing-error.sh: unknown size '$size' (quick or full)" >&2
    exit 2
    ;;
esac
# PROFILE_SECONDS shortens or lengthens every profile (the full set at 5 s takes 90 s).
seconds=${PROFILE_SECONDS:-$seconds}
# The thesis' disk, an IBM 08K0383 under the Vesper model, has no preset; the IBM Ultrastar
# 18ES with DiskSim's validated parameters is a SCSI disk of the same maker and years.
device=${DEVICE:-disksim-ibm18es}

if ! fio --enghelp 2>/dev/null | grep -qw nbd; then
    echo "timing-error.sh: needs fio with its nbd engine (Debian's fio package has it)" >&2
    exit 1
fi

mkdir -p "$out"
rm -f "$out/emulate.json" "$out/emulate.out" "$out/nbd.sock"

# The whole disk is exported without storing its bytes: the timing is the model's either way,
# and the thesis' workloads never read back what they wrote.
"$storsim" emulate --device "$device" --backing none --nbd-unix "$out/nbd.sock" \
    --json "$out/emulate.json" >"$out/emulate.out" 2>"$out/emulate.err" &
emulator=$!
# Stop the emulator this script started, whatever happens to the script.
trap 'kill -INT "$emulator" 2>/dev/null || true' EXIT

uri=""
for _ in $(seq 300); do
    uri=$(sed -n 's/^nbd: //p' "$out/emulate.out")
    [ -n "$uri" ] && break
    kill -0 "$emulator" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$uri" ]; then
    echo "timing-error.sh: the emulator did not start:" >&2
    cat "$out/emulate.err" >&2
    exit 1
fi

# One fio job per profile, one after the other (stonewall), iodepth 4 as a stand-in for
# vdbench's "as fast as the device sustains".
job="$out/profiles.fio"
{
    printf '[global]\nioengine=nbd\nuri=%s\ndirect=1\niodepth=4\nruntime=%s\ntime_based=1\nstonewall=1\n' \
        "$uri" "$seconds"
    for profile in $profiles; do
        IFS=: read -r access op bs <<<"$profile"
        printf '\n[%s-%s-%s]\n' "$access" "$op" "$bs"
        case "$op" in
        read) printf 'rw=randread\n' ;;
        write) printf 'rw=randwrite\n' ;;
        rw) printf 'rw=randrw\nrwmixread=50\n' ;;
        esac
        [ "$access" = mixed ] && printf 'percentage_random=80\n'
        case "$bs" in
        small) printf 'bs=4k\n' ;;
        uniform) printf 'bsrange=4k-128k\n' ;;
        large) printf 'bs=128k\n' ;;
        esac
    done
} >"$job"
fio --output="$out/fio.txt" "$job"

kill -INT "$emulator"
wait "$emulator"
trap - EXIT

# The two distributions as CSV, and the seed's two headline fractions from the same run.
python3 - "$out" <<'SUMMARY'
import json, sys
out = sys.argv[1]
with open(f"{out}/emulate.json") as f:
    lateness = json.load(f)["lateness"]
with open(f"{out}/timing-error.csv", "w") as f:
    f.write("fraction,lateness_us,lateness_percent\n")
    for a, r in zip(lateness["cdf"], lateness["relative_cdf"]):
        f.write(f"{a['fraction']},{a['lateness_ns'] / 1000:.3f},{r['percent']:.6f}\n")
replies = lateness["relative_percent"]["replies"]
within = 1 - lateness["late"] / replies if replies else 0
under = max((p["fraction"] for p in lateness["relative_cdf"] if p["percent"] < 0.5), default=0)
with open(f"{out}/timing-error.txt", "w") as f:
    f.write(f"replies {replies}\n")
    f.write(f"within {lateness['threshold_ns'] / 1000:g} us: {100 * within:.3f} %\n")
    f.write(f"under 0.5 % of the response time: at least {100 * under:g} % (CDF point)\n")
    for key in ["p50", "p90", "p99", "p999", "max"]:
        f.write(f"lateness {key}: {lateness['lateness_ns'][key] / 1000:.1f} us\n")
SUMMARY
# The report page has both CDFs; full also writes each plot as SVG and PNG (seconds in a
# release build, much longer in a debug one, hence not at quick).
plots=()
[ "$size" = full ] && plots=(--plots "$out/plots")
"$storsim" report "$out/emulate.json" --out "$out/report.html" "${plots[@]+"${plots[@]}"}" >/dev/null
cat "$out/timing-error.txt"
echo "timing-error.sh: wrote $out/timing-error.{csv,txt}, $out/emulate.json and $out/report.html"

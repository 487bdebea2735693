#!/usr/bin/env bash
# IBM (seed 001): the STEC Zeus fit table recovered by calibration, and the % error table of a
# linear fit to a detailed SSD model. Usage: fit.sh quick|full OUT
set -euo pipefail

size=${1:?usage: fit.sh quick|full OUT}
out=${2:?usage: fit.sh quick|full OUT}
storsim=${STORSIM:-storsim}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Both plans measure the paper's patterns over an odd number of zones at twelve sizes (512 B to
# 1 MiB); every second size is held out of the fit and scores it, as the paper's % error table
# scores its simulator. quick repeats each run once over three zones, full uses calibrate's
# defaults (five zones, three repeats).
case "$size" in
quick) plan=(--zones 3 --repeats 1) ;;
full) plan=() ;;
*)
    echo "fit.sh: unknown size '$size' (quick or full)" >&2
    exit 2
    ;;
esac

mkdir -p "$out"

# 1. The Zeus: the linear model with the paper's table, measured in virtual time. Every latency
#    is A + n·B to the nanosecond, so the fit must give the table back.
"$storsim" calibrate --simulate stec-zeus --allow-writes "${plan[@]+"${plan[@]}"}" \
    --out "$out/zeus.toml" --report "$out/zeus.json" --csv "$out/zeus.csv" >"$out/zeus.txt"

# 2. A detailed SSD (FlashSim's, filled once): the paper's procedure applied to a device that is
#    not linear by construction, so the fit's r² and % errors mean something.
"$storsim" calibrate --simulate "$here/flashsim-filled.toml" --allow-writes \
    "${plan[@]+"${plan[@]}"}" --out "$out/flashsim.toml" --report "$out/flashsim.json" \
    --csv "$out/flashsim.csv" >"$out/flashsim.txt"

echo "fit.sh: wrote $out/zeus.{txt,json,csv,toml} and $out/flashsim.{txt,json,csv,toml}"

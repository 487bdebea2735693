#!/usr/bin/env bash
# The reference set: results JSON that a refactoring must leave byte-identical.
#
#   bench/reference_set.sh BINARY OUTDIR
#
# Runs BINARY (a storsim build) on the bench2g traces, every FTL on Financial1, every preset on
# a small synthetic mix, the ten DiskSim validation drives, and the hybrid and array examples,
# writing one JSON per run into OUTDIR. Compare two builds with `diff -r OUT_BEFORE OUT_AFTER`.
# Needs ../shared beside the repository (traces and DiskSim's drives); says what it skips
# when that is absent. The bench2g traces are generated once into $REFSET_CACHE (default
# /tmp/storsim-refset), about 60 MB.
set -euo pipefail
bin=$(realpath "$1")
mkdir -p "$2"
out=$(realpath "$2")
cache=${REFSET_CACHE:-/tmp/storsim-refset}
mkdir -p "$cache"
# Paths to the inputs are relative to the repository, so that the JSON, which names them, is
# the same for two checkouts (a worktree and main) of the same inputs.
cd "$(dirname "$0")/.."
shared=../shared

run() { # NAME ARGS...: one simulate run into OUTDIR/NAME.json
  local name=$1; shift
  if ! "$bin" simulate --quiet --json "$out/$name.json" "$@" 2>"$out/$name.err"; then
    echo "FAILED ($?): $name: $*" >&2
    cat "$out/$name.err" >&2
  fi
}

# Every preset on a small mixed workload, seeded.
"$bin" presets | awk '{print $1}' | while read -r preset; do
  run "preset-$preset" --device "$preset" --seed 7 \
    --workload 'synthetic:rw=randrw,rwmixread=70,bs=4k,iodepth=8,requests=20000,seed=3'
done

# The hybrid and array examples.
for dev in examples/hybrid/controller.toml examples/hybrid/host.toml \
  examples/raid0-flashsim.toml examples/raid1-ssd-zeus.toml; do
  name=example-${dev#examples/}; name=${name%.toml}; name=${name//\//-}
  run "$name" --device "$dev" --workload examples/oltp-sample.msr.csv --wrap
  run "$name-synthetic" --device "$dev" --seed 7 \
    --workload 'synthetic:rw=randrw,rwmixread=50,bs=16k,iodepth=16,requests=20000,seed=5'
done

if [ ! -d "$shared" ]; then
  echo "reference_set: $(realpath -m "$shared") is absent: bench2g, Financial1 and the DiskSim drives skipped" >&2
  exit 0
fi

# bench2g, as docs/PERFORMANCE.md runs it.
. bench/common.sh
bench2g_traces "$shared" "$cache"
for name in w100 r90; do
  run "bench2g-$name" --device bench2g --workload "$cache/${name}_1m.trace"
done

# Every FTL on Financial1 (raw flash refuses overwrites: counted).
fin=$shared/traces/financial1_ssdsim/Financial1_first10k.ssdsim.ascii
for ftl in page page-static block log-block fast dftl anand fmax raw; do
  run "financial1-$ftl" --device "flashsim-2009:$ftl" --workload "$fin" --wrap --on-refused count
done

# The ten DiskSim drives, imported and validated against their measured traces.
for drive in atlas_III barracuda cheetah4LP cheetah9LP ibm18es atlas10k hp_c2247a hp_c3323a \
  hp_c2490a dec_rz26; do
  # The device file goes to the cache, so that its path (which the JSON names) is the same for
  # every build compared.
  "$bin" import disksim "$shared/disksim-valid/$drive.parv" -o "$cache/disksim-$drive.toml" \
    2>"$out/disksim-$drive.err"
  cp "$cache/disksim-$drive.toml" "$out/"
  "$bin" validate disksim --device "$cache/disksim-$drive.toml" \
    --trace "$shared/disksim-valid/$drive.trace" --json "$out/disksim-$drive.json" \
    >/dev/null 2>>"$out/disksim-$drive.err" || echo "FAILED: disksim-$drive" >&2
done
echo "reference_set: $(ls "$out"/*.json | wc -l) results in $out"

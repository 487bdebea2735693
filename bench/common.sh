# Shared by the benchmarks (bench/emulate.sh, bench/yardstick.sh, bench/sweep.sh,
# bench/flows.sh, bench/reference_set.sh, ...); sourced, not run.

# Builds the binary docs/PERFORMANCE.md measures (the `dist` profile: fat LTO, one codegen unit)
# unless SKIP_BUILD=1 (interleaved runs should not rebuild it, with LTO a minute of both cores,
# whenever another crate of the workspace changed in between), and sets `bin` to it. Cargo puts
# the binary under CARGO_TARGET_DIR when it is set.
storsim_binary() {
  if [ "${SKIP_BUILD:-0}" != 1 ]; then
    cargo build --profile dist -q -p storsim
  fi
  bin=${CARGO_TARGET_DIR:-$PWD/target}/dist/storsim
}

# Writes a `linear` device file: 1 GiB, 64 servers, every request SERVICE_US microseconds.
linear_device() { # FILE SERVICE_US
  {
    printf 'model = "linear"\ncapacity_bytes = 1073741824\nqueue_depth = 64\n'
    printf '[linear]\nservers = 64\n'
    for op in sr rr sw rw; do
      printf '[linear.%s]\na_us = %s\nb_us_per_kib = 0.0\n' "$op" "$2"
    done
  } > "$1"
}

# bench2g's two 1 M-request traces (w100: all writes; r90: 90 % reads), as docs/PERFORMANCE.md
# runs them, generated into CACHE by ../shared/bench/gen_trace.py unless already there.
bench2g_traces() { # SHARED CACHE
  local name pct iat seed trace
  for t in w100:0:2000000:1 r90:90:25000:2; do
    IFS=: read -r name pct iat seed <<<"$t"
    trace=$2/${name}_1m.trace
    [ -s "$trace" ] || python3 "$1/bench/gen_trace.py" --lba-pages 341000 --read-pct "$pct" \
      --iat-ns "$iat" --prefill --prefill-gap-ns 2000000 --seed "$seed" -o "$trace"
  done
}

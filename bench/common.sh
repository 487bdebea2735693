# Shared by the emulator benchmarks (bench/emulate.sh, bench/yardstick.sh); sourced, not run.

# Builds the release binary unless SKIP_BUILD=1 (interleaved runs should not rebuild it, with
# LTO a minute of both cores, whenever another crate of the workspace changed in between), and
# sets `bin` to it. Cargo puts the binary under CARGO_TARGET_DIR when it is set.
storsim_binary() {
  if [ "${SKIP_BUILD:-0}" != 1 ]; then
    cargo build --release -q -p storsim
  fi
  bin=${CARGO_TARGET_DIR:-$PWD/target}/release/storsim
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

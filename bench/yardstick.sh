#!/usr/bin/env bash
# The emulator's own ceiling next to C servers that do nothing at all, on the same machine and
# in the same run, for docs/PERFORMANCE.md: fio 4 KiB random reads with storsim's zero-latency
# model, against nbdkit's `null` plugin through fio's nbd engine, and against bench/zerofuse.c
# (libfuse 3, multi-threaded, direct I/O, reads answered with zeros) directly on the FUSE file
# and through a direct-I/O loop device. Whatever a C server of either kind adds per request on
# this machine is the yardstick for what storsim adds.
#
# Needs root (FUSE mounts, losetup), fio, nbdkit, a C compiler with libfuse3's headers
# (Debian: nbdkit, libfuse3-dev, pkg-config), and a `dist` build (SKIP_BUILD=1 as in
# bench/emulate.sh).
#
#   bench/yardstick.sh [SECONDS]      (default 5 s per run)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
. bench/common.sh
storsim_binary
for tool in fio nbdkit cc pkg-config; do
  command -v "$tool" > /dev/null || { echo "yardstick: needs $tool" >&2; exit 1; }
done
work=$(mktemp -d)
server=
cleanup() {
  [ -n "$server" ] && kill -TERM "$server" 2> /dev/null && wait "$server" 2> /dev/null
  umount -l "$work/mnt" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cc -O2 bench/zerofuse.c $(pkg-config --cflags --libs fuse3) -o "$work/zerofuse"
linear_device "$work/zero.toml" 0.0

row() { # LABEL FIO-ARGS...
  local label=$1
  shift
  fio --name=y --rw=randread --bs=4k --size=1g --time_based --runtime="$seconds" \
    --lat_percentiles=1 --output-format=json "$@" > "$work/fio.json"
  python3 - "$label" "$work/fio.json" <<'PY'
import json, sys
label, path = sys.argv[1:3]
text = open(path).read()
job = json.loads(text[text.index('{'):])["jobs"][0]["read"]
lat = job["lat_ns"]
us = lambda ns: f"{ns / 1000:.1f}"
print(f"| {label} | {job['iops']:.0f} | {us(lat['percentile']['50.000000'])} | {us(lat['mean'])} "
      f"| {us(lat['percentile']['99.000000'])} |")
PY
}

# Starts a server in the background and waits until READY (a shell test) holds; stops the
# benchmark with the server's messages if it exits instead.
serve() { # READY COMMAND...
  local ready=$1
  shift
  "$@" > "$work/out.txt" 2> "$work/err.txt" &
  server=$!
  until eval "$ready"; do
    if ! kill -0 "$server" 2> /dev/null; then
      echo "yardstick: $1 did not start:" >&2
      cat "$work/err.txt" >&2
      server=
      exit 1
    fi
    sleep 0.05
  done
}
stop() {
  kill -TERM "$server"
  wait "$server" || true
  server=
}

echo "| server, path, fio engine, depth | IOPS | fio lat p50 (us) | mean | p99 |"
echo "|---|---|---|---|---|"
# NBD over TCP on the loopback, as bench/emulate.sh measures it.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for name in nbdkit storsim; do
  if [ "$name" = nbdkit ]; then
    serve '[ -e "$work/nbdkit.pid" ]' nbdkit -f -P "$work/nbdkit.pid" -i 127.0.0.1 -p "$port" \
      null 1G
  else
    serve 'grep -q "^nbd: " "$work/out.txt"' "$bin" emulate --device "$work/zero.toml" \
      --size 1g --nbd "127.0.0.1:$port"
  fi
  for depth in 1 32; do
    row "$name, NBD (TCP), nbd, QD$depth" --ioengine=nbd --uri="nbd://127.0.0.1:$port" \
      --iodepth="$depth"
  done
  stop
  rm -f "$work/nbdkit.pid"
done
mkdir -p "$work/mnt"
for name in zerofuse storsim-io-uring storsim-dev-fuse; do
  case $name in
    zerofuse) serve '[ -e "$work/mnt/disk" ]' "$work/zerofuse" -f "$work/mnt" ;;
    storsim-*)
      serve '[ -e "$work/mnt/disk" ]' "$bin" emulate --device "$work/zero.toml" --size 1g \
        --fuse "$work/mnt" --fuse-transport "${name#storsim-}" ;;
  esac
  row "$name, FUSE file, psync, QD1" --filename="$work/mnt/disk" --direct=1 --ioengine=psync
  for depth in 1 32; do
    row "$name, FUSE file, libaio, QD$depth" --filename="$work/mnt/disk" --direct=1 \
      --ioengine=libaio --iodepth="$depth"
  done
  loop=$(losetup --direct-io=on -f --show "$work/mnt/disk")
  for depth in 1 32; do
    row "$name, loop on FUSE, libaio, QD$depth" --filename="$loop" --direct=1 \
      --ioengine=libaio --iodepth="$depth"
  done
  losetup -d "$loop"
  stop
  # Both unmount on SIGTERM (background jobs of a script ignore SIGINT, and libfuse then leaves
  # it ignored). Wait for the mount to go.
  while mountpoint -q "$work/mnt"; do sleep 0.05; done
done

#!/usr/bin/env python3
"""The read-intensive tenant of experiments/mqsim/ as an MQSim trace (docs/formats/mqsim.md).

It first writes its own region (REGION_MIB at sector 0) sequentially in 64 KiB writes, one every
two milliseconds, so that its data lies where its flow's writes go (its resource partition), then
reads 4 KiB pages of it at random, one every READ_GAP_NS, from READS_START_NS on. The draws
come from Python's seeded Mersenne Twister, so the file is the same on every machine.

    gen_reader.py READS OUT.trace    # quick: 2500 reads; full: 10000
"""
import random
import sys

REGION_MIB = 16
FILL_WRITE_KIB = 64
FILL_GAP_NS = 2_000_000
READS_START_NS = 520_000_000
READ_GAP_NS = 40_000


def main():
    reads, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(27)
    sectors = REGION_MIB * 2048
    per_write = FILL_WRITE_KIB * 2
    lines = []
    for i in range(sectors // per_write):
        lines.append(f"{i * FILL_GAP_NS} 0 {i * per_write} {per_write} 0")
    for i in range(reads):
        page = rng.randrange(sectors // 8)
        lines.append(f"{READS_START_NS + i * READ_GAP_NS} 0 {page * 8} 8 1")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

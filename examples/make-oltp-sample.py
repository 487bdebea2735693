#!/usr/bin/env python3
"""Writes oltp-sample.msr.csv, the bundled example trace (MSR Cambridge CSV format).

A made-up OLTP-like mix, generated here so it carries no licence: 8 KiB random reads and
writes over a 16 GiB table space, plus a sequential 64 KiB log-write stream, Poisson arrivals
at about 1,000 requests/s. Deterministic: the same file every time.
"""
import random

rng = random.Random(2026)
FILETIME_START = 133_000_000_000_000_000  # 100 ns ticks since 1601
t = FILETIME_START
log_offset = 20 * 2**30
lines = []
for _ in range(5000):
    t += max(1, int(rng.expovariate(1 / 10000)))  # mean 1 ms in 100 ns ticks
    r = rng.random()
    if r < 0.15:
        op, offset, size = "Write", log_offset, 65536
        log_offset += size
    else:
        op = "Read" if r < 0.75 else "Write"
        offset, size = rng.randrange(0, 16 * 2**30 // 8192) * 8192, 8192
    lines.append(f"{t},oltp,0,{op},{offset},{size},0")
with open("oltp-sample.msr.csv", "w") as f:
    f.write("\n".join(lines) + "\n")

"""The die scheduling experiment's table: for each run (a path without `.json`), the reader's
latency percentiles, the writer's throughput over the flows' duration and its p99 latency, as
a Markdown table on standard output. Usage: table.py SECONDS RUN...

The writer is a closed loop that issues for SECONDS: the bytes it wrote over that time is its
throughput as the host saw it (its last completion, which `elapsed_ns` ends at, depends on
one request's wait for a buffer slot)."""

import json
import os
import sys


def flow(document, name):
    for f in document["flows"]:
        if f["name"] == name:
            return f["summary"]
    raise SystemExit(f"no flow {name!r}")


def main(seconds, runs):
    print(
        "| policy | read p50 (µs) | read p99 (µs) | read p99.9 (µs) | reads done "
        "| write MB/s | write p99 (ms) | suspensions (program / erase) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for run in runs:
        with open(run + ".json") as f:
            document = json.load(f)
        reader = flow(document, "reader")
        reads = reader["read"]["latency_ns"]
        writes = flow(document, "writer")
        counters = document["device"]["counters"]
        suspended = "-"
        if "die_program_suspensions" in counters:
            suspended = "{:.0f} / {:.0f}".format(
                counters["die_program_suspensions"], counters["die_erase_suspensions"]
            )
        print(
            "| {} | {:.0f} | {:.0f} | {:.0f} | {} | {:.0f} | {:.1f} | {} |".format(
                os.path.basename(run),
                reads["p50"] / 1e3,
                reads["p99"] / 1e3,
                reads["p999"] / 1e3,
                reader["requests"],
                writes["bytes"] / seconds / 1e6,
                writes["write"]["latency_ns"]["p99"] / 1e6,
                suspended,
            )
        )


if __name__ == "__main__":
    main(float(sys.argv[1]), sys.argv[2:])

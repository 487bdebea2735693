"""The die scheduling experiment's table: for each run (a path without `.json`), the reader's
latency percentiles and the writer's throughput, as a Markdown table on standard output."""

import json
import os
import sys


def flow(document, name):
    for f in document["flows"]:
        if f["name"] == name:
            return f["summary"]
    raise SystemExit(f"no flow {name!r}")


def main(runs):
    print("| policy | read p50 (µs) | read p99 (µs) | read p99.9 (µs) | write MB/s | suspensions (program / erase) |")
    print("|---|---:|---:|---:|---:|---:|")
    for run in runs:
        with open(run + ".json") as f:
            document = json.load(f)
        reads = flow(document, "reader")["read"]["latency_ns"]
        writes = flow(document, "writer")
        counters = document["device"]["counters"]
        suspended = "-"
        if "die_program_suspensions" in counters:
            suspended = "{:.0f} / {:.0f}".format(
                counters["die_program_suspensions"], counters["die_erase_suspensions"]
            )
        print(
            "| {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {} |".format(
                os.path.basename(run),
                reads["p50"] / 1e3,
                reads["p99"] / 1e3,
                reads["p999"] / 1e3,
                writes["write"]["bandwidth_bytes_per_s"] / 1e6,
                suspended,
            )
        )


if __name__ == "__main__":
    main(sys.argv[1:])

"""Plots of experiments/slc-cliff (README.md): write throughput against gigabytes written for
the whole-drive fill, and over time for the two bursts, each with the SLC cache's occupancy,
from the runs' time series; prints the phases of the fill as a table.

Usage: plot.py FILL.json BURSTS.json OUTDIR (needs matplotlib: pip install matplotlib).
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(path):
    """The run's windows: start (s), write bytes, write MB/s, cached GB."""
    with open(path) as f:
        run = json.load(f)
    s = run["series"]
    width = s["window_ns"] / 1e9
    writes = s["ops"]["write"]
    # Whole-page writes only: the bytes written over the pages written is the page size.
    page_bytes = sum(writes["bytes"]) / run["device"]["counters"]["host_write_pages"]
    cached = [p * page_bytes / 1e9 for p in s["device"]["ftl_slc_cache_pages"]]
    starts = [i * width for i in range(s["windows"])]
    return starts, writes["bytes"], [b / 1e6 for b in writes["bandwidth_bytes_per_s"]], cached


def throughput_plot(x, mbps, cached, xlabel, title, legend_at, path):
    """Write throughput and cached data against `x`, on two axes, saved as PNG and SVG."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(x, mbps, color="tab:blue", label="write throughput")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("MB/s (100 ms windows)")
    ax.set_ylim(bottom=0)
    cache = ax.twinx()
    cache.plot(x, cached, color="tab:orange", label="data in the SLC cache")
    cache.set_ylabel("GB in the SLC cache")
    cache.set_ylim(bottom=0)
    fig.legend(loc="center", bbox_to_anchor=legend_at)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(f"{path}.png", dpi=120)
    fig.savefig(f"{path}.svg")


def fill_plot(path, out):
    _, written, mbps, cached = series(path)
    gb, total = [], 0
    for b in written:
        total += b
        gb.append(total / 1e9)
    throughput_plot(
        gb,
        mbps,
        cached,
        "GB written",
        "Whole-drive sequential fill, 1 MiB writes at QD1, from empty",
        (0.75, 0.6),
        f"{out}/fill",
    )
    # The phases: contiguous windows within 10 % of each other's throughput.
    print("| from GB | to GB | MB/s (median) |")
    print("|---:|---:|---:|")
    i = 0
    while i < len(mbps):
        j = i
        while j + 1 < len(mbps) and abs(mbps[j + 1] - mbps[i]) <= 0.1 * max(mbps[i], 1):
            j += 1
        if j - i >= 3:
            mid = sorted(mbps[i : j + 1])[(j - i) // 2]
            print(f"| {gb[i] - written[i] / 1e9:.2f} | {gb[j]:.2f} | {mid:.0f} |")
        i = j + 1


def bursts_plot(path, out):
    starts, _, mbps, cached = series(path)
    throughput_plot(
        starts,
        mbps,
        cached,
        "time (s)",
        "Two 1.5 GB bursts 70 s apart: idle time folds the cache",
        (0.5, 0.6),
        f"{out}/bursts",
    )


if __name__ == "__main__":
    fill, bursts, out = sys.argv[1:4]
    fill_plot(fill, out)
    bursts_plot(bursts, out)

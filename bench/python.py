"""Python package speed (docs/PERFORMANCE.md, "Python"): one run through storsim.simulate
against the same run by the storsim command, and a sweep on a Dask LocalCluster of two
single-threaded workers against one.

    target/venv/bin/python bench/python.py target/dist/storsim [rounds]

The package must be installed from the same `dist` build as the command
(`cargo build --profile dist -p storsim`, then
`MATURIN_PEP517_ARGS="--profile dist" pip install ./python`). Times are
wall-clock and CPU seconds; the command's include its process start, the package's exclude Python's
(the package is imported first), so the comparison favours the command slightly.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time

import storsim

RUNS = [
    ("stec-zeus", "synthetic:rw=randread,bs=4k,iodepth=1,requests=20000000"),
    ("flashsim-2009", "synthetic:rw=randrw,rwmixread=70,bs=4k,iodepth=8,requests=2000000"),
]

SWEEP = {
    "name": "dask speed-up",
    "devices": ["flashsim-2009"],
    "workloads": ["synthetic:rw=randwrite,bs=4k,iodepth=8,requests=1500000"],
    "grid": {"ssd.ftl": ["page", "dftl"]},
    "seeds": [1, 2, 3, 4],
    "options": {"window": "off"},
}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def command(binary: str, device: str, workload: str, out: str) -> tuple[float, float]:
    """Wall and CPU seconds of the command's run."""
    start, cpu = time.perf_counter(), children_cpu()
    subprocess.run(
        [binary, "simulate", "--device", device, "--workload", workload, "--json", out, "--quiet"],
        check=True,
    )
    return time.perf_counter() - start, children_cpu() - cpu


def package(device: str, workload: str) -> tuple[float, float]:
    """Wall and CPU seconds of the same run through the package (CPU: the whole process,
    the run's thread included)."""
    start, cpu = time.perf_counter(), time.process_time()
    run = storsim.simulate(device, workload)
    run.to_json()
    return time.perf_counter() - start, time.process_time() - cpu


def dask_sweep(workers: int) -> tuple[float, float]:
    """The sweep's wall seconds, and the seconds its tasks computed, summed over the
    workers (from Dask's task stream): their ratio is how many points ran at once."""
    from dask.distributed import Client, LocalCluster, get_task_stream

    with LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, Client(cluster) as client:
        client.run(lambda: __import__("storsim"))  # the import is not the sweep's
        with get_task_stream(client) as stream:
            start = time.perf_counter()
            table = storsim.sweep(SWEEP, client=client)
            elapsed = time.perf_counter() - start
    assert (table["status"] == "ok").all()
    computing = sum(
        s["stop"] - s["start"]
        for task in stream.data
        for s in task["startstops"]
        if s["action"] == "compute"
    )
    return elapsed, computing


def command_sweep(binary: str, jobs: int, folder: str) -> float:
    """The same sweep by `storsim sweep --jobs N` into a fresh folder: the control, which
    shows what the machine's second processor gives at the time."""
    import tomli_w

    spec = os.path.join(folder, "speed.toml")
    with open(spec, "w") as f:
        f.write(tomli_w.dumps(SWEEP))
    out = tempfile.mkdtemp(dir=folder)
    start = time.perf_counter()
    subprocess.run(
        [binary, "sweep", spec, "--out", out, "--jobs", str(jobs), "--quiet"], check=True
    )
    return time.perf_counter() - start


def main() -> None:
    binary = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "run.json")
        for device, workload in RUNS:
            for _ in range(rounds):
                (cw, cc), (pw, pc) = command(binary, device, workload, out), package(device, workload)
                print(
                    f"{device} {workload}: wall command {cw:.3f} s, package {pw:.3f} s "
                    f"(ratio {pw / cw:.3f}); CPU command {cc:.3f} s, package {pc:.3f} s "
                    f"(ratio {pc / cc:.3f})"
                )
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(rounds):
            one, two = command_sweep(binary, 1, folder), command_sweep(binary, 2, folder)
            print(f"storsim sweep --jobs 1 {one:.2f} s, --jobs 2 {two:.2f} s, ratio {two / one:.2f}")
    for _ in range(rounds):
        (one, one_busy), (two, two_busy) = dask_sweep(1), dask_sweep(2)
        print(
            f"dask sweep of 8 points: 1 worker {one:.2f} s ({one_busy / one:.2f} points at "
            f"once), 2 workers {two:.2f} s ({two_busy / two:.2f} at once), ratio {two / one:.2f}"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    # Under the guard: the cluster's worker processes import this file.
    main()

"""storsim.sweep, local and on a Dask LocalCluster, against `storsim sweep`'s results.csv."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import storsim
from conftest import run_cli

# A test requirement (python/test.sh installs it): missing, the tests fail rather than skip.
import dask.distributed as distributed

SPEC = {
    "name": "pytest sweep",
    "devices": ["flashsim-2009"],
    "workloads": ["synthetic:rw=randwrite,bs=4k,iodepth=2,requests=1200", "small.disksim"],
    "seeds": [1, 2],
    "grid": {"ssd.ftl": ["page", "dftl"]},
    "options": {"wrap": True, "window": "off"},
    # A point whose trace does not parse: it fails when it runs, and the others run on.
    "point": [{"device": "flashsim-2009", "workload": "bad.disksim", "label": "broken", "seed": 1}],
}


def write_spec(folder: Path, trace: Path, spec: dict = SPEC) -> Path:
    import tomli_w

    shutil.copy(trace, folder / "small.disksim")
    (folder / "bad.disksim").write_text("this is not a trace\n")
    path = folder / "spec.toml"
    path.write_text(tomli_w.dumps(spec))
    return path


@pytest.fixture(scope="module")
def study(tmp_path_factory, trace, cli):
    """The spec file, and the command's results.csv for it read as a DataFrame."""
    folder = tmp_path_factory.mktemp("study")
    spec = write_spec(folder, trace)
    out = folder / "cli-out"
    result = run_cli(cli, "sweep", str(spec), "--out", str(out), "--quiet", check=False)
    # One point fails, so the command exits 1 with the table written.
    assert result.returncode == 1, result.stderr
    return spec, pd.read_csv(out / "results.csv")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        yield cluster, client


def check_table(frame: pd.DataFrame, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(frame, expected)
    assert len(frame) == 9 and frame["point"].is_unique
    assert (frame["status"] == "ok").sum() == 8
    broken = frame[frame["label"] == "broken"]
    assert list(broken["status"]) == ["failed"] and "bad.disksim" in broken["error"].iloc[0]


def test_a_local_sweep_is_the_commands_results_csv(study):
    spec, expected = study
    check_table(storsim.sweep(spec, jobs=2), expected)


def test_a_dict_spec_is_its_file(study, trace):
    spec, expected = study
    frame = storsim.sweep(SPEC, base=spec.parent, jobs=2)
    check_table(frame, expected)


def test_an_output_folder_is_resumed(study, tmp_path):
    spec, expected = study
    out = tmp_path / "out"
    check_table(storsim.sweep(spec, out=out, jobs=2), expected)
    documents = sorted((out / "points").glob("*.json"))
    assert len(documents) == 8 and (out / "results.csv").exists()
    before = {d: d.stat().st_mtime_ns for d in documents}
    check_table(storsim.sweep(spec, out=out, jobs=2), expected)
    assert {d: d.stat().st_mtime_ns for d in documents} == before, "points ran again"


def test_a_dask_sweep_is_the_local_sweep_and_the_commands(study, cluster):
    spec, expected = study
    _, client = cluster
    check_table(storsim.sweep(spec, client=client), expected)
    # The workers read the trace from a copy shipped to them: the same table.
    check_table(storsim.sweep(spec, client=client, ship_traces=True), expected)
    # With Dask's progress bar drawn on the way.
    check_table(storsim.sweep(spec, client=client, progress=True), expected)


def test_a_dask_sweep_writes_and_resumes_an_output_folder(study, cluster, tmp_path):
    spec, expected = study
    _, client = cluster
    out = tmp_path / "out"
    check_table(storsim.sweep(spec, client=client, out=out), expected)
    pd.testing.assert_frame_equal(pd.read_csv(out / "results.csv"), expected)
    assert (out / "report.html").exists()
    # Remove two documents: only those two points run again.
    documents = sorted((out / "points").glob("*.json"))
    for d in documents[:2]:
        d.unlink()
    kept = {d: d.stat().st_mtime_ns for d in documents[2:]}
    check_table(storsim.sweep(spec, client=client, out=out), expected)
    assert {d: d.stat().st_mtime_ns for d in documents[2:]} == kept
    assert all(d.exists() for d in documents[:2])


def test_a_worker_killed_mid_sweep_loses_and_duplicates_no_point(tmp_path, trace):
    # Points long enough that the kill lands while some run: 10 points of 30,000 requests.
    spec = dict(SPEC)
    spec.pop("point")
    spec["workloads"] = ["synthetic:rw=randwrite,bs=4k,iodepth=2,requests=30000"]
    spec["seeds"] = [1, 2, 3, 4, 5]
    path = write_spec(tmp_path, trace, spec)
    expected = storsim.sweep(path, jobs=2)
    assert len(expected) == 10 and (expected["status"] == "ok").all()

    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        result: dict[str, pd.DataFrame] = {}
        errors: list[BaseException] = []

        def sweep() -> None:
            try:
                result["frame"] = storsim.sweep(path, client=client, out=tmp_path / "out")
            except BaseException as e:  # noqa: BLE001 - handed to the test's thread
                errors.append(e)

        thread = threading.Thread(target=sweep)
        thread.start()
        pids = client.run(os.getpid)
        killed = None
        deadline = time.monotonic() + 120
        while killed is None and time.monotonic() < deadline and thread.is_alive():
            busy = [w for w, tasks in client.processing().items() if tasks]
            if busy:
                killed = pids[busy[0]]
                os.kill(killed, signal.SIGKILL)
            else:
                time.sleep(0.05)
        thread.join(600)
        assert killed is not None, "no point was running to kill"
        assert not errors, errors
    frame = result["frame"]
    pd.testing.assert_frame_equal(frame, expected)
    documents = list((tmp_path / "out" / "points").glob("*.json"))
    assert len(documents) == 10

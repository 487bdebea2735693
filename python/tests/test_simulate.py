"""storsim.simulate, presets, inspect and report against the storsim command."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pandas as pd
import pytest

import storsim
from conftest import run_cli

SYNTHETIC = "synthetic:rw=randrw,bs=4k,requests=4000,iodepth=4"


def cli_document(cli, tmp_path, *args: str) -> str:
    out = tmp_path / "cli.json"
    run_cli(cli, "simulate", *args, "--json", str(out))
    return out.read_text()


def test_to_json_is_the_commands_document_byte_for_byte(cli, tmp_path):
    run = storsim.simulate("flashsim-2009", SYNTHETIC, seed=7, max_requests=3000)
    expected = cli_document(
        cli,
        tmp_path,
        "--device", "flashsim-2009", "--workload", SYNTHETIC, "--seed", "7",
        "--max-requests", "3000",
    )
    assert run.to_json() == expected
    assert run.document["run"]["requests_completed"] == 3000


def test_a_trace_with_options_and_overrides_gives_the_commands_document(cli, tmp_path, trace):
    run = storsim.simulate(
        "flashsim-2009", trace, set={"ssd.ftl": "dftl"}, replay="closed", iodepth=2,
        wrap=True, window="10ms",
    )
    # The document records the options' canonical command line (device, set, workload, seed,
    # then the other options in one fixed order), not the keyword arguments' order; the
    # command given that line writes the same document.
    canonical = [
        "--device", "flashsim-2009", "--set", 'ssd.ftl="dftl"', "--workload", str(trace),
        "--seed", "1", "--replay", "closed", "--iodepth", "2", "--wrap", "--window", "10ms",
    ]
    assert run.document["command_line"] == ["storsim", "simulate", *canonical]
    expected = cli_document(cli, tmp_path, *canonical)
    assert run.to_json() == expected
    assert run.document["workload"]["replay"] == {"mode": "closed", "depth": 2}


def test_a_device_dict_is_its_device_file(cli, tmp_path):
    device = {
        "preset": "stec-zeus",
        "capacity_bytes": 100_000_000_000,
        "linear": {"servers": 2, "rr": {"a_us": 150.0}},
    }
    try:
        run = storsim.simulate(device, {"rw": "randread", "bs": "8k", "requests": 500})
    except storsim.StorsimError as e:
        pytest.fail(f"the device dict was refused: {e}")
    # The dict is written to a file named by its content: the command reads the same file.
    path = run.document["command_line"][3]
    assert path.endswith(".toml")
    expected = cli_document(
        cli, tmp_path, "--device", path, "--workload", "synthetic:rw=randread,bs=8k,requests=500",
        "--seed", "1",
    )
    assert run.to_json() == expected


def test_requests_are_the_commands_requests_csv(cli, tmp_path):
    run = storsim.simulate("flashsim-2009", SYNTHETIC, seed=2, requests=True)
    csv = tmp_path / "requests.csv"
    run_cli(
        cli, "simulate", "--device", "flashsim-2009", "--workload", SYNTHETIC, "--seed", "2",
        "--requests-csv", str(csv), "--quiet",
    )
    expected = pd.read_csv(csv)
    frame = run.requests
    assert len(frame) == run.document["run"]["requests_completed"] == len(expected)
    for column in expected.columns:
        if column == "op":
            assert list(frame["op"].astype(str)) == list(expected["op"])
        else:
            np.testing.assert_array_equal(frame[column].to_numpy(np.int64), expected[column])
    assert (frame["flow"] == 0).all()
    # Columns, not objects: every numeric column is a numpy array of its own type.
    assert frame["latency_ns"].dtype == np.uint64
    assert isinstance(frame["op"].dtype, pd.CategoricalDtype)


def test_requests_are_kept_only_when_asked():
    run = storsim.simulate("flashsim-2009", SYNTHETIC)
    with pytest.raises(ValueError, match="requests=True"):
        run.requests


def test_the_timeseries_holds_the_documents_series():
    run = storsim.simulate("flashsim-2009", SYNTHETIC, seed=5)
    frame = run.timeseries
    series = run.document["series"]
    assert len(frame) == series["windows"]
    assert frame["all.requests"].sum() == run.document["run"]["requests_completed"]
    np.testing.assert_array_equal(frame["all.iops"], series["ops"]["all"]["iops"])
    p99 = [np.nan if v is None else v for v in series["ops"]["all"]["latency_p99_ns"]]
    np.testing.assert_array_equal(frame["all.latency_p99_ns"], p99)
    for name, values in series["device"].items():
        expected = [np.nan if v is None else v for v in values]
        np.testing.assert_array_equal(frame[f"device.{name}"], expected)
    assert storsim.simulate("flashsim-2009", SYNTHETIC, window="off").timeseries.empty


def test_summary_and_counters_are_the_documents():
    run = storsim.simulate("flashsim-2009", SYNTHETIC)
    assert run.summary == run.document["summary"]
    assert run.counters == run.document["device"]["counters"]
    assert run.summary["requests"] == 4000
    cdf = run.latency_cdf
    assert cdf["fraction"].is_monotonic_increasing and cdf["fraction"].iloc[-1] == 1.0


@pytest.mark.parametrize(
    "device,workload,options,cli_args",
    [
        ("no-such-device", SYNTHETIC, {}, ["--device", "no-such-device", "--workload", SYNTHETIC]),
        ("flashsim-2009", "synthetic:rw=sideways", {}, ["--device", "flashsim-2009", "--workload", "synthetic:rw=sideways"]),
        ("flashsim-2009", SYNTHETIC, {"replay": "closed"}, ["--device", "flashsim-2009", "--workload", SYNTHETIC, "--replay", "closed"]),
        ("flashsim-2009", SYNTHETIC, {"set": ["ssd.nonsense=1"]}, ["--device", "flashsim-2009", "--workload", SYNTHETIC, "--set", "ssd.nonsense=1"]),
    ],
)
def test_bad_input_raises_storsim_error_with_the_commands_message(cli, device, workload, options, cli_args):
    result = run_cli(cli, "simulate", *cli_args, "--quiet", check=False)
    assert result.returncode == 2
    message = result.stderr.strip().removeprefix("storsim: error: ")
    with pytest.raises(storsim.StorsimError) as caught:
        storsim.simulate(device, workload, **options)
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == message


def test_an_unknown_option_names_it():
    with pytest.raises(storsim.StorsimError, match="--no-such-option"):
        storsim.simulate("flashsim-2009", SYNTHETIC, no_such_option=3)


def test_ctrl_c_interrupts_a_run_with_keyboard_interrupt(tmp_path):
    # In a process of its own, whose main thread gets the SIGINT as a notebook's kernel does.
    script = textwrap.dedent(
        """
        import os, signal, threading, storsim
        threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            storsim.simulate("flashsim-2009", "synthetic:rw=randread,requests=500000000")
            print("finished")
        except KeyboardInterrupt:
            print("interrupted")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        cwd=tmp_path,
    )
    assert result.stdout.strip() == "interrupted", result.stderr


def test_the_gil_is_released_while_simulating():
    ticks = 0
    done = threading.Event()

    def work():
        storsim.simulate("flashsim-2009", "synthetic:rw=randread,requests=60000")
        done.set()

    thread = threading.Thread(target=work)
    thread.start()
    while not done.is_set():
        ticks += 1
        done.wait(0.001)
    thread.join()
    # With the GIL held for the whole run this thread could not have run in between.
    assert ticks > 20


def test_presets_are_the_commands_list(cli):
    listed = run_cli(cli, "presets").stdout.splitlines()
    presets = storsim.presets()
    assert [p.name for p in presets] == [line.split()[0] for line in listed]
    assert all(p.model and p.summary for p in presets)


def test_inspect_is_the_commands_characterisation(cli, tmp_path, trace):
    out = tmp_path / "inspect.json"
    run_cli(cli, "inspect", str(trace), "--json", str(out))
    assert storsim.inspect(trace) == json.loads(out.read_text())
    with pytest.raises(storsim.StorsimError, match="span"):
        storsim.inspect("synthetic:rw=read,requests=10")
    # With trace options, the document records the canonical command line, which the command
    # given it writes again.
    doc = storsim.inspect(trace, format="disksim-ascii", parse_thread="off")
    assert doc["command_line"] == [
        "storsim", "inspect", str(trace), "--format", "disksim-ascii", "--parse-thread", "off",
    ]
    run_cli(cli, "inspect", *doc["command_line"][2:], "--json", str(out))
    assert doc == json.loads(out.read_text())
    with pytest.raises(storsim.StorsimError, match="unexpected argument '--no-such-option'"):
        storsim.inspect(trace, no_such_option=1)


def test_report_draws_runs_and_files(tmp_path):
    a = storsim.simulate("flashsim-2009", SYNTHETIC, seed=1)
    b = storsim.simulate("flashsim-2009", SYNTHETIC, seed=2)
    b.save(tmp_path / "b.json")
    page = tmp_path / "page.html"
    storsim.report([a, tmp_path / "b.json"], page)
    text = page.read_text()
    assert "<html" in text.lower() and "b.json" in text
    with pytest.raises(storsim.StorsimError):
        storsim.report([tmp_path / "missing.json"], page)


def test_a_requests_csv_is_written_beside_the_columns(cli, tmp_path):
    ours = tmp_path / "ours.csv"
    run = storsim.simulate("flashsim-2009", SYNTHETIC, requests=True, requests_csv=ours)
    theirs = tmp_path / "theirs.csv"
    expected = cli_document(
        cli, tmp_path, "--device", "flashsim-2009", "--workload", SYNTHETIC, "--seed", "1",
        "--requests-csv", str(theirs),
    )
    assert ours.read_bytes() == theirs.read_bytes()
    # Where the CSV went is not part of the document.
    assert run.to_json() == expected
    assert len(run.requests) == 4000


def test_simulate_args_is_simulate_with_the_same_options(cli, tmp_path, trace):
    run = storsim.simulate_args(
        ["--workload", str(trace), "--window", "10ms", "--device", "flashsim-2009", "--wrap",
         "--set", "ssd.ftl=\"dftl\"", "--replay=closed", "--iodepth", "2"]
    )
    same = storsim.simulate(
        "flashsim-2009", trace, set={"ssd.ftl": "dftl"}, replay="closed", iodepth=2,
        wrap=True, window="10ms",
    )
    assert run.to_json() == same.to_json()
    with pytest.raises(storsim.StorsimError, match="--no-such-option"):
        storsim.simulate_args(["--device", "flashsim-2009", "--workload", SYNTHETIC,
                               "--no-such-option", "3"])


def test_every_option_given_from_python_is_the_commands_for_the_canonical_line(cli, tmp_path):
    run = storsim.simulate(
        "flashsim-2009", "synthetic:rw=randrw,bs=4k,requests=3000", seed=3,
        retry_delay="1ms", retries=1, on_refused="count", time_scale=0.5, max_requests=2000,
        latency_includes_failed=True, precondition="fill", trace_devices=2, parse_thread="off",
        window="off",
    )
    line = run.document["command_line"]
    assert line[:2] == ["storsim", "simulate"]
    assert run.to_json() == cli_document(cli, tmp_path, *line[2:])

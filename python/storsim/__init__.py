"""storsim: a storage-device simulator (SSDs, disks, arrays, black-box devices) in virtual
time, in process.

    import storsim
    run = storsim.simulate("flashsim-2009", "synthetic:rw=randread,bs=4k,requests=10000",
                           seed=1, requests=True)
    run.summary["iops"], run.requests["latency_ns"].quantile(0.99)

Every function takes the options of the matching ``storsim`` command, spelled as keyword
arguments (``--max-requests 1000`` is ``max_requests=1000``), hands them to the typed library
(no command line in between), and gives the command's results: ``Run.to_json()`` is byte for
byte the document ``storsim simulate --json`` writes given the run's canonical command line
(the document's ``command_line``: device, ``set``, workload, ``seed``, then the other options
in one fixed order), and
``sweep()``'s table holds the values of ``storsim sweep``'s ``results.csv``. Bad input raises
:class:`StorsimError` (a :class:`ValueError`) with the command's message; Ctrl-C stops a run and
raises :class:`KeyboardInterrupt`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

import numpy as np
import pandas as pd
import tomli_w

from . import _storsim
from ._storsim import StorsimError

__all__ = [
    "Preset",
    "Run",
    "StorsimError",
    "inspect",
    "presets",
    "report",
    "simulate",
    "simulate_args",
    "sweep",
]

PathLike = Union[str, "os.PathLike[str]"]


def _flag_value(value: Any) -> str:
    """A keyword argument's value as the command line spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _set_value(value: Any) -> str:
    """A device-file key's value for ``--set KEY=VALUE``: TOML, as sweeps write it."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _keywords(options: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments as the extension takes them: ``None`` and ``False`` leave an option
    at its default, ``set`` may be a dict of device-file keys (written ``KEY=VALUE`` with a
    TOML value) or a list of ``KEY=VALUE``, paths become strings."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if value is None or value is False:
            continue
        if key == "set":
            if isinstance(value, Mapping):
                value = [f"{k}={_set_value(v)}" for k, v in value.items()]
            else:
                value = [str(v) for v in value]
        elif key == "flow":
            value = [os.fspath(v) for v in value]
        elif isinstance(value, os.PathLike):
            value = os.fspath(value)
        out[key] = value
    return out


def _scratch_file(kind: str, text: str, suffix: str) -> str:
    """A file holding ``text`` whose name depends on the text alone, so that the same dict
    gives the same path, and the same document, in every run on a machine."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"storsim-{kind}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{digest}{suffix}"
    if not path.exists() or path.read_text() != text:
        partial = folder / f".{digest}-{os.getpid()}{suffix}"
        partial.write_text(text)
        partial.replace(path)
    return str(path)


def _device_arg(device: Union[PathLike, Mapping[str, Any]]) -> str:
    """A preset name or a device-file path as given; a dict written as the device file's
    TOML."""
    if isinstance(device, Mapping):
        return _scratch_file("devices", tomli_w.dumps(dict(device)), ".toml")
    return os.fspath(device)


def _workload_arg(workload: Union[PathLike, Mapping[str, Any]]) -> str:
    """A trace path or a ``synthetic:``/``vdbench:`` spec as given; a dict as a synthetic
    generator's keys."""
    if isinstance(workload, Mapping):
        keys = ",".join(f"{k}={_flag_value(v)}" for k, v in workload.items())
        return f"synthetic:{keys}"
    return os.fspath(workload)


def _column(dtype: str, data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.dtype(dtype))


class Run:
    """A finished simulation: what ``storsim simulate`` reports, in Python.

    Attributes:
        document: the JSON document as a dict (``docs/json.md``).
        device_failed: why the device failed during the run (it wore out), or None; the
            results are those up to the failure.
    """

    def __init__(self, raw: Mapping[str, Any]):
        self._text: str = raw["document"]
        self.document: dict[str, Any] = json.loads(self._text)
        self.device_failed: str | None = raw["device_failed"]
        self._series = raw["series"]
        self._requests = raw["requests"]
        self._op_names: list[str] = list(raw["op_names"])

    def __repr__(self) -> str:
        run = self.document["run"]
        return (
            f"<storsim.Run {self.document['device']['name']!r} × "
            f"{self.document['workload']['name']!r}: {run['requests_completed']} requests>"
        )

    @property
    def summary(self) -> dict[str, Any]:
        """The run's summary (the document's ``summary``): requests, bytes, IOPS, latency
        distributions per operation, and the latency CDF."""
        return self.document["summary"]

    @property
    def counters(self) -> dict[str, Any]:
        """The device's counters at the end of the run (the document's
        ``device.counters``)."""
        return self.document["device"]["counters"]

    @cached_property
    def timeseries(self) -> pd.DataFrame:
        """The run in windows of simulated time, one row per window: ``window_start_ns``,
        ``window_end_ns``, each operation's figures (``all.iops``,
        ``read.latency_p99_ns``, ...), the queue depths and each device counter
        (``device.NAME``); NaN where a window has no value. Empty with ``window="off"``."""
        return pd.DataFrame({name: _column("<f8", data) for name, data in self._series})

    @cached_property
    def requests(self) -> pd.DataFrame:
        """Every completed request, in completion order (``simulate(..., requests=True)``):
        the columns of ``--requests-csv`` (``id``, ``op``, ``offset_bytes``, ``len_bytes``,
        ``arrival_ns``, ``service_start_ns``, ``finish_ns``, ``queueing_ns``,
        ``service_ns``, ``latency_ns``) and ``flow``, built column by column (once: later
        reads return the same DataFrame)."""
        if self._requests is None:
            raise ValueError("the run kept no requests: simulate(..., requests=True) keeps them")
        c = {name: _column(dtype, data) for name, (dtype, data) in self._requests.items()}
        ops = pd.Categorical.from_codes(c["op"].astype(np.int8), categories=self._op_names)
        return pd.DataFrame(
            {
                "id": c["id"],
                "op": ops,
                "offset_bytes": c["offset_bytes"],
                "len_bytes": c["len_bytes"],
                "arrival_ns": c["arrival_ns"],
                "service_start_ns": c["service_start_ns"],
                "finish_ns": c["finish_ns"],
                "queueing_ns": c["service_start_ns"] - c["arrival_ns"],
                "service_ns": c["finish_ns"] - c["service_start_ns"],
                "latency_ns": c["finish_ns"] - c["arrival_ns"],
                "flow": c["flow"],
            },
            copy=False,
        )

    @property
    def latency_cdf(self) -> pd.DataFrame:
        """The summary's latency CDF: ``latency_ns`` and ``fraction`` (of requests at or
        below it)."""
        return pd.DataFrame(self.summary["latency_cdf"], columns=["latency_ns", "fraction"])

    def to_json(self) -> str:
        """The document's text, byte for byte what ``storsim simulate --json`` writes for
        the command line it records (``document["command_line"]``)."""
        return self._text

    def save(self, path: PathLike) -> None:
        """Writes :meth:`to_json` to ``path`` (for ``storsim report`` and the like)."""
        Path(path).write_text(self._text)


def simulate(
    device: Union[PathLike, Mapping[str, Any]],
    workload: Union[PathLike, Mapping[str, Any]],
    *,
    requests: bool = False,
    **options: Any,
) -> Run:
    """Runs a workload on a device model, as ``storsim simulate`` does, in this process.

    Args:
        device: a preset name (:func:`presets`), a device-file path, or a dict with a device
            file's keys (``{"model": "ssd", "ssd": {...}}``).
        workload: a trace path, a ``synthetic:KEY=VALUE,...`` or ``vdbench:PROFILE`` spec, or
            a dict of a synthetic generator's keys (``{"rw": "randread", "requests": 1000}``).
        requests: keep every request for :attr:`Run.requests`.
        **options: ``storsim simulate``'s options: ``seed``, ``replay``, ``iodepth``,
            ``time_scale``, ``wrap``, ``max_requests``, ``window``, ``precondition``,
            ``on_refused``, ``format``, ``skip_bad``, ``requests_csv``, and ``set`` (a dict
            of device-file keys, or a list of ``KEY=VALUE``).

    Raises:
        StorsimError: bad input, with the command's message.
        KeyboardInterrupt: the run was interrupted (Ctrl-C).
    """
    wanted = None if workload is None else _workload_arg(workload)
    return Run(
        _storsim.simulate(_device_arg(device), wanted, requests=requests, **_keywords(options))
    )


#: The options of ``storsim simulate`` that take no value.
_FLAGS = frozenset({"wrap", "skip_bad", "latency_includes_failed", "fairness", "quiet"})


def simulate_args(args: Sequence[str], *, requests: bool = False) -> Run:
    """Runs ``storsim simulate ARGS...`` given as the command line's words after
    ``simulate``: each ``--name value`` (or bare flag) becomes the keyword argument of
    :func:`simulate` it names, so the run and its errors are :func:`simulate`'s, and the
    document records the options' canonical command line."""
    words = [os.fspath(a) for a in args]
    device: str | None = None
    workload: str | None = None
    options: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        name, given, inline = word.removeprefix("--").partition("=")
        key = name.replace("-", "_")
        if not word.startswith("--"):
            raise StorsimError(f"unexpected argument '{word}' found")
        if key in _FLAGS and not given:
            options[key] = True
            i += 1
            continue
        if given:
            value, i = inline, i + 1
        elif i + 1 < len(words):
            value, i = words[i + 1], i + 2
        else:
            raise StorsimError(f"a value is required for '--{name}' but none was supplied")
        if key == "device":
            device = value
        elif key == "workload":
            workload = value
        elif key in ("set", "flow"):
            options.setdefault(key, []).append(value)
        elif key not in ("quiet",):
            options[key] = value
    if device is None:
        raise StorsimError("the following required arguments were not provided: --device")
    return simulate(device, workload, requests=requests, **options)


@dataclass(frozen=True)
class Preset:
    """A built-in device: its ``name`` for ``device=``, its ``model`` and a ``summary``."""

    name: str
    model: str
    summary: str


def presets() -> list[Preset]:
    """The built-in devices, as ``storsim presets`` lists them."""
    return [Preset(*p) for p in _storsim.presets()]


def inspect(trace: PathLike, **options: Any) -> dict[str, Any]:
    """Characterises a trace (or a ``synthetic:`` spec that gives ``span``), as
    ``storsim inspect --json`` does: request count, read share, sizes, sequentiality,
    arrivals, address range. ``options`` are the trace options (``format``, ``skip_bad``,
    ...)."""
    return json.loads(_storsim.inspect(os.fspath(trace), **_keywords(options)))


def report(
    runs: Iterable[Union[Run, PathLike]], path: PathLike, *, plots: PathLike | None = None
) -> None:
    """Draws run documents (:class:`Run` objects or document files) as one HTML page, as
    ``storsim report`` does; the first is the reference the others are compared with.
    ``plots``: also write each plot as SVG and PNG into this folder."""
    with tempfile.TemporaryDirectory(prefix="storsim-report-") as folder:
        files = []
        for i, run in enumerate(runs):
            if isinstance(run, Run):
                file = Path(folder) / f"run{i + 1}.json"
                run.save(file)
                files.append(str(file))
            else:
                files.append(os.fspath(run))
        _storsim.report(files, os.fspath(path), None if plots is None else os.fspath(plots))


def _read_table(csv: bytes) -> pd.DataFrame:
    """``results.csv``'s bytes as a DataFrame, read as ``pandas.read_csv`` reads the file."""
    return pd.read_csv(io.BytesIO(csv))


def sweep(
    spec: Union[PathLike, Mapping[str, Any]],
    client: Any = None,
    out: PathLike | None = None,
    *,
    size: str | None = None,
    jobs: int | None = None,
    base: PathLike | None = None,
    ship_traces: bool = False,
    progress: bool = False,
) -> pd.DataFrame:
    """Runs a sweep (``docs/sweep.md``) and returns its results table: the points, columns
    and values of ``storsim sweep``'s ``results.csv``.

    Args:
        spec: a spec file, or a dict with a spec's keys (its relative paths start from
            ``base``, the current folder by default).
        client: None to run on this machine's cores (``jobs`` threads, one per core by
            default), or a ``dask.distributed.Client``: each point runs as one Dask task.
        out: an output folder as ``storsim sweep --out`` writes it (``points/*.json``,
            ``results.csv``, ``report.html``); points whose documents are already there are
            not run again.
        size: lay the spec's ``[size.NAME]`` table over it first.
        ship_traces: with a client, send each trace file to the workers once
            (``client.scatter``) instead of reading it from a path they share.
        progress: with a client, show Dask's progress bar.

    A failed point is a row whose ``status`` is ``failed`` and whose ``error`` says why; the
    others run on.
    """
    plan = _plan(spec, size, base)
    if client is None:
        if out is not None:
            csv, _ = plan.run(os.fspath(out), jobs or os.cpu_count() or 1)
            return _read_table(csv)
        with tempfile.TemporaryDirectory(prefix="storsim-sweep-") as folder:
            csv, _ = plan.run(folder, jobs or os.cpu_count() or 1)
            return _read_table(csv)
    from ._dask import run_on_client

    csv = run_on_client(
        plan, client, None if out is None else os.fspath(out), ship_traces, progress
    )
    return _read_table(csv)


def _plan(
    spec: Union[PathLike, Mapping[str, Any]], size: str | None, base: PathLike | None
) -> _storsim.SweepPlan:
    if isinstance(spec, Mapping):
        name = str(spec.get("name", "sweep"))
        file = Path(base if base is not None else os.getcwd()) / f"{name}.toml"
        return _storsim.SweepPlan(str(file), size, tomli_w.dumps(dict(spec)))
    return _storsim.SweepPlan(os.fspath(spec), size)

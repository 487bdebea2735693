"""Sweeps on a Dask cluster: one task per point.

A point's task is a pure function of the point's options (the keyword arguments of
``storsim.simulate`` that run it), its command line (which its document records) and its
``point`` object: it returns the point's document text, the same whichever worker runs it, so a task that Dask
runs again (its worker died) gives the same document, and the table is built once, here,
from one result per point.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _storsim
from ._storsim import StorsimError

@dataclass(frozen=True)
class ShippedTrace:
    """A trace file's bytes, scattered to the workers once, and the path the spec names."""

    path: str
    data: bytes


def _local_copy(trace: ShippedTrace) -> str:
    """The trace's bytes in a file on this worker, written once per worker machine: named
    by the content's hash, and moved into place whole so that two workers writing it at once
    both leave a whole file."""
    digest = hashlib.sha256(trace.data).hexdigest()[:24]
    folder = Path(tempfile.gettempdir()) / "storsim-traces" / digest
    path = folder / Path(trace.path).name
    if not path.exists() or path.stat().st_size != len(trace.data):
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{path.name}.{os.getpid()}"
        partial.write_bytes(trace.data)
        partial.replace(path)
    return str(path)


def run_point_task(
    options: dict[str, Any],
    command_line: list[str],
    point_json: str,
    trace: ShippedTrace | None = None,
) -> tuple[str, str]:
    """One point, on a worker: ``("ran", document)``, ``("failed", message)`` when the
    point's input is refused or its run fails, or ``("pending", "")`` when interrupted."""
    try:
        if trace is None:
            text = _storsim.run_point(options, command_line, point_json)
        else:
            text = _storsim.run_point(
                options, command_line, point_json, trace.path, _local_copy(trace)
            )
    except StorsimError as e:
        return ("failed", str(e))
    return ("pending", "") if text is None else ("ran", text)


def run_on_client(
    plan: _storsim.SweepPlan,
    client: Any,
    out: str | None,
    ship_traces: bool,
    progress: bool,
) -> bytes:
    """Runs the plan's points not already in ``out`` as Dask tasks on ``client`` and returns
    ``results.csv``'s bytes (written into ``out`` with the documents and the report, if
    given)."""
    from dask.distributed import as_completed
    from dask.distributed import progress as progress_bar

    points = plan.points()
    results: list[tuple[str, str] | None] = [None] * len(points)
    shipped: dict[str, Any] = {}
    futures = {}
    for index, point in enumerate(points):
        if out is not None:
            text = plan.existing(out, index)
            if text is not None:
                results[index] = ("reused", text)
                continue
        trace = None
        path = point["trace"] if ship_traces else None
        if path is not None:
            if path not in shipped:
                shipped[path] = client.scatter(ShippedTrace(path, Path(path).read_bytes()))
            trace = shipped[path]
        # The key names the point: Dask shows it on its dashboard, and a point's task is the
        # same task in every sweep, whose result Dask may hand back without running it.
        future = client.submit(
            run_point_task,
            point["options"],
            point["command_line"],
            point["point_json"],
            trace,
            key=f"storsim-point-{point['id']}",
            pure=True,
        )
        futures[future] = index
    if progress and futures:
        progress_bar(list(futures))
    for future, result in as_completed(list(futures), with_results=True, raise_errors=False):
        index = futures[future]
        if isinstance(result, BaseException):
            # Dask gave up on the task (its workers kept dying): the point failed, the
            # sweep goes on.
            result = ("failed", f"{type(result).__name__}: {result}")
        status, text = result
        if status == "ran" and out is not None:
            plan.write_point(out, index, text)
        results[index] = (status, text)
    done = [r if r is not None else ("pending", "") for r in results]
    return plan.table_csv(done, out)

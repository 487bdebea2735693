"""Type stubs of storsim._storsim, the package's compiled part (python/src/lib.rs)."""

from typing import Any

class StorsimError(ValueError):
    """Bad input or a failed run, with the message the storsim command prints."""

def simulate(
    device: str,
    workload: str | None = None,
    *,
    requests: bool = False,
    requests_csv: str | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Runs a simulation from typed options (``seed``, ``replay``, ``iodepth``, ``set`` as a
    list of ``KEY=VALUE``, ``flow`` as a list, ...): a dict of ``document`` (str), ``series``
    (list of (name, float64 bytes)), ``requests`` (dict of name to (dtype, bytes), or None),
    ``op_names``, ``device_failed`` and ``cancelled``."""

def inspect(trace: str, **options: Any) -> str:
    """Characterises a trace and returns ``storsim inspect``'s JSON document's text."""

def presets() -> list[tuple[str, str, str]]:
    """The built-in devices as (name, model, summary)."""

def report(runs: list[str], out: str, plots: str | None = None) -> None:
    """Runs ``storsim report RUNS... --out OUT [--plots PLOTS]``."""

def run_point(
    options: dict[str, Any],
    command_line: list[str],
    point_json: str,
    original: str | None = None,
    local: str | None = None,
) -> str | None:
    """Runs one sweep point from its ``options`` (the keyword arguments of ``simulate``);
    its document's text, or None if interrupted. With ``original`` and ``local`` the trace
    ``original`` is read from its copy ``local``."""

class SweepPlan:
    """A sweep spec read, expanded into points and checked."""

    def __init__(self, spec: str, size: str | None = None, text: str | None = None) -> None: ...
    @property
    def name(self) -> str: ...
    def points(self) -> list[dict[str, Any]]:
        """Each point's ``id``, ``label``, ``command_line``, ``point_json``, ``options``
        (the keyword arguments of ``simulate`` that run it) and ``trace`` (its trace file, or
        None)."""
    def run(self, out: str, jobs: int) -> tuple[bytes, list[tuple[str, str]]]:
        """Runs the sweep into ``out``: results.csv's bytes and each point's (status, text)."""
    def existing(self, out: str, index: int) -> str | None: ...
    def write_point(self, out: str, index: int, document: str) -> None: ...
    def table_csv(self, results: list[tuple[str, str]], out: str | None = None) -> bytes:
        """results.csv's bytes from each point's (status, text)."""

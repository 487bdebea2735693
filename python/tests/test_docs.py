"""docs/python.md's examples and the example notebook run as written."""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]


def test_the_guides_python_examples_run_in_order(tmp_path, monkeypatch):
    text = (REPO / "docs" / "python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    scope: dict = {}
    for block in blocks:
        exec(compile(block, "docs/python.md", "exec"), scope)
    # The figures and the report the examples write.
    for name in ["cdf.png", "sweep.png", "compare.html"]:
        assert (tmp_path / name).stat().st_size > 0, name


def test_the_example_notebook_runs(tmp_path):
    path = REPO / "python" / "examples" / "storsim.ipynb"
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    os.environ["MPLBACKEND"] = "Agg"
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    last = notebook.cells[-1]
    # The Dask sweep's table equals the local one.
    assert last.outputs[-1]["data"]["text/plain"] == "True"

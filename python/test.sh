#!/usr/bin/env bash
# The Python package's tests: a virtual environment under target/ with what the tests need
# from the package index, the package built from this checkout, then pytest. Part of the
# README's test command and of .ci/run.
#
# The package is built with cargo's dev profile, which reuses the workspace's debug build
# (`cargo test --workspace` leaves it) instead of an optimised build, minutes more on a small
# machine; the documents are the same either way. STORSIM_PY_PROFILE=dist builds the one
# docs/PERFORMANCE.md measures (fat LTO), STORSIM_PY_PROFILE=release the quicker optimised one.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/python-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "maturin>=1.9.4,<2" numpy pandas "dask[distributed]" pytest tomli-w nbformat nbclient ipykernel matplotlib
MATURIN_PEP517_ARGS="--profile ${STORSIM_PY_PROFILE:-dev}" \
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps ./python
# The comparisons run the storsim command of the same build.
cargo build --quiet -p storsim
# pytest exits 5 when it collects no test, which fails this script as any failure does.
"$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests "$@"

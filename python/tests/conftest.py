"""Shared fixtures: the storsim command built from the same sources, to compare with, and a
small trace."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli() -> Path:
    """The `storsim` command: $STORSIM_BIN, or the workspace's debug build (built if
    missing; debug and release write the same documents)."""
    given = os.environ.get("STORSIM_BIN")
    if given:
        return Path(given)
    binary = REPO / "target" / "debug" / "storsim"
    if not binary.exists():
        subprocess.run(["cargo", "build", "-p", "storsim"], cwd=REPO, check=True)
    return binary


def run_cli(cli: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the command quietly; its output and status as a CompletedProcess."""
    result = subprocess.run([str(cli), *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"storsim {' '.join(args)} failed: {result.stderr}")
    return result


@pytest.fixture(scope="session")
def trace(tmp_path_factory) -> Path:
    """A DiskSim ASCII trace of 3,000 requests (arrival ms, device, block, blocks, read
    flag) at made-up addresses, seeded so that every run reads the same one."""
    rng = random.Random(26)
    lines = []
    t = 0.0
    for _ in range(3000):
        t += rng.expovariate(1 / 0.4)
        block = rng.randrange(0, 2_000_000) * 8
        lines.append(f"{t:.4f} 0 {block} {rng.choice([8, 16, 64])} {rng.choice([0, 1])}")
    path = tmp_path_factory.mktemp("traces") / "small.disksim"
    path.write_text("\n".join(lines) + "\n")
    return path

"""What the NEURON parity tests share: spike times from a trace, and running a fixture
script live (``scripts/make_*_fixtures.py --out DIR NAME``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

__all__ = ["run_fixture_script", "spike_times"]


def spike_times(v: np.ndarray, dt: float) -> list[np.ndarray]:
    """Upward crossings of 0 mV in each column, linearly interpolated (ms)."""
    times = []
    for column in v.T:
        k = np.flatnonzero((column[:-1] < 0) & (column[1:] >= 0))
        times.append((k + 1 + column[k] / (column[k] - column[k + 1])) * dt)
    return times


def run_fixture_script(script: Path, out: Path, *names: str) -> None:
    """Run a fixture script with NEURON in a child process, writing its npz files to ``out``."""
    subprocess.run([sys.executable, str(script), "--out", str(out), *names], check=True,
                   capture_output=True)

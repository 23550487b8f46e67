"""A ``.mod`` folder translated once per test process: translating a folder takes seconds,
and the tests that share one only read what :func:`load_mod_dir` returns (its mechanisms
hold no JAX arrays, so JAX's configuration at the first call, x64 or not, does not matter)."""

from __future__ import annotations

import functools
from pathlib import Path

from jaxlean.models.neuron.nmodl import load_mod_dir


@functools.cache
def loaded_mod_dir(folder: Path) -> dict:
    """``load_mod_dir(folder)``, made once per process; callers must not change it."""
    return load_mod_dir(folder)

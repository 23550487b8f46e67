"""Meshes, partition rules and the multi-process runtime.

- ``mesh``: a device mesh with ``data`` and ``fsdp`` axes, and placing a model and its
  batches on it by partition rules;
- ``distributed``: :func:`~jaxlean.parallel.distributed.initialize`, joining the processes
  of a multi-host run from flags, ``JAXLEAN_*`` variables or SLURM.

The submodules load on first use (``jaxlean.parallel.mesh`` after ``import jaxlean``
works), so importing this package imports no JAX.
"""

from __future__ import annotations

import importlib
from types import ModuleType

_SUBMODULES = ("distributed", "mesh")

__all__ = list(_SUBMODULES)


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULES})

"""jaxlean: JAX training whose costs stay flat as models grow.

Runs of identical layers are traced once (``scan_layers``, ``Sequential``) with
per-layer rematerialisation; see ``README.md`` for each capability.
"""

from jaxlean.errors import (
    CacheError,
    CheckpointError,
    ConfigError,
    DataError,
    GraphError,
    JaxleanError,
    MorphologyError,
    NonFiniteError,
    StructureError,
    TreeError,
)
from jaxlean.layers import scan_layers, stack, unstack
from jaxlean.remat import resolve_policy
from jaxlean.sequential import Sequential

__version__ = "0.1.0"

__all__ = [
    "CacheError",
    "CheckpointError",
    "ConfigError",
    "DataError",
    "GraphError",
    "JaxleanError",
    "MorphologyError",
    "NonFiniteError",
    "Sequential",
    "StructureError",
    "TreeError",
    "resolve_policy",
    "scan_layers",
    "stack",
    "unstack",
]

"""jaxlean: JAX training whose costs stay flat as models grow.

Runs of identical layers are traced once (``scan_layers``, ``Sequential``) with
per-layer rematerialisation; see ``README.md`` for each capability.

The names below are imported on first use (PEP 562), so ``import jaxlean``
costs nothing beyond Python, and ``from jaxlean import fit`` imports what
``fit`` needs, not the checkpoint, Hugging Face or benchmark code.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "CacheStats": "jaxlean.compile.cache",
    "FunctionCacheStats": "jaxlean.compile.cache",
    "cache_stats": "jaxlean.compile.cache",
    "enable_compilation_cache": "jaxlean.compile.cache",
    "CompileReport": "jaxlean.compile.report",
    "compile_report": "jaxlean.compile.report",
    "CacheError": "jaxlean.errors",
    "CheckpointError": "jaxlean.errors",
    "ConfigError": "jaxlean.errors",
    "DataError": "jaxlean.errors",
    "GraphError": "jaxlean.errors",
    "JaxleanError": "jaxlean.errors",
    "MorphologyError": "jaxlean.errors",
    "NonFiniteError": "jaxlean.errors",
    "StructureError": "jaxlean.errors",
    "TreeError": "jaxlean.errors",
    "Tree": "jaxlean.linalg",
    "tree_solve": "jaxlean.linalg",
    "tree_solve_in_layout": "jaxlean.linalg",
    "tridiagonal_solve": "jaxlean.linalg",
    "TokenStats": "jaxlean.loss.chunked",
    "VocabParallel": "jaxlean.loss.chunked",
    "cross_entropy": "jaxlean.loss.chunked",
    "token_logprobs": "jaxlean.loss.chunked",
    "token_stats": "jaxlean.loss.chunked",
    "distill_loss": "jaxlean.loss.distill",
    "PolicyLoss": "jaxlean.loss.policy",
    "kl_estimate": "jaxlean.loss.policy",
    "policy_gradient_loss": "jaxlean.loss.policy",
    "FnNode": "jaxlean.nn.graph",
    "Graph": "jaxlean.nn.graph",
    "chain_edges": "jaxlean.nn.graph",
    "scan_layers": "jaxlean.nn.layers",
    "stack": "jaxlean.nn.layers",
    "unstack": "jaxlean.nn.layers",
    "resolve_policy": "jaxlean.nn.remat",
    "Sequential": "jaxlean.nn.sequential",
    "Checkpointer": "jaxlean.train.checkpoint",
    "History": "jaxlean.train.fit",
    "TrainOutput": "jaxlean.train.fit",
    "fit": "jaxlean.train.fit",
    "make_train_fn": "jaxlean.train.fit",
    "MatrixState": "jaxlean.train.muon",
    "MatrixTransformation": "jaxlean.train.muon",
    "matrix_transform": "jaxlean.train.muon",
    "muon": "jaxlean.train.muon",
    "PackedLayout": "jaxlean.train.packed",
    "packed": "jaxlean.train.packed",
    "StepMetrics": "jaxlean.train.step",
    "TrainStep": "jaxlean.train.step",
    "make_train_step": "jaxlean.train.step",
}

# Former public names, kept one release: the defining module warns on use.
_DEPRECATED: dict[str, str] = {
    "Layout": "jaxlean.train.packed",  # now PackedLayout
}

__all__ = sorted(_EXPORTS)

def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name) or _DEPRECATED.get(name)
    if module is None:
        raise AttributeError(f"module 'jaxlean' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})

"""jaxlean: JAX training whose costs stay flat as models grow.

Runs of identical layers are traced once (``scan_layers``, ``Sequential``) with
per-layer rematerialisation; see ``README.md`` for each capability.
"""

from jaxlean.compile.cache import (
    CacheStats,
    FunctionCacheStats,
    cache_stats,
    enable_compilation_cache,
)
from jaxlean.compile.cached_step import cached_train_step
from jaxlean.compile.executable_cache import ExecutableCache, cached_jit
from jaxlean.compile.report import CompileReport, compile_report
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
from jaxlean.linalg import Tree, tree_solve, tridiagonal_solve
from jaxlean.loss.chunked import (
    TokenStats,
    VocabParallel,
    cross_entropy,
    token_logprobs,
    token_stats,
)
from jaxlean.loss.distill import distill_loss
from jaxlean.loss.policy import PolicyLoss, kl_estimate, policy_gradient_loss
from jaxlean.nn.graph import FnNode, Graph, chain_edges
from jaxlean.nn.layers import scan_layers, stack, unstack
from jaxlean.nn.remat import resolve_policy
from jaxlean.nn.sequential import Sequential
from jaxlean.train.checkpoint import Checkpointer
from jaxlean.train.fit import History, TrainOutput, fit, make_train_fn
from jaxlean.train.muon import MatrixTransformation, matrix_transform, muon
from jaxlean.train.packed import Layout, packed
from jaxlean.train.step import TrainStep, make_train_step

__version__ = "0.1.0"

__all__ = [
    "CacheError",
    "CacheStats",
    "CheckpointError",
    "Checkpointer",
    "CompileReport",
    "ConfigError",
    "DataError",
    "ExecutableCache",
    "FnNode",
    "FunctionCacheStats",
    "Graph",
    "GraphError",
    "History",
    "JaxleanError",
    "Layout",
    "MatrixTransformation",
    "MorphologyError",
    "NonFiniteError",
    "PolicyLoss",
    "Sequential",
    "StructureError",
    "TokenStats",
    "TrainOutput",
    "TrainStep",
    "Tree",
    "TreeError",
    "VocabParallel",
    "cache_stats",
    "cached_jit",
    "cached_train_step",
    "chain_edges",
    "compile_report",
    "cross_entropy",
    "distill_loss",
    "enable_compilation_cache",
    "fit",
    "kl_estimate",
    "make_train_fn",
    "make_train_step",
    "matrix_transform",
    "muon",
    "packed",
    "policy_gradient_loss",
    "resolve_policy",
    "scan_layers",
    "stack",
    "token_logprobs",
    "token_stats",
    "tree_solve",
    "tridiagonal_solve",
    "unstack",
]

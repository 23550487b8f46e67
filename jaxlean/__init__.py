"""jaxlean: JAX training whose costs stay flat as models grow.

Runs of identical layers are traced once (``scan_layers``, ``Sequential``) with
per-layer rematerialisation; see ``README.md`` for each capability.

The names below are imported on first use (PEP 562), so ``import jaxlean``
costs nothing beyond Python, and ``from jaxlean import fit`` imports what
``fit`` needs, not the checkpoint, Hugging Face or benchmark code.

Subpackages (``help()`` on each says more):

- ``jaxlean.models.lm``: a Llama / Mistral / Qwen-style decoder and what fine-tuning
  it needs: ``Transformer``, ``TransformerConfig``, ``loss``, ``logprobs``; Hugging
  Face checkpoints ``load_pretrained``, ``save_pretrained`` (``.hf``); LoRA
  ``add_lora``, ``is_lora_path`` (``.lora``) and PEFT adapter files ``save_lora``,
  ``load_lora``, ``merge_lora`` (``.peft``); KV-cache sampling ``generate``
  (``.generate``); ``token_stats``, ``policy_loss``, ``distill`` on the model's head
  (``.heads``). ``from jaxlean.models.lm import Transformer, load_pretrained`` works.
- ``jaxlean.models.neuron``: a differentiable neuron cable simulator that discretises
  cells as NEURON does (``simulate`` in ``.cable``, ``Cell``, SWC files, ``hh``, ``pas``).
- ``jaxlean.models.pmm``: pyPMM's parametric matrix model (``AffineObservablePMM``).
- ``jaxlean.loss``: chunked cross-entropy, distillation and policy-gradient losses.
- ``jaxlean.train``: ``fit``, ``make_train_step``, ``packed`` optimizers, ``muon``,
  checkpoints.
- ``jaxlean.nn``, ``jaxlean.linalg``, ``jaxlean.parallel``, ``jaxlean.compile``: layer
  stacks and remat, tree and tridiagonal solvers, meshes, the compilation cache.
- ``jaxlean.bench`` and the ``jaxlean`` command (``jaxlean bench``, ``jaxlean cache``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from jaxlean._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see of the lazy names below
    from jaxlean import bench as bench
    from jaxlean import cli as cli
    from jaxlean import compile as compile
    from jaxlean import errors as errors
    from jaxlean import linalg as linalg
    from jaxlean import loss as loss
    from jaxlean import models as models
    from jaxlean import nn as nn
    from jaxlean import parallel as parallel
    from jaxlean import train as train
    from jaxlean.compile.cache import CacheStats as CacheStats
    from jaxlean.compile.cache import FunctionCacheStats as FunctionCacheStats
    from jaxlean.compile.cache import cache_stats as cache_stats
    from jaxlean.compile.cache import enable_compilation_cache as enable_compilation_cache
    from jaxlean.compile.report import CompileReport as CompileReport
    from jaxlean.compile.report import compile_report as compile_report
    from jaxlean.errors import CacheError as CacheError
    from jaxlean.errors import CheckpointError as CheckpointError
    from jaxlean.errors import ConfigError as ConfigError
    from jaxlean.errors import DataError as DataError
    from jaxlean.errors import GraphError as GraphError
    from jaxlean.errors import JaxleanError as JaxleanError
    from jaxlean.errors import MemoryBudgetError as MemoryBudgetError
    from jaxlean.errors import MorphologyError as MorphologyError
    from jaxlean.errors import NonFiniteError as NonFiniteError
    from jaxlean.errors import StructureError as StructureError
    from jaxlean.errors import TreeError as TreeError
    from jaxlean.linalg import Tree as Tree
    from jaxlean.linalg import tree_solve as tree_solve
    from jaxlean.linalg import tree_solve_in_layout as tree_solve_in_layout
    from jaxlean.linalg import tridiagonal_solve as tridiagonal_solve
    from jaxlean.loss.chunked import TokenStats as TokenStats
    from jaxlean.loss.chunked import VocabParallel as VocabParallel
    from jaxlean.loss.chunked import cross_entropy as cross_entropy
    from jaxlean.loss.chunked import token_logprobs as token_logprobs
    from jaxlean.loss.chunked import token_stats as token_stats
    from jaxlean.loss.distill import distill_loss as distill_loss
    from jaxlean.loss.policy import PolicyLoss as PolicyLoss
    from jaxlean.loss.policy import kl_estimate as kl_estimate
    from jaxlean.loss.policy import policy_gradient_loss as policy_gradient_loss
    from jaxlean.nn.graph import FnNode as FnNode
    from jaxlean.nn.graph import Graph as Graph
    from jaxlean.nn.graph import chain_edges as chain_edges
    from jaxlean.nn.layers import scan_layers as scan_layers
    from jaxlean.nn.layers import stack as stack
    from jaxlean.nn.layers import unstack as unstack
    from jaxlean.nn.remat import resolve_policy as resolve_policy
    from jaxlean.nn.sequential import Sequential as Sequential
    from jaxlean.train.checkpoint import Checkpointer as Checkpointer
    from jaxlean.train.fit import History as History
    from jaxlean.train.fit import TrainOutput as TrainOutput
    from jaxlean.train.fit import fit as fit
    from jaxlean.train.fit import make_train_fn as make_train_fn
    from jaxlean.train.muon import MatrixState as MatrixState
    from jaxlean.train.muon import MatrixTransformation as MatrixTransformation
    from jaxlean.train.muon import matrix_transform as matrix_transform
    from jaxlean.train.muon import muon as muon
    from jaxlean.train.packed import PackedLayout as PackedLayout
    from jaxlean.train.packed import packed as packed
    from jaxlean.train.step import StepMetrics as StepMetrics
    from jaxlean.train.step import TrainStep as TrainStep
    from jaxlean.train.step import make_train_step as make_train_step

__version__ = "0.1.0"

# Subpackages load on first use too, as SciPy's do; they are not in ``__all__``, so that
# ``from jaxlean import *`` binds no module (``compile`` would hide the builtin).
_SUBMODULES = ("bench", "cli", "compile", "errors", "linalg", "loss", "models", "nn", "parallel",
               "train")

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
    "MemoryBudgetError": "jaxlean.errors",
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

__all__ = [
    "CacheError", "CacheStats", "CheckpointError", "Checkpointer", "CompileReport", "ConfigError",
    "DataError", "FnNode", "FunctionCacheStats", "Graph", "GraphError", "History", "JaxleanError",
    "MatrixState", "MatrixTransformation", "MemoryBudgetError", "MorphologyError",
    "NonFiniteError", "PackedLayout",
    "PolicyLoss", "Sequential", "StepMetrics", "StructureError", "TokenStats", "TrainOutput",
    "TrainStep", "Tree", "TreeError", "VocabParallel", "cache_stats", "chain_edges",
    "compile_report", "cross_entropy", "distill_loss", "enable_compilation_cache", "fit",
    "kl_estimate", "make_train_fn", "make_train_step", "matrix_transform", "muon", "packed",
    "policy_gradient_loss", "resolve_policy", "scan_layers", "stack", "token_logprobs",
    "token_stats", "tree_solve", "tree_solve_in_layout", "tridiagonal_solve", "unstack",
]

_lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        return getattr(importlib.import_module(_DEPRECATED[name]), name)
    return _lazy_getattr(name)

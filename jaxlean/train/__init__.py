"""Training: the whole loop in one program, steps, packed optimizer state, checkpoints.

- ``fit``: :func:`~jaxlean.train.fit.fit` and ``make_train_fn``, every epoch in one compiled
  loop (the top-level ``jaxlean.fit`` is the function; ``jaxlean.train.fit`` the module);
- ``step``: :func:`~jaxlean.train.step.make_train_step`, one jitted step with donation,
  adapters-only default and skipped non-finite updates; ``accumulate``: micro-batches;
- ``packed``: optax transformations on a few packed buffers (``jaxlean.packed``);
  ``muon``: Muon and matrix transformations;
- ``checkpoint``: :class:`~jaxlean.train.checkpoint.Checkpointer` (orbax);
  ``metrics_log``: TensorBoard and JSONL metrics.

The names below are imported on first use (PEP 562): ``import jaxlean.train`` imports no JAX
until one is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxlean._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see of the lazy names below
    from jaxlean.train import accumulate as accumulate
    from jaxlean.train import checkpoint as checkpoint
    from jaxlean.train import fit as fit
    from jaxlean.train import metrics_log as metrics_log
    from jaxlean.train import muon as muon
    from jaxlean.train import packed as packed
    from jaxlean.train import step as step
    from jaxlean.train.accumulate import accumulated_value_and_grad as accumulated_value_and_grad
    from jaxlean.train.accumulate import join_micro_batches as join_micro_batches
    from jaxlean.train.accumulate import split_micro_batches as split_micro_batches
    from jaxlean.train.checkpoint import Checkpointer as Checkpointer
    from jaxlean.train.checkpoint import unplaced_sharding as unplaced_sharding
    from jaxlean.train.fit import QUICK_COMPILE_MAX_STEPS as QUICK_COMPILE_MAX_STEPS
    from jaxlean.train.fit import History as History
    from jaxlean.train.fit import LossFn as LossFn
    from jaxlean.train.fit import TrainOutput as TrainOutput
    from jaxlean.train.fit import make_train_fn as make_train_fn
    from jaxlean.train.fit import resolve_quick_compile as resolve_quick_compile
    from jaxlean.train.metrics_log import JSONL_NAME as JSONL_NAME
    from jaxlean.train.metrics_log import PEAK_FLOPS as PEAK_FLOPS
    from jaxlean.train.metrics_log import MetricsLogger as MetricsLogger
    from jaxlean.train.metrics_log import peak_flops as peak_flops
    from jaxlean.train.metrics_log import throughput as throughput
    from jaxlean.train.metrics_log import training_flops_per_token as training_flops_per_token
    from jaxlean.train.muon import MatrixState as MatrixState
    from jaxlean.train.muon import MatrixTransformation as MatrixTransformation
    from jaxlean.train.muon import matrix_transform as matrix_transform
    from jaxlean.train.packed import Labels as Labels
    from jaxlean.train.packed import PackedLayout as PackedLayout
    from jaxlean.train.packed import PackedState as PackedState
    from jaxlean.train.packed import Trainable as Trainable
    from jaxlean.train.packed import checked_init as checked_init
    from jaxlean.train.packed import update_buffers as update_buffers
    from jaxlean.train.step import Donate as Donate
    from jaxlean.train.step import StepMetrics as StepMetrics
    from jaxlean.train.step import TrainStep as TrainStep
    from jaxlean.train.step import count_integer_elements as count_integer_elements
    from jaxlean.train.step import make_train_step as make_train_step

_SUBMODULES = ("accumulate", "checkpoint", "fit", "metrics_log", "muon", "packed", "step")

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "accumulated_value_and_grad": "jaxlean.train.accumulate",
    "join_micro_batches": "jaxlean.train.accumulate",
    "split_micro_batches": "jaxlean.train.accumulate",
    "Checkpointer": "jaxlean.train.checkpoint",
    "unplaced_sharding": "jaxlean.train.checkpoint",
    "History": "jaxlean.train.fit",
    "LossFn": "jaxlean.train.fit",
    "QUICK_COMPILE_MAX_STEPS": "jaxlean.train.fit",
    "TrainOutput": "jaxlean.train.fit",
    "make_train_fn": "jaxlean.train.fit",
    "resolve_quick_compile": "jaxlean.train.fit",
    "JSONL_NAME": "jaxlean.train.metrics_log",
    "MetricsLogger": "jaxlean.train.metrics_log",
    "PEAK_FLOPS": "jaxlean.train.metrics_log",
    "peak_flops": "jaxlean.train.metrics_log",
    "throughput": "jaxlean.train.metrics_log",
    "training_flops_per_token": "jaxlean.train.metrics_log",
    "MatrixState": "jaxlean.train.muon",
    "MatrixTransformation": "jaxlean.train.muon",
    "matrix_transform": "jaxlean.train.muon",
    "Labels": "jaxlean.train.packed",
    "PackedLayout": "jaxlean.train.packed",
    "PackedState": "jaxlean.train.packed",
    "Trainable": "jaxlean.train.packed",
    "checked_init": "jaxlean.train.packed",
    "update_buffers": "jaxlean.train.packed",
    "Donate": "jaxlean.train.step",
    "StepMetrics": "jaxlean.train.step",
    "TrainStep": "jaxlean.train.step",
    "count_integer_elements": "jaxlean.train.step",
    "make_train_step": "jaxlean.train.step",
}

__all__ = [
    "JSONL_NAME",
    "PEAK_FLOPS",
    "QUICK_COMPILE_MAX_STEPS",
    "Checkpointer",
    "Donate",
    "History",
    "Labels",
    "LossFn",
    "MatrixState",
    "MatrixTransformation",
    "MetricsLogger",
    "PackedLayout",
    "PackedState",
    "StepMetrics",
    "TrainOutput",
    "TrainStep",
    "Trainable",
    "accumulate",
    "accumulated_value_and_grad",
    "checked_init",
    "checkpoint",
    "count_integer_elements",
    "fit",
    "join_micro_batches",
    "make_train_fn",
    "make_train_step",
    "matrix_transform",
    "metrics_log",
    "muon",
    "packed",
    "peak_flops",
    "resolve_quick_compile",
    "split_micro_batches",
    "step",
    "throughput",
    "training_flops_per_token",
    "unplaced_sharding",
    "update_buffers",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)

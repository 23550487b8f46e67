"""Meshes, partition rules and the multi-process runtime.

- ``mesh``: a device mesh with ``data``, ``fsdp``, ``seq`` and ``tensor`` axes, and placing a
  model and its batches on it by partition rules;
- ``tensor``: the activation layout of tensor (Megatron) parallelism, for the model's layers;
- ``distributed``: :func:`~jaxlean.parallel.distributed.initialize`, joining the processes
  of a multi-host run from flags, ``JAXLEAN_*`` variables or SLURM;
- ``context``: a sequence split over a ``seq`` mesh axis
  (:func:`~jaxlean.parallel.context.context_parallel_attention`; the transformer uses it
  under ``jax.set_mesh``).

The submodules and their names below load on first use (``jaxlean.parallel.mesh`` after
``import jaxlean`` works; ``from jaxlean.parallel import make_mesh`` too), so importing this
package imports no JAX.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxlean._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see of the lazy names below
    from jaxlean.parallel import context as context
    from jaxlean.parallel import distributed as distributed
    from jaxlean.parallel import mesh as mesh
    from jaxlean.parallel import tensor as tensor
    from jaxlean.parallel.context import context_parallel_attention as context_parallel_attention
    from jaxlean.parallel.context import sequence_mesh as sequence_mesh
    from jaxlean.parallel.distributed import ENV_COORDINATOR as ENV_COORDINATOR
    from jaxlean.parallel.distributed import ENV_NUM_PROCESSES as ENV_NUM_PROCESSES
    from jaxlean.parallel.distributed import ENV_PROCESS_ID as ENV_PROCESS_ID
    from jaxlean.parallel.distributed import ProcessInfo as ProcessInfo
    from jaxlean.parallel.distributed import initialize as initialize
    from jaxlean.parallel.mesh import BATCH_AXES as BATCH_AXES
    from jaxlean.parallel.mesh import DATA as DATA
    from jaxlean.parallel.mesh import FSDP as FSDP
    from jaxlean.parallel.mesh import MESH_AXES as MESH_AXES
    from jaxlean.parallel.mesh import SEQ as SEQ
    from jaxlean.parallel.mesh import TENSOR as TENSOR
    from jaxlean.parallel.mesh import Rules as Rules
    from jaxlean.parallel.mesh import axis_names as axis_names
    from jaxlean.parallel.mesh import batch_spec as batch_spec
    from jaxlean.parallel.mesh import constrain as constrain
    from jaxlean.parallel.mesh import init_sharded as init_sharded
    from jaxlean.parallel.mesh import make_mesh as make_mesh
    from jaxlean.parallel.mesh import named_shardings as named_shardings
    from jaxlean.parallel.mesh import partition_specs as partition_specs
    from jaxlean.parallel.mesh import shard_batch as shard_batch
    from jaxlean.parallel.mesh import shard_model as shard_model
    from jaxlean.parallel.tensor import check_divisible as check_divisible
    from jaxlean.parallel.tensor import split_over_tensor as split_over_tensor
    from jaxlean.parallel.tensor import tensor_size as tensor_size
    from jaxlean.parallel.tensor import whole_over_tensor as whole_over_tensor

_SUBMODULES = ("context", "distributed", "mesh", "tensor")

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "SEQ": "jaxlean.parallel.mesh",
    "context_parallel_attention": "jaxlean.parallel.context",
    "sequence_mesh": "jaxlean.parallel.context",
    "ENV_COORDINATOR": "jaxlean.parallel.distributed",
    "ENV_NUM_PROCESSES": "jaxlean.parallel.distributed",
    "ENV_PROCESS_ID": "jaxlean.parallel.distributed",
    "ProcessInfo": "jaxlean.parallel.distributed",
    "initialize": "jaxlean.parallel.distributed",
    "BATCH_AXES": "jaxlean.parallel.mesh",
    "DATA": "jaxlean.parallel.mesh",
    "FSDP": "jaxlean.parallel.mesh",
    "MESH_AXES": "jaxlean.parallel.mesh",
    "TENSOR": "jaxlean.parallel.mesh",
    "Rules": "jaxlean.parallel.mesh",
    "axis_names": "jaxlean.parallel.mesh",
    "batch_spec": "jaxlean.parallel.mesh",
    "constrain": "jaxlean.parallel.mesh",
    "init_sharded": "jaxlean.parallel.mesh",
    "make_mesh": "jaxlean.parallel.mesh",
    "named_shardings": "jaxlean.parallel.mesh",
    "partition_specs": "jaxlean.parallel.mesh",
    "shard_batch": "jaxlean.parallel.mesh",
    "shard_model": "jaxlean.parallel.mesh",
    "check_divisible": "jaxlean.parallel.tensor",
    "split_over_tensor": "jaxlean.parallel.tensor",
    "tensor_size": "jaxlean.parallel.tensor",
    "whole_over_tensor": "jaxlean.parallel.tensor",
}

__all__ = ["BATCH_AXES", "DATA", "ENV_COORDINATOR", "ENV_NUM_PROCESSES", "ENV_PROCESS_ID", "FSDP",
           "MESH_AXES", "SEQ", "TENSOR", "ProcessInfo", "Rules", "axis_names", "batch_spec",
           "check_divisible", "constrain", "context", "context_parallel_attention",
           "distributed", "init_sharded", "initialize", "make_mesh", "mesh", "named_shardings",
           "partition_specs", "sequence_mesh", "shard_batch", "shard_model", "split_over_tensor",
           "tensor", "tensor_size", "whole_over_tensor"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)

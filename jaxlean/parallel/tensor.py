"""Activation layout of tensor (Megatron) parallelism, read from the mesh being traced under.

Tensor parallelism splits each layer's weights over the ``tensor`` mesh axis: the
projections into heads or MLP features by their outputs (column split), the
projections back by their inputs (row split). Every device then computes its own
heads and features, and the row-split products are partial sums that one
all-reduce (or a reduce-scatter) per block adds up. The weights' shardings alone
let XLA choose other, costlier plans (gathering a weight, say), so the layers pin
their activations with these helpers: :func:`split_over_tensor` on the per-head and
per-feature activations, :func:`whole_over_tensor` on the block's output.

The helpers read the mesh of the trace (``with jax.set_mesh(mesh):`` around the call or
the jitted step); without one, or where its ``tensor`` axis has size 1, they return their
input unchanged, so a model without tensor parallelism traces exactly as before. On a
mesh whose ``tensor`` axis is Explicit, arrays carry their sharding in their type and
follow the weights' shardings; the helpers leave them alone there as well.
"""

from __future__ import annotations

import jax
from jax import Array
from jax.sharding import PartitionSpec as P

from jaxlean.errors import ConfigError
from jaxlean.parallel.mesh import SEQ, TENSOR

__all__ = ["check_divisible", "split_over_tensor", "tensor_size", "whole_over_tensor"]


def _auto_tensor_size() -> int:
    """The size of the trace's ``tensor`` axis where the helpers constrain (else 1)."""
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty or TENSOR not in mesh.axis_names:
        return 1
    index = mesh.axis_names.index(TENSOR)
    if mesh.axis_types[index] == jax.sharding.AxisType.Explicit:
        return 1
    return int(mesh.shape[TENSOR])


def tensor_size() -> int:
    """The size of the ``tensor`` axis of the mesh being traced under (1 without one)."""
    mesh = jax.sharding.get_abstract_mesh()
    return 1 if mesh.empty or TENSOR not in mesh.axis_names else int(mesh.shape[TENSOR])


def check_divisible(sizes: dict[str, int], tensor: int, where: str) -> None:
    """Raise :class:`ConfigError` naming the first of ``sizes`` (name: count) that ``tensor``
    devices cannot split evenly, e.g. ``{"num_kv_heads": 2}`` over 4."""
    for name, size in sizes.items():
        if size % tensor:
            raise ConfigError(f"{where}: {name}={size} is not divisible by the tensor axis "
                              f"(size {tensor}); tensor parallelism gives each device whole "
                              f"heads and an equal share of the MLP, so choose a tensor size "
                              f"that divides {name}")


def split_over_tensor(x: Array, axis: int) -> Array:
    """``x`` with dimension ``axis`` split over the ``tensor`` axis (the others left to XLA)."""
    if _auto_tensor_size() == 1:
        return x
    spec = [P.UNCONSTRAINED] * x.ndim
    spec[axis] = TENSOR
    return jax.lax.with_sharding_constraint(x, P(*spec))


def whole_over_tensor(x: Array) -> Array:
    """``x`` (``[batch, ..., features]``) replicated over the ``tensor`` axis: where the
    row-split partial sums are added (the batch dimension is left to XLA; on a mesh with a
    ``seq`` axis, a ``[batch, sequence, features]`` array keeps its sequence split)."""
    if _auto_tensor_size() == 1:
        return x
    spec = [P.UNCONSTRAINED, *([None] * (x.ndim - 1))]
    mesh = jax.sharding.get_abstract_mesh()
    if x.ndim >= 3 and SEQ in mesh.axis_names and mesh.shape[SEQ] > 1:
        spec[1] = SEQ  # the sequence stays split over seq (context parallelism)
    return jax.lax.with_sharding_constraint(x, P(*spec))

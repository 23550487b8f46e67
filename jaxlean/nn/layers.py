"""Runs of identical layers, traced once: ``stack``, ``unstack`` and ``scan_layers``.

A Python loop over N layers traces and compiles N copies of the layer; a
``lax.scan`` over the layers stacked along a leading axis traces one. Stacking
works on any pytree (dicts of arrays, Equinox modules, Flax NNX states from
``nnx.split``): array leaves gain a leading layer axis, every other leaf must be
equal across layers and is kept once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxlean._pytree import first_difference, is_array
from jaxlean.errors import ConfigError, StructureError
from jaxlean.nn.remat import RematOption, remat_body

__all__ = ["Nested", "auto_block_size", "auto_nested", "check_nested", "depth_of",
           "scan_layers", "stack", "take_layers", "unstack"]

T = TypeVar("T")
Nested = int | Literal["auto"] | None
"""Two-level checkpointing: layers per block, ``"auto"`` (see :func:`auto_block_size`) or off."""
Carry = TypeVar("Carry")


def _stack_leaves(leaves: list[Any]) -> Any:
    if not is_array(leaves[0]):
        return leaves[0]
    if all(isinstance(leaf, np.ndarray | np.generic) for leaf in leaves):
        return np.stack(leaves)
    return jnp.stack(leaves)


def stack(layers: Sequence[T]) -> T:
    """Stack layers of identical structure into one pytree with a leading layer axis.

    Args:
        layers: pytrees with the same structure, the same shape and dtype at every
            array leaf, and equal non-array leaves.

    Returns:
        One pytree like ``layers[0]`` whose array leaves have shape ``(len(layers), ...)``.

    Raises:
        StructureError: naming the two layer indices and the pytree path where they differ.
    """
    layers = list(layers)
    if not layers:
        raise StructureError("stack() needs at least one layer, got an empty sequence")
    leaves0, treedef = jax.tree_util.tree_flatten(layers[0])
    columns = [[leaf] for leaf in leaves0]
    for index, layer in enumerate(layers[1:], start=1):
        problem = first_difference(layers[0], layer)
        if problem:
            raise StructureError(f"cannot stack layer 0 and layer {index}: they differ {problem}")
        for column, leaf in zip(columns, jax.tree_util.tree_leaves(layer), strict=True):
            column.append(leaf)
    return jax.tree_util.tree_unflatten(treedef, [_stack_leaves(column) for column in columns])


def depth_of(stacked: Any) -> int:
    """Number of layers in a stacked pytree (the common leading size of its array leaves)."""
    sizes = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(stacked)[0]:
        if is_array(leaf):
            if leaf.ndim == 0:
                raise StructureError(
                    f"stacked layers: the array at {jax.tree_util.keystr(path)} is a scalar, "
                    "so it has no layer axis"
                )
            sizes.setdefault(int(leaf.shape[0]), jax.tree_util.keystr(path))
    if not sizes:
        raise StructureError("stacked layers contain no array leaves, so there is no layer axis")
    if len(sizes) > 1:
        listing = ", ".join(f"{where} has {size}" for size, where in sizes.items())
        raise StructureError(f"stacked layers disagree on the number of layers: {listing}")
    return next(iter(sizes))


def take_layers(stacked: T, index: int | slice) -> T:
    """Layer ``index`` of a stacked pytree (an int drops the layer axis), or layers ``index``
    (a slice keeps it). Non-array leaves are shared by every layer and kept as they are.

    The one way layers are sliced out of a stack: :func:`unstack`, ``scan_layers``'
    blocks, and the run planner's single modules all use it.
    """
    return jax.tree.map(lambda leaf: leaf[index] if is_array(leaf) else leaf, stacked)


def unstack(stacked: T) -> list[T]:
    """Split a stacked pytree back into its layers (exact inverse of :func:`stack`)."""
    return [take_layers(stacked, i) for i in range(depth_of(stacked))]


def _split_blocks(tree: Any, blocks: int) -> Any:
    """Reshape the layer axis ``[blocks * k, ...]`` of every array to ``[blocks, k, ...]``."""
    return jax.tree.map(lambda leaf: leaf.reshape(blocks, -1, *leaf.shape[1:]), tree)


def _merge_blocks(tree: Any) -> Any:
    return jax.tree.map(lambda leaf: leaf.reshape(-1, *leaf.shape[2:]), tree)


def _nbytes(tree: Any) -> int:
    """Bytes of the array leaves of ``tree`` (tracers included)."""
    return sum(math.prod(jnp.shape(leaf)) * jnp.result_type(leaf).itemsize
               for leaf in jax.tree.leaves(tree))


def auto_block_size(depth: int, carry_bytes: int, layer_bytes: int) -> int:
    """Block size ``k`` for two-level checkpointing that minimises the bytes held for backward.

    The outer scan keeps one carry per block (``ceil(depth / k)`` carries); recomputing
    a block keeps ``k`` carries and the block's ``k`` layer gradients. A depth that is
    not a multiple of ``k`` needs a separate last block, whose parameter gradient is
    joined to the others' in a buffer the size of all parameters, so such ``k`` pay
    that too. The cheapest ``k`` under this model wins (the larger on ties).
    """

    def cost(k: int) -> int:
        remainder_cost = depth * layer_bytes if depth % k else 0
        return -(-depth // k) * carry_bytes + k * (carry_bytes + layer_bytes) + remainder_cost

    return min(range(depth, 0, -1), key=cost)


def check_nested(nested: Nested) -> None:
    """Reject a ``nested`` option that is not ``None``, ``"auto"`` or a positive int."""
    if nested is None or nested == "auto":
        return
    if isinstance(nested, bool) or not isinstance(nested, int) or nested < 1:
        raise ConfigError(
            f"nested must be a positive number of layers per block or 'auto', got {nested!r}")


def auto_nested(stacked: Any, init: Any, xs: Any = None) -> int:
    """The block size ``scan_layers(..., nested="auto")`` uses for these layers and inputs."""
    depth = depth_of(stacked)
    params = eqx.filter(stacked, is_array)
    layer_bytes = (_nbytes(params) + _nbytes(xs)) // depth
    return auto_block_size(depth, _nbytes(init), layer_bytes)


def scan_layers(
    f: Callable[[Any, Carry, Any], tuple[Carry, Any]],
    stacked: Any,
    init: Carry,
    xs: Any = None,
    *,
    remat: RematOption = None,
    nested: Nested = None,
    unroll: int | bool = 1,
) -> tuple[Carry, Any]:
    """Apply a stack of layers in order with one trace of ``f``, like ``lax.scan``.

    Args:
        f: ``f(layer, carry, x) -> (carry, y)``; ``layer`` is one layer of ``stacked``.
        stacked: layers stacked by :func:`stack` or ``eqx.filter_vmap`` (array leaves
            have a leading layer axis; non-array leaves are shared by every layer).
        init: the initial carry (for example the hidden state).
        xs: optional per-layer inputs with a leading layer axis (a per-layer KV cache).
        remat: rematerialisation of each layer: ``None``, ``"full"``, ``"dots"``,
            ``"dots_no_batch"``, ``"offload"`` or a ``jax.checkpoint`` policy
            (see :mod:`jaxlean.nn.remat`).
        nested: if set to ``k``, two-level (sqrt-N) checkpointing: an outer scan over
            blocks of ``k`` layers saves only the carry between blocks and recomputes a
            block in the backward pass; inside a block ``remat`` applies per layer. A
            depth that is not a multiple of ``k`` ends with a shorter block. ``"auto"``
            picks ``k`` from the sizes of the carry and of one layer
            (:func:`auto_block_size`); when that gives 1 or ``depth``, nesting cannot
            help and the layers are scanned with ``remat`` alone.
        unroll: passed to ``lax.scan`` (the inner scan when ``nested`` is set).

    Returns:
        ``(carry, ys)``: the final carry and the per-layer outputs stacked along axis 0.
    """
    check_nested(nested)
    depth = depth_of(stacked)
    if xs is not None:
        for path, leaf in jax.tree_util.tree_flatten_with_path(xs)[0]:
            if jnp.ndim(leaf) == 0 or jnp.shape(leaf)[0] != depth:
                raise StructureError(
                    f"xs{jax.tree_util.keystr(path)} has shape {jnp.shape(leaf)}; its leading "
                    f"axis must be the number of layers ({depth})"
                )
    params, static = eqx.partition(stacked, is_array)

    def body(carry, inputs):
        layer_params, x = inputs
        return f(eqx.combine(layer_params, static), carry, x)

    layer_body = remat_body(body, remat)
    if nested is None:
        return lax.scan(layer_body, init, (params, xs), unroll=unroll)
    if nested == "auto":
        nested = auto_nested(params, init, xs)
        if nested in (1, depth):
            return lax.scan(layer_body, init, (params, xs), unroll=unroll)

    def run_block(carry, block_inputs):
        return lax.scan(layer_body, carry, block_inputs, unroll=unroll)

    block_body = remat_body(run_block, "full")
    blocks, remainder = divmod(depth, nested)
    carry, ys_parts = init, []
    if blocks:
        inputs = _split_blocks(take_layers((params, xs), slice(0, blocks * nested)), blocks)
        carry, block_ys = lax.scan(block_body, carry, inputs)
        ys_parts.append(_merge_blocks(block_ys))
    if remainder:
        inputs = take_layers((params, xs), slice(blocks * nested, depth))
        carry, tail_ys = block_body(carry, inputs)
        ys_parts.append(tail_ys)
    if len(ys_parts) == 1:
        return carry, ys_parts[0]
    return carry, jax.tree.map(lambda *parts: jnp.concatenate(parts), *ys_parts)

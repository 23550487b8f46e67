"""Context (sequence) parallel attention: a sequence split over a mesh axis, attended whole.

Flash attention (:mod:`jaxlean.nn.flash`) makes attention's memory linear in the sequence
length on one device; a sequence whose activations do not fit one device is split over a
``seq`` mesh axis instead, every layer's activations ``[B, T / n, ...]`` per device. Only
attention needs the whole sequence. Here it gets it as DeepSpeed-Ulysses does: an
all-to-all turns ``q, k, v`` from sequence-split ``[B, T / n, heads, d]`` into head-split
``[B, T, heads / n, d]``, each device runs flash attention over the whole sequence for its
heads, and a second all-to-all turns the output back. Per layer that is four all-to-alls
forward (their transposes backward), each moving ``1 / n`` of the array; the attention
mask's per-token arrays (padding, packed segment ids) are all-gathered, which is ``B x T``
integers.

The query heads and the key/value heads must split evenly over the axis (with a tensor
axis, what is left of them per device); where there are fewer key/value heads than
devices, each is repeated so that every device holds the one its query heads read (grouped
query attention stays exact).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax import Array
from jax.sharding import AbstractMesh, Mesh
from jax.sharding import PartitionSpec as P

from jaxlean.errors import ConfigError
from jaxlean.nn.attention_mask import AttentionMask
from jaxlean.nn.flash import DEFAULT_TILE, flash_attention
from jaxlean.parallel.mesh import BATCH_AXES, SEQ

__all__ = ["SEQ", "context_parallel_attention", "sequence_mesh", "splittable_batch_axes"]


def _axes(mesh: Mesh, axes: str | Sequence[str] | None) -> tuple[str, ...]:
    axes = () if axes is None else (axes,) if isinstance(axes, str) else tuple(axes)
    missing = [a for a in axes if a not in mesh.shape]
    if missing:
        raise ConfigError(f"context_parallel_attention: mesh axes {missing} are not in the "
                          f"mesh {dict(mesh.shape)}")
    return axes


def _size(mesh: Mesh, axes: tuple[str, ...]) -> int:
    return math.prod(mesh.shape[a] for a in axes)


def _check(q: Array, k: Array, v: Array, mask: AttentionMask, n: int, heads_per: int,
           seq_axis: str) -> None:
    length = q.shape[1]
    if k.shape[1] != length or v.shape[:3] != k.shape[:3]:
        raise ConfigError(f"context_parallel_attention is self-attention: q {q.shape}, k "
                          f"{k.shape} and v {v.shape} need one sequence length")
    if mask.q_offset != 0 or mask.q_shift is not None:
        raise ConfigError("context_parallel_attention: a mask with a query offset (a KV "
                          "cache) is not split over the sequence; decode on one device")
    if length % n:
        raise ConfigError(f"context_parallel_attention: the sequence length {length} must be "
                          f"a multiple of the {seq_axis!r} axis size {n}")
    if heads_per % n:
        raise ConfigError(f"context_parallel_attention: the {heads_per} query heads per "
                          f"device must split over the {seq_axis!r} axis of size {n}")


def _repeat_kv(k: Array, v: Array, n: int, seq_axis: str) -> tuple[Array, Array]:
    """K/V heads repeated so that ``n`` devices each hold whole groups (fewer heads than n)."""
    kv_heads = k.shape[2]
    if kv_heads % n == 0:
        return k, v
    if n % kv_heads:
        raise ConfigError(f"context_parallel_attention: {kv_heads} key/value heads per "
                          f"device neither split over nor divide the {seq_axis!r} axis "
                          f"size {n}")
    return jnp.repeat(k, n // kv_heads, axis=2), jnp.repeat(v, n // kv_heads, axis=2)


def sequence_mesh() -> AbstractMesh | None:
    """The mesh set by ``jax.set_mesh`` when it splits the sequence (a ``seq`` axis > 1).

    The transformer's flash attention runs :func:`context_parallel_attention` under such a
    mesh: a training step traced inside ``with jax.set_mesh(mesh):`` is context parallel,
    and JAX keys its compiled programs on that mesh, so one traced without it is not
    reused under it.
    """
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty or SEQ not in mesh.axis_names or mesh.shape[SEQ] == 1:
        return None
    return mesh


def context_parallel_attention(q: Array, k: Array, v: Array, mask: AttentionMask,
                               mesh: Mesh | AbstractMesh,
                               *, seq_axis: str = SEQ,
                               batch_axes: str | Sequence[str] | None = None,
                               head_axes: str | Sequence[str] | None = None,
                               q_tile: int = DEFAULT_TILE, k_tile: int = DEFAULT_TILE
                               ) -> Array:
    """Flash attention of a sequence split over ``seq_axis`` (Ulysses all-to-all).

    Equals :func:`jaxlean.nn.flash.flash_attention` of the same arrays, values and
    gradients, with each device holding ``1 / n`` of the sequence outside attention.

    Args:
        q: ``[B, T, heads, d]``; k, v: ``[B, T, kv_heads, d]`` (self-attention).
        mask: what each query may see (causal, window, padding, packed segments).
        mesh: the mesh (or the abstract mesh of ``jax.set_mesh``); ``seq_axis`` splits the
            sequence (dimension 1).
        batch_axes: mesh axes splitting the batch (dimension 0), e.g. ``("data",
            "fsdp")``; None: the batch is not split.
        head_axes: mesh axes already splitting the heads (a ``tensor`` axis); None: none.
        q_tile, k_tile: flash attention's blocks.

    Returns:
        ``[B, T, heads, d]``, split as ``q`` is.
    """
    seq = _axes(mesh, seq_axis)
    batch_axes, head_axes = _axes(mesh, batch_axes), _axes(mesh, head_axes)
    n, tensor = _size(mesh, seq), _size(mesh, head_axes)
    if q.shape[2] % tensor or k.shape[2] % tensor:
        raise ConfigError(f"context_parallel_attention: {q.shape[2]} query and {k.shape[2]} "
                          f"key/value heads must split over the head axes {head_axes} "
                          f"(size {tensor})")
    _check(q, k, v, mask, n, q.shape[2] // tensor, seq_axis)
    if n == 1:
        return flash_attention(q, k, v, mask, q_tile=q_tile, k_tile=k_tile)
    act = P(batch_axes or None, seq_axis, head_axes or None, None)
    tok = P(batch_axes or None, seq_axis)
    arrays = {"key_valid": mask.key_valid, "q_segments": mask.q_segments,
              "k_segments": mask.k_segments}
    present = {name: x for name, x in arrays.items() if x is not None}

    def local(q, k, v, per_token):
        k, v = _repeat_kv(k, v, n, seq_axis)

        def to_heads(x):
            return jax.lax.all_to_all(x, seq_axis, 2, 1, tiled=True)

        whole = {name: jax.lax.all_gather(x, seq_axis, axis=1, tiled=True)
                 for name, x in per_token.items()}
        full_mask = AttentionMask(causal=mask.causal, window=mask.window, **whole)
        out = flash_attention(to_heads(q), to_heads(k), to_heads(v), full_mask,
                              q_tile=q_tile, k_tile=k_tile)
        return jax.lax.all_to_all(out, seq_axis, 1, 2, tiled=True)

    specs = (act, act, act, {name: tok for name in present})
    return jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=act,
                         check_vma=False)(q, k, v, present)


def splittable_batch_axes(mesh: Mesh | AbstractMesh, batch: int,
                          axes: Sequence[str] = BATCH_AXES) -> tuple[str, ...]:
    """The ``axes`` of ``mesh`` (larger than 1) that split a batch of ``batch`` examples, or
    none when together they do not divide it (one long sequence on an fsdp mesh: every
    fsdp group then attends the whole batch, as the replicated batch is)."""
    present = tuple(a for a in axes if a in mesh.shape and mesh.shape[a] > 1)
    return present if batch % _size(mesh, present) == 0 else ()

"""Which keys a query may attend to, described by its parts instead of a ``[T, S]`` array.

Blockwise attention (:mod:`jaxlean.nn.flash`) never builds the ``[T, S]`` mask:
it asks an :class:`AttentionMask` for one ``[q_tile, k_tile]`` block at a time,
and for the range of key blocks a query block can see at all (so blocks
hidden by causality or a sliding window are skipped). :meth:`AttentionMask.dense`
gives the whole array for dense attention.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import Array

from jaxlean.errors import ConfigError

__all__ = ["AttentionMask"]


def _pad_last(x: Array | None, length: int, fill) -> Array | None:
    if x is None or x.shape[-1] == length:
        return x
    return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, length - x.shape[-1])],
                   constant_values=fill)


class AttentionMask(eqx.Module):
    """Query ``t`` (at slot ``q_offset + t``) may see key ``s`` when every part present holds.

    Attributes:
        key_valid: ``[B, S]`` bool, False at padded keys.
        q_segments, k_segments: ``[B, T]`` / ``[B, S]`` int; a query sees only keys of
            its own segment (packed rows). Both or neither.
        causal: key slot ``s <= q_offset + t``.
        window: ``q_offset + t - s < window`` (the last ``window`` slots, itself
            included); None for no window.
        q_offset: the slot of query 0 among the keys (0 for self-attention).
        q_shift: a traced scalar added to ``q_offset`` (a KV cache's write slot, which
            changes from call to call without another compile); None for 0.
    """

    key_valid: Array | None = None
    q_segments: Array | None = None
    k_segments: Array | None = None
    causal: bool = eqx.field(static=True, default=True)
    window: int | None = eqx.field(static=True, default=None)
    q_offset: int = eqx.field(static=True, default=0)
    q_shift: Array | None = None

    def __check_init__(self) -> None:
        if (self.q_segments is None) != (self.k_segments is None):
            raise ConfigError("AttentionMask needs both q_segments and k_segments (the query's and "
                              "the key's segment ids), or neither")

    def _first_slot(self) -> Array | int:
        """The slot of query 0 among the keys."""
        return self.q_offset if self.q_shift is None else self.q_offset + self.q_shift

    def block(self, q_start: Array | int, q_size: int, k_start: Array | int, k_size: int
              ) -> Array:
        """``[B or 1, q_size, k_size]`` bool: queries ``q_start + i``, keys ``k_start + j``.

        The per-example arrays must cover the block (see :meth:`padded`).
        """
        q_slots = self._first_slot() + q_start + jnp.arange(q_size)
        k_slots = k_start + jnp.arange(k_size)
        visible = jnp.ones((q_size, k_size), bool)
        if self.causal:
            visible &= k_slots[None, :] <= q_slots[:, None]
        if self.window is not None:
            visible &= q_slots[:, None] - k_slots[None, :] < self.window
        visible = visible[None]
        if self.key_valid is not None:
            valid = jax.lax.dynamic_slice_in_dim(self.key_valid, k_start, k_size, axis=1)
            visible &= valid[:, None, :].astype(bool)
        if self.q_segments is not None:
            q_seg = jax.lax.dynamic_slice_in_dim(self.q_segments, q_start, q_size, axis=1)
            k_seg = jax.lax.dynamic_slice_in_dim(self.k_segments, k_start, k_size, axis=1)
            visible &= q_seg[:, :, None] == k_seg[:, None, :]
        return visible

    def dense(self, length: int, kv_length: int) -> Array:
        """The whole ``[B or 1, length, kv_length]`` mask, for dense attention."""
        return self.block(0, length, 0, kv_length)

    def padded(self, length: int, kv_length: int, real_kv_length: int) -> AttentionMask:
        """This mask for queries padded to ``length`` and keys padded to ``kv_length``;
        the padded keys (from ``real_kv_length`` on) are never visible."""
        key_valid = self.key_valid
        if kv_length > real_kv_length:
            real = jnp.arange(kv_length)[None] < real_kv_length
            key_valid = real if key_valid is None else _pad_last(key_valid.astype(bool),
                                                                  kv_length, False)
        return AttentionMask(key_valid, _pad_last(self.q_segments, length, 0),
                             _pad_last(self.k_segments, kv_length, 0),
                             self.causal, self.window, self.q_offset, self.q_shift)

    def key_block_range(self, q_start: Array, q_size: int, k_size: int, k_blocks: int
                        ) -> tuple[Array, Array]:
        """``[lo, hi)``: the key blocks (of ``k_size``) that queries ``q_start ..
        q_start + q_size - 1`` can see; the others are hidden by causality or window."""
        lo, hi = jnp.asarray(0), jnp.asarray(k_blocks)
        first = self._first_slot() + q_start
        last = first + q_size - 1
        if self.causal:
            hi = jnp.clip(last // k_size + 1, 0, k_blocks)
        if self.window is not None:
            lo = jnp.clip((first - self.window + 1) // k_size, 0, k_blocks)
        return lo, jnp.maximum(lo, hi)

    def query_block_range(self, k_start: Array, k_size: int, q_size: int, q_blocks: int
                          ) -> tuple[Array, Array]:
        """``[lo, hi)``: the query blocks (of ``q_size``) that can see any of keys
        ``k_start .. k_start + k_size - 1`` (the transpose of :meth:`key_block_range`)."""
        lo, hi = jnp.asarray(0), jnp.asarray(q_blocks)
        offset = self._first_slot()
        if self.causal:  # needs offset + t >= k_start
            lo = jnp.clip((k_start - offset) // q_size, 0, q_blocks)
        if self.window is not None:  # needs offset + t - (k_start + k_size - 1) < window
            last = k_start + k_size - 1 + self.window - 1 - offset
            hi = jnp.clip(last // q_size + 1, 0, q_blocks)
        return lo, jnp.maximum(lo, hi)

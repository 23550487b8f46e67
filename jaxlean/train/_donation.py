"""What a train step donates, and the copies that keep donation from deleting other arrays.

Donating a buffer deletes it for every array it backs. The step's own
arguments are all it can see: :func:`aliased` finds a donated buffer that also
backs another of them (the same array twice, a ``jax.device_put`` alias, a
pass-through output of a jitted ``init``), which :func:`copy_where` then copies.
Holders outside the call are invisible to any such check, which is why the
model's arrays are donated only when asked (``donate="all"``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

import jax
import jax.numpy as jnp

from jaxlean.errors import ConfigError

__all__ = ["DONATED_ARGS", "Donate", "aliased", "copy_where", "donated_args"]

Donate = Literal["state", "all", "none"]
"""What a step donates: the optimizer state, also the trainable leaves, or nothing."""

DONATED_ARGS = {"state": (1,), "all": (0, 1), "none": ()}
"""``donate_argnums`` of the step ``(trainable, opt_state, frozen, batch, kwargs)``."""


def _buffer_pointers(x: Any) -> tuple[int, ...]:
    """The device buffers behind array ``x`` (one per addressable shard); () for anything
    else, or a deleted array (the call then fails with JAX's own error)."""
    if not isinstance(x, jax.Array) or x.is_deleted():
        return ()
    if x.sharding.num_devices == 1:
        return (x.unsafe_buffer_pointer(),)
    return tuple(shard.data.unsafe_buffer_pointer() for shard in x.addressable_shards)


def aliased(donated: Any, *others: Any) -> list[bool]:
    """Per leaf of ``donated``: does its buffer also back another leaf of ``donated`` or of
    ``others``? Donating it would then delete that other array too, or make the call fail
    (``jax.device_put`` and pass-through outputs share buffers between distinct arrays)."""
    leaves = jax.tree.leaves(donated)
    pointers = [_buffer_pointers(x) for x in leaves]
    counts = Counter(p for ps in pointers for p in ps)
    counts.update(p for x in jax.tree.leaves(others) for p in _buffer_pointers(x))
    return [any(counts[p] > 1 for p in ps) for ps in pointers]


def copy_where(tree: Any, copy: list[bool]) -> Any:
    """``tree`` with the array leaves flagged in ``copy`` replaced by copies."""
    leaves, treedef = jax.tree.flatten(tree)
    leaves = [jnp.copy(x) if flag and isinstance(x, jax.Array) else x
              for x, flag in zip(leaves, copy, strict=True)]
    return jax.tree.unflatten(treedef, leaves)


def donated_args(donate: Any) -> tuple[int, ...]:
    """``jax.jit``'s ``donate_argnums`` for ``donate=`` of :func:`make_train_step`."""
    if donate is False:
        donate = "none"
    if not isinstance(donate, str) or donate not in DONATED_ARGS:
        raise ConfigError(
            f"make_train_step: donate must be 'state' (the optimizer state; the default), "
            f"'all' (also the trainable leaves of the model) or 'none' (or False), got "
            f"{donate!r}" + (": True no longer says which; donating the model's arrays "
                             "deletes them for every holder, so ask for it with 'all'"
                             if donate is True else ""))
    return DONATED_ARGS[donate]

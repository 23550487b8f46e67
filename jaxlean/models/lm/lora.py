"""LoRA adapters, several per projection, chosen per example.

A fine-tuning service trains and serves many low-rank adapters on one frozen
base model, and a single batch may mix examples of different adapters. Here a
projection is a :class:`Linear` (``x @ weight``) that may carry a :class:`LoRA`
holding ``num_adapters`` pairs ``(a, b)``; each example picks its pair with an
integer in ``adapter_ids``. ``b`` starts at zero, so fresh adapters leave the
base model unchanged. :func:`lora_mask` marks the adapter arrays, the only ones
to train (``optax.masked`` / ``optax.multi_transform`` or ``eqx.partition``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from jaxlean._args import as_int, as_names
from jaxlean._random import normal
from jaxlean.errors import ConfigError, DataError

__all__ = [
    "ATTENTION_TARGETS", "DEFAULT_TARGETS", "MLP_TARGETS", "Linear", "LoRA", "add_lora",
    "check_adapter_ids", "is_lora_path", "lora_mask",
]


class LoRA(eqx.Module):
    """``num_adapters`` low-rank updates ``scale * x @ a[i] @ b[i]`` of one projection.

    Attributes:
        a: ``[..., num_adapters, in, rank]`` (leading axes: stacked layers).
        b: ``[..., num_adapters, rank, out]``, zero at initialisation.
        scale: ``alpha / rank``.
    """

    a: Array
    b: Array
    scale: float = eqx.field(static=True)

    @property
    def num_adapters(self) -> int:
        return self.a.shape[-3]

    def __call__(self, x: Array, adapter_ids: Array | None) -> Array:
        """The update for ``x[batch, ..., in]``; example ``n`` uses adapter ``adapter_ids[n]``.

        ``adapter_ids=None`` means adapter 0 for every example.
        """
        if adapter_ids is None:
            adapter_ids = jnp.zeros(x.shape[:1], jnp.int32)
        a = self.a[adapter_ids].astype(x.dtype)
        b = self.b[adapter_ids].astype(x.dtype)
        down = jnp.einsum("b...i,bir->b...r", x, a)
        return self.scale * jnp.einsum("b...r,bro->b...o", down, b)

    def down(self, x: Array, adapter_ids: Array | None) -> Array:
        """``scale * x @ a[ids]``, the rank-sized half of the update (used by chunked heads)."""
        if adapter_ids is None:
            adapter_ids = jnp.zeros(x.shape[:1], jnp.int32)
        a = self.a[adapter_ids].astype(x.dtype)
        return self.scale * jnp.einsum("b...i,bir->b...r", x, a)


class Linear(eqx.Module):
    """``x @ weight`` (weight ``[in, out]``) plus an optional per-example :class:`LoRA` update.

    ``weight`` is ``None`` only for a head tied to the token embedding: the model
    supplies the matrix itself and ``tied_shape`` records its ``(in, out)``.
    """

    weight: Array | None
    lora: LoRA | None = None
    tied_shape: tuple[int, int] | None = eqx.field(static=True, default=None)

    def __call__(self, x: Array, adapter_ids: Array | None = None) -> Array:
        y = x @ self.weight
        if self.lora is not None:
            y = y + self.lora(x, adapter_ids).astype(y.dtype)
        return y


ATTENTION_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_TARGETS = ("gate_proj", "up_proj", "down_proj")
DEFAULT_TARGETS = ATTENTION_TARGETS + MLP_TARGETS


def _is_linear(node: Any) -> bool:
    return isinstance(node, Linear)


def _name(path: tuple) -> str:
    last = path[-1] if path else None
    return getattr(last, "name", None) or str(getattr(last, "key", ""))


def _check_key(key: Any) -> None:
    """Refuse anything but one ``jax.random.key(...)`` (or a legacy ``PRNGKey`` ``uint32[2]``)."""
    dtype = getattr(key, "dtype", None)
    typed = dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key)
    raw = dtype is not None and not typed and np.dtype(dtype) == np.uint32 \
        and getattr(key, "shape", None) == (2,)
    if not (isinstance(key, jax.Array | np.ndarray) and ((typed and key.ndim == 0) or raw)):
        what = (f"{type(key).__name__} {key!r}" if dtype is None
                else f"an array of dtype {dtype} and shape {tuple(key.shape)}")
        raise ConfigError(f"add_lora: key must be one jax.random key (e.g. jax.random.key(0)), "
                          f"got {what}")


def add_lora(
    model: Any,
    *,
    rank: int,
    key: Array,
    num_adapters: int = 1,
    alpha: float | None = None,
    targets: Iterable[str] = DEFAULT_TARGETS,
    dtype: Any = None,
) -> Any:
    """Attach fresh adapters to every :class:`Linear` whose attribute name is in ``targets``.

    ``a`` is drawn from ``N(0, 1/in)`` and ``b`` is zero, so the returned model
    computes exactly what ``model`` does until ``b`` is trained. Stacked layers
    get stacked adapters (one set per layer). Add ``"lm_head"`` to ``targets`` to
    adapt the output head too (tied or not).

    Args:
        model: any pytree containing :class:`Linear` modules (e.g. a ``Transformer``).
        rank: adapter rank ``r``.
        key: PRNG key for ``a``.
        num_adapters: how many adapters each projection holds (selected per example).
        alpha: LoRA scaling numerator; the update is scaled by ``alpha / rank``
            (default ``alpha = rank``, i.e. scale 1).
        targets: attribute names of the projections to adapt (one string is one name),
            or ``"all-linear"`` (PEFT's ``target_modules="all-linear"``): every
            projection but the output head.
        dtype: the adapters' dtype; default the projection's own (float32 for a
            tied head). ``jnp.float32`` on a bfloat16 base is mixed precision: the
            adapters are stored, differentiated and updated in float32 while every
            product runs in the base's bfloat16 (they are cast to the activations'
            dtype where used), so small updates are not rounded away.

    Returns:
        The model with :class:`LoRA` adapters in the targeted projections.

    Raises:
        ConfigError: for a rank or adapter count that is not an integer >= 1, a key
            that is not a ``jax.random`` key, or targets that match nothing.
    """
    rank = as_int(rank, "add_lora: rank")
    num_adapters = as_int(num_adapters, "add_lora: num_adapters")
    if rank < 1 or num_adapters < 1:
        raise ConfigError(f"LoRA needs rank >= 1 and num_adapters >= 1, got {rank}, {num_adapters}")
    _check_key(key)
    if dtype is not None and not jnp.issubdtype(dtype, jnp.floating):
        raise ConfigError(f"add_lora: dtype must be a floating-point dtype, got {dtype!r}")
    if isinstance(targets, str) and targets == "all-linear":
        targets = tuple(sorted({_name(path) for path, node in
                                jax.tree_util.tree_flatten_with_path(model, is_leaf=_is_linear)[0]
                                if _is_linear(node)} - {"lm_head"}))
    targets = as_names(targets, "add_lora: targets")
    scale = float(alpha if alpha is not None else rank) / rank
    found = [
        (path, node)
        for path, node in jax.tree_util.tree_flatten_with_path(model, is_leaf=_is_linear)[0]
        if _is_linear(node) and _name(path) in targets
    ]
    if not found:
        raise ConfigError(f"add_lora: no Linear projection named any of {list(targets)}")
    missing = set(targets) - {_name(path) for path, _ in found}
    if missing:
        raise ConfigError(f"add_lora: no Linear projection named {sorted(missing)}")
    keys = iter(jax.random.split(key, len(found)))

    def attach(path, node):
        if not (_is_linear(node) and _name(path) in targets):
            return node
        if node.weight is None:
            lead, (fan_in, fan_out), own = (), node.tied_shape, jnp.float32
        else:
            lead, (fan_in, fan_out) = node.weight.shape[:-2], node.weight.shape[-2:]
            own = node.weight.dtype
        kind = own if dtype is None else dtype
        a = normal(next(keys), (*lead, num_adapters, fan_in, rank), kind)
        b = jnp.zeros((*lead, num_adapters, rank, fan_out), kind)
        return Linear(node.weight, LoRA(a / jnp.sqrt(fan_in).astype(kind), b, scale),
                      node.tied_shape)

    return jax.tree_util.tree_map_with_path(attach, model, is_leaf=_is_linear)


def check_adapter_ids(model: Any, adapter_ids: Array | None, batch: int | None = None) -> None:
    """Raise :class:`DataError` for ``adapter_ids`` that are not one adapter per example.

    The shape (``[batch]`` integers) is checked always; the values only when
    concrete (not traced), since indexing would clamp an id outside
    ``[0, num_adapters)`` to the nearest adapter and train or run the wrong one.
    Nothing is checked on a model without adapters (the ids are unused there).
    """
    if adapter_ids is None:
        return
    shape = tuple(jnp.shape(adapter_ids))
    if len(shape) != 1 or (batch is not None and shape != (batch,)):
        want = "[batch]" if batch is None else f"[batch] = ({batch},)"
        raise DataError(f"adapter_ids must have shape {want}: one adapter per example, got "
                        f"shape {shape}")
    if not jnp.issubdtype(jnp.result_type(adapter_ids), jnp.integer):
        raise DataError(f"adapter_ids must be integers, got dtype {jnp.result_type(adapter_ids)}")
    if isinstance(adapter_ids, jax.core.Tracer):
        return
    counts = {node.num_adapters for node in jax.tree.leaves(
        model, is_leaf=lambda node: isinstance(node, LoRA)) if isinstance(node, LoRA)}
    if not counts:
        return
    count = min(counts)
    ids = np.asarray(adapter_ids)
    bad = np.flatnonzero((ids < 0) | (ids >= count))
    if bad.size:
        raise DataError(f"adapter_ids[{int(bad[0])}] = {int(ids[bad[0]])} is outside [0, {count}) "
                        f"(the model has {count} adapter(s) per projection; "
                        f"{bad.size} id(s) out of range)")


def is_lora_path(path: tuple) -> bool:
    """Whether a pytree key path lies inside a LoRA adapter (``trainable=`` of ``packed``)."""
    return any(getattr(key, "name", None) == "lora" for key in path)


def lora_mask(model: Any) -> Any:
    """A pytree of bools like ``model``: ``True`` exactly at the LoRA adapter arrays.

    The mask has the model's type, so it is callable like the model: hand
    optax the function itself (``optax.multi_transform(..., lambda p:
    labels_from(lora_mask(p)))``) rather than the mask tree, which optax would call.
    ``eqx.partition(model, lora_mask(model))`` splits adapters from the frozen base.
    """
    return jax.tree.map(
        lambda node: jax.tree.map(lambda _: True, node) if isinstance(node, LoRA) else False,
        model,
        is_leaf=lambda node: isinstance(node, LoRA),
    )


# The marker jaxlean.train reads (it does not import models): a model holding LoRA adapters
# trains only them unless make_train_step / fit is given trainable= (PEFT freezes the base).
LoRA.jaxlean_adapter = True

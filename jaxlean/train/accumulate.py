"""Gradient accumulation: a batch's gradient computed over micro-batches, exactly.

:func:`accumulated_value_and_grad` splits every batch array's leading axis into ``k``
micro-batches and runs the loss and its gradient on one at a time in a ``lax.scan``
(the step compiles once whatever ``k`` is; only one micro-batch's activations are
alive at a time). A loss that is a mean over a micro-batch's tokens is combined by
weighting each micro-batch with its normaliser, ``loss_weight(*batch, **kwargs)``
(its token count), so the result equals the full batch's mean and gradient even when
padding or ``-100`` labels fall unevenly across the micro-batches; averaging the
micro-batches' means with equal weights would not.

Micro-batch ``i`` holds rows ``i, i + k, i + 2k, ...``: on a mesh that shards the batch's
leading axis, every micro-batch is spread over the devices as the batch is, so the split
moves no data between them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxlean.errors import DataError

__all__ = ["accumulated_value_and_grad", "join_micro_batches", "split_micro_batches"]


def _split_leaf(x: Any, k: int, rows: int | None, path: str, where: str) -> Any:
    if jnp.ndim(x) == 0:
        return x
    if rows is not None and x.shape[0] != rows:
        raise DataError(f"{where}: micro_batches splits every batch array's leading axis, "
                        f"but {path} has {x.shape[0]} rows where the first array has {rows}")
    if x.shape[0] % k:
        raise DataError(f"{where}: micro_batches={k} must divide the batch: {path} has "
                        f"{x.shape[0]} rows")
    x = jnp.asarray(x)
    return jnp.moveaxis(x.reshape(x.shape[0] // k, k, *x.shape[1:]), 1, 0)


def split_micro_batches(tree: Any, k: int, *, where: str = "split_micro_batches") -> Any:
    """Every array leaf of ``tree`` with a leading axis as ``[k, rows // k, ...]``, micro-batch
    ``i`` holding rows ``i::k``; scalars are left as they are (each micro-batch sees them).

    Raises:
        DataError: a leaf's leading axis differs from the first one's, or ``k`` does not
            divide it (the message names the leaf's pytree path).
    """
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(tree)
    sized = [x.shape[0] for _, x in with_paths if jnp.ndim(x) > 0]
    rows = sized[0] if sized else None
    leaves = [_split_leaf(x, k, rows, "batch" + jax.tree_util.keystr(path), where)
              for path, x in with_paths]
    return jax.tree_util.tree_unflatten(treedef, leaves)


def join_micro_batches(tree: Any) -> Any:
    """The inverse of :func:`split_micro_batches` on leaves ``[k, rows // k, ...]``: the
    rows back in the batch's order."""
    def join(x: Any) -> Any:
        x = jnp.moveaxis(x, 0, 1)
        return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])

    return jax.tree.map(join, tree)


def _accumulator_dtype(dtype: Any) -> Any:
    return jnp.promote_types(dtype, jnp.float32)


def accumulated_value_and_grad(fun: Callable[..., Any], micro_batches: int,
                               loss_weight: Callable[..., Any], *, has_aux: bool = False,
                               grad_shardings: Any = None, where: str = "make_train_step"
                               ) -> Callable[[Any, tuple, dict], tuple[Any, Any]]:
    """``f(params, batch, kwargs) -> (value, grads)`` of ``fun(params, *batch, **kwargs)``
    over the whole batch, computed ``micro_batches`` micro-batches at a time.

    With ``w_i = loss_weight(*micro_batch_i, **kwargs_i)`` (the number of tokens micro-batch
    ``i``'s mean loss divides by), the loss is ``sum_i w_i * loss_i / sum_i w_i`` and the
    gradient likewise, which for a mean over tokens is the full batch's mean and gradient.
    Gradients accumulate in at least float32 and come back in the parameters' dtypes.
    With ``has_aux``, the aux's scalar leaves are combined as the loss is (a per-token mean
    with the loss's normaliser comes out as the full batch's) and its leaves with a leading
    axis are taken as per-row values and put back in the batch's row order.

    Args:
        fun: ``fun(params, *batch, **kwargs)``: a scalar, or ``(scalar, aux)`` with ``has_aux``.
        micro_batches: how many micro-batches (``k``); it must divide the batch's rows.
        loss_weight: ``loss_weight(*batch, **kwargs)``: a micro-batch's normaliser
            (e.g. :func:`jaxlean.models.lm.causal_loss.loss_tokens`; ``lambda *a, **k: 1.0``
            for a loss that is a mean over examples none of which is masked).
        has_aux: ``fun`` returns ``(loss, aux)``.
        grad_shardings: shardings each micro-batch's gradient is constrained to.
        where: the caller's name, for error messages.
    """
    grad = jax.value_and_grad(lambda p, b, kw: fun(p, *b, **kw), has_aux=has_aux)

    def run(params: Any, batch: tuple, kwargs: dict) -> tuple[Any, Any]:
        micro = split_micro_batches((batch, kwargs), micro_batches, where=where)
        loss_dtype = []  # the dtype fun gives its loss in, seen when the body is traced

        def body(carry: tuple, piece: tuple) -> tuple:
            grads_sum, loss_sum, weight_sum = carry
            b, kw = piece
            weight = jnp.asarray(loss_weight(*b, **kw), jnp.float32).reshape(())
            value, grads = grad(params, b, kw)
            if grad_shardings is not None:
                grads = jax.lax.with_sharding_constraint(grads, grad_shardings)
            loss, aux = value if has_aux else (value, None)
            loss_dtype.append(loss.dtype)
            grads_sum = jax.tree.map(lambda s, g: s + weight * g.astype(s.dtype),
                                     grads_sum, grads)
            loss_sum = loss_sum + weight * loss.astype(jnp.float32)
            return (grads_sum, loss_sum, weight_sum + weight), (aux, weight)

        zeros = jax.tree.map(lambda p: jnp.zeros(p.shape, _accumulator_dtype(p.dtype)), params)
        start = (zeros, jnp.zeros((), jnp.float32), jnp.zeros((), jnp.float32))
        (grads_sum, loss_sum, total), (auxes, weights) = jax.lax.scan(body, start, micro)
        total = jnp.maximum(total, jnp.finfo(jnp.float32).tiny)  # no tokens: 0, as the mean
        grads = jax.tree.map(lambda s, p: (s / total).astype(p.dtype), grads_sum, params)
        loss = (loss_sum / total).astype(loss_dtype[0])
        if not has_aux:
            return loss, grads
        return (loss, _combine_aux(auxes, weights, total)), grads

    return run


def _combine_aux(auxes: Any, weights: jax.Array, total: jax.Array) -> Any:
    """Scalars (stacked ``[k]``): weighted as the loss is; ``[k, rows // k, ...]``: joined."""
    def combine(x: Any) -> Any:
        if jnp.ndim(x) == 1:
            mean = jnp.sum(weights * x.astype(jnp.float32)) / total
            return mean.astype(x.dtype) if jnp.issubdtype(x.dtype, jnp.inexact) else mean
        return join_micro_batches(x)

    return jax.tree.map(combine, auxes)

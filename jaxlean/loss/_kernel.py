"""The chunked kernel: per-token statistics of ``hidden @ head`` without ``[T, V]`` logits.

A :class:`Plan` splits the tokens into chunks and, for a matrix head, the
vocabulary into blocks; each block's statistics (max logit, sum of exponentials,
target logit, sum of logits, top-k) are merged across blocks with an online
logsumexp. The two custom VJPs (:func:`matrix_head_stats`,
:func:`callable_head_stats`) save only the inputs and one float per token, and
recompute each block's logits in the backward pass. Accumulation is float32
(float64 for float64 inputs). The inputs reaching this module are already
checked (:mod:`jaxlean.loss._checks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

__all__ = [
    "AUTO_BLOCK_BYTES",
    "Outs",
    "Plan",
    "Want",
    "block_stats",
    "callable_head_stats",
    "callable_operands",
    "dot",
    "finish",
    "logits_cotangent",
    "make_plan",
    "matrix_head_stats",
    "scaled_logits",
    "varying_zeros",
    "weight_block",
]


#: With ``vocab_chunk=None`` a matrix head's vocabulary is split so that one logits
#: block ``[chunk, block]`` and one weight slice ``[H, block]`` each stay under this.
AUTO_BLOCK_BYTES = 32 * 2**20
_LANE = 128


class Plan(NamedTuple):
    """Static chunking of ``n_tokens`` tokens and a ``vocab``-sized vocabulary, and which
    per-token statistics to gather (entropy, sum of logits, the ``top_k`` largest logits)."""

    n_tokens: int
    chunk: int
    n_chunks: int
    vocab: int
    block: int
    n_blocks: int
    entropy: bool
    logit_sum: bool
    top_k: int
    inv_temperature: float
    dtype: Any  # accumulation dtype: float32, or float64 for float64 inputs

    def block_start(self, b: jax.Array) -> jax.Array:
        """First column of vocabulary block ``b``; the last block is shifted left to fit."""
        return jnp.minimum(b * self.block, self.vocab - self.block)

    def block_owned(self, b: jax.Array) -> jax.Array:
        """Columns of block ``b`` it owns (a shifted last block repeats some columns)."""
        return self.block_start(b) + jnp.arange(self.block) >= b * self.block


def _balanced(total: int, limit: int, multiple: int = 1) -> tuple[int, int]:
    """Split ``total`` into the fewest pieces of at most ``limit``, all the same size."""
    pieces = -(-total // limit)
    size = -(-total // pieces)
    size = min(total, -(-size // multiple) * multiple)
    return size, -(-total // size)


# ----------------------------------------------------------------------------- block math


class _Stats(NamedTuple):
    """Online per-token state over vocabulary blocks: max logit, sum exp(l - max),
    sum exp(l - max) * l, target logit, sum of logits, top-k logits and their ids."""

    m: jax.Array
    s: jax.Array
    u: jax.Array
    target: jax.Array
    total: jax.Array
    top: jax.Array
    top_ids: jax.Array


class Outs(NamedTuple):
    """Per-token outputs of the custom VJP (disabled ones are zeros)."""

    target: jax.Array
    lse: jax.Array
    entropy: jax.Array
    total: jax.Array
    top: jax.Array
    top_ids: jax.Array


def _top_k(values: jax.Array, ids: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """The ``k`` largest ``values`` per row with their ``ids`` (rows padded with -inf if short)."""
    if values.shape[-1] < k:
        pad = k - values.shape[-1]
        values = jnp.pad(values, ((0, 0), (0, pad)), constant_values=-jnp.inf)
        ids = jnp.pad(ids, ((0, 0), (0, pad)))
    top, where = lax.top_k(values, k)
    return top, jnp.take_along_axis(ids, where, axis=-1)


def block_stats(logits: jax.Array, target_col: jax.Array, start: jax.Array | int,
                owned: jax.Array | None, plan: Plan) -> _Stats:
    """Statistics of one ``[C, block]`` logits block (columns ``start + j``; only the
    ``owned`` ones count), with ``target_col`` the target's column in the block."""
    block = logits.shape[-1]
    cols = jnp.arange(block)
    # The target's logit is gathered, not summed from a [C, block] mask: a masked sum is
    # one more pass over the block, which XLA:CPU materialises when a library kernel
    # (XNNPACK/YNNPACK) takes the reduction.
    in_block = (target_col >= 0) & (target_col < block)
    col = jnp.clip(target_col, 0, block - 1)
    if owned is not None:
        logits = jnp.where(owned, logits, -jnp.inf)
        in_block = in_block & owned[col]
    target = jnp.where(in_block, jnp.take_along_axis(logits, col[:, None], axis=-1)[:, 0], 0)
    m = jnp.max(logits, axis=-1)
    e = jnp.exp(logits - jnp.where(jnp.isfinite(m), m, 0)[:, None])
    zeros = jnp.zeros_like(m)
    u = jnp.sum(jnp.where(e > 0, e * logits, 0), axis=-1) if plan.entropy else zeros
    total = jnp.sum(jnp.where(jnp.isfinite(logits), logits, 0), axis=-1) if plan.logit_sum \
        else zeros
    if plan.top_k:
        ids = jnp.broadcast_to((start + cols).astype(jnp.int32), logits.shape)
        top, top_ids = _top_k(logits, ids, plan.top_k)
    else:
        top, top_ids = jnp.zeros((*m.shape, 0), m.dtype), jnp.zeros((*m.shape, 0), jnp.int32)
    return _Stats(m, jnp.sum(e, axis=-1), u, target, total, top, top_ids)


def _merge(a: _Stats, b: _Stats, plan: Plan) -> _Stats:
    m = jnp.maximum(a.m, b.m)
    m_safe = jnp.where(jnp.isfinite(m), m, 0)
    wa = jnp.where(jnp.isneginf(a.m), 0, jnp.exp(a.m - m_safe))
    wb = jnp.where(jnp.isneginf(b.m), 0, jnp.exp(b.m - m_safe))
    top, top_ids = a.top, a.top_ids
    if plan.top_k:
        top, top_ids = _top_k(jnp.concatenate([a.top, b.top], -1),
                              jnp.concatenate([a.top_ids, b.top_ids], -1), plan.top_k)
    return _Stats(m, a.s * wa + b.s * wb, a.u * wa + b.u * wb, a.target + b.target,
                  a.total + b.total, top, top_ids)


def finish(stats: _Stats) -> Outs:
    """Per-token outputs (logsumexp, entropy, ...) of the merged statistics."""
    lse = jnp.where(jnp.isfinite(stats.m), stats.m, 0) + jnp.log(stats.s)
    return Outs(stats.target, lse, lse - stats.u / stats.s, stats.total, stats.top,
                stats.top_ids)


def logits_cotangent(logits, target_col, start, owned, res: Outs, g: Outs, plan: Plan):
    """d(loss)/d(scaled logits) of one block from the per-token cotangents in ``g``."""
    cols = jnp.arange(logits.shape[-1])
    lse = res.lse[:, None]
    p = jnp.exp(logits - lse)
    hit = cols == target_col[:, None]
    if owned is not None:
        p = jnp.where(owned, p, 0)
        hit = hit & owned
    dl = g.lse[:, None] * p + jnp.where(hit, g.target[:, None], 0)
    if plan.entropy:
        # d entropy / d logit_j = -p_j (log p_j + entropy)
        dl = dl - g.entropy[:, None] * jnp.where(
            p > 0, p * (logits - lse + res.entropy[:, None]), 0)
    if plan.logit_sum:
        dl = dl + (g.total[:, None] if owned is None else jnp.where(owned, g.total[:, None], 0))
    for k in range(plan.top_k):  # each top-k id sits in exactly one owned column
        top_hit = cols + start == res.top_ids[:, k:k + 1]
        if owned is not None:
            top_hit = top_hit & owned
        dl = dl + jnp.where(top_hit, g.top[:, k:k + 1], 0)
    return dl


# ----------------------------------------------------------------------------- heads


def dot(a: jax.Array, b: jax.Array, dtype: Any) -> jax.Array:
    """``a @ b`` in the inputs' common dtype, accumulated in ``dtype``."""
    common = jnp.result_type(a, b)
    return jnp.matmul(a.astype(common), b.astype(common), preferred_element_type=dtype)


def _bits(x: jax.Array) -> jax.Array:
    """A 16-bit float array viewed as ``uint16`` (other arrays unchanged).

    XLA:CPU computes bf16 slices and dots in float32 and would hoist the conversion
    of the whole head matrix (or its gradient) out of the vocabulary loop; moving
    16-bit blocks as integers keeps every conversion block-sized.
    """
    if jnp.issubdtype(x.dtype, jnp.floating) and x.dtype.itemsize == 2:
        return lax.bitcast_convert_type(x, jnp.uint16)
    return x


def _unbits(x: jax.Array, dtype: Any) -> jax.Array:
    return lax.bitcast_convert_type(x, dtype) if x.dtype != dtype else x


def weight_block(w: jax.Array, plan: Plan, b: jax.Array) -> jax.Array:
    """Columns of vocabulary block ``b`` of the head matrix."""
    if plan.n_blocks == 1:
        return w
    block = lax.dynamic_slice_in_dim(_bits(w), plan.block_start(b), plan.block, 1)
    return _unbits(block, w.dtype)


def _matrix_block_logits(w: jax.Array, h: jax.Array, plan: Plan, b: jax.Array) -> jax.Array:
    return dot(h, weight_block(w, plan, b), plan.dtype)


def _owned(plan: Plan, b: jax.Array) -> jax.Array | None:
    return None if plan.n_blocks == 1 else plan.block_owned(b)


def _start(plan: Plan, b: jax.Array) -> jax.Array | int:
    return plan.block_start(b) if plan.n_blocks > 1 else 0


def scaled_logits(logits: jax.Array, plan: Plan) -> jax.Array:
    """``logits / temperature`` in the accumulation dtype."""
    logits = logits.astype(plan.dtype)
    return logits if plan.inv_temperature == 1.0 else logits * plan.inv_temperature


def _chunk_forward(block_logits: Callable, h, t, plan: Plan) -> Outs:
    """Per-token outputs of one token chunk, merging the vocabulary blocks."""

    def one_block(b):
        start = _start(plan, b)
        return block_stats(scaled_logits(block_logits(h, b), plan), t - start, start,
                           _owned(plan, b), plan)

    stats = one_block(jnp.asarray(0))
    if plan.n_blocks > 1:
        stats = lax.fori_loop(1, plan.n_blocks, lambda b, acc: _merge(acc, one_block(b), plan),
                              stats)
    return finish(stats)


def _forward(block_logits: Callable, hidden, targets, plan: Plan) -> Outs:
    return Outs(*lax.map(lambda xs: _chunk_forward(block_logits, *xs, plan), (hidden, targets)))


def varying_zeros(shape, dtype, *like: jax.Array) -> jax.Array:
    """Zeros varying over the mesh axes that any of ``like`` varies over.

    Inside ``shard_map`` a loop carry must keep its varying-axes type; zeros made
    from a shape alone are invariant, while the accumulated values are not.
    """
    axes = tuple(sorted(set().union(*(jax.typeof(x).manual_axis_type.varying for x in like))))
    zeros = jnp.zeros(shape, dtype)
    return lax.pcast(zeros, axes, to="varying") if axes else zeros


def _at(outs: Outs, i: jax.Array) -> Outs:
    return Outs(*(None if x is None else x[i] for x in outs))


def _with_vjp(block_logits: Callable, bwd: Callable, plan: Plan):
    """custom_vjp ``(head, hidden, targets) -> Outs``: the chunked pass over
    ``block_logits(head)``, whose backward is ``bwd(head, hidden, targets, outs, g)``.

    Only the inputs and the outputs are saved; ``g`` has the integer top-k ids'
    (float0) cotangent replaced by None.
    """

    @jax.custom_vjp
    def stats(head, hidden, targets):
        return _forward(block_logits(head), hidden, targets, plan)

    def fwd(head, hidden, targets):
        out = stats(head, hidden, targets)
        return out, (head, hidden, targets, out)

    def backward(res, g):
        return bwd(*res, g._replace(top_ids=None))

    stats.defvjp(fwd, backward)
    return stats


def matrix_head_stats(plan: Plan):
    """custom_vjp ``(w [H, V], hidden [n, C, H], targets [n, C]) -> Outs``."""

    def block_logits(w):
        return lambda h, b: _matrix_block_logits(w, h, plan, b)

    def bwd(w, hidden, targets, outs, g):
        n_chunks, chunk, width = hidden.shape

        def vocab_step(b, carry):
            # Outer loop over vocabulary blocks: each block of dW is accumulated in
            # float32 over all tokens and written once; dh accumulates in float32.
            dw_all, dh_all = carry
            start = _start(plan, b)
            wb = weight_block(w, plan, b)
            owned = _owned(plan, b)

            def token_step(i, inner):
                dwb, dh_all = inner
                h = hidden[i]
                logits = scaled_logits(dot(h, wb, plan.dtype), plan)
                dl = logits_cotangent(logits, targets[i] - start, start, owned, _at(outs, i),
                                      _at(g, i), plan) * plan.inv_temperature
                dh_all = dh_all.at[i].add(dot(dl.astype(wb.dtype), wb.T, plan.dtype))
                return dwb + dot(h.T, dl.astype(h.dtype), plan.dtype), dh_all

            dwb = varying_zeros((width, plan.block), plan.dtype, *vary)
            dwb, dh_all = lax.fori_loop(0, n_chunks, token_step, (dwb, dh_all))
            if plan.n_blocks == 1:
                return _bits(dwb.astype(w.dtype)), dh_all
            old = _unbits(lax.dynamic_slice_in_dim(dw_all, start, plan.block, 1), w.dtype)
            new = _bits((old.astype(plan.dtype) + dwb).astype(w.dtype))
            return lax.dynamic_update_slice_in_dim(dw_all, new, start, 1), dh_all

        vary = (w, hidden, targets, *jax.tree.leaves(g))
        init = (_bits(varying_zeros(w.shape, w.dtype, *vary)),
                varying_zeros((n_chunks, chunk, width), plan.dtype, *vary))
        dw, dh = lax.fori_loop(0, plan.n_blocks, vocab_step, init)
        return _unbits(dw, w.dtype), dh.astype(hidden.dtype), None

    return _with_vjp(block_logits, bwd, plan)


def callable_head_stats(apply: Callable, plan: Plan):
    """custom_vjp ``(operands, hidden, targets) -> Outs`` for ``logits = apply(operands,
    chunk)``; gradients flow to the inexact leaves of ``operands``."""

    def block_logits(operands):
        return lambda h, b: apply(operands, h)

    def bwd(operands, hidden, targets, outs, g):
        diff, nondiff = eqx.partition(operands, eqx.is_inexact_array)

        def logits_of(d, h):
            return apply(eqx.combine(d, nondiff), h)

        def token_step(i, carry):
            d_acc, dh_all = carry
            logits, vjp = jax.vjp(logits_of, diff, hidden[i])
            dl = logits_cotangent(scaled_logits(logits, plan), targets[i], 0, None, _at(outs, i),
                                  _at(g, i), plan) * plan.inv_temperature
            d_diff, dh = vjp(dl.astype(logits.dtype))
            d_acc = jax.tree.map(lambda a, d: a + d.astype(plan.dtype), d_acc, d_diff)
            return d_acc, dh_all.at[i].set(dh)

        d_acc = jax.tree.map(lambda x: jnp.zeros(x.shape, plan.dtype), diff)
        d_acc, dh = lax.fori_loop(0, plan.n_chunks, token_step, (d_acc, jnp.zeros_like(hidden)))
        d_diff = jax.tree.map(lambda a, x: a.astype(x.dtype), d_acc, diff)
        return eqx.combine(d_diff, jax.tree.map(lambda _: None, nondiff)), dh, None

    return _with_vjp(block_logits, bwd, plan)


class Want(NamedTuple):
    """Which per-token statistics a caller needs beyond (target logit, logsumexp)."""

    entropy: bool = False
    logit_sum: bool = False
    top_k: int = 0
    temperature: float = 1.0


def make_plan(n_tokens, vocab, width, head_is_matrix, chunk_size, vocab_chunk, want: Want,
              dtype) -> Plan:
    """The chunks and vocabulary blocks for ``n_tokens`` tokens (see :class:`Plan`)."""
    chunk, n_chunks = _balanced(max(n_tokens, 1), chunk_size)
    if vocab_chunk is None and head_is_matrix:
        limit = AUTO_BLOCK_BYTES // (4 * max(chunk, width))
        limit = max(_LANE, limit // _LANE * _LANE)
        block, n_blocks = _balanced(vocab, limit, _LANE) if limit < vocab else (vocab, 1)
    elif vocab_chunk is None or vocab_chunk >= vocab:
        block, n_blocks = vocab, 1
    else:
        block, n_blocks = _balanced(vocab, vocab_chunk)
    return Plan(n_tokens, chunk, n_chunks, vocab, block, n_blocks, want.entropy,
                want.logit_sum, want.top_k, 1.0 / want.temperature, dtype)


def callable_operands(head: Callable, chunk: int, width: int, dtype: Any
                      ) -> tuple[Any, Callable]:
    """``(operands, apply)`` with ``apply(operands, h) == head(h)`` and every array the head
    uses (its own pytree leaves and the arrays it closes over) in ``operands``."""
    params, static = eqx.partition(head, eqx.is_array)

    def call(p, h):
        return eqx.combine(p, static)(h)

    example = jax.ShapeDtypeStruct((chunk, width), dtype)
    converted, consts = jax.closure_convert(call, params, example)
    return (params, consts), lambda ops, h: converted(ops[0], h, *ops[1])

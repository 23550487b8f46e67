"""Token log-probabilities and cross-entropy without materialising ``[tokens, vocab]`` logits.

A language model's head turns ``T`` hidden states into ``[T, V]`` logits; at
``T=8192, V=151936`` that is 5 GB in float32, and autodiff keeps several such
buffers for the backward pass. Here the tokens are processed in chunks (and,
for a matrix head, the vocabulary in blocks with an online logsumexp), under a
``custom_vjp`` whose backward pass recomputes each block's logits. Only the
inputs and one float per token are saved, so the saving does not depend on the
caller using ``jax.checkpoint``. Accumulation is float32 for bf16 inputs.

The head is an ``[H, V]`` matrix or a callable ``chunk [C, H] -> logits [C, V]``
(LoRA on the head, tied embeddings, a bias, soft-capping). Gradients reach a
callable head's parameters in two ways, both handled inside the custom VJP:
array leaves of the callable itself when it is a pytree (an Equinox module, a
``jax.tree_util.Partial``), and arrays it closes over that are being
differentiated (hoisted with :func:`jax.closure_convert`).

A matrix head split over the vocabulary on a device mesh (:class:`VocabParallel`)
is handled per shard and combined with per-token collectives; see
:mod:`jaxlean.loss.vocab_parallel`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxlean.errors import ConfigError, DataError, StructureError
from jaxlean.loss.vocab_parallel import VocabParallel, sharded_token_stats

Head = jax.Array | Callable[[jax.Array], jax.Array]
Reduction = Literal["mean", "sum", "none"]

#: With ``vocab_chunk=None`` a matrix head's vocabulary is split so that one logits
#: block ``[chunk, block]`` and one weight slice ``[H, block]`` each stay under this.
AUTO_BLOCK_BYTES = 32 * 2**20
_LANE = 128


class _Plan(NamedTuple):
    """Static chunking of ``n_tokens`` tokens and a ``vocab``-sized vocabulary."""

    n_tokens: int
    chunk: int
    n_chunks: int
    vocab: int
    block: int
    n_blocks: int
    entropy: bool
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
    """Online logsumexp state per token: max, sum exp(l - max), sum exp(l - max) * l, target."""

    m: jax.Array
    s: jax.Array
    u: jax.Array
    target: jax.Array


def _block_stats(logits: jax.Array, target_col: jax.Array, owned: jax.Array | None,
                 entropy: bool) -> _Stats:
    cols = jnp.arange(logits.shape[-1])
    hit = cols == target_col[:, None]
    if owned is not None:
        logits = jnp.where(owned, logits, -jnp.inf)
        hit = hit & owned
    m = jnp.max(logits, axis=-1)
    e = jnp.exp(logits - jnp.where(jnp.isfinite(m), m, 0)[:, None])
    u = jnp.sum(jnp.where(e > 0, e * logits, 0), axis=-1) if entropy else jnp.zeros_like(m)
    return _Stats(m, jnp.sum(e, axis=-1), u, jnp.sum(jnp.where(hit, logits, 0), axis=-1))


def _merge(a: _Stats, b: _Stats) -> _Stats:
    m = jnp.maximum(a.m, b.m)
    m_safe = jnp.where(jnp.isfinite(m), m, 0)
    wa = jnp.where(jnp.isneginf(a.m), 0, jnp.exp(a.m - m_safe))
    wb = jnp.where(jnp.isneginf(b.m), 0, jnp.exp(b.m - m_safe))
    return _Stats(m, a.s * wa + b.s * wb, a.u * wa + b.u * wb, a.target + b.target)


def _finish(stats: _Stats) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(target logit, logsumexp, entropy) from the merged state."""
    lse = jnp.where(jnp.isfinite(stats.m), stats.m, 0) + jnp.log(stats.s)
    return stats.target, lse, lse - stats.u / stats.s


def _logits_cotangent(logits, target_col, owned, lse, ent, g_target, g_lse, g_ent):
    """d(loss)/d(logits) of one block from the per-token cotangents of (target, lse, entropy)."""
    cols = jnp.arange(logits.shape[-1])
    hit = cols == target_col[:, None]
    p = jnp.exp(logits - lse[:, None])
    if owned is not None:
        p = jnp.where(owned, p, 0)
        hit = hit & owned
    dl = g_lse[:, None] * p + jnp.where(hit, g_target[:, None], 0)
    if g_ent is not None:
        # d entropy / d logit_j = -p_j (log p_j + entropy)
        dl = dl - g_ent[:, None] * jnp.where(
            p > 0, p * (logits - lse[:, None] + ent[:, None]), 0)
    return dl


# ----------------------------------------------------------------------------- heads


def _dot(a: jax.Array, b: jax.Array, dtype: Any) -> jax.Array:
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


def _weight_block(w: jax.Array, plan: _Plan, b: jax.Array) -> jax.Array:
    """Columns of vocabulary block ``b`` of the head matrix."""
    if plan.n_blocks == 1:
        return w
    block = lax.dynamic_slice_in_dim(_bits(w), plan.block_start(b), plan.block, 1)
    return _unbits(block, w.dtype)


def _matrix_block_logits(w: jax.Array, h: jax.Array, plan: _Plan, b: jax.Array) -> jax.Array:
    return _dot(h, _weight_block(w, plan, b), plan.dtype)


def _owned(plan: _Plan, b: jax.Array) -> jax.Array | None:
    return None if plan.n_blocks == 1 else plan.block_owned(b)


def _chunk_forward(block_logits: Callable, h, t, plan: _Plan):
    """(target logit, lse, entropy) of one token chunk, merging the vocabulary blocks."""

    def one_block(b):
        start = plan.block_start(b) if plan.n_blocks > 1 else 0
        return _block_stats(block_logits(h, b), t - start, _owned(plan, b), plan.entropy)

    stats = one_block(jnp.asarray(0))
    if plan.n_blocks > 1:
        stats = lax.fori_loop(1, plan.n_blocks, lambda b, acc: _merge(acc, one_block(b)), stats)
    return _finish(stats)


def _forward(block_logits: Callable, hidden, targets, plan: _Plan):
    outs = lax.map(lambda xs: _chunk_forward(block_logits, *xs, plan), (hidden, targets))
    return outs if plan.entropy else outs[:2]


def _zeros(shape, dtype, *like: jax.Array) -> jax.Array:
    """Zeros varying over the mesh axes that any of ``like`` varies over.

    Inside ``shard_map`` a loop carry must keep its varying-axes type; zeros made
    from a shape alone are invariant, while the accumulated values are not.
    """
    axes = tuple(sorted(set().union(*(jax.typeof(x).manual_axis_type.varying for x in like))))
    zeros = jnp.zeros(shape, dtype)
    return lax.pcast(zeros, axes, to="varying") if axes else zeros


def _split_cotangents(g, plan: _Plan):
    return (g[0], g[1], g[2]) if plan.entropy else (g[0], g[1], None)


def _matrix_head_stats(plan: _Plan):
    """custom_vjp ``(w [H, V], hidden [n, C, H], targets [n, C]) -> (target, lse[, entropy])``."""

    def block_logits(w):
        return lambda h, b: _matrix_block_logits(w, h, plan, b)

    @jax.custom_vjp
    def stats(w, hidden, targets):
        return _forward(block_logits(w), hidden, targets, plan)

    def fwd(w, hidden, targets):
        out = stats(w, hidden, targets)
        return out, (w, hidden, targets, out[1], out[2] if plan.entropy else None)

    def bwd(res, g):
        w, hidden, targets, lse, ent = res
        g_target, g_lse, g_ent = _split_cotangents(g, plan)
        n_chunks, chunk, width = hidden.shape

        def vocab_step(b, carry):
            # Outer loop over vocabulary blocks: each block of dW is accumulated in
            # float32 over all tokens and written once; dh accumulates in float32.
            dw_all, dh_all = carry
            start = plan.block_start(b) if plan.n_blocks > 1 else 0
            wb = _weight_block(w, plan, b)
            owned = _owned(plan, b)

            def token_step(i, inner):
                dwb, dh_all = inner
                h = hidden[i]
                logits = _dot(h, wb, plan.dtype)
                dl = _logits_cotangent(logits, targets[i] - start, owned, lse[i],
                                       None if ent is None else ent[i], g_target[i], g_lse[i],
                                       None if g_ent is None else g_ent[i])
                dh_all = dh_all.at[i].add(_dot(dl.astype(wb.dtype), wb.T, plan.dtype))
                return dwb + _dot(h.T, dl.astype(h.dtype), plan.dtype), dh_all

            dwb = _zeros((width, plan.block), plan.dtype, *vary)
            dwb, dh_all = lax.fori_loop(0, n_chunks, token_step, (dwb, dh_all))
            if plan.n_blocks == 1:
                return _bits(dwb.astype(w.dtype)), dh_all
            old = _unbits(lax.dynamic_slice_in_dim(dw_all, start, plan.block, 1), w.dtype)
            new = _bits((old.astype(plan.dtype) + dwb).astype(w.dtype))
            return lax.dynamic_update_slice_in_dim(dw_all, new, start, 1), dh_all

        vary = (w, hidden, targets, *jax.tree.leaves(g))
        init = (_bits(_zeros(w.shape, w.dtype, *vary)),
                _zeros((n_chunks, chunk, width), plan.dtype, *vary))
        dw, dh = lax.fori_loop(0, plan.n_blocks, vocab_step, init)
        return _unbits(dw, w.dtype), dh.astype(hidden.dtype), None

    stats.defvjp(fwd, bwd)
    return stats


def _callable_head_stats(apply: Callable, plan: _Plan):
    """custom_vjp ``(operands, hidden, targets) -> (target, lse[, entropy])`` for
    ``logits = apply(operands, chunk)``; gradients flow to the inexact leaves of ``operands``."""

    def block_logits(operands):
        return lambda h, b: apply(operands, h).astype(plan.dtype)

    @jax.custom_vjp
    def stats(operands, hidden, targets):
        return _forward(block_logits(operands), hidden, targets, plan)

    def fwd(operands, hidden, targets):
        out = stats(operands, hidden, targets)
        return out, (operands, hidden, targets, out[1], out[2] if plan.entropy else None)

    def bwd(res, g):
        operands, hidden, targets, lse, ent = res
        g_target, g_lse, g_ent = _split_cotangents(g, plan)
        diff, nondiff = eqx.partition(operands, eqx.is_inexact_array)

        def logits_of(d, h):
            return apply(eqx.combine(d, nondiff), h)

        def token_step(i, carry):
            d_acc, dh_all = carry
            logits, vjp = jax.vjp(logits_of, diff, hidden[i])
            dl = _logits_cotangent(logits.astype(plan.dtype), targets[i], None, lse[i],
                                   None if ent is None else ent[i], g_target[i], g_lse[i],
                                   None if g_ent is None else g_ent[i])
            d_diff, dh = vjp(dl.astype(logits.dtype))
            d_acc = jax.tree.map(lambda a, d: a + d.astype(plan.dtype), d_acc, d_diff)
            return d_acc, dh_all.at[i].set(dh)

        d_acc = jax.tree.map(lambda x: jnp.zeros(x.shape, plan.dtype), diff)
        d_acc, dh = lax.fori_loop(0, plan.n_chunks, token_step, (d_acc, jnp.zeros_like(hidden)))
        d_diff = jax.tree.map(lambda a, x: a.astype(x.dtype), d_acc, diff)
        return eqx.combine(d_diff, jax.tree.map(lambda _: None, nondiff)), dh, None

    stats.defvjp(fwd, bwd)
    return stats


# ----------------------------------------------------------------------------- validation


def _check_chunk(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name} must be a positive integer (number of tokens/columns per "
                          f"chunk), got {value!r}")


def _check_inputs(hidden: Any, targets: Any) -> None:
    if not isinstance(hidden, (jax.Array, np.ndarray)) or hidden.ndim < 2:
        raise StructureError(f"hidden must be an array [..., T, H], got "
                             f"{getattr(hidden, 'shape', type(hidden).__name__)}")
    if not jnp.issubdtype(hidden.dtype, jnp.floating):
        raise StructureError(f"hidden must be floating point, got dtype {hidden.dtype}")
    if not hasattr(targets, "shape") or not jnp.issubdtype(targets.dtype, jnp.integer):
        raise StructureError("targets must be an integer array of token ids, got "
                             f"{getattr(targets, 'dtype', type(targets).__name__)}")
    if tuple(targets.shape) != tuple(hidden.shape[:-1]):
        raise StructureError(f"targets shape {list(targets.shape)} must equal hidden's leading "
                             f"shape {list(hidden.shape[:-1])} (hidden is {list(hidden.shape)})")


def _check_target_range(targets: Any, vocab: int) -> None:
    if isinstance(targets, jax.core.Tracer):
        return  # values unknown while tracing
    values = np.asarray(targets)
    bad = np.flatnonzero((values < 0) | (values >= vocab))
    if bad.size:
        where = np.unravel_index(bad[0], values.shape)
        raise DataError(f"target id {values[where]} at index {tuple(int(i) for i in where)} is "
                        f"outside the vocabulary [0, {vocab}) ({bad.size} such ids)")


def _head_vocab(head: Head, hidden: jax.Array, chunk: int) -> tuple[int, Any]:
    """Vocabulary size and logits dtype of ``head``, checked against ``hidden``."""
    width = hidden.shape[-1]
    if isinstance(head, (jax.Array, np.ndarray)):
        if head.ndim != 2 or head.shape[0] != width:
            raise StructureError(f"head matrix must be [H, V] with H = hidden's last dim "
                                 f"{width}, got {list(head.shape)}")
        if not jnp.issubdtype(head.dtype, jnp.floating):
            raise StructureError(f"head matrix must be floating point, got {head.dtype}")
        return int(head.shape[1]), jnp.result_type(hidden, head)
    if not callable(head):
        raise StructureError(f"head must be an [H, V] array or a callable chunk -> logits, "
                             f"got {type(head).__name__}")
    example = jax.ShapeDtypeStruct((chunk, width), hidden.dtype)
    try:
        out = jax.eval_shape(head, example)
    except (TypeError, ValueError) as error:
        raise StructureError(f"the callable head fails on a chunk of hidden states "
                             f"[{chunk}, {width}] {hidden.dtype}: {error}") from error
    if (not isinstance(out, jax.ShapeDtypeStruct) or len(out.shape) != 2
            or out.shape[0] != chunk or not jnp.issubdtype(out.dtype, jnp.floating)):
        got = out.shape if isinstance(out, jax.ShapeDtypeStruct) else type(out).__name__
        raise StructureError(f"a callable head must map a chunk [{chunk}, {width}] to floating "
                             f"logits [{chunk}, V], got {got}")
    return int(out.shape[1]), out.dtype


def _make_plan(n_tokens, vocab, width, head_is_matrix, chunk_size, vocab_chunk, entropy, dtype):
    chunk, n_chunks = _balanced(max(n_tokens, 1), chunk_size)
    if vocab_chunk is None and head_is_matrix:
        limit = AUTO_BLOCK_BYTES // (4 * max(chunk, width))
        limit = max(_LANE, limit // _LANE * _LANE)
        block, n_blocks = _balanced(vocab, limit, _LANE) if limit < vocab else (vocab, 1)
    elif vocab_chunk is None or vocab_chunk >= vocab:
        block, n_blocks = vocab, 1
    else:
        block, n_blocks = _balanced(vocab, vocab_chunk)
    return _Plan(n_tokens, chunk, n_chunks, vocab, block, n_blocks, entropy, dtype)


# ----------------------------------------------------------------------------- public API


def _token_stats(hidden, head, targets, chunk_size, vocab_chunk, entropy):
    """Per-token (target logit, logsumexp[, entropy]) in the accumulation dtype."""
    _check_inputs(hidden, targets)
    _check_chunk("chunk_size", chunk_size)
    if vocab_chunk is not None:
        _check_chunk("vocab_chunk", vocab_chunk)
    is_matrix = isinstance(head, (jax.Array, np.ndarray))
    if vocab_chunk is not None and not is_matrix:
        raise ConfigError("vocab_chunk needs an [H, V] matrix head: a callable head always "
                          "returns the whole vocabulary (lower chunk_size to save memory)")
    batch, width = hidden.shape[:-1], hidden.shape[-1]
    n_tokens = math.prod(batch)
    vocab, logits_dtype = _head_vocab(head, hidden, min(chunk_size, max(n_tokens, 1)))
    _check_target_range(targets, vocab)
    dtype = jnp.promote_types(jnp.float32, logits_dtype)
    plan = _make_plan(n_tokens, vocab, width, is_matrix, chunk_size, vocab_chunk, entropy, dtype)
    if n_tokens == 0:
        return tuple(jnp.zeros(batch, dtype) for _ in range(3 if entropy else 2))

    padded = plan.chunk * plan.n_chunks
    flat_h = jnp.reshape(hidden, (n_tokens, width))
    flat_t = jnp.reshape(targets, (n_tokens,)).astype(jnp.int32)
    if padded != n_tokens:  # zero rows, target 0: finite values, zero cotangents
        flat_h = jnp.pad(flat_h, ((0, padded - n_tokens), (0, 0)))
        flat_t = jnp.pad(flat_t, (0, padded - n_tokens))
    chunks_h = flat_h.reshape(plan.n_chunks, plan.chunk, width)
    chunks_t = flat_t.reshape(plan.n_chunks, plan.chunk)

    if is_matrix:
        outs = _matrix_head_stats(plan)(jnp.asarray(head), chunks_h, chunks_t)
    else:
        params, static = eqx.partition(head, eqx.is_array)

        def apply(p, h):
            return eqx.combine(p, static)(h)

        example = jax.ShapeDtypeStruct((plan.chunk, width), hidden.dtype)
        converted, consts = jax.closure_convert(apply, params, example)
        outs = _callable_head_stats(
            lambda ops, h: converted(ops[0], h, *ops[1]), plan)((params, consts), chunks_h,
                                                                chunks_t)
    return tuple(o.reshape(padded)[:n_tokens].reshape(batch) for o in outs)


def _stats(hidden, head, targets, chunk_size, vocab_chunk, entropy,
           vocab_parallel: VocabParallel | None):
    """:func:`_token_stats`, per vocabulary shard when the head is split over a mesh."""
    stats = functools.partial(_token_stats, chunk_size=chunk_size, vocab_chunk=vocab_chunk,
                              entropy=entropy)
    if vocab_parallel is None:
        return stats(hidden, head, targets)
    _check_inputs(hidden, targets)
    if not isinstance(head, (jax.Array, np.ndarray)):
        raise ConfigError("vocab_parallel needs an [H, V] matrix head split over the "
                          f"vocabulary, got a callable head {type(head).__name__}")
    vocab, _ = _head_vocab(head, hidden, 1)
    _check_target_range(targets, vocab)
    return sharded_token_stats(vocab_parallel, stats, hidden, jnp.asarray(head), targets)


def token_logprobs(hidden: jax.Array, head: Head, targets: jax.Array, *, chunk_size: int = 1024,
                   vocab_chunk: int | None = None, return_entropy: bool = False,
                   vocab_parallel: VocabParallel | None = None
                   ) -> jax.Array | tuple[jax.Array, jax.Array]:
    """Per-token ``log p(target)`` without materialising the ``[tokens, vocab]`` logits.

    Equal to ``take(log_softmax(hidden @ head), targets)`` in value and gradient,
    with memory that depends on the chunk sizes, not on ``T * V``.

    Args:
        hidden: final hidden states ``[..., T, H]`` (any leading batch dims).
        head: an ``[H, V]`` matrix, or a callable mapping a chunk ``[C, H]`` of
            hidden states (tokens flattened) to logits ``[C, V]``.
        targets: integer token ids ``[..., T]`` in ``[0, V)``.
        chunk_size: tokens per chunk; token counts that do not divide are split
            into equal chunks and padded, without changing results.
        vocab_chunk: vocabulary columns per block (matrix heads only). ``None``
            picks blocks so each ``[chunk, block]`` logits block stays under
            :data:`AUTO_BLOCK_BYTES`; pass ``V`` for one block.
        return_entropy: also return the entropy of each token's distribution.
        vocab_parallel: for an ``[H, V]`` head sharded over the vocabulary on a
            mesh axis (and tokens over other axes, on hidden's axis 0): each
            device works on its own columns and only per-token floats cross
            devices, never the head. Chunk sizes apply per device.

    Returns:
        ``logprobs [..., T]`` in float32 (float64 for float64 inputs), or
        ``(logprobs, entropy)`` with ``return_entropy=True``.
    """
    outs = _stats(hidden, head, targets, chunk_size, vocab_chunk, return_entropy,
                  vocab_parallel)
    logprobs = outs[0] - outs[1]
    return (logprobs, outs[2]) if return_entropy else logprobs


def cross_entropy(hidden: jax.Array, head: Head, targets: jax.Array, *,
                  mask: jax.Array | None = None, reduction: Reduction = "mean",
                  z_loss: float = 0.0, chunk_size: int = 1024,
                  vocab_chunk: int | None = None,
                  vocab_parallel: VocabParallel | None = None) -> jax.Array:
    """Next-token cross-entropy ``-log p(target) + z_loss * logsumexp²`` computed in chunks.

    Args:
        hidden, head, targets, chunk_size, vocab_chunk, vocab_parallel: as in
            :func:`token_logprobs`.
        mask: ``[..., T]`` booleans or float weights; masked-out tokens (``False``
            or ``0``) count for nothing and their targets may be any value (e.g. ``-100``).
        reduction: ``"mean"`` (weighted mean over unmasked tokens; 0 if none),
            ``"sum"`` or ``"none"`` (per-token losses, masked ones 0).
        z_loss: weight of the ``logsumexp²`` regulariser (PaLM), 0 to disable.

    Returns:
        A scalar, or ``[..., T]`` for ``reduction="none"``; float32 (float64 for float64 inputs).
    """
    if reduction not in ("mean", "sum", "none"):
        raise ConfigError(f"unknown reduction {reduction!r}: use 'mean', 'sum' or 'none'")
    _check_inputs(hidden, targets)
    if mask is not None:
        if tuple(jnp.shape(mask)) != tuple(targets.shape):
            raise StructureError(f"mask shape {list(jnp.shape(mask))} must equal targets shape "
                                 f"{list(targets.shape)}")
        targets = jnp.where(jnp.asarray(mask) != 0, targets, 0)
    target_logit, lse = _stats(hidden, head, targets, chunk_size, vocab_chunk, False,
                               vocab_parallel)
    losses = lse - target_logit
    if z_loss:
        losses = losses + z_loss * jnp.square(lse)
    if mask is not None:
        weights = jnp.asarray(mask).astype(losses.dtype)
        losses = jnp.where(weights != 0, losses * weights, 0)
    if reduction == "none":
        return losses
    total = jnp.sum(losses)
    if reduction == "sum":
        return total
    count = jnp.sum(weights) if mask is not None else losses.size
    return total / jnp.maximum(count, jnp.finfo(losses.dtype).tiny)

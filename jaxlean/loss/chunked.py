"""Per-token statistics of a language-model head without materialising ``[tokens, vocab]`` logits.

:func:`token_logprobs`, :func:`token_stats` (entropy, logsumexp, argmax, top-k,
temperature) and :func:`cross_entropy` (masks, z-loss, label smoothing) share one
chunked pass over the head.

A language model's head turns ``T`` hidden states into ``[T, V]`` logits; at
``T=8192, V=151936`` that is 5 GB in float32, and autodiff keeps several such
buffers for the backward pass. Here the tokens are processed in chunks (and,
for a matrix head, the vocabulary in blocks with an online logsumexp), under a
``custom_vjp`` whose backward pass recomputes each block's logits. Only the
inputs and one float per token are saved, so the saving does not depend on the
caller using ``jax.checkpoint``. Accumulation is float32 for bf16 inputs.
The top-k is a running merge of each block's top-k, so it needs no ``[T, V]``
array either.

:func:`cross_entropy` with ``"mean"`` or ``"sum"`` (on one device, with the
vocabulary unsplit) instead computes each chunk's gradient in the forward pass and
skips the recomputation (:mod:`jaxlean.loss.onepass`).

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


class _Outs(NamedTuple):
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


def _block_stats(logits: jax.Array, target_col: jax.Array, start: jax.Array | int,
                 owned: jax.Array | None, plan: _Plan) -> _Stats:
    cols = jnp.arange(logits.shape[-1])
    hit = cols == target_col[:, None]
    if owned is not None:
        logits = jnp.where(owned, logits, -jnp.inf)
        hit = hit & owned
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
    target = jnp.sum(jnp.where(hit, logits, 0), axis=-1)
    return _Stats(m, jnp.sum(e, axis=-1), u, target, total, top, top_ids)


def _merge(a: _Stats, b: _Stats, plan: _Plan) -> _Stats:
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


def _finish(stats: _Stats) -> _Outs:
    lse = jnp.where(jnp.isfinite(stats.m), stats.m, 0) + jnp.log(stats.s)
    return _Outs(stats.target, lse, lse - stats.u / stats.s, stats.total, stats.top,
                 stats.top_ids)


def _logits_cotangent(logits, target_col, start, owned, res: _Outs, g: _Outs, plan: _Plan):
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


def _start(plan: _Plan, b: jax.Array) -> jax.Array | int:
    return plan.block_start(b) if plan.n_blocks > 1 else 0


def _scaled(logits: jax.Array, plan: _Plan) -> jax.Array:
    logits = logits.astype(plan.dtype)
    return logits if plan.inv_temperature == 1.0 else logits * plan.inv_temperature


def _chunk_forward(block_logits: Callable, h, t, plan: _Plan) -> _Outs:
    """Per-token outputs of one token chunk, merging the vocabulary blocks."""

    def one_block(b):
        start = _start(plan, b)
        return _block_stats(_scaled(block_logits(h, b), plan), t - start, start,
                            _owned(plan, b), plan)

    stats = one_block(jnp.asarray(0))
    if plan.n_blocks > 1:
        stats = lax.fori_loop(1, plan.n_blocks, lambda b, acc: _merge(acc, one_block(b), plan),
                              stats)
    return _finish(stats)


def _forward(block_logits: Callable, hidden, targets, plan: _Plan) -> _Outs:
    return _Outs(*lax.map(lambda xs: _chunk_forward(block_logits, *xs, plan), (hidden, targets)))


def _zeros(shape, dtype, *like: jax.Array) -> jax.Array:
    """Zeros varying over the mesh axes that any of ``like`` varies over.

    Inside ``shard_map`` a loop carry must keep its varying-axes type; zeros made
    from a shape alone are invariant, while the accumulated values are not.
    """
    axes = tuple(sorted(set().union(*(jax.typeof(x).manual_axis_type.varying for x in like))))
    zeros = jnp.zeros(shape, dtype)
    return lax.pcast(zeros, axes, to="varying") if axes else zeros


def _at(outs: _Outs, i: jax.Array) -> _Outs:
    return _Outs(*(None if x is None else x[i] for x in outs))


def _float_cotangents(g: _Outs) -> _Outs:
    """Cotangents with the integer ids' (float0) replaced by nothing usable."""
    return g._replace(top_ids=None)


def _matrix_head_stats(plan: _Plan):
    """custom_vjp ``(w [H, V], hidden [n, C, H], targets [n, C]) -> _Outs``."""

    def block_logits(w):
        return lambda h, b: _matrix_block_logits(w, h, plan, b)

    @jax.custom_vjp
    def stats(w, hidden, targets):
        return _forward(block_logits(w), hidden, targets, plan)

    def fwd(w, hidden, targets):
        out = stats(w, hidden, targets)
        return out, (w, hidden, targets, out)

    def bwd(res, g):
        w, hidden, targets, outs = res
        g = _float_cotangents(g)
        n_chunks, chunk, width = hidden.shape

        def vocab_step(b, carry):
            # Outer loop over vocabulary blocks: each block of dW is accumulated in
            # float32 over all tokens and written once; dh accumulates in float32.
            dw_all, dh_all = carry
            start = _start(plan, b)
            wb = _weight_block(w, plan, b)
            owned = _owned(plan, b)

            def token_step(i, inner):
                dwb, dh_all = inner
                h = hidden[i]
                logits = _scaled(_dot(h, wb, plan.dtype), plan)
                dl = _logits_cotangent(logits, targets[i] - start, start, owned, _at(outs, i),
                                       _at(g, i), plan) * plan.inv_temperature
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
    """custom_vjp ``(operands, hidden, targets) -> _Outs`` for ``logits = apply(operands,
    chunk)``; gradients flow to the inexact leaves of ``operands``."""

    def block_logits(operands):
        return lambda h, b: apply(operands, h)

    @jax.custom_vjp
    def stats(operands, hidden, targets):
        return _forward(block_logits(operands), hidden, targets, plan)

    def fwd(operands, hidden, targets):
        out = stats(operands, hidden, targets)
        return out, (operands, hidden, targets, out)

    def bwd(res, g):
        operands, hidden, targets, outs = res
        g = _float_cotangents(g)
        diff, nondiff = eqx.partition(operands, eqx.is_inexact_array)

        def logits_of(d, h):
            return apply(eqx.combine(d, nondiff), h)

        def token_step(i, carry):
            d_acc, dh_all = carry
            logits, vjp = jax.vjp(logits_of, diff, hidden[i])
            dl = _logits_cotangent(_scaled(logits, plan), targets[i], 0, None, _at(outs, i),
                                   _at(g, i), plan) * plan.inv_temperature
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


IGNORE_INDEX = -100
"""Hugging Face's label for "no loss here" (prompts, padding): every loss skips it by default."""


def check_ignore_index(ignore_index: Any) -> int | None:
    """``ignore_index`` as an int (or None: nothing ignored), else a :class:`ConfigError`."""
    if ignore_index is None:
        return None
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, np.integer)):
        raise ConfigError(f"ignore_index must be an int (e.g. -100) or None, got "
                          f"{ignore_index!r}")
    return int(ignore_index)


class _Targets(NamedTuple):
    """Target ids made safe to gather, and where they are ignored or invalid.

    Attributes:
        ids: the targets with every id outside ``[0, V)`` replaced by 0.
        ignored: True where the target equals ``ignore_index`` (None if nothing can be).
        invalid: True where the target is outside ``[0, V)`` and not ignored; only
            under ``jit`` (eagerly such an id raises), where its loss becomes NaN.
    """

    ids: jax.Array
    ignored: jax.Array | None
    invalid: jax.Array


def _targets(targets: Any, vocab: int, ignore_index: int | None,
             what: str = "target id") -> _Targets:
    """Split ``targets`` into ids to gather, ignored and invalid positions.

    Concrete targets are checked here: an id outside ``[0, vocab)`` that is not
    ``ignore_index`` raises :class:`DataError` naming the first one. Traced ones
    cannot be, so their invalid positions are returned to be made NaN: a wrong
    id never yields a plausible finite loss.
    """
    ignored = None if ignore_index is None else targets == ignore_index
    valid = (targets >= 0) & (targets < vocab)
    if not isinstance(targets, jax.core.Tracer):
        values = np.asarray(targets)
        bad = (values < 0) | (values >= vocab)
        if ignore_index is not None:
            bad &= values != ignore_index
        bad = np.flatnonzero(bad)
        if bad.size:
            where = np.unravel_index(bad[0], values.shape)
            skip = "" if ignore_index is None else f" and is not ignore_index={ignore_index}"
            raise DataError(f"{what} {values[where]} at index {tuple(int(i) for i in where)} "
                            f"is outside the vocabulary [0, {vocab}){skip} ({bad.size} such ids)")
    invalid = ~valid if ignored is None else ~valid & ~ignored
    return _Targets(jnp.where(valid, targets, 0), ignored, invalid)


def _apply_targets(outs: _Outs, t: _Targets) -> _Outs:
    """``outs`` with the target logit set so that ``target - lse`` is 0 where ignored (no
    gradient reaches it) and NaN where the target was invalid."""
    target = jnp.where(t.invalid, jnp.nan, outs.target)
    if t.ignored is not None:
        target = jnp.where(t.ignored, outs.lse, target)
    return outs._replace(target=target)


def _keep(mask: jax.Array | None, t: _Targets) -> jax.Array | None:
    """``mask`` with ignored positions set to 0 (None when neither masks anything)."""
    if t.ignored is None:
        return mask
    if mask is None:
        return ~t.ignored
    mask = jnp.asarray(mask)
    return jnp.where(t.ignored, jnp.zeros((), mask.dtype), mask)


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


class _Want(NamedTuple):
    """Which per-token statistics a caller needs beyond (target logit, logsumexp)."""

    entropy: bool = False
    logit_sum: bool = False
    top_k: int = 0
    temperature: float = 1.0


def _make_plan(n_tokens, vocab, width, head_is_matrix, chunk_size, vocab_chunk, want: _Want,
               dtype) -> _Plan:
    chunk, n_chunks = _balanced(max(n_tokens, 1), chunk_size)
    if vocab_chunk is None and head_is_matrix:
        limit = AUTO_BLOCK_BYTES // (4 * max(chunk, width))
        limit = max(_LANE, limit // _LANE * _LANE)
        block, n_blocks = _balanced(vocab, limit, _LANE) if limit < vocab else (vocab, 1)
    elif vocab_chunk is None or vocab_chunk >= vocab:
        block, n_blocks = vocab, 1
    else:
        block, n_blocks = _balanced(vocab, vocab_chunk)
    return _Plan(n_tokens, chunk, n_chunks, vocab, block, n_blocks, want.entropy,
                 want.logit_sum, want.top_k, 1.0 / want.temperature, dtype)


def check_temperature(temperature: Any, name: str = "temperature") -> float:
    """``temperature`` as a float, or a :class:`ConfigError` unless it is a number > 0."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.number)) \
            or not temperature > 0 or not math.isfinite(temperature):
        raise ConfigError(f"{name} must be a finite number > 0 (logits are divided by it), "
                          f"got {temperature!r}")
    return float(temperature)


def check_top_k(top_k: Any, vocab: int, minimum: int = 1) -> int:
    """``top_k`` as an int, or a :class:`ConfigError` unless ``minimum <= top_k <= vocab``."""
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < minimum:
        raise ConfigError(f"top_k must be an integer >= {minimum}, got {top_k!r}")
    if top_k > vocab:
        raise ConfigError(f"top_k={top_k} is larger than the vocabulary size V={vocab}")
    return int(top_k)


# ----------------------------------------------------------------------------- public API


def _token_outs(hidden, head, targets, chunk_size, vocab_chunk, want: _Want) -> _Outs:
    """Per-token :class:`_Outs` in the accumulation dtype, on one device."""
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
    dtype = jnp.promote_types(jnp.float32, logits_dtype)
    plan = _make_plan(n_tokens, vocab, width, is_matrix, chunk_size, vocab_chunk, want, dtype)
    if n_tokens == 0:
        zeros = jnp.zeros(batch, dtype)
        top = jnp.zeros((*batch, want.top_k), dtype)
        return _Outs(zeros, zeros, zeros, zeros, top, top.astype(jnp.int32))

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
        operands, apply = _callable_operands(head, plan.chunk, width, hidden.dtype)
        outs = _callable_head_stats(apply, plan)(operands, chunks_h, chunks_t)
    return _Outs(*(o.reshape(padded, *o.shape[2:])[:n_tokens].reshape(*batch, *o.shape[2:])
                   for o in outs))


def _callable_operands(head: Callable, chunk: int, width: int, dtype: Any
                       ) -> tuple[Any, Callable]:
    """``(operands, apply)`` with ``apply(operands, h) == head(h)`` and every array the head
    uses (its own pytree leaves and the arrays it closes over) in ``operands``."""
    params, static = eqx.partition(head, eqx.is_array)

    def call(p, h):
        return eqx.combine(p, static)(h)

    example = jax.ShapeDtypeStruct((chunk, width), dtype)
    converted, consts = jax.closure_convert(call, params, example)
    return (params, consts), lambda ops, h: converted(ops[0], h, *ops[1])


def _outs(hidden, head, targets, chunk_size, vocab_chunk, want: _Want,
          vocab_parallel: VocabParallel | None, ignore_index: int | None
          ) -> tuple[_Outs, _Targets]:
    """:func:`_token_outs` (per vocabulary shard when the head is split over a mesh) of the
    safe target ids, with ignored and invalid targets applied (see :func:`_apply_targets`)."""
    _check_inputs(hidden, targets)
    vocab, _ = _head_vocab(head, hidden, min(chunk_size, max(math.prod(hidden.shape[:-1]), 1)))
    t = _targets(targets, vocab, check_ignore_index(ignore_index))
    outs = functools.partial(_token_outs, chunk_size=chunk_size, vocab_chunk=vocab_chunk,
                             want=want)
    if vocab_parallel is None:
        return _apply_targets(outs(hidden, head, t.ids), t), t
    if not isinstance(head, (jax.Array, np.ndarray)):
        raise ConfigError("vocab_parallel needs an [H, V] matrix head split over the "
                          f"vocabulary, got a callable head {type(head).__name__}")
    sharded = _Outs(*sharded_token_stats(vocab_parallel, outs, hidden, jnp.asarray(head), t.ids))
    return _apply_targets(sharded, t), t


class TokenStats(NamedTuple):
    """Per-token statistics of ``softmax(logits / temperature)`` (see :func:`token_stats`).

    Attributes:
        logprobs: ``log p(target)`` ``[..., T]``.
        entropy: entropy of each token's distribution ``[..., T]``.
        logsumexp: ``logsumexp(logits / temperature)`` ``[..., T]`` (for z-loss).
        argmax: the most likely token id ``[..., T]`` (``argmax == targets`` is token accuracy).
        top_logprobs: the ``top_k`` largest log-probs, in decreasing order ``[..., T, k]``.
        top_ids: their token ids ``[..., T, k]``.
    """

    logprobs: jax.Array
    entropy: jax.Array
    logsumexp: jax.Array
    argmax: jax.Array
    top_logprobs: jax.Array
    top_ids: jax.Array


def token_stats(hidden: jax.Array, head: Head, targets: jax.Array, *, top_k: int = 1,
                temperature: float = 1.0, chunk_size: int = 1024,
                vocab_chunk: int | None = None, vocab_parallel: VocabParallel | None = None,
                ignore_index: int | None = IGNORE_INDEX) -> TokenStats:
    """Every per-token quantity of ``softmax(hidden @ head / temperature)`` in one chunked pass.

    The log-prob of the target, the entropy, the logsumexp, the argmax and the
    ``top_k`` largest log-probs with their ids are gathered in one pass over the
    head (the top-k by a running merge across vocabulary blocks), so no
    ``[tokens, vocab]`` array exists. Log-probs, entropy, logsumexp and the top-k
    log-probs are differentiable (the top-k ids are held fixed, as for a gather).

    Args:
        hidden, head, targets, chunk_size, vocab_chunk, vocab_parallel, ignore_index: as
            in :func:`token_logprobs` (an ignored target's log-prob is 0; the other
            statistics do not depend on the target).
        top_k: how many of the largest log-probs to return (``1 <= top_k <= V``).
        temperature: logits are divided by it (> 0) before the softmax.

    Returns:
        A :class:`TokenStats` of float32 arrays (float64 for float64 inputs) and int32 ids.
    """
    temperature = check_temperature(temperature)
    _check_inputs(hidden, targets)
    top_k = check_top_k(top_k, _head_vocab(head, hidden, 1)[0])
    want = _Want(entropy=True, top_k=top_k, temperature=temperature)
    outs, _ = _outs(hidden, head, targets, chunk_size, vocab_chunk, want, vocab_parallel,
                    ignore_index)
    lse = outs.lse
    return TokenStats(outs.target - lse, outs.entropy, lse, outs.top_ids[..., 0],
                      outs.top - lse[..., None], outs.top_ids)


def token_logprobs(hidden: jax.Array, head: Head, targets: jax.Array, *, chunk_size: int = 1024,
                   vocab_chunk: int | None = None, temperature: float = 1.0,
                   vocab_parallel: VocabParallel | None = None,
                   ignore_index: int | None = IGNORE_INDEX) -> jax.Array:
    """Per-token ``log p(target)`` without materialising the ``[tokens, vocab]`` logits.

    Equal to ``take(log_softmax(hidden @ head / temperature), targets)`` in value
    and gradient, with memory that depends on the chunk sizes, not on ``T * V``.
    For the entropy, top-k or argmax as well, use :func:`token_stats`.

    Args:
        hidden: final hidden states ``[..., T, H]`` (any leading batch dims).
        head: an ``[H, V]`` matrix, or a callable mapping a chunk ``[C, H]`` of
            hidden states (tokens flattened) to logits ``[C, V]`` (LoRA, tied
            embeddings, a bias, soft-capping; gradients reach its arrays).
        targets: integer token ids ``[..., T]`` in ``[0, V)``, or ``ignore_index``.
        chunk_size: tokens per chunk; token counts that do not divide are split
            into equal chunks and padded, without changing results.
        vocab_chunk: vocabulary columns per block (matrix heads only). ``None``
            picks blocks so each ``[chunk, block]`` logits block stays under
            :data:`AUTO_BLOCK_BYTES`; pass ``V`` for one block.
        temperature: logits are divided by it (> 0) before the softmax.
        vocab_parallel: for an ``[H, V]`` head sharded over the vocabulary on a
            mesh axis (and tokens over other axes, on hidden's axis 0): each
            device works on its own columns and only per-token floats cross
            devices, never the head. Chunk sizes apply per device.
        ignore_index: the target id meaning "no token here" (Hugging Face's ``-100``
            labels); its log-prob is 0 with no gradient. ``None``: nothing ignored.
            Any other id outside ``[0, V)`` raises :class:`DataError` when the
            targets are concrete; under ``jit`` its log-prob is NaN.

    Returns:
        ``logprobs [..., T]`` in float32 (float64 for float64 inputs).
    """
    want = _Want(temperature=check_temperature(temperature))
    outs, _ = _outs(hidden, head, targets, chunk_size, vocab_chunk, want, vocab_parallel,
                    ignore_index)
    return outs.target - outs.lse


def cross_entropy(hidden: jax.Array, head: Head, targets: jax.Array, *,
                  mask: jax.Array | None = None, reduction: Reduction = "mean",
                  z_loss: float = 0.0, label_smoothing: float = 0.0, chunk_size: int = 1024,
                  vocab_chunk: int | None = None, vocab_parallel: VocabParallel | None = None,
                  ignore_index: int | None = IGNORE_INDEX) -> jax.Array:
    """Next-token cross-entropy ``-log p(target) + z_loss * logsumexp²`` computed in chunks.

    With ``label_smoothing=ε`` the target distribution is ``(1 - ε)`` on the target
    plus ``ε / V`` on every token, so the loss is
    ``(1 - ε) * -log p(target) + ε * mean_j(-log p_j)``.

    Args:
        hidden, head, targets, chunk_size, vocab_chunk, vocab_parallel: as in
            :func:`token_logprobs`.
        mask: ``[..., T]`` booleans or float weights; masked-out tokens (``False``
            or ``0``) count for nothing and their targets may be any value.
        ignore_index: targets equal to it count for nothing, as if masked out
            (Hugging Face's ``-100``; ``None``: nothing ignored). Any other target
            outside ``[0, V)`` raises :class:`DataError` when concrete and makes
            the loss NaN under ``jit``.
        reduction: ``"mean"`` (weighted mean over unmasked tokens; 0 if none),
            ``"sum"`` or ``"none"`` (per-token losses, masked ones 0).
        z_loss: weight of the ``logsumexp²`` regulariser (PaLM), 0 to disable.
        label_smoothing: ``ε`` in ``[0, 1]``.

    Returns:
        A scalar, or ``[..., T]`` for ``reduction="none"``; float32 (float64 for float64 inputs).
    """
    if reduction not in ("mean", "sum", "none"):
        raise ConfigError(f"unknown reduction {reduction!r}: use 'mean', 'sum' or 'none'")
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float)) \
            or not 0 <= label_smoothing <= 1:
        raise ConfigError(f"label_smoothing must be a number in [0, 1], got {label_smoothing!r}")
    _check_inputs(hidden, targets)
    targets = _masked_targets(targets, mask)
    if reduction != "none" and one_pass_applies(hidden, head, chunk_size, vocab_chunk,
                                                vocab_parallel):
        return _one_pass_cross_entropy(hidden, head, targets, mask, reduction, z_loss,
                                       label_smoothing, chunk_size, ignore_index)
    want = _Want(logit_sum=bool(label_smoothing))
    outs, t = _outs(hidden, head, targets, chunk_size, vocab_chunk, want, vocab_parallel,
                    ignore_index)
    losses = outs.lse - outs.target
    if label_smoothing:
        vocab = _head_vocab(head, hidden, 1)[0]
        uniform = outs.lse - outs.total / vocab
        losses = (1 - label_smoothing) * losses + label_smoothing * uniform
    if z_loss:
        losses = losses + z_loss * jnp.square(outs.lse)
    return reduce_tokens(jnp.where(t.invalid, jnp.nan, losses), _keep(mask, t), reduction)


def one_pass_applies(hidden: jax.Array, head: Head, chunk_size: int, vocab_chunk: int | None,
                     vocab_parallel: VocabParallel | None) -> bool:
    """Whether a scalar loss can take the one-pass path of :mod:`jaxlean.loss.onepass`:
    one device, some tokens, and chunks over the whole vocabulary (no ``vocab_chunk``
    below ``V``). Otherwise the logits are recomputed in the backward pass."""
    _check_chunk("chunk_size", chunk_size)
    if vocab_parallel is not None or math.prod(hidden.shape[:-1]) == 0:
        return False
    if vocab_chunk is None:
        return True
    _check_chunk("vocab_chunk", vocab_chunk)
    is_matrix = isinstance(head, (jax.Array, np.ndarray))
    return is_matrix and vocab_chunk >= _head_vocab(head, hidden, 1)[0]


def _one_pass_cross_entropy(hidden, head, targets, mask, reduction, z_loss, label_smoothing,
                            chunk_size, ignore_index) -> jax.Array:
    """:func:`cross_entropy` (``"mean"`` or ``"sum"``) with its gradient computed in the
    forward pass (:func:`jaxlean.loss.onepass.onepass_sum`)."""
    from jaxlean.loss.onepass import onepass_sum

    batch = hidden.shape[:-1]
    vocab, logits_dtype = _head_vocab(head, hidden, min(chunk_size, math.prod(batch)))
    dtype = jnp.promote_types(jnp.float32, logits_dtype)
    t = _targets(targets, vocab, check_ignore_index(ignore_index))
    keep = _keep(mask, t)
    weights = jnp.ones(batch, dtype) if keep is None else jnp.asarray(keep).astype(dtype)
    ignored = jnp.zeros(batch, bool) if t.ignored is None else t.ignored

    def per_token(s, w, fixed):
        invalid, ignored = fixed
        losses = s.lse - jnp.where(ignored, s.lse, s.target)
        if label_smoothing:
            losses = (1 - label_smoothing) * losses + label_smoothing * (s.lse - s.total / vocab)
        if z_loss:
            losses = losses + z_loss * jnp.square(s.lse)
        losses = jnp.where(invalid, jnp.nan, losses)
        return jnp.where(w != 0, losses * w, 0)

    want = _Want(logit_sum=bool(label_smoothing))
    total, _ = onepass_sum(hidden, head, t.ids, per_token, weights, (t.invalid, ignored), want,
                           chunk_size, vocab, dtype)
    if reduction == "sum":
        return total
    return total / jnp.maximum(jnp.sum(weights), jnp.finfo(dtype).tiny)


def _masked_targets(targets: jax.Array, mask: jax.Array | None) -> jax.Array:
    """``targets`` with masked-out positions set to 0 (they may hold any id, e.g. -100)."""
    if mask is None:
        return targets
    if tuple(jnp.shape(mask)) != tuple(targets.shape):
        raise StructureError(f"mask shape {list(jnp.shape(mask))} must equal targets shape "
                             f"{list(targets.shape)}")
    return jnp.where(jnp.asarray(mask) != 0, targets, 0)


def reduce_tokens(losses: jax.Array, mask: jax.Array | None, reduction: Reduction) -> jax.Array:
    """Per-token ``losses`` weighted by ``mask`` and reduced: ``"mean"`` over the mask's
    total weight (0 if it is empty), ``"sum"``, or ``"none"`` (masked tokens 0)."""
    if reduction not in ("mean", "sum", "none"):
        raise ConfigError(f"unknown reduction {reduction!r}: use 'mean', 'sum' or 'none'")
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

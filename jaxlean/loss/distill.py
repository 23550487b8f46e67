"""Distillation losses between a student and a teacher head, chunked: no ``[T, V]`` logits.

A student ``(hidden_s [..., T, Hs], head_s)`` is trained towards a teacher
``(hidden_t [..., T, Ht], head_t)`` (the hidden sizes may differ; the vocabularies
must match) by a divergence between their next-token distributions at a
temperature. The divergence is a sum over the vocabulary of an elementwise
function ``f(log p_s, log p_t)``, so it is computed in the chunked machinery of
:mod:`jaxlean.loss.chunked`: one pass gives each token's two logsumexps (and the
teacher's top-k ids), a second the per-token divergence and the sums its
gradient needs, and the custom VJP recomputes each block's two logit blocks to
accumulate the gradients, so neither ``[T, V]`` logit matrix ever exists.

That recomputing path serves ``reduction="none"``, explicit vocabulary blocks and
vocabulary-parallel heads. The scalar losses (``"mean"``, ``"sum"``) otherwise take
the one-pass path of :mod:`jaxlean.loss.onepass`: chunks over the whole vocabulary
whose gradients are computed in the forward pass (3 student and 1 teacher head
products, as for full logits).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec as P

from jaxlean.errors import ConfigError, StructureError
from jaxlean.loss.chunked import (
    IGNORE_INDEX,
    Head,
    Reduction,
    _callable_operands,
    _check_chunk,
    _dot,
    _head_vocab,
    _keep,
    _make_plan,
    _Plan,
    _targets,
    _token_outs,
    _Want,
    _weight_block,
    _zeros,
    check_ignore_index,
    check_temperature,
    check_top_k,
    reduce_tokens,
)
from jaxlean.loss.onepass import onepass_divergence_sum
from jaxlean.loss.vocab_parallel import VocabParallel, _check_mesh, _combine, _match_explicit
from jaxlean.parallel.mesh import axis_names

Divergence = Literal["forward_kl", "reverse_kl", "jsd", "top_k_kl"]
DIVERGENCES = ("forward_kl", "reverse_kl", "jsd", "top_k_kl")


def _pointwise(divergence: str, beta: float) -> Callable:
    """``f(a, b, selected)`` whose sum over the vocabulary is the divergence, where
    ``a = log p_student``, ``b = log p_teacher`` and ``selected`` marks the teacher's top k."""
    if divergence == "forward_kl":  # KL(teacher || student)
        return lambda a, b, sel: jnp.exp(b) * (b - a)
    if divergence == "reverse_kl":  # KL(student || teacher)
        return lambda a, b, sel: jnp.exp(a) * (a - b)
    if divergence == "top_k_kl":  # KL(teacher || student) over the teacher's top k
        return lambda a, b, sel: jnp.where(sel, jnp.exp(b) * (b - a), 0)
    log_beta, log_rest = math.log(beta), math.log1p(-beta)

    def jsd(a, b, sel):
        mix = jnp.logaddexp(b + log_beta, a + log_rest)
        return beta * jnp.exp(b) * (b - mix) + (1 - beta) * jnp.exp(a) * (a - mix)

    return jsd


class _HeadOps:
    """Logit blocks and chunked gradient accumulation for one head (matrix or callable)."""

    def __init__(self, head: Head, plan: _Plan, chunk: int, width: int, dtype: Any):
        self.is_matrix = isinstance(head, (jax.Array, np.ndarray))
        self.plan = plan
        self.like: tuple = ()  # arrays whose mesh-varying axes the accumulators take
        if self.is_matrix:
            self.operands, self.apply = jnp.asarray(head), None
        else:
            self.operands, self.apply = _callable_operands(head, chunk, width, dtype)

    def logits(self, ops, h, b):
        if self.is_matrix:
            return _dot(h, _weight_block(ops, self.plan, b), self.plan.dtype)
        return self.apply(ops, h).astype(self.plan.dtype)

    def block_grad_init(self, ops):
        if self.is_matrix:
            return _zeros((ops.shape[0], self.plan.block), self.plan.dtype, *self.like)
        diff, _ = eqx.partition(ops, eqx.is_inexact_array)
        return jax.tree.map(lambda x: _zeros(x.shape, self.plan.dtype, *self.like), diff)

    def step(self, ops, h, dl, b, acc):
        """Add one chunk's head gradient to ``acc``; return it with the chunk's ``dh``."""
        if self.is_matrix:
            wb = _weight_block(ops, self.plan, b)
            dh = _dot(dl.astype(wb.dtype), wb.T, self.plan.dtype)
            return acc + _dot(h.T, dl.astype(h.dtype), self.plan.dtype), dh
        diff, nondiff = eqx.partition(ops, eqx.is_inexact_array)
        logits, vjp = jax.vjp(lambda d, h: self.apply(eqx.combine(d, nondiff), h), diff, h)
        d_diff, dh = vjp(dl.astype(logits.dtype))
        return jax.tree.map(lambda a, d: a + d.astype(self.plan.dtype), acc, d_diff), dh

    def write(self, full, acc, b):
        if not self.is_matrix:
            return acc  # a callable head has one vocabulary block
        if self.plan.n_blocks == 1:
            return acc
        start = self.plan.block_start(b)
        old = lax.dynamic_slice_in_dim(full, start, self.plan.block, 1)
        owned = self.plan.block_owned(b)
        return lax.dynamic_update_slice_in_dim(full, jnp.where(owned, acc, old), start, 1)

    def full_init(self, ops):
        if self.is_matrix:
            return _zeros(ops.shape, self.plan.dtype, *self.like)
        return self.block_grad_init(ops)

    def finish(self, full, ops):
        if self.is_matrix:
            return full.astype(ops.dtype)
        diff, nondiff = eqx.partition(ops, eqx.is_inexact_array)
        d_diff = jax.tree.map(lambda g, x: g.astype(x.dtype), full, diff)
        return eqx.combine(d_diff, jax.tree.map(lambda _: None, nondiff))


def _divergence_fn(student: _HeadOps, teacher: _HeadOps, plan: _Plan, f: Callable,
                   top_k: int, teacher_grad: bool, vocab_axes: tuple[str, ...] = ()):
    """custom_vjp ``(ops_s, hs [n, C, Hs], ops_t, ht [n, C, Ht], lse_s, lse_t, top_ids)
    -> per-token divergence [n, C]`` (the logsumexps and ids are constants).

    With ``vocab_axes`` the heads hold one vocabulary shard each (inside ``shard_map``):
    the per-token sums are ``psum``-ed over those axes.
    """
    total = (lambda x: lax.psum(x, vocab_axes)) if vocab_axes else (lambda x: x)
    inv_t = plan.inv_temperature

    def block_terms(ops_s, h_s, ops_t, h_t, lse_s, lse_t, top_ids, b):
        """(f, df/da, df/db, p_s, p_t) of one block, zero on columns it does not own."""
        a = student.logits(ops_s, h_s, b) * inv_t - lse_s[:, None]
        bb = teacher.logits(ops_t, h_t, b) * inv_t - lse_t[:, None]
        start = plan.block_start(b) if plan.n_blocks > 1 else 0
        cols = start + jnp.arange(a.shape[-1])
        sel = jnp.any(cols[:, None] == top_ids[:, None, :], axis=-1) if top_k else None
        values, vjp = jax.vjp(lambda a, bb: f(a, bb, sel), a, bb)
        fa, fb = vjp(jnp.ones_like(values))
        if plan.n_blocks > 1:
            owned = plan.block_owned(b)
            values, fa, fb = (jnp.where(owned, x, 0) for x in (values, fa, fb))
            return values, fa, fb, jnp.where(owned, jnp.exp(a), 0), jnp.where(owned, jnp.exp(bb), 0)
        return values, fa, fb, jnp.exp(a), jnp.exp(bb)

    def chunk_sums(ops_s, h_s, ops_t, h_t, lse_s, lse_t, top_ids):
        def one(b, acc):
            values, fa, fb, _, _ = block_terms(ops_s, h_s, ops_t, h_t, lse_s, lse_t, top_ids, b)
            return (acc[0] + values.sum(-1), acc[1] + fa.sum(-1), acc[2] + fb.sum(-1))

        zeros = _zeros(h_s.shape[:1], plan.dtype, *jax.tree.leaves((ops_s, h_s, ops_t, h_t)))
        return lax.fori_loop(0, plan.n_blocks, one, (zeros, zeros, zeros))

    def sums(ops_s, hs, ops_t, ht, lse_s, lse_t, top_ids):
        local = lax.map(lambda xs: chunk_sums(ops_s, xs[0], ops_t, xs[1], *xs[2:]),
                        (hs, ht, lse_s, lse_t, top_ids))
        return tuple(total(x) for x in local)

    @jax.custom_vjp
    def divergence(ops_s, hs, ops_t, ht, lse_s, lse_t, top_ids):
        return sums(ops_s, hs, ops_t, ht, lse_s, lse_t, top_ids)[0]

    def fwd(ops_s, hs, ops_t, ht, lse_s, lse_t, top_ids):
        value, sa, sb = sums(ops_s, hs, ops_t, ht, lse_s, lse_t, top_ids)
        return value, (ops_s, hs, ops_t, ht, lse_s, lse_t, top_ids, sa, sb)

    def bwd(res, g):
        ops_s, hs, ops_t, ht, lse_s, lse_t, top_ids, sa, sb = res
        student.like = teacher.like = tuple(jax.tree.leaves((ops_s, hs, ops_t, ht, g)))

        def vocab_step(b, carry):
            full_s, full_t, dhs, dht = carry

            def token_step(i, inner):
                acc_s, acc_t, dhs, dht = inner
                _, fa, fb, ps, pt = block_terms(ops_s, hs[i], ops_t, ht[i], lse_s[i], lse_t[i],
                                                top_ids[i], b)
                # d/dlogit_j of sum_k f(a_k, b_k) with a = logit / T - lse: (f_a - p_j S_a) / T
                dl_s = g[i][:, None] * (fa - ps * sa[i][:, None]) * inv_t
                acc_s, dh = student.step(ops_s, hs[i], dl_s, b, acc_s)
                dhs = dhs.at[i].add(dh)
                if teacher_grad:
                    dl_t = g[i][:, None] * (fb - pt * sb[i][:, None]) * inv_t
                    acc_t, dh = teacher.step(ops_t, ht[i], dl_t, b, acc_t)
                    dht = dht.at[i].add(dh)
                return acc_s, acc_t, dhs, dht

            acc_t = teacher.block_grad_init(ops_t) if teacher_grad else None
            acc_s, acc_t, dhs, dht = lax.fori_loop(
                0, plan.n_chunks, token_step, (student.block_grad_init(ops_s), acc_t, dhs, dht))
            full_s = student.write(full_s, acc_s, b)
            if teacher_grad:
                full_t = teacher.write(full_t, acc_t, b)
            return full_s, full_t, dhs, dht

        full_t = teacher.full_init(ops_t) if teacher_grad else None
        dht = _zeros(ht.shape, plan.dtype, *student.like) if teacher_grad else None
        init = (student.full_init(ops_s), full_t, _zeros(hs.shape, plan.dtype, *student.like),
                dht)
        full_s, full_t, dhs, dht = lax.fori_loop(0, plan.n_blocks, vocab_step, init)
        d_t = (teacher.finish(full_t, ops_t), dht.astype(ht.dtype)) if teacher_grad \
            else (None, None)
        return (student.finish(full_s, ops_s), dhs.astype(hs.dtype), *d_t, None, None, None)

    divergence.defvjp(fwd, bwd)
    return divergence


def _constant(teacher: Any) -> Any:
    """``teacher`` with gradients stopped at its array leaves (a closure's arrays get none
    from the custom VJP unless asked for), behind an optimisation barrier.

    The barrier matters when the teacher's arrays are closed over by ``jit``: they
    are then constants, and XLA would constant-fold the teacher's logits chunk by
    chunk at compile time (17 s of a 19 s compile at T=1024, V=32,000).
    """
    return jax.tree.map(lambda x: lax.optimization_barrier(lax.stop_gradient(x))
                        if eqx.is_array(x) else x, teacher)


def _check(hidden_s, hidden_t, divergence, beta, top_k):
    for name, h in (("hidden_s", hidden_s), ("hidden_t", hidden_t)):
        if not isinstance(h, (jax.Array, np.ndarray)) or h.ndim < 2 \
                or not jnp.issubdtype(h.dtype, jnp.floating):
            raise StructureError(f"{name} must be a floating array [..., T, H], got "
                                 f"{getattr(h, 'shape', type(h).__name__)}")
    if tuple(hidden_s.shape[:-1]) != tuple(hidden_t.shape[:-1]):
        raise StructureError(f"student and teacher must see the same tokens: hidden_s "
                             f"{list(hidden_s.shape)} and hidden_t {list(hidden_t.shape)} differ "
                             f"before the hidden size")
    if divergence not in DIVERGENCES:
        raise ConfigError(f"unknown divergence {divergence!r}: use one of "
                          f"{', '.join(map(repr, DIVERGENCES))}")
    if divergence == "jsd" and (isinstance(beta, bool) or not isinstance(beta, (int, float))
                                or not 0 < beta < 1):
        raise ConfigError(f"beta must be a number in (0, 1) for divergence='jsd', got {beta!r}")
    if divergence == "top_k_kl" and top_k is None:
        raise ConfigError("divergence='top_k_kl' needs top_k (how many of the teacher's most "
                          "likely tokens to compare)")


def distill_loss(hidden_s: jax.Array, head_s: Head, hidden_t: jax.Array, head_t: Head, *,
                 divergence: Divergence = "forward_kl", beta: float = 0.5,
                 top_k: int | None = None, temperature: float = 1.0,
                 mask: jax.Array | None = None, labels: jax.Array | None = None,
                 ignore_index: int | None = IGNORE_INDEX, reduction: Reduction = "mean",
                 teacher_grad: bool = False, chunk_size: int = 1024,
                 vocab_chunk: int | None = None,
                 vocab_parallel: VocabParallel | None = None) -> jax.Array:
    """Divergence between a student's and a teacher's next-token distributions, per token.

    With ``p_s = softmax(hidden_s @ head_s / temperature)`` and ``p_t`` likewise:

    - ``"forward_kl"``: ``KL(p_t || p_s) = sum_j p_t (log p_t - log p_s)``;
    - ``"reverse_kl"``: ``KL(p_s || p_t)``;
    - ``"jsd"``: ``beta * KL(p_t || m) + (1 - beta) * KL(p_s || m)`` with
      ``m = beta * p_t + (1 - beta) * p_s`` (the generalised JSD of GKD);
    - ``"top_k_kl"``: the forward-KL terms over the teacher's ``top_k`` most likely
      tokens only (probabilities normalised over the whole vocabulary).

    Neither ``[T, V]`` logit matrix is built; memory depends on the chunk sizes.
    Multiply by ``temperature**2`` yourself if you follow Hinton et al.'s scaling.

    Args:
        hidden_s, hidden_t: hidden states ``[..., T, Hs]`` and ``[..., T, Ht]``.
        head_s, head_t: ``[H, V]`` matrices or callables ``chunk [C, H] -> [C, V]``
            (LoRA, tied embeddings...), with the same vocabulary size ``V``.
        divergence: one of the above.
        beta: the JSD mixing weight, in ``(0, 1)``.
        top_k: teacher tokens compared by ``"top_k_kl"`` (``1 <= top_k <= V``).
        temperature: both heads' logits are divided by it (> 0).
        mask, reduction: per-token weights and reduction as in
            :func:`jaxlean.loss.chunked.cross_entropy`.
        labels: optional ``[..., T]`` token ids as a Hugging Face collator writes them
            (as in TRL's GKD): positions whose label is ``ignore_index`` count for
            nothing (prompts, padding); the ids themselves are not used. A label
            outside ``[0, V)`` that is not ``ignore_index`` raises :class:`DataError`
            when concrete and makes the loss NaN under ``jit``.
        ignore_index: the label meaning "no loss here" (``None``: nothing ignored).
        teacher_grad: also differentiate with respect to the teacher (by default
            it is a constant: no teacher gradient is computed or stored).
        chunk_size: tokens per chunk.
        vocab_chunk: vocabulary columns per block when both heads are matrices
            (``None`` picks blocks of bounded size).
        vocab_parallel: both ``[H, V]`` heads split over the vocabulary on a mesh axis,
            tokens over other axes on axis 0 (as in :func:`token_logprobs`): only
            per-token floats (and the teacher's top-k) cross devices, never a head.

    Returns:
        A scalar, or ``[..., T]`` for ``reduction="none"``; float32 (float64 for float64 inputs).
    """
    temperature = check_temperature(temperature)
    _check(hidden_s, hidden_t, divergence, beta, top_k)
    _check_chunk("chunk_size", chunk_size)
    if vocab_chunk is not None:
        _check_chunk("vocab_chunk", vocab_chunk)
    if mask is not None and tuple(jnp.shape(mask)) != tuple(hidden_s.shape[:-1]):
        raise StructureError(f"mask shape {list(jnp.shape(mask))} must equal the token shape "
                             f"{list(hidden_s.shape[:-1])}")
    ignore_index = check_ignore_index(ignore_index)
    if labels is not None and (not hasattr(labels, "shape") or tuple(labels.shape) != tuple(
            hidden_s.shape[:-1]) or not jnp.issubdtype(labels.dtype, jnp.integer)):
        raise StructureError(f"labels must be integer ids of the token shape "
                             f"{list(hidden_s.shape[:-1])}, got "
                             f"{getattr(labels, 'dtype', type(labels).__name__)} "
                             f"{list(getattr(labels, 'shape', []))}")
    if not teacher_grad:
        hidden_t, head_t = _constant((hidden_t, head_t))
    batch = hidden_s.shape[:-1]
    n_tokens = math.prod(batch)
    chunk = min(chunk_size, max(n_tokens, 1))
    vocab_s, dtype_s = _head_vocab(head_s, hidden_s, chunk)
    vocab_t, dtype_t = _head_vocab(head_t, hidden_t, chunk)
    if vocab_s != vocab_t:
        raise ConfigError(f"the student's vocabulary (V={vocab_s}) and the teacher's "
                          f"(V={vocab_t}) differ: distillation compares distributions over "
                          f"the same tokens")
    k = check_top_k(top_k, vocab_s) if divergence == "top_k_kl" else 0
    dtype = jnp.promote_types(jnp.float32, jnp.promote_types(dtype_s, dtype_t))
    both_matrix = all(isinstance(h, (jax.Array, np.ndarray)) for h in (head_s, head_t))
    if vocab_chunk is not None and not both_matrix:
        raise ConfigError("vocab_chunk needs [H, V] matrix heads for both student and teacher")
    t = None if labels is None else _targets(labels, vocab_s, ignore_index, "label")
    if t is not None:
        mask = _keep(mask, t)
    if n_tokens == 0:
        return reduce_tokens(jnp.zeros(batch, dtype), mask, reduction)
    if reduction != "none" and vocab_parallel is None and (
            vocab_chunk is None or (both_matrix and vocab_chunk >= vocab_s)):
        return _one_pass(hidden_s, head_s, hidden_t, head_t, _pointwise(divergence, beta), k,
                         temperature, mask, t, reduction, chunk_size, vocab_s, dtype)
    options = _Options(_pointwise(divergence, beta), k, temperature, teacher_grad, chunk_size,
                       vocab_chunk, dtype)
    if vocab_parallel is None:
        per_token = _per_token(options, hidden_s, head_s, hidden_t, head_t)
    else:
        if not both_matrix:
            raise ConfigError("vocab_parallel needs [H, V] matrix heads for both student and "
                              "teacher, split over the vocabulary")
        per_token = _sharded_per_token(options, vocab_parallel, hidden_s, jnp.asarray(head_s),
                                       hidden_t, jnp.asarray(head_t))
    if t is not None:
        per_token = jnp.where(t.invalid, jnp.nan, per_token)
    return reduce_tokens(per_token, mask, reduction)


def _one_pass(hidden_s, head_s, hidden_t, head_t, pointwise, top_k, temperature, mask, t,
              reduction, chunk_size, vocab, dtype) -> jax.Array:
    """The ``"mean"`` / ``"sum"`` loss with its gradient computed in the forward pass
    (:func:`jaxlean.loss.onepass.onepass_divergence_sum`)."""
    batch = hidden_s.shape[:-1]
    weights = jnp.ones(batch, dtype) if mask is None else jnp.asarray(mask).astype(dtype)
    invalid = jnp.zeros(batch, bool) if t is None else t.invalid

    def per_token(div, w, invalid):
        return jnp.where(w != 0, jnp.where(invalid, jnp.nan, div) * w, 0)

    total = onepass_divergence_sum(hidden_s, head_s, hidden_t, head_t, pointwise, top_k,
                                   per_token, weights, invalid, temperature, chunk_size, vocab,
                                   dtype)
    if reduction == "sum":
        return total
    return total / jnp.maximum(jnp.sum(weights), jnp.finfo(dtype).tiny)


class _Options(NamedTuple):
    pointwise: Callable
    top_k: int
    temperature: float
    teacher_grad: bool
    chunk_size: int
    vocab_chunk: int | None
    dtype: Any


def _per_token(opt: _Options, hidden_s, head_s, hidden_t, head_t, vocab_axes=(), shard=0,
               n_shards=1) -> jax.Array:
    """Per-token divergence; with ``vocab_axes``, of one vocabulary shard inside ``shard_map``
    (``shard`` of ``n_shards``), summed over the shards."""
    batch = hidden_s.shape[:-1]
    n_tokens = math.prod(batch)
    vocab = _head_vocab(head_s, hidden_s, 1)[0]
    both_matrix = all(isinstance(h, (jax.Array, np.ndarray)) for h in (head_s, head_t))
    want = _Want(top_k=opt.top_k, temperature=opt.temperature)
    width = max(hidden_s.shape[-1], hidden_t.shape[-1])
    plan = _make_plan(n_tokens, vocab, width, both_matrix, opt.chunk_size, opt.vocab_chunk,
                      want, opt.dtype)

    # pass 1: each head's logsumexp (and the teacher's top-k ids), forward only
    zeros = jnp.zeros(batch, jnp.int32)
    outs_s = _token_outs(lax.stop_gradient(hidden_s), _constant(head_s), zeros, opt.chunk_size,
                         opt.vocab_chunk, _Want(temperature=opt.temperature))
    outs_t = _token_outs(lax.stop_gradient(hidden_t), _constant(head_t), zeros, opt.chunk_size,
                         opt.vocab_chunk, want)
    lse_s, lse_t, top_ids = outs_s.lse, outs_t.lse, outs_t.top_ids
    if vocab_axes:  # global logsumexps and top-k; ids local to this shard's columns
        offset = (shard * vocab).astype(jnp.int32)
        lse_s = _combine(tuple(outs_s), vocab_axes, shard, n_shards)[1]
        outs_t = outs_t._replace(top_ids=outs_t.top_ids + offset)
        combined = _combine(tuple(outs_t), vocab_axes, shard, n_shards)
        lse_t, top_ids = combined[1], combined[5] - offset

    padded = plan.chunk * plan.n_chunks

    def chunks(x, trailing=()):
        flat = jnp.reshape(x, (n_tokens, *trailing))
        flat = jnp.pad(flat, ((0, padded - n_tokens),) + ((0, 0),) * len(trailing))
        return flat.reshape(plan.n_chunks, plan.chunk, *trailing)

    student = _HeadOps(head_s, plan, plan.chunk, hidden_s.shape[-1], hidden_s.dtype)
    teacher = _HeadOps(head_t, plan, plan.chunk, hidden_t.shape[-1], hidden_t.dtype)
    fn = _divergence_fn(student, teacher, plan, opt.pointwise, opt.top_k, opt.teacher_grad,
                        vocab_axes)
    per_token = fn(student.operands, chunks(hidden_s, hidden_s.shape[-1:]), teacher.operands,
                   chunks(hidden_t, hidden_t.shape[-1:]), chunks(lse_s), chunks(lse_t),
                   chunks(top_ids, (opt.top_k,)))
    return per_token.reshape(padded)[:n_tokens].reshape(batch)


def _sharded_per_token(opt: _Options, vp: VocabParallel, hidden_s, head_s, hidden_t,
                       head_t) -> jax.Array:
    """:func:`_per_token` per vocabulary shard of both heads under ``shard_map``."""
    _check_mesh(vp, hidden_s, head_s)
    _check_mesh(vp, hidden_t, head_t)
    vocab_axes, batch_axes = axis_names(vp.vocab_axis), axis_names(vp.batch_axes)
    n_shards = math.prod(vp.mesh.shape[a] for a in vocab_axes)

    def body(hs, ws, ht, wt):
        # gradients of the heads sum over batch shards, of the hidden states over vocab shards
        if batch_axes:
            ws, wt = (lax.pcast(w, batch_axes, to="varying") for w in (ws, wt))
        hs, ht = (lax.pcast(h, vocab_axes, to="varying") for h in (hs, ht))
        shard = 0
        for axis in vocab_axes:  # linear index, first named axis major (as in the spec)
            shard = shard * vp.mesh.shape[axis] + lax.axis_index(axis)
        return _per_token(opt, hs, ws, ht, wt, vocab_axes, shard, n_shards)

    batch, heads = P(batch_axes or None), P(None, vocab_axes)
    specs = (batch, heads, batch, heads)
    args = [_match_explicit(vp.mesh, x, spec)
            for x, spec in zip((hidden_s, head_s, hidden_t, head_t), specs, strict=True)]
    return jax.shard_map(body, mesh=vp.mesh, in_specs=specs, out_specs=batch)(*args)

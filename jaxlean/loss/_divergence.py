"""The recomputing path of :func:`jaxlean.loss.distill.distill_loss`: per-token divergences.

A first chunked pass gives each token's two logsumexps (and the teacher's top-k
ids); a second, under a custom VJP, the per-token divergence and the sums its
gradient needs; the backward pass recomputes each block's two logit blocks to
accumulate the gradients, so neither ``[T, V]`` logit matrix ever exists. This
path serves ``reduction="none"``, explicit vocabulary blocks and heads split over
the vocabulary on a mesh (per shard, under ``shard_map``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec as P

from jaxlean.loss._checks import Head, head_vocab
from jaxlean.loss._kernel import (
    Plan,
    Want,
    callable_operands,
    dot,
    make_plan,
    varying_zeros,
    weight_block,
)
from jaxlean.loss._per_token import token_outs
from jaxlean.loss.vocab_parallel import VocabParallel, _check_mesh, _combine, _match_explicit
from jaxlean.parallel.mesh import axis_names

__all__ = [
    "DivergenceOptions",
    "as_constant",
    "divergence_per_token",
    "sharded_divergence_per_token",
]


class _HeadOps:
    """Logit blocks and chunked gradient accumulation for one head (matrix or callable)."""

    def __init__(self, head: Head, plan: Plan, chunk: int, width: int, dtype: Any):
        self.is_matrix = isinstance(head, (jax.Array, np.ndarray))
        self.plan = plan
        self.like: tuple = ()  # arrays whose mesh-varying axes the accumulators take
        if self.is_matrix:
            self.operands, self.apply = jnp.asarray(head), None
        else:
            self.operands, self.apply = callable_operands(head, chunk, width, dtype)

    def logits(self, ops, h, b):
        if self.is_matrix:
            return dot(h, weight_block(ops, self.plan, b), self.plan.dtype)
        return self.apply(ops, h).astype(self.plan.dtype)

    def block_grad_init(self, ops):
        if self.is_matrix:
            return varying_zeros((ops.shape[0], self.plan.block), self.plan.dtype, *self.like)
        diff, _ = eqx.partition(ops, eqx.is_inexact_array)
        return jax.tree.map(lambda x: varying_zeros(x.shape, self.plan.dtype, *self.like), diff)

    def step(self, ops, h, dl, b, acc):
        """Add one chunk's head gradient to ``acc``; return it with the chunk's ``dh``."""
        if self.is_matrix:
            wb = weight_block(ops, self.plan, b)
            dh = dot(dl.astype(wb.dtype), wb.T, self.plan.dtype)
            return acc + dot(h.T, dl.astype(h.dtype), self.plan.dtype), dh
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
            return varying_zeros(ops.shape, self.plan.dtype, *self.like)
        return self.block_grad_init(ops)

    def finish(self, full, ops):
        if self.is_matrix:
            return full.astype(ops.dtype)
        diff, nondiff = eqx.partition(ops, eqx.is_inexact_array)
        d_diff = jax.tree.map(lambda g, x: g.astype(x.dtype), full, diff)
        return eqx.combine(d_diff, jax.tree.map(lambda _: None, nondiff))


def _divergence_fn(student: _HeadOps, teacher: _HeadOps, plan: Plan, f: Callable,
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

        zeros = varying_zeros(h_s.shape[:1], plan.dtype, *jax.tree.leaves((ops_s, h_s, ops_t, h_t)))
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
        dht = varying_zeros(ht.shape, plan.dtype, *student.like) if teacher_grad else None
        init = (student.full_init(ops_s), full_t,
                varying_zeros(hs.shape, plan.dtype, *student.like), dht)
        full_s, full_t, dhs, dht = lax.fori_loop(0, plan.n_blocks, vocab_step, init)
        d_t = (teacher.finish(full_t, ops_t), dht.astype(ht.dtype)) if teacher_grad \
            else (None, None)
        return (student.finish(full_s, ops_s), dhs.astype(hs.dtype), *d_t, None, None, None)

    divergence.defvjp(fwd, bwd)
    return divergence


def as_constant(teacher: Any) -> Any:
    """``teacher`` with gradients stopped at its array leaves (a closure's arrays get none
    from the custom VJP unless asked for), behind an optimisation barrier.

    The barrier matters when the teacher's arrays are closed over by ``jit``: they
    are then constants, and XLA would constant-fold the teacher's logits chunk by
    chunk at compile time, which then takes most of the compile.
    """
    return jax.tree.map(lambda x: lax.optimization_barrier(lax.stop_gradient(x))
                        if eqx.is_array(x) else x, teacher)


class DivergenceOptions(NamedTuple):
    """The settings of :func:`divergence_per_token` fixed by :func:`distill_loss`."""

    pointwise: Callable
    top_k: int
    temperature: float
    teacher_grad: bool
    chunk_size: int
    vocab_chunk: int | None
    dtype: Any


def divergence_per_token(opt: DivergenceOptions, hidden_s, head_s, hidden_t, head_t,
                         vocab_axes=(), shard=0, n_shards=1) -> jax.Array:
    """Per-token divergence; with ``vocab_axes``, of one vocabulary shard inside ``shard_map``
    (``shard`` of ``n_shards``), summed over the shards."""
    batch = hidden_s.shape[:-1]
    n_tokens = math.prod(batch)
    vocab = head_vocab(head_s, hidden_s, 1)[0]
    both_matrix = all(isinstance(h, (jax.Array, np.ndarray)) for h in (head_s, head_t))
    want = Want(top_k=opt.top_k, temperature=opt.temperature)
    width = max(hidden_s.shape[-1], hidden_t.shape[-1])
    plan = make_plan(n_tokens, vocab, width, both_matrix, opt.chunk_size, opt.vocab_chunk,
                     want, opt.dtype)

    # pass 1: each head's logsumexp (and the teacher's top-k ids), forward only
    zeros = jnp.zeros(batch, jnp.int32)
    outs_s = token_outs(lax.stop_gradient(hidden_s), as_constant(head_s), zeros, opt.chunk_size,
                        opt.vocab_chunk, Want(temperature=opt.temperature))
    outs_t = token_outs(lax.stop_gradient(hidden_t), as_constant(head_t), zeros, opt.chunk_size,
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


def sharded_divergence_per_token(opt: DivergenceOptions, vp: VocabParallel, hidden_s, head_s,
                                 hidden_t, head_t) -> jax.Array:
    """:func:`divergence_per_token` per vocabulary shard of both heads under ``shard_map``."""
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
        return divergence_per_token(opt, hs, ws, ht, wt, vocab_axes, shard, n_shards)

    batch, heads = P(batch_axes or None), P(None, vocab_axes)
    specs = (batch, heads, batch, heads)
    args = [_match_explicit(vp.mesh, x, spec)
            for x, spec in zip((hidden_s, head_s, hidden_t, head_t), specs, strict=True)]
    return jax.shard_map(body, mesh=vp.mesh, in_specs=specs, out_specs=batch)(*args)

"""One-pass gradients of scalar chunked losses: the backward pass is only a scale.

A scalar loss ``L = sum_t phi(stats_t, data_t)``, where ``stats_t`` are token
``t``'s own statistics over the whole vocabulary (target logit, logsumexp,
entropy, sum of logits) and ``data_t`` per-token data (weights, old log-probs,
advantages), has a per-token cotangent that is known as soon as the token's
statistics are. So while a chunk's ``[C, V]`` logits are in hand, the forward
pass also computes their cotangent and from it the chunk's share of the head
gradient (accumulated) and of the hidden states' gradient (kept per token); the
backward pass multiplies these residuals by the incoming scalar cotangent. That
is the 3 ``[C, H] x [H, V]`` products of full logits (logits, ``dW``, ``dh``),
where recomputing the logits in the backward pass takes 4.

A plain call (no gradient taken) runs the forward alone. Inputs that are not
being differentiated (a frozen head, constant hidden states: JAX's symbolic
zeros) get no gradient work. Each chunk spans the whole vocabulary, with as
many tokens as keep one ``[C, V]`` float32 block under :data:`ONEPASS_BLOCK_BYTES`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_derivatives import SymbolicZero

from jaxlean.loss._checks import Head
from jaxlean.loss._kernel import (
    Outs,
    Plan,
    Want,
    block_stats,
    callable_operands,
    dot,
    finish,
    logits_cotangent,
    make_plan,
    scaled_logits,
    varying_zeros,
    weight_block,
)

__all__ = ["ONEPASS_BLOCK_BYTES", "WHOLE_HEAD_BYTES", "HeadOps", "PerToken", "Pointwise",
           "Stats", "chunk_tokens", "divergence_loss", "onepass_divergence_sum", "onepass_plan",
           "onepass_sum", "stats_loss", "unchunk"]

#: Largest float32 ``[tokens, vocab]`` logits block of a one-pass chunk (matrix heads;
#: a callable head's chunk is ``chunk_size`` tokens).
ONEPASS_BLOCK_BYTES = 64 * 2**20

#: A matrix head whose float32 ``[H, V]`` gradient is at most this is multiplied whole;
#: a larger one by vocabulary blocks, so that no head-sized product is a temporary.
WHOLE_HEAD_BYTES = 128 * 2**20


class Stats(NamedTuple):
    """Per-token statistics of ``softmax(logits / temperature)`` that a loss may use."""

    target: jax.Array
    lse: jax.Array
    entropy: jax.Array
    total: jax.Array


#: ``phi(stats [C], data [C], fixed [C]) -> per-token loss [C]``: ``data`` is a pytree of
#: float arrays (differentiated), ``fixed`` one of arrays that are not.
PerToken = Callable[[Stats, Any, Any], jax.Array]


def _dividing(n_tokens: int, limit: int) -> int:
    """The largest chunk of at most ``limit`` tokens that divides ``n_tokens`` (no padded
    copy of the hidden states), unless that is below ``limit / 2``."""
    for chunk in range(min(limit, n_tokens), max(1, limit // 2) - 1, -1):
        if n_tokens % chunk == 0:
            return chunk
    return limit


def onepass_plan(n_tokens: int, vocab: int, width: int, is_matrix: bool, chunk_size: int,
                 want: Want, dtype: Any, heads: int = 1) -> Plan:
    """Token chunks over the whole vocabulary: a matrix head's chunk keeps ``[C, V]``
    float32 under :data:`ONEPASS_BLOCK_BYTES` (for each of ``heads`` heads) and
    divides the tokens where it can. A head larger than
    :data:`WHOLE_HEAD_BYTES` is multiplied by vocabulary blocks as in
    :func:`jaxlean.loss.chunked.token_logprobs`, so that no ``[H, V]`` product (or
    float32 copy of a 16-bit head) exists besides the gradient accumulator."""
    limit = chunk_size
    if is_matrix:
        limit = min(limit, max(8, ONEPASS_BLOCK_BYTES // (4 * vocab * heads)))
    plan = make_plan(n_tokens, vocab, width, is_matrix, _dividing(max(n_tokens, 1), limit),
                     None, want, dtype)
    if is_matrix and 4 * width * vocab <= WHOLE_HEAD_BYTES:
        plan = plan._replace(block=vocab, n_blocks=1)
    return plan


class HeadOps:
    """A matrix or callable head: its differentiable operands, one chunk's ``[C, V]``
    logits, and the chunk's gradient contributions."""

    def __init__(self, head: Head, plan: Plan, width: int, dtype: Any):
        self.plan = plan
        self.is_matrix = isinstance(head, (jax.Array, np.ndarray))
        if self.is_matrix:
            self.operands, self.apply = jnp.asarray(head), None
        else:
            self.operands, self.apply = callable_operands(head, plan.chunk, width, dtype)

    def _diff(self, ops):
        return eqx.partition(ops, eqx.is_inexact_array)

    def logits(self, ops, h: jax.Array) -> jax.Array:
        """``[C, V]`` logits in the accumulation dtype (matrix: block by block)."""
        plan = self.plan
        if not self.is_matrix:
            return self.apply(ops, h).astype(plan.dtype)
        if plan.n_blocks == 1:
            return dot(h, ops, plan.dtype)

        def block(b, out):
            logits = dot(h, weight_block(ops, plan, b), plan.dtype)
            return lax.dynamic_update_slice_in_dim(out, logits, plan.block_start(b), 1)

        out = varying_zeros((h.shape[0], plan.vocab), plan.dtype, ops, h)
        return lax.fori_loop(0, plan.n_blocks, block, out)

    def grad_init(self, ops, *like):
        diff = ops if self.is_matrix else self._diff(ops)[0]
        return jax.tree.map(lambda x: varying_zeros(x.shape, self.plan.dtype, x, *like), diff)

    def vjp(self, ops, h: jax.Array, need_ops: bool, need_h: bool
            ) -> tuple[jax.Array, Callable]:
        """Logits and ``pullback(dl, acc) -> (acc + d operands, d h)`` (``d h`` None unless
        ``need_h``; ``acc`` unchanged unless ``need_ops``)."""
        plan = self.plan
        if self.is_matrix:
            return self.logits(ops, h), lambda dl, acc: self._matrix_pullback(
                ops, h, dl, acc, need_ops, need_h)
        diff, nondiff = self._diff(ops)
        apply = lambda d, x: self.apply(eqx.combine(d, nondiff), x).astype(plan.dtype)
        add = lambda acc, d: jax.tree.map(lambda a, x: a + x.astype(plan.dtype), acc, d)
        if need_ops and need_h:
            logits, vjp = jax.vjp(apply, diff, h)

            def both(dl, acc):
                d, dh = vjp(dl)
                return add(acc, d), dh
            return logits, both
        if need_ops:
            logits, vjp = jax.vjp(lambda d: apply(d, h), diff)
            return logits, lambda dl, acc: (add(acc, vjp(dl)[0]), None)
        logits, vjp = jax.vjp(lambda x: apply(diff, x), h)
        return logits, lambda dl, acc: (acc, vjp(dl)[0])

    def _matrix_pullback(self, w, h, dl, acc, need_ops, need_h):
        plan = self.plan
        if plan.n_blocks == 1:
            if need_ops:
                acc = acc + dot(h.T, dl.astype(h.dtype), plan.dtype)
            dh = dot(dl.astype(w.dtype), w.T, plan.dtype) if need_h else None
            return acc, dh

        def block(b, carry):
            acc, dh = carry
            start = plan.block_start(b)
            dlb = jnp.where(plan.block_owned(b),
                            lax.dynamic_slice_in_dim(dl, start, plan.block, 1), 0)
            if need_ops:  # add in place into the accumulator's columns
                old = lax.dynamic_slice_in_dim(acc, start, plan.block, 1)
                new = old + dot(h.T, dlb.astype(h.dtype), plan.dtype)
                acc = lax.dynamic_update_slice_in_dim(acc, new, start, 1)
            if need_h:
                wb = weight_block(w, plan, b)
                dh = dh + dot(dlb.astype(wb.dtype), wb.T, plan.dtype)
            return acc, dh

        dh = varying_zeros(h.shape, plan.dtype, w, h, dl) if need_h else None
        return lax.fori_loop(0, plan.n_blocks, block, (acc, dh))

    def cotangent(self, ops, g: jax.Array, acc):
        """``g * acc`` as a cotangent of ``ops`` (None for leaves not differentiated)."""
        if self.is_matrix:
            return (g * acc).astype(ops.dtype)
        diff, nondiff = self._diff(ops)
        d = jax.tree.map(lambda a, x: (g * a).astype(x.dtype), acc, diff)
        return eqx.combine(d, jax.tree.map(lambda _: None, nondiff))


def _perturbed(tree) -> bool:
    return any(leaf.perturbed for leaf in jax.tree.leaves(
        tree, is_leaf=lambda x: isinstance(x, jax.custom_derivatives.CustomVJPPrimal)))


def _summed(values: jax.Array, total: jax.Array) -> jax.Array:
    """The sum of a chunk's per-token values in the running total's dtype (the plan's): data
    in a wider dtype (float64 advantages under ``jax_enable_x64``) must not widen the loop's
    carry."""
    return jnp.sum(values).astype(total.dtype)


def _values(tree):
    return jax.tree.map(lambda x: x.value, tree,
                        is_leaf=lambda x: isinstance(x, jax.custom_derivatives.CustomVJPPrimal))


def _scale(g: jax.Array, tree, like):
    return jax.tree.map(lambda x, y: None if x is None else (g * x).astype(y.dtype), tree, like,
                        is_leaf=lambda x: x is None)


def stats_loss(head: HeadOps, plan: Plan, phi: PerToken):
    """custom_vjp ``(operands, hidden [n, C, H], targets [n, C], data, fixed) ->
    (sum of phi, Stats [n, C])``; the returned statistics carry no gradient."""

    def run(ops, hidden, targets, data, fixed, need):
        need_ops, need_h, need_data = need or (False, False, False)
        grads = need is not None

        def step(carry, xs):
            total, acc = carry
            h, t, d, f = xs
            pullback = None
            if grads and (need_ops or need_h):
                logits, pullback = head.vjp(ops, h, need_ops, need_h)
            else:
                logits = head.logits(ops, h)
            scaled = scaled_logits(logits, plan)
            outs = finish(block_stats(scaled, t, 0, None, plan))
            stats = Stats(outs.target, outs.lse, outs.entropy, outs.total)
            if not grads:
                return (total + _summed(phi(stats, d, f), total), acc), (stats, None, None)
            values, vjp = jax.vjp(lambda s, dd: phi(s, dd, f), stats, d)
            g_stats, g_data = vjp(jnp.ones_like(values))
            dh = None
            if pullback is not None:
                g = Outs(*g_stats, top=jnp.zeros((*values.shape, 0), plan.dtype),
                         top_ids=None)
                dl = logits_cotangent(scaled, t, 0, None, outs, g, plan) * plan.inv_temperature
                acc, dh = pullback(dl, acc)
            return (total + _summed(values, total), acc), (stats, dh, g_data if need_data else None)

        like = jax.tree.leaves((ops, hidden, data))
        acc = head.grad_init(ops, *like) if need_ops else None
        (total, acc), (stats, dh, d_data) = lax.scan(
            step, (varying_zeros((), plan.dtype, *like), acc), (hidden, targets, data, fixed))
        return total, stats, (acc, dh, d_data)

    @jax.custom_vjp
    def loss(ops, hidden, targets, data, fixed):
        total, stats, _ = run(ops, hidden, targets, data, fixed, None)
        return total, stats

    def fwd(ops, hidden, targets, data, fixed):
        need = (_perturbed(ops), hidden.perturbed, _perturbed(data))
        ops, hidden, targets, data, fixed = _values((ops, hidden, targets, data, fixed))
        total, stats, res = run(ops, hidden, targets, data, fixed, need)
        return (total, stats), (res, ops, hidden, data)

    def bwd(res, g):
        (acc, dh, d_data), ops, hidden, data = res
        g_total = g[0]
        if isinstance(g_total, SymbolicZero):
            return None, None, None, None, None
        d_ops = None if acc is None else head.cotangent(ops, g_total, acc)
        d_h = None if dh is None else (g_total * dh).astype(hidden.dtype)
        d_d = None if d_data is None else _scale(g_total, d_data, data)
        return d_ops, d_h, None, d_d, None

    loss.defvjp(fwd, bwd, symbolic_zeros=True)
    return loss


def chunk_tokens(x: jax.Array, plan: Plan, n_lead: int) -> jax.Array:
    """``x [*batch, *trailing]`` (``n_lead`` batch dims) as ``[n_chunks, chunk, *trailing]``,
    zero-padded."""
    trailing = x.shape[n_lead:]
    flat = jnp.reshape(x, (plan.n_tokens, *trailing))
    padded = plan.chunk * plan.n_chunks
    if padded != plan.n_tokens:
        flat = jnp.pad(flat, ((0, padded - plan.n_tokens),) + ((0, 0),) * len(trailing))
    return flat.reshape(plan.n_chunks, plan.chunk, *trailing)


def unchunk(x: jax.Array, plan: Plan, batch: tuple[int, ...]) -> jax.Array:
    """Undo the plan's chunking: ``[chunks, chunk, ...]`` back to ``[*batch, ...]``."""
    return x.reshape(plan.chunk * plan.n_chunks, *x.shape[2:])[:plan.n_tokens].reshape(
        *batch, *x.shape[2:])


def onepass_sum(hidden: jax.Array, head: Head, ids: jax.Array, phi: PerToken, data: Any,
                fixed: Any, want: Want, chunk_size: int, vocab: int, dtype: Any
                ) -> tuple[jax.Array, Stats]:
    """``sum_t phi(stats_t, data_t, fixed_t)`` over the tokens of ``hidden [..., H]`` (one
    pass, gradients in the forward), and the per-token :class:`Stats` (no gradient).

    ``ids`` are target ids in ``[0, V)``; ``data`` and ``fixed`` are pytrees of arrays of
    the token shape.
    """
    batch, width = hidden.shape[:-1], hidden.shape[-1]
    n_lead = len(batch)
    n_tokens = math.prod(batch)
    is_matrix = isinstance(head, (jax.Array, np.ndarray))
    plan = onepass_plan(n_tokens, vocab, width, is_matrix, chunk_size, want, dtype)
    ops = HeadOps(head, plan, width, hidden.dtype)
    real = jnp.arange(plan.chunk * plan.n_chunks).reshape(plan.n_chunks, plan.chunk) < n_tokens

    def padded_phi(stats, d, f):
        f, is_real = f
        return jnp.where(is_real, phi(stats, d, f), 0)

    chunk = lambda x: chunk_tokens(x, plan, n_lead)
    fn = stats_loss(ops, plan, padded_phi)
    total, stats = fn(ops.operands, chunk(hidden), chunk(ids.astype(jnp.int32)),
                      jax.tree.map(chunk, data), (jax.tree.map(chunk, fixed), real))
    return total, Stats(*(lax.stop_gradient(unchunk(s, plan, batch)) for s in stats))


# ----------------------------------------------------------------------------- divergences

#: ``f(log p_student [C, V], log p_teacher [C, V], teacher's top-k mask or None)``, summed
#: over the vocabulary to give each token's divergence.
Pointwise = Callable[[jax.Array, jax.Array, Any], jax.Array]


def divergence_loss(student: HeadOps, teacher: HeadOps, plan: Plan, f: Pointwise, top_k: int,
                    phi: Callable[[jax.Array, Any, Any], jax.Array]):
    """custom_vjp ``(ops_s, hs [n, C, Hs], ops_t, ht [n, C, Ht], data, fixed) ->
    (sum of phi(divergence, data, fixed), divergence [n, C])``, gradients in the forward.

    Each chunk's two ``[C, V]`` logit blocks give both logsumexps, the divergence and
    its logits cotangents ``(f_a - p_s S_a) / T`` at once: 3 student and 1 teacher
    ``[C, H] x [H, V]`` products, like full logits (3 teacher ones when the teacher is
    differentiated too).
    """
    inv_t = plan.inv_temperature

    def run(ops_s, hs, ops_t, ht, data, fixed, need):
        need_s, need_hs, need_t, need_ht, need_data = need or (False,) * 5
        grads = need is not None

        def logits(head, ops, h, need_ops, need_h):
            if grads and (need_ops or need_h):
                out, pullback = head.vjp(ops, h, need_ops, need_h)
            else:
                out, pullback = head.logits(ops, h), None
            return out.astype(plan.dtype) * inv_t, pullback

        def step(carry, xs):
            total, acc_s, acc_t = carry
            h_s, h_t, d, fx = xs
            ls, pull_s = logits(student, ops_s, h_s, need_s, need_hs)
            lt, pull_t = logits(teacher, ops_t, h_t, need_t, need_ht)
            a = ls - jax.nn.logsumexp(ls, axis=-1, keepdims=True)
            b = lt - jax.nn.logsumexp(lt, axis=-1, keepdims=True)
            sel = None
            if top_k:
                ids = lax.top_k(lt, top_k)[1]
                cols = jnp.arange(plan.vocab)
                sel = functools.reduce(jnp.logical_or, [cols == ids[:, j:j + 1]
                                                        for j in range(top_k)])
            if not grads:
                div = jnp.sum(f(a, b, sel), -1)
                total = total + _summed(phi(div, d, fx), total)
                return (total, acc_s, acc_t), (div, None, None, None)
            values, vjp_f = jax.vjp(lambda a, b: f(a, b, sel), a, b)
            fa, fb = vjp_f(jnp.ones_like(values))
            div = jnp.sum(values, -1)
            per_token, vjp_phi = jax.vjp(lambda x, dd: phi(x, dd, fx), div, d)
            g, g_data = vjp_phi(jnp.ones_like(per_token))
            dhs = dht = None
            if pull_s is not None:
                dl = g[:, None] * (fa - jnp.exp(a) * jnp.sum(fa, -1, keepdims=True)) * inv_t
                acc_s, dhs = pull_s(dl, acc_s)
            if pull_t is not None:
                dl = g[:, None] * (fb - jnp.exp(b) * jnp.sum(fb, -1, keepdims=True)) * inv_t
                acc_t, dht = pull_t(dl, acc_t)
            return ((total + _summed(per_token, total), acc_s, acc_t),
                    (div, dhs, dht, g_data if need_data else None))

        like = jax.tree.leaves((ops_s, hs, ops_t, ht, data))
        acc_s = student.grad_init(ops_s, *like) if need_s else None
        acc_t = teacher.grad_init(ops_t, *like) if need_t else None
        (total, acc_s, acc_t), (div, dhs, dht, d_data) = lax.scan(
            step, (varying_zeros((), plan.dtype, *like), acc_s, acc_t), (hs, ht, data, fixed))
        return total, div, (acc_s, dhs, acc_t, dht, d_data)

    @jax.custom_vjp
    def loss(ops_s, hs, ops_t, ht, data, fixed):
        total, div, _ = run(ops_s, hs, ops_t, ht, data, fixed, None)
        return total, div

    def fwd(ops_s, hs, ops_t, ht, data, fixed):
        need = (_perturbed(ops_s), hs.perturbed, _perturbed(ops_t), ht.perturbed,
                _perturbed(data))
        args = _values((ops_s, hs, ops_t, ht, data, fixed))
        total, div, res = run(*args, need)
        return (total, div), (res, args[:5])

    def bwd(res, g):
        (acc_s, dhs, acc_t, dht, d_data), (ops_s, hs, ops_t, ht, data) = res
        g_total = g[0]
        if isinstance(g_total, SymbolicZero):
            return None, None, None, None, None, None
        scaled = lambda x, like: None if x is None else (g_total * x).astype(like.dtype)
        return (None if acc_s is None else student.cotangent(ops_s, g_total, acc_s),
                scaled(dhs, hs),
                None if acc_t is None else teacher.cotangent(ops_t, g_total, acc_t),
                scaled(dht, ht), None if d_data is None else _scale(g_total, d_data, data),
                None)

    loss.defvjp(fwd, bwd, symbolic_zeros=True)
    return loss


def onepass_divergence_sum(hidden_s: jax.Array, head_s: Head, hidden_t: jax.Array,
                           head_t: Head, f: Pointwise, top_k: int, phi: Callable, data: Any,
                           fixed: Any, temperature: float, chunk_size: int, vocab: int,
                           dtype: Any) -> jax.Array:
    """``sum_t phi(divergence_t, data_t, fixed_t)`` between a student and a teacher head
    (one pass, gradients in the forward; see :func:`divergence_loss`)."""
    batch = hidden_s.shape[:-1]
    n_tokens = math.prod(batch)
    both_matrix = all(isinstance(h, (jax.Array, np.ndarray)) for h in (head_s, head_t))
    width = max(hidden_s.shape[-1], hidden_t.shape[-1])
    plan = onepass_plan(n_tokens, vocab, width, both_matrix, chunk_size,
                        Want(temperature=temperature), dtype, heads=2)
    student = HeadOps(head_s, plan, hidden_s.shape[-1], hidden_s.dtype)
    teacher = HeadOps(head_t, plan, hidden_t.shape[-1], hidden_t.dtype)
    real = jnp.arange(plan.chunk * plan.n_chunks).reshape(plan.n_chunks, plan.chunk) < n_tokens

    def padded_phi(div, d, fx):
        fx, is_real = fx
        return jnp.where(is_real, phi(div, d, fx), 0)

    chunk = lambda x: chunk_tokens(x, plan, len(batch))
    fn = divergence_loss(student, teacher, plan, f, top_k, padded_phi)
    total, _ = fn(student.operands, chunk(hidden_s), teacher.operands, chunk(hidden_t),
                  jax.tree.map(chunk, data), (jax.tree.map(chunk, fixed), real))
    return total

"""The one-pass path of the scalar losses (gradients in the forward pass) against full logits
and against the recomputing path, gradients included, f32 and bf16."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean._random import normal
from jaxlean.loss import _kernel, onepass
from jaxlean.loss.chunked import cross_entropy
from jaxlean.loss.distill import distill_loss
from jaxlean.loss.policy import policy_gradient_loss

B, T, H, V = 2, 11, 16, 300  # 22 tokens: chunk_size=8 pads
RTOL = {jnp.float32: 2e-5, jnp.bfloat16: 2e-2}


def _data(dtype):
    k = jax.random.split(jax.random.key(3), 6)
    hidden = normal(k[0], (B, T, H)).astype(dtype)
    head = (normal(k[1], (H, V)) * 0.5).astype(dtype)
    targets = jax.random.randint(k[2], (B, T), 0, V).at[0, 2].set(-100)
    weights = jax.random.uniform(k[3], (B, T), minval=0.1)
    return hidden, head, targets, weights, k[4:]


def _close(actual, expected, rtol):
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        a, e = np.asarray(a, np.float64), np.asarray(e, np.float64)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol * max(1.0, np.max(np.abs(e))))


def _ref_cross_entropy(hidden, head, targets, weights, smoothing, z):
    logits = hidden.astype(jnp.float32) @ head.astype(jnp.float32)
    logprobs = jax.nn.log_softmax(logits)
    keep = targets != -100
    nll = -jnp.take_along_axis(logprobs, jnp.where(keep, targets, 0)[..., None], -1)[..., 0]
    losses = (1 - smoothing) * nll - smoothing * logprobs.mean(-1)
    losses = losses + z * jax.nn.logsumexp(logits, -1) ** 2
    w = jnp.where(keep, weights, 0)
    return jnp.sum(losses * w) / jnp.sum(w)


WHOLE, BLOCKS = "whole head", "vocabulary blocks"


def _products(how, monkeypatch):
    """Products with the whole head, or by vocabulary blocks (the last one shifted)."""
    if how == BLOCKS:
        monkeypatch.setattr(onepass, "WHOLE_HEAD_BYTES", 0)
        monkeypatch.setattr(_kernel, "AUTO_BLOCK_BYTES", 4 * 16 * 128)


@pytest.mark.parametrize("dtype, how", [(jnp.float32, WHOLE), (jnp.bfloat16, BLOCKS)],
                         ids=["f32-whole", "bf16-blocks"])
def test_cross_entropy_matches_full_logits_and_recomputing_path(dtype, how, monkeypatch):
    _products(how, monkeypatch)
    hidden, head, targets, weights, _ = _data(dtype)
    options = dict(label_smoothing=0.1, z_loss=1e-3)
    grad = lambda f: jax.jit(jax.value_and_grad(f, (0, 1, 2)))(hidden, head, weights)
    ours = grad(lambda h, w, m: cross_entropy(h, w, targets=targets, mask=m, chunk_size=8,
                                              **options))
    recomputing = grad(lambda h, w, m: cross_entropy(h, w, targets=targets, mask=m, chunk_size=8,
                                                     vocab_chunk=128, **options))
    full = grad(lambda h, w, m: _ref_cross_entropy(h, w, targets, m, 0.1, 1e-3))
    _close(ours, full, RTOL[dtype])
    _close(ours, recomputing, RTOL[dtype])


def _count_dots(f, *args) -> int:
    return jax.make_jaxpr(f)(*args).pretty_print().count("dot_general")


def test_head_products_as_full_logits_and_none_for_a_frozen_head():
    hidden, head, targets, _, _ = _data(jnp.float32)
    loss = lambda h, w: cross_entropy(h, w, targets=targets)
    assert _count_dots(loss, hidden, head) == 1  # a plain call: the forward alone
    assert _count_dots(jax.grad(loss, (0, 1)), hidden, head) == 3
    assert _count_dots(jax.grad(loss), hidden, head) == 2  # no dW for a frozen head
    jsd = lambda hs, ws: distill_loss(hs, ws, 2 * hidden, head, divergence="jsd")
    assert _count_dots(jax.grad(jsd, (0, 1)), hidden, head) == 4  # 3 student + 1 teacher


@pytest.mark.parametrize("dtype, how, x64", [(jnp.float32, BLOCKS, False),
                                             (jnp.float32, BLOCKS, True)],
                         ids=["f32-blocks", "f32-blocks-x64"])
def test_policy_loss_gradients_reach_every_input(dtype, how, x64, monkeypatch):
    """``x64``: under ``jax_enable_x64`` the old logprobs and advantages are float64 and
    must not widen the chunk loop's float32 total."""
    with jax.enable_x64(x64):
        _policy_loss_gradients_reach_every_input(dtype, how, monkeypatch)


def _policy_loss_gradients_reach_every_input(dtype, how, monkeypatch):
    _products(how, monkeypatch)
    hidden, head, tokens, weights, (k1, k2) = _data(dtype)
    old = -np.log(V) + normal(k1, (B, T))
    advantages = normal(k2, (B,))

    def full(h, w, old, adv, m):
        logp_all = jax.nn.log_softmax(h.astype(jnp.float32) @ w.astype(jnp.float32) / 0.8)
        keep = tokens != -100
        logp = jnp.take_along_axis(logp_all, jnp.where(keep, tokens, 0)[..., None], -1)[..., 0]
        entropy = -jnp.sum(jnp.exp(logp_all) * logp_all, -1)
        ratio = jnp.exp(logp - old)
        a = adv[:, None]
        per_token = -jnp.minimum(ratio * a, jnp.clip(ratio, 0.8, 1.28) * a) - 0.01 * entropy
        m = jnp.where(keep, m, 0)
        return jnp.mean(jnp.sum(per_token * m, -1) / jnp.sum(m, -1))

    def ours(h, w, old, adv, m):
        return policy_gradient_loss(h, w, targets=tokens, old_logprobs=old, advantages=adv,
                                    mask=m, clip_eps_high=0.28,
                                    entropy_coef=0.01, normalization="sequence",
                                    temperature=0.8, chunk_size=8).loss

    args = (hidden, head, old, advantages, weights)
    grad = lambda f: jax.jit(jax.value_and_grad(f, tuple(range(5))))(*args)
    _close(grad(ours), grad(full), RTOL[dtype])


@pytest.mark.parametrize("dtype, how", [(jnp.float32, BLOCKS), (jnp.bfloat16, WHOLE)],
                         ids=["f32-blocks", "bf16-whole"])
def test_jsd_matches_full_logits_with_a_callable_teacher(dtype, how, monkeypatch):
    _products(how, monkeypatch)
    hidden, head, _, weights, (k1, k2) = _data(dtype)
    teacher_w = (normal(k1, (H + 4, V)) * 0.5).astype(dtype)
    ht = normal(k2, (B, T, H + 4)).astype(dtype)
    bias = jnp.linspace(-1, 1, V).astype(dtype)

    def full(hs, ws, ht, wt, m):
        f32 = lambda x: x.astype(jnp.float32)
        a = jax.nn.log_softmax(f32(hs) @ f32(ws) / 1.5)
        b = jax.nn.log_softmax((f32(ht) @ f32(wt) + f32(bias)) / 1.5)
        mix = jnp.logaddexp(b + np.log(0.3), a + np.log(0.7))
        div = 0.3 * jnp.sum(jnp.exp(b) * (b - mix), -1) + 0.7 * jnp.sum(
            jnp.exp(a) * (a - mix), -1)
        return jnp.sum(div * m) / jnp.sum(m)

    def ours(hs, ws, ht, wt, m):
        return distill_loss(hs, ws, ht, lambda x: x @ wt + bias, divergence="jsd", beta=0.3,
                            temperature=1.5, mask=m, teacher_grad=True, chunk_size=8)

    args = (hidden, head, ht, teacher_w, weights)
    grad = lambda f: jax.jit(jax.value_and_grad(f, tuple(range(5))))(*args)
    _close(grad(ours), grad(full), RTOL[dtype])

"""policy_gradient_loss against a full-logits PPO/GRPO objective (values and gradients)."""

from __future__ import annotations

import functools
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean._random import normal
from jaxlean.errors import ConfigError, StructureError
from jaxlean.loss.policy import kl_estimate, policy_gradient_loss
from tests.loss.numpy_reference import numpy_logprobs

B, T, H, V = 3, 9, 16, 200


@functools.cache  # one set of arrays, made with NumPy (no eager JAX op, each a compile)
def _data():
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(B, T, H)).astype(np.float32)
    head = (rng.normal(size=(H, V)) * 0.5).astype(np.float32)
    tokens = rng.integers(0, V, (B, T)).astype(np.int32)
    logp = numpy_logprobs(hidden, head, tokens, 0.9)
    old = logp + 0.3 * rng.normal(size=(B, T))  # ratios well inside and outside the clip
    ref = logp + 0.2 * rng.normal(size=(B, T))
    advantages = rng.normal(size=(B,))
    mask = rng.random((B, T)) < 0.7
    mask[:, 0] = True
    return tuple(jnp.asarray(x, jnp.float32 if x.dtype == np.float64 else x.dtype)
                 for x in (hidden, head, tokens, old, ref, advantages, mask))


def _reference(hidden, head, tokens, old, ref, adv, mask, *, clip_eps, clip_high, kl_coef,
               estimator, entropy_coef, normalization, temperature):
    """The objective written out on the full [B, T, V] logits, token by token."""
    logp_all = jax.nn.log_softmax(hidden @ head / temperature)
    logp = jnp.take_along_axis(logp_all, tokens[..., None], -1)[..., 0]
    entropy = -jnp.sum(jnp.exp(logp_all) * logp_all, -1)
    ratio = jnp.exp(logp - old)
    a = adv[:, None]
    surrogate = -jnp.minimum(ratio * a, jnp.clip(ratio, 1 - clip_eps, 1 + clip_high) * a)
    kl = {"k1": logp - ref, "k2": 0.5 * (logp - ref) ** 2,
          "k3": jnp.exp(ref - logp) - 1 - (ref - logp)}[estimator]
    per_token = surrogate + kl_coef * kl - entropy_coef * entropy
    m = mask.astype(jnp.float32)
    if normalization == "token":
        return jnp.sum(per_token * m) / jnp.sum(m)
    return jnp.mean(jnp.sum(per_token * m, -1) / jnp.sum(m, -1))


CASES = [
    dict(normalization="token", kl_coef=0.0, estimator="k3", entropy_coef=0.0),
    dict(normalization="sequence", kl_coef=0.1, estimator="k3", entropy_coef=0.01),
    dict(normalization="token", kl_coef=0.05, estimator="k1", entropy_coef=0.0),
    dict(normalization="sequence", kl_coef=0.05, estimator="k2", entropy_coef=0.0),
]


@functools.cache  # every case's loss and its reference: two programs for all cases
def _losses_and_references():
    hidden, head, tokens, old, ref, adv, mask = _data()
    tokens = jnp.where(mask, tokens, -1)  # masked positions may hold any id
    safe = jnp.where(mask, tokens, 0)

    def ours(hidden, head, case):
        out = policy_gradient_loss(
            hidden, head, targets=tokens, old_logprobs=old, advantages=adv, mask=mask, clip_eps=0.2,
            clip_eps_high=0.28,
            ref_logprobs=ref, kl_coef=case["kl_coef"], kl_estimator=case["estimator"],
            entropy_coef=case["entropy_coef"], normalization=case["normalization"],
            temperature=0.9, chunk_size=5, vocab_chunk=60)
        return out.loss, out

    def reference(h, w, case):
        return _reference(h, w, safe, old, ref, adv, mask,
                          **dict(clip_eps=0.2, clip_high=0.28, temperature=0.9) | case)

    losses = jax.jit(lambda h, w: [jax.value_and_grad(ours, (0, 1), has_aux=True)(h, w, case)
                                   for case in CASES])(hidden, head)
    references = jax.jit(lambda h, w: [jax.value_and_grad(reference, (0, 1))(h, w, case)
                                       for case in CASES])(hidden, head)
    return losses, references


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_full_logits(case):
    _, _, _, old, _, adv, mask = _data()
    losses, references = _losses_and_references()
    value, grads = losses[CASES.index(case)]
    ref_value, ref_grads = references[CASES.index(case)]
    np.testing.assert_allclose(value[0], ref_value, rtol=1e-5, atol=1e-6)
    for a, b in zip(grads, ref_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(np.asarray(b)).max())
    out = value[1]
    # in NumPy: eager jnp operations would each compile a program
    old, adv, mask = (np.asarray(x) for x in (old, adv, mask))
    ratio = np.exp(np.asarray(out.logprobs) - old)
    a = adv[:, None]
    clipped = np.clip(ratio, 0.8, 1.28) * a < ratio * a
    assert 0 < float(out.clip_fraction) < 1
    if case["normalization"] == "token":
        np.testing.assert_allclose(out.clip_fraction, np.sum(clipped & mask) / np.sum(mask),
                                   rtol=1e-6)


def test_kl_estimators_against_exact_kl():
    """k1 and k3 are unbiased: their means over samples of pi approach KL(pi || ref)."""
    @jax.jit  # one compile, not one per eager op
    def estimates():
        k = jax.random.split(jax.random.key(1), 3)
        logits, ref_logits = normal(k[0], (50,)), normal(k[1], (50,)) * 0.5
        logp, ref_logp = jax.nn.log_softmax(logits), jax.nn.log_softmax(ref_logits)
        exact = jnp.sum(jnp.exp(logp) * (logp - ref_logp))
        samples = jax.random.categorical(k[2], logits, shape=(200_000,))
        means = [jnp.mean(kl_estimate(logp[samples], ref_logp[samples], estimator))
                 for estimator in ("k1", "k3")]
        return exact, means, jnp.min(kl_estimate(logp, ref_logp, "k3"))

    exact, means, smallest_k3 = estimates()
    for estimate in means:
        np.testing.assert_allclose(estimate, exact, rtol=0.03)
    assert float(smallest_k3) >= 0


def test_errors_name_the_problem():
    hidden, head, tokens, old, _, adv, _ = _data()
    with pytest.raises(ConfigError, match="unknown kl_estimator 'k4'"):
        policy_gradient_loss(hidden, head, targets=tokens, old_logprobs=old, advantages=adv,
                             kl_estimator="k4")
    with pytest.raises(ConfigError, match="no ref_logprobs"):
        policy_gradient_loss(hidden, head, targets=tokens, old_logprobs=old, advantages=adv,
                             kl_coef=0.1)
    with pytest.raises(ConfigError, match="unknown normalization 'batch'"):
        policy_gradient_loss(hidden, head, targets=tokens, old_logprobs=old, advantages=adv,
                             normalization="batch")
    with pytest.raises(ConfigError, match="temperature must be a finite number > 0"):
        policy_gradient_loss(hidden, head, targets=tokens, old_logprobs=old, advantages=adv,
                             temperature=-1.0)
    with pytest.raises(StructureError, match=r"advantages must be \[B\] or \[B, T\]"):
        policy_gradient_loss(hidden, head, targets=tokens, old_logprobs=old, advantages=adv[:2])
    with pytest.raises(StructureError, match="old_logprobs shape"):
        policy_gradient_loss(hidden, head, targets=tokens, old_logprobs=old[:, :4], advantages=adv)


# run on 4 devices by tests/loss/test_four_devices.py, with the other losses' checks
SHARDED_SCRIPT = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    from jaxlean._random import normal
    from jax.sharding import NamedSharding, PartitionSpec as P
    from jaxlean.loss.chunked import VocabParallel
    from jaxlean.loss.policy import policy_gradient_loss

    B, T, H, V = 4, 7, 16, 256
    k = jax.random.split(jax.random.key(0), 6)
    hidden, head = normal(k[0], (B, T, H)), normal(k[1], (H, V)) * 0.5
    tokens = jax.random.randint(k[2], (B, T), 0, V)
    old = -5 + 0.3 * normal(k[3], (B, T))
    ref = -5 + 0.3 * normal(k[4], (B, T))
    adv = normal(k[5], (B,))
    mesh = jax.make_mesh((2, 2), ("data", "model"))  # both axes split
    vp = VocabParallel(mesh, "model", "data")

    def run(vocab_parallel, h, w):
        loss = lambda h, w: policy_gradient_loss(
            h, w, targets=tokens, old_logprobs=old, advantages=adv, ref_logprobs=ref,
            kl_coef=0.1, entropy_coef=0.01,
            chunk_size=3, vocab_chunk=20, vocab_parallel=vocab_parallel).loss
        return jax.jit(jax.value_and_grad(loss, (0, 1)))(h, w)

    put = lambda x, spec: jax.device_put(x, NamedSharding(mesh, spec))
    got = run(vp, put(hidden, P("data")), put(head, P(None, "model")))
    want = run(None, hidden, head)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * max(1, float(np.abs(b).max())))
    print("ok")
""")

"""The transformer's RL and distillation entry points against full logits, LoRA head included."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.lm.heads import distill, policy_loss, token_stats
from jaxlean.models.lm.lora import LoRA, add_lora
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

SIZES = dict(vocab_size=53, intermediate_size=40, num_layers=2, num_heads=4, num_kv_heads=2)
ADAPTER_IDS = jnp.array([1, 0, 1])


def with_random_b(model, seed):
    """Every adapter with a non-zero ``b``, so each example's head differs."""
    is_lora = lambda n: isinstance(n, LoRA)
    adapters = [n for n in jax.tree.leaves(model, is_leaf=is_lora) if is_lora(n)]
    rng = np.random.default_rng(seed)
    new_b = [jnp.asarray(0.3 * rng.normal(size=a.b.shape), a.b.dtype) for a in adapters]
    where = lambda m: [n.b for n in jax.tree.leaves(m, is_leaf=is_lora) if is_lora(n)]
    return eqx.tree_at(where, model, new_b)


@pytest.fixture(scope="module")
def models():
    student = Transformer(TransformerConfig(hidden_size=32, **SIZES), key=jax.random.key(0))
    student = with_random_b(add_lora(student, rank=2, num_adapters=2, key=jax.random.key(1),
                                     targets=("q_proj", "lm_head")), 2)
    teacher = Transformer(TransformerConfig(hidden_size=48, tie_embeddings=True, **SIZES),
                          key=jax.random.key(3))
    return student, teacher


@pytest.fixture(scope="module")
def batch():
    # NumPy inputs: no eager JAX op (each a compile) to make them
    rng = np.random.default_rng(4)
    tokens = rng.integers(0, SIZES["vocab_size"], (3, 9)).astype(np.int32)
    targets = np.roll(tokens, -1, axis=1)
    mask = np.ones(tokens.shape, np.float32)
    mask[:, :2] = 0
    mask[0, -3:] = 0
    old = -3.9 + 0.3 * rng.normal(size=tokens.shape)
    ref = -3.9 + 0.3 * rng.normal(size=tokens.shape)
    advantages = rng.normal(size=(3,))
    return tuple(jnp.asarray(x, jnp.float32 if x.dtype == np.float64 else x.dtype)
                 for x in (tokens, targets, mask, old, ref, advantages))


def full_logprobs(model, tokens, adapter_ids=None):
    return jax.nn.log_softmax(model(tokens, adapter_ids=adapter_ids))


def test_token_stats_equal_full_logits(models, batch):
    student, _ = models
    tokens, targets = batch[:2]

    @eqx.filter_jit  # ours and the full-logits reference in one program
    def run(m):
        stats = token_stats(m, tokens, targets=targets, adapter_ids=ADAPTER_IDS, top_k=3,
                            chunk_size=7)
        logp = full_logprobs(m, tokens, ADAPTER_IDS)
        return (stats, jnp.take_along_axis(logp, targets[..., None], -1)[..., 0],
                -jnp.sum(jnp.exp(logp) * logp, -1), jax.lax.top_k(logp, 3))

    stats, picked, entropy, (top, top_ids) = run(student)
    np.testing.assert_allclose(stats.logprobs, picked, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(stats.entropy, entropy, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(stats.top_logprobs, top, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(stats.top_ids, top_ids)


def reference_policy_loss(model, tokens, targets, mask, old, ref, advantages):
    """PPO's clipped objective with a k3 KL and an entropy bonus, from full logits."""
    logp_all = full_logprobs(model, tokens, ADAPTER_IDS)
    logp = jnp.take_along_axis(logp_all, targets[..., None], -1)[..., 0]
    ratio = jnp.exp(logp - old)
    adv = advantages[:, None]
    surrogate = -jnp.minimum(ratio * adv, jnp.clip(ratio, 0.8, 1.2) * adv)
    k3 = jnp.exp(ref - logp) - 1 - (ref - logp)
    entropy = -jnp.sum(jnp.exp(logp_all) * logp_all, -1)
    per_token = surrogate + 0.1 * k3 - 0.01 * entropy
    return jnp.sum(per_token * mask) / jnp.sum(mask)


def test_policy_loss_and_its_gradient_equal_full_logits(models, batch):
    student, _ = models
    tokens, targets, mask, old, ref, advantages = batch

    def ours(model):
        return policy_loss(model, tokens, targets=targets, old_logprobs=old,
                           advantages=advantages, adapter_ids=ADAPTER_IDS, mask=mask,
                           clip_eps=0.2, ref_logprobs=ref, kl_coef=0.1, entropy_coef=0.01,
                           chunk_size=5).loss

    value, grads = eqx.filter_jit(eqx.filter_value_and_grad(ours))(student)
    want, want_grads = eqx.filter_jit(eqx.filter_value_and_grad(
        lambda m: reference_policy_loss(m, *batch)))(student)
    np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)
    for got, expected in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


def test_distill_forward_kl_and_student_gradient_equal_full_logits(models, batch):
    student, teacher = models
    tokens, mask = batch[0], batch[2]

    # The teacher is an argument, not a closure: a closed-over teacher is a compile-time
    # constant that XLA would fold (evaluate) while compiling.
    def reference(student, teacher):
        logp_s = full_logprobs(student, tokens, ADAPTER_IDS)
        logp_t = jax.lax.stop_gradient(full_logprobs(teacher, tokens))
        per_token = jnp.sum(jnp.exp(logp_t) * (logp_t - logp_s), -1)
        return jnp.sum(per_token * mask) / jnp.sum(mask)

    ours = lambda s, t: distill(s, t, tokens, adapter_ids=ADAPTER_IDS, mask=mask,
                                divergence="forward_kl", chunk_size=8)
    value, grads = eqx.filter_jit(eqx.filter_value_and_grad(ours))(student, teacher)
    want, want_grads = eqx.filter_jit(eqx.filter_value_and_grad(reference))(student, teacher)
    np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)
    for got, expected in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


def test_unknown_option_is_an_error(models, batch):
    student, _ = models
    with pytest.raises(TypeError, match="topk"):  # traced: no eager forward pass before it
        eqx.filter_jit(lambda m: token_stats(m, batch[0], targets=batch[1], topk=3))(student)


def _ignore_cases():
    from jaxlean.models.lm.transformer import loss
    config = TransformerConfig(vocab_size=16, hidden_size=8, intermediate_size=16, num_layers=1,
                               num_heads=2)
    teacher = Transformer(config, key=jax.random.key(7))
    # NumPy inputs: no eager JAX op (each a compile) to make them
    tokens = np.random.default_rng(8).integers(0, 16, (2, 5)).astype(np.int32)
    targets = np.roll(tokens, -1, axis=1)
    ignored = np.zeros((2, 5), bool)
    ignored[0, :2] = True
    keep = jnp.asarray((~ignored).astype(np.float32))
    old, adv = jnp.full((2, 5), -2.7), jnp.array([1.0, -0.5])
    labels = jnp.asarray(np.where(ignored, -100, targets))
    tokens, targets, ignored = jnp.asarray(tokens), jnp.asarray(targets), jnp.asarray(ignored)
    cases = {
        "loss": (lambda m, t: loss(m, tokens, targets=t),
                 lambda m: loss(m, tokens, targets=targets, weights=keep)),
        "token_stats": (lambda m, t: token_stats(m, tokens, targets=t).logprobs,
                        lambda m: jnp.where(ignored, 0, token_stats(m, tokens,
                                                                    targets=targets).logprobs)),
        "policy_loss": (lambda m, t: policy_loss(m, tokens, targets=t, old_logprobs=old,
                                                 advantages=adv).loss,
                        lambda m: policy_loss(m, tokens, targets=targets, old_logprobs=old,
                                                    advantages=adv, mask=keep).loss),
        "distill": (lambda m, t: distill(m, teacher, tokens, targets=t),
                    lambda m: distill(m, teacher, tokens, mask=keep)),
    }
    return config, labels, cases


@pytest.mark.parametrize("name", ["loss", "token_stats", "policy_loss", "distill"])
def test_minus_100_labels_and_out_of_range_targets(name):
    from jaxlean.errors import DataError
    config, labels, cases = _ignore_cases()
    got, want = cases[name]
    model = Transformer(config, key=jax.random.key(6))
    both = eqx.filter_jit(lambda m, t: (got(m, t), want(m)))
    value, expected = both(model, labels)
    np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)
    bad = np.array(labels)
    bad[1, 3] = 16
    bad = jnp.asarray(bad)
    assert np.all(np.isnan(both(model, bad)[0][1, 3] if value.ndim else both(model, bad)[0]))
    with pytest.raises(DataError, match=r" 16 at index \(1, 3\) is outside the vocabulary"):
        got(model, bad)

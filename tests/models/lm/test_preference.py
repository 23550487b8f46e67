"""DPO on the transformer: against full logits, with the reference a model, the policy's
own base weights (LoRA removed) or precomputed log-probs."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.lm.lora import LoRA, add_lora, is_lora_path
from jaxlean.models.lm.preference import dpo_loss, reference_logprobs, without_adapters
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

CONFIG = TransformerConfig(vocab_size=31, hidden_size=16, intermediate_size=24, num_layers=2,
                           num_heads=2, num_kv_heads=1)


@pytest.fixture(scope="module")
def setup():
    base = Transformer(CONFIG, key=jax.random.key(0))
    policy = add_lora(base, rank=2, key=jax.random.key(1), targets=("q_proj", "lm_head"))
    is_lora = lambda n: isinstance(n, LoRA)
    adapters = [n for n in jax.tree.leaves(policy, is_leaf=is_lora) if is_lora(n)]
    where = lambda m: [n.b for n in jax.tree.leaves(m, is_leaf=is_lora) if is_lora(n)]
    trained = eqx.tree_at(where, policy, [0.3 * jnp.ones_like(a.b) for a in adapters])
    # NumPy inputs: no eager JAX op (each a compile) to make them
    tokens = np.random.default_rng(2).integers(0, CONFIG.vocab_size, (4, 8)).astype(np.int32)
    targets = np.roll(tokens, -1, 1)
    targets[:, :3] = targets[:, -1] = -100
    targets[1, -3:] = -100  # a shorter chosen completion
    return base, policy, trained, jnp.asarray(tokens), jnp.asarray(targets)


def _full_logprobs(model, tokens, targets):
    logp = jax.nn.log_softmax(model(tokens))
    picked = jnp.take_along_axis(logp, jnp.maximum(targets, 0)[..., None], -1)[..., 0]
    return jnp.where(targets == -100, 0, picked)


def test_base_reference_is_the_base_model(setup):
    base, _, trained, tokens, targets = setup
    stripped = without_adapters(trained)
    assert not any(isinstance(n, LoRA) for n in jax.tree.leaves(stripped, is_leaf=lambda n:
                                                                  isinstance(n, LoRA)))
    assert stripped.embed is trained.embed  # the same arrays, no copy
    got, want = eqx.filter_jit(lambda s, b: (reference_logprobs(s, tokens, targets=targets),
                                             _full_logprobs(b, tokens, targets)))(stripped, base)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_fresh_adapters_start_at_log_2(setup):
    _, policy, _, tokens, targets = setup
    out = eqx.filter_jit(lambda m: dpo_loss(m, tokens, targets=targets, reference="base"))(policy)
    np.testing.assert_allclose(out.loss, np.log(2), rtol=1e-5)


LOSS_TYPES = ["sigmoid", "ipo"]


@pytest.fixture(scope="module")
def dpo_values_and_grads(setup):
    """Ours and the naive full-logits loss, value and gradients, for every loss type, in one
    compiled program (the naive one eagerly was one compile per operation)."""
    base, _, trained, tokens, targets = setup

    def ours(model, loss_type):
        return dpo_loss(model, tokens, targets=targets, reference="base", beta=0.2,
                        loss_type=loss_type,
                        chunk_size=5).loss

    def naive(model, loss_type):
        logps = jnp.sum(_full_logprobs(model, tokens, targets), -1)
        ref = jnp.sum(_full_logprobs(base, tokens, targets), -1)
        ratio = logps - jax.lax.stop_gradient(ref)
        if loss_type == "sigmoid":
            return jnp.mean(-jax.nn.log_sigmoid(0.2 * (ratio[:2] - ratio[2:])))
        n = jnp.sum(targets != -100, -1)
        return jnp.mean((ratio[:2] / n[:2] - ratio[2:] / n[2:] - 1 / 0.4) ** 2)

    return eqx.filter_jit(lambda m: {t: (eqx.filter_value_and_grad(ours)(m, t),
                                         eqx.filter_value_and_grad(naive)(m, t))
                                     for t in LOSS_TYPES})(trained)


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_dpo_loss_matches_full_logits_and_trains_only_adapters(dpo_values_and_grads, loss_type):
    (value, grads), (want, want_grads) = dpo_values_and_grads[loss_type]
    np.testing.assert_allclose(value, want, rtol=1e-5)
    for path, g in jax.tree_util.tree_leaves_with_path(grads):
        if is_lora_path(path):  # the adapters learn
            assert float(np.abs(np.asarray(g)).max()) > 0, path
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4,
                                   atol=1e-5 * max(float(np.abs(np.asarray(b)).max()), 1))


def test_reference_model_is_a_constant(setup):
    """A reference that is the policy itself gets no gradient: the same as precomputed."""
    _, _, trained, tokens, targets = setup

    @eqx.filter_jit  # both gradients in one program
    def both(m):
        ref = reference_logprobs(trained, tokens, targets=targets)
        by_model = eqx.filter_grad(
            lambda m: dpo_loss(m, tokens, targets=targets, reference=trained).loss)
        by_logprobs = eqx.filter_grad(
            lambda m: dpo_loss(m, tokens, targets=targets, ref_logprobs=ref).loss)
        return by_model(m), by_logprobs(m)

    with_model, with_logprobs = both(trained)
    for a, b in zip(jax.tree.leaves(with_model), jax.tree.leaves(with_logprobs), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def test_reference_must_be_given_once(setup):
    _, policy, _, tokens, targets = setup
    with pytest.raises(ConfigError, match="exactly one of reference="):
        dpo_loss(policy, tokens, targets=targets)
    with pytest.raises(ConfigError, match="exactly one of reference="):
        dpo_loss(policy, tokens, targets=targets, reference="base", ref_logprobs=jnp.zeros(4))
    with pytest.raises(ConfigError, match="reference must be a model or 'base', got 'ref'"):
        dpo_loss(policy, tokens, targets=targets, reference="ref")

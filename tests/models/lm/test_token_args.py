"""One label convention and safe packed batches (issue 50): each test fails on the old API.

- A packed :class:`Batches` batch passed whole (``loss(model, **batch)``,
  ``step(model, state, **batch)``) gives the unpacked loss; it refuses to give an
  ``attention_mask`` (a mask alone let its sequences attend to each other).
- ``position_ids=`` (Hugging Face's padding-free batches) keeps packed sequences apart.
- Every token loss takes ``labels=`` (unshifted) or ``targets=`` (shifted) by keyword:
  ``dpo_loss`` and ``policy_loss`` refuse a positional one and agree across the two.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.data import IGNORE_INDEX, Batches, Example
from jaxlean.models.lm.heads import policy_loss
from jaxlean.models.lm.preference import dpo_loss
from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss
from jaxlean.train.step import make_train_step

VOCAB = 32


def examples(count=7, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        ids = rng.integers(0, VOCAB, int(rng.integers(3, 10))).astype(np.int32)
        labels = ids.copy()
        labels[:int(rng.integers(0, len(ids) - 2))] = IGNORE_INDEX
        out.append(Example(ids, labels, f"example {i}"))
    return out


@pytest.fixture(scope="module")
def model():
    config = TransformerConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32,
                               num_layers=2, num_heads=4, num_kv_heads=2)
    return Transformer(config, key=jax.random.key(0))


def batches(packing):
    data = examples()
    return next(Batches(data, batch_size=len(data), seq_length=24 if packing else 10,
                        pad_id=0, packing=packing, shuffle=False))


@eqx.filter_jit
def _loss(model, batch):
    """``loss(model, **batch)``, compiled (one program per batch layout, not op by op)."""
    return loss(model, **batch)


def test_a_packed_batch_passed_whole_gives_the_unpacked_loss(model):
    packed, padded = batches(True), batches(False)
    assert len(packed["input_ids"]) < len(padded["input_ids"]) or (
        packed["segment_ids"].max() > 1)
    want = _loss(model, dict(padded))
    np.testing.assert_allclose(_loss(model, dict(packed)), want, rtol=1e-5)
    # the same batch through a jitted train step, whole
    tx = optax.sgd(0.0)
    step = make_train_step(loss, tx)
    _, _, value = step(model, tx.init(model), **jax.tree.map(jnp.asarray, packed))
    np.testing.assert_allclose(value, want, rtol=1e-5)


def test_a_packed_batch_refuses_to_give_an_attention_mask():
    packed = batches(True)
    with pytest.raises(DataError, match="segment_ids"):
        packed["attention_mask"]
    assert "attention_mask" not in packed
    assert "attention_mask" in batches(False)


def test_position_ids_restarting_keep_packed_sequences_apart(model):
    packed, padded = batches(True), batches(False)
    want = _loss(model, dict(padded))
    got = _loss(model, dict(input_ids=packed["input_ids"], labels=packed["labels"],
                            position_ids=packed["positions"]))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # the ids and labels alone cross-attend and give another number
    crossed = _loss(model, dict(input_ids=packed["input_ids"], labels=packed["labels"]))
    assert abs(float(crossed) - float(want)) > 1e-4
    with pytest.raises(ConfigError, match="positions= or position_ids="):
        loss(model, input_ids=packed["input_ids"], labels=packed["labels"],
             positions=packed["positions"], position_ids=packed["positions"])


def _pairs():
    rng = np.random.default_rng(3)
    ids = jnp.asarray(rng.integers(0, VOCAB, (4, 8)), jnp.int32)  # 2 chosen, 2 rejected
    labels = ids.at[:, :3].set(IGNORE_INDEX)  # Hugging Face's: aligned with ids, -100 prompt
    targets = jnp.concatenate([labels[:, 1:], jnp.full((4, 1), IGNORE_INDEX)], axis=1)
    return ids, labels, targets


def test_dpo_loss_takes_labels_or_targets_by_keyword(model):
    ids, labels, targets = _pairs()
    reference = jax.tree.map(lambda x: x * 1.01 if eqx_float(x) else x, model)
    with pytest.raises(ConfigError, match="by keyword"):
        dpo_loss(model, ids, labels, reference=reference)

    @eqx.filter_jit
    def losses(model, reference):  # one program
        return (dpo_loss(model, ids, labels=labels, reference=reference, beta=0.5),
                dpo_loss(model, ids, targets=targets, reference=reference, beta=0.5),
                # unshifted labels taken for targets score other tokens: another loss
                dpo_loss(model, ids, targets=labels, reference=reference, beta=0.5))

    by_labels, by_targets, misread = losses(model, reference)
    np.testing.assert_allclose(by_labels.loss, by_targets.loss, rtol=1e-6)
    assert abs(float(misread.loss) - float(by_labels.loss)) > 1e-4


def test_policy_loss_takes_labels_or_targets_by_keyword(model):
    ids, labels, targets = _pairs()
    old = jnp.full(ids.shape, -3.0)
    adv = jnp.array([1.0, -1.0, 0.5, -0.5])
    with pytest.raises(ConfigError, match="by keyword"):
        policy_loss(model, ids, targets, old_logprobs=old, advantages=adv)
    by_targets, by_labels = eqx.filter_jit(lambda model: (  # one program
        policy_loss(model, ids, targets=targets, old_logprobs=old, advantages=adv),
        policy_loss(model, ids, labels=labels, old_logprobs=old, advantages=adv)))(model)
    np.testing.assert_allclose(by_labels.loss, by_targets.loss, rtol=1e-6)


def eqx_float(x):
    return isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.floating)


def test_logprobs_and_token_stats_take_labels_or_targets_by_keyword(model):
    from jaxlean.models.lm.causal_loss import logprobs
    from jaxlean.models.lm.heads import token_stats
    ids, labels, targets = _pairs()
    for name, f in (("logprobs", logprobs), ("token_stats", token_stats)):
        with pytest.raises(ConfigError, match=f"{name} takes the ids to predict by keyword"):
            f(model, ids, targets)
        with pytest.raises(ConfigError, match="got both"):
            f(model, ids, labels=labels, targets=targets)

    @eqx.filter_jit
    def scores(model):  # one program
        def total(m, **given):
            return (jnp.sum(logprobs(m, ids, **given))
                    + jnp.sum(token_stats(m, ids, **given).logprobs))

        return (eqx.filter_value_and_grad(lambda m: total(m, labels=labels))(model),
                eqx.filter_value_and_grad(lambda m: total(m, targets=targets))(model),
                total(model, targets=labels))

    (by_labels, g_labels), (by_targets, g_targets), misread = scores(model)
    np.testing.assert_allclose(by_labels, by_targets, rtol=1e-6)
    assert abs(float(misread) - float(by_targets)) > 1e-3
    leaves = jax.tree.leaves(g_targets)
    assert any(np.any(np.asarray(g) != 0) for g in leaves)
    for a, b in zip(jax.tree.leaves(g_labels), leaves, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)

"""Gradient accumulation: micro-batches give exactly the full batch's loss, gradient and update."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.causal_loss import logprobs, loss, loss_tokens
from jaxlean.models.lm.heads import policy_loss
from jaxlean.models.lm.tokens import count_tokens
from jaxlean.models.lm.transformer import Transformer, TransformerConfig
from jaxlean.train.accumulate import join_micro_batches, split_micro_batches
from jaxlean.train.step import make_train_step

CONFIG = TransformerConfig(vocab_size=37, hidden_size=16, intermediate_size=32, num_layers=2,
                           num_heads=2, num_kv_heads=1)


@pytest.fixture(scope="module")
def model():
    return Transformer(CONFIG, key=jax.random.key(0))


@pytest.fixture(scope="module")
def batch():
    """8 rows of 10 tokens, real lengths 10 down to 2 (right padding), labels -100 on the
    padding and on a prompt of varying length: micro-batches hold very different counts
    of labelled tokens, whichever rows each gets."""
    rng = np.random.default_rng(0)
    ids = rng.integers(3, CONFIG.vocab_size, size=(8, 10))
    lengths = np.array([10, 2, 9, 3, 8, 10, 4, 2])
    prompts = np.array([1, 0, 5, 1, 2, 0, 1, 1])
    position = np.arange(10)
    attention = position < lengths[:, None]
    ids = np.where(attention, ids, 0)
    labels = np.where(attention & (position >= prompts[:, None]), ids, -100)
    return jnp.asarray(ids), jnp.asarray(labels), jnp.asarray(attention)


def _run(model, batch, **options):
    ids, labels, attention = batch
    tx = optax.sgd(0.5)
    step = make_train_step(loss, tx, donate=False, metrics=True, count_tokens=count_tokens,
                           **options)
    new, _, metrics = step(model, tx.init(model), ids, labels=labels, attention_mask=attention)
    return new, metrics


@pytest.fixture(scope="module")
def full_batch(model, batch):
    """The whole batch's update and metrics: one compile for the tests that compare to it."""
    return _run(model, batch)


def _close(got, want, atol):
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=atol)


@pytest.mark.parametrize("k", [2, 4, 8])
def test_micro_batches_equal_the_full_batch_update(model, batch, full_batch, k):
    full, full_metrics = full_batch
    micro, metrics = _run(model, batch, micro_batches=k, loss_weight=loss_tokens)
    _close(micro, full, 1e-6)
    np.testing.assert_allclose(metrics.loss, full_metrics.loss, rtol=1e-6)
    np.testing.assert_allclose(metrics.grad_norm, full_metrics.grad_norm, rtol=1e-5)
    assert int(metrics.tokens) == int(full_metrics.tokens) == int(batch[2].sum())


def test_equal_weights_would_not_be_exact(model, batch, full_batch):
    """The test above can fail: averaging the micro-batches' means is another update."""
    full, _ = full_batch
    equal, _ = _run(model, batch, micro_batches=4, loss_weight=lambda *a, **k: 1.0)
    gap = max(np.max(np.abs(np.asarray(a) - np.asarray(b)))
              for a, b in zip(jax.tree.leaves(equal), jax.tree.leaves(full), strict=True))
    assert gap > 1e-4


def test_packed_rows_with_segment_ids(model, batch):
    """Segment ends carry no target: loss_tokens counts what loss averages over."""
    ids, labels, attention = batch
    segments = np.where(attention, 1 + (np.arange(10) >= 5), 0)  # NumPy: no eager programs
    tx = optax.sgd(0.5)
    steps = [make_train_step(loss, tx, donate=False, **options)
             for options in ({}, dict(micro_batches=4, loss_weight=loss_tokens))]
    (full, _, value), (micro, _, micro_value) = (
        step(model, tx.init(model), ids, labels=labels, attention_mask=attention,
             segment_ids=segments) for step in steps)
    _close(micro, full, 1e-6)
    np.testing.assert_allclose(micro_value, value, rtol=1e-6)


def test_loss_tokens_counts_what_the_loss_divides_by(batch):
    ids, labels, _ = batch
    assert int(loss_tokens(ids, labels=labels)) == int((labels[:, 1:] != -100).sum())
    weights = jnp.linspace(0.0, 1.0, ids.size).reshape(ids.shape)
    np.testing.assert_allclose(loss_tokens(ids, targets=labels, weights=weights),
                               jnp.where(labels != -100, weights, 0).sum(), rtol=1e-6)
    with pytest.raises(ConfigError, match=r"labels=.*targets="):
        loss_tokens(ids)


def _grpo_loss(model, tokens, targets, old, advantages, *, mask):
    out = policy_loss(model, tokens, targets=targets, old_logprobs=old, advantages=advantages,
                      mask=mask, kl_coef=0.1,
                      ref_logprobs=old - 0.05)
    return out.loss, out


def test_aux_scalars_are_weighted_and_rows_rejoined(model, batch):
    ids, _, attention = batch
    # made in NumPy: eager jnp operations would each compile a program
    targets = np.roll(ids, -1, axis=1)
    mask = np.asarray(attention).copy()
    mask[:, -1] = False
    mask = mask.astype(np.float32)
    old = -3.6 + 0.1 * np.sin(np.arange(ids.size, dtype=np.float32)).reshape(ids.shape)
    advantages = np.linspace(-1.0, 1.0, ids.shape[0], dtype=np.float32)
    tx = optax.sgd(0.5)
    outs = []
    for options in ({}, dict(micro_batches=4, loss_weight=lambda *a, mask: mask.sum())):
        step = make_train_step(_grpo_loss, tx, donate=False, has_aux=True, **options)
        outs.append(step(model, tx.init(model), ids, targets, old, advantages, mask=mask))
    (full, _, (value, stats)), (micro, _, (micro_value, micro_stats)) = outs
    _close(micro, full, 1e-6)
    np.testing.assert_allclose(micro_value, value, rtol=1e-6, atol=1e-7)
    for name in ("policy_loss", "kl", "entropy", "clip_fraction"):
        np.testing.assert_allclose(getattr(micro_stats, name), getattr(stats, name),
                                   rtol=1e-5, atol=1e-7, err_msg=name)
    np.testing.assert_allclose(micro_stats.logprobs, stats.logprobs, rtol=0, atol=1e-6)


def test_one_compiled_scan_whatever_the_count(model, batch):
    ids, labels, attention = batch
    tx = optax.sgd(0.5)
    sizes = []
    for k in (2, 8):
        step = make_train_step(loss, tx, micro_batches=k, loss_weight=loss_tokens)
        text = step.lower(model, tx.init(model), ids, labels=labels,
                          attention_mask=attention).as_text()
        assert "while" in text
        sizes.append(len(text))
    assert abs(sizes[1] - sizes[0]) < 0.05 * sizes[0], sizes


def test_bad_micro_batches_are_refused(model, batch):
    ids, labels, attention = batch
    tx = optax.sgd(0.5)
    with pytest.raises(ConfigError, match="loss_weight="):
        make_train_step(loss, tx, micro_batches=2)
    with pytest.raises(ConfigError, match="micro_batches"):
        make_train_step(loss, tx, micro_batches=0, loss_weight=loss_tokens)
    step = make_train_step(loss, tx, micro_batches=3, loss_weight=loss_tokens)
    with pytest.raises(DataError, match=r"micro_batches=3 must divide the batch: batch\[0\]"):
        step(model, tx.init(model), ids, labels=labels, attention_mask=attention)
    step = make_train_step(loss, tx, micro_batches=2, loss_weight=loss_tokens)
    with pytest.raises(DataError, match=r"attention_mask'\] has 4 rows"):
        step(model, tx.init(model), ids, labels=labels, attention_mask=attention[:4])


def test_split_takes_strided_rows_and_join_undoes_it():
    x = jnp.arange(12).reshape(6, 2)
    parts = split_micro_batches({"x": x, "t": jnp.float32(2.0)}, 3)
    np.testing.assert_array_equal(parts["x"][1], x[1::3])
    assert parts["t"].shape == ()
    np.testing.assert_array_equal(join_micro_batches(parts["x"]), x)


@pytest.fixture(scope="module")
def whole_logprobs(model, batch):
    """Targets and the whole batch's logprobs, one program for both parametrizations below."""
    ids, _, attention = batch
    targets = np.roll(ids, -1, axis=1)
    targets[:, -1] = -100
    return targets, jax.jit(logprobs)(model, ids, targets=targets, attention_mask=attention)


@pytest.mark.parametrize("k", [2, 4])
def test_logprobs_in_micro_batches_equal_the_whole_batch(model, batch, whole_logprobs, k):
    ids, _, attention = batch
    targets, whole = whole_logprobs
    micro = jax.jit(functools.partial(logprobs, micro_batches=k))(
        model, ids, targets=targets, attention_mask=attention)
    np.testing.assert_allclose(micro, whole, rtol=0, atol=1e-6)
    with pytest.raises(DataError, match="micro_batches=3"):
        logprobs(model, ids, targets=targets, micro_batches=3)


# run on 4 devices by tests/train/test_four_devices.py, with the other trainers' checks
MESH_SCRIPT = """
import jax, jax.numpy as jnp, numpy as np, optax
from jax.sharding import NamedSharding, PartitionSpec as P
from jaxlean.models.lm.causal_loss import loss, loss_tokens
from jaxlean.models.lm.transformer import Transformer, TransformerConfig
from jaxlean.parallel.mesh import make_mesh, shard_batch
from jaxlean.train.step import make_train_step

config = TransformerConfig(vocab_size=37, hidden_size=16, intermediate_size=32, num_layers=1,
                           num_heads=2, num_kv_heads=1)
mesh = make_mesh(data=4)
model = jax.device_put(Transformer(config, key=jax.random.key(0)), NamedSharding(mesh, P()))
rng = np.random.default_rng(0)
ids = rng.integers(0, 37, size=(16, 8))
labels = np.where(np.arange(8) < rng.integers(1, 9, size=(16, 1)), ids, -100)
ids, labels = shard_batch((ids, labels), mesh)
tx = optax.sgd(0.5)
out = []
for options in ({}, dict(micro_batches=2, loss_weight=loss_tokens)):
    step = make_train_step(loss, tx, donate=False, **options)
    out.append(step(model, tx.init(model), ids, labels=labels)[0])
    hlo = step.lower(model, tx.init(model), ids, labels=labels).compile().as_text()
    # the batch stays split over the devices: no micro-batch is gathered
    assert "all-gather" not in hlo and "all-to-all" not in hlo, options
for a, b in zip(jax.tree.leaves(out[0]), jax.tree.leaves(out[1])):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-6)
print("ok")
"""

"""Packed rows give the unpacked loss and gradients: segments attend to themselves only."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import DataError
from jaxlean.models.lm.data import IGNORE_INDEX, Example, collate, pack
from jaxlean.models.lm.transformer import (
    Transformer,
    TransformerConfig,
    loss,
    positions_from_segments,
)

VOCAB = 32


def examples(count=9, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        ids = rng.integers(0, VOCAB, int(rng.integers(2, 12))).astype(np.int32)
        labels = ids.copy()
        labels[:int(rng.integers(0, len(ids) - 1))] = IGNORE_INDEX  # a prompt, not learned
        out.append(Example(ids, labels, f"example {i}"))
    return out


def model(**options):
    config = TransformerConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32,
                               num_layers=2, num_heads=4, num_kv_heads=2, qk_norm=True,
                               **options)
    return Transformer(config, key=jax.random.key(0))


@eqx.filter_jit
@eqx.filter_value_and_grad
def _loss(m, input_ids, labels, keys):
    return loss(m, input_ids, labels=labels, **keys)


def loss_and_grads(m, batch, **keys):
    return _loss(m, jnp.asarray(batch["input_ids"]), jnp.asarray(batch["labels"]),
                 {k: jnp.asarray(batch[k]) for k in keys})


@pytest.mark.parametrize("options", [{}, {"sliding_window": 3}])
def test_packed_and_unpacked_batches_give_the_same_loss_and_gradients(options):
    data, m = examples(), model(**options)
    padded = collate(data, [[i] for i in range(len(data))], 12, pad_id=0, packed=False)
    packing = pack(data, 24)
    assert len(packing.rows) < len(data)
    packed = collate(packing.examples, packing.rows, 24, pad_id=0, packed=True)
    value, grads = loss_and_grads(m, padded, attention_mask=None)
    packed_value, packed_grads = loss_and_grads(m, packed, segment_ids=None)
    np.testing.assert_allclose(packed_value, value, rtol=1e-6, atol=1e-6)
    for got, want in zip(jax.tree.leaves(packed_grads), jax.tree.leaves(grads), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # without the segment ids the packed sequences see each other: another loss
    unsegmented = eqx.filter_jit(lambda m, ids, labels: loss(m, ids, labels=labels))(
        m, jnp.asarray(packed["input_ids"]), jnp.asarray(packed["labels"]))  # not op by op
    assert abs(float(unsegmented) - float(value)) > 1e-3


def test_the_loss_drops_labels_across_a_boundary_itself():
    data, m = examples(), model()
    packing = pack(data, 24)
    packed = collate(packing.examples, packing.rows, 24, pad_id=0, packed=True)
    raw = collate(packing.examples, packing.rows, 24, pad_id=0, packed=False)
    assert (raw["labels"] != packed["labels"]).any()  # the first labels of later segments
    np.testing.assert_allclose(loss_and_grads(m, raw, segment_ids=None)[0],
                               loss_and_grads(m, packed, segment_ids=None)[0], rtol=1e-6)


def test_positions_restart_in_each_segment_and_bad_ids_are_refused():
    segments = jnp.asarray([[0, 0, 1, 1, 1, 2, 2, 0], [1, 1, 1, 1, 2, 3, 3, 3]])
    np.testing.assert_array_equal(positions_from_segments(segments),
                                  [[0, 1, 0, 1, 2, 0, 1, 0], [0, 1, 2, 3, 0, 0, 1, 2]])
    m, ids = model(), jnp.zeros((2, 8), jnp.int32)
    with pytest.raises(DataError, match=r"segment_ids must have the input ids' shape \(2, 8\)"):
        m(ids, segment_ids=segments[:, :4])
    with pytest.raises(DataError, match="segment_ids must be integers"):
        m(ids, segment_ids=segments.astype(jnp.float32))

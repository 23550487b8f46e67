"""The transformer's ``attention`` option: flash equals dense at the model level; auto's choice."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.lm import layers
from jaxlean.models.lm.attention import AUTO_FLASH_LENGTH, choose_attention, cudnn_attention
from jaxlean.models.lm.hf import load_pretrained
from jaxlean.models.lm.layers import attend
from jaxlean.models.lm.transformer import (
    STRUCTURE_OPTIONS,
    Transformer,
    TransformerConfig,
    logprobs,
    loss,
)
from jaxlean.nn.attention_mask import AttentionMask
from jaxlean.nn.flash import flash_attention

FIXTURES = Path(__file__).parent / "fixtures"
CONFIG = TransformerConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_layers=2,
                           num_heads=4, num_kv_heads=2, sliding_window=7)


def _batch(length: int = 23):
    rng = np.random.default_rng(0)
    tokens = jnp.asarray(rng.integers(0, CONFIG.vocab_size, (2, length)))
    mask = jnp.asarray(np.arange(length)[None] >= np.array([[4], [0]]))  # row 0 left-padded
    segments = jnp.asarray(np.repeat([[1, 2, 3], [1, 1, 2]], [9, 8, length - 17], axis=1))
    return tokens, mask, segments


@pytest.mark.parametrize("inputs", ["plain", "attention_mask", "segment_ids"])
def test_model_with_flash_equals_dense(inputs, monkeypatch):
    calls = []

    def counted(*args, **kwargs):
        calls.append(kwargs)
        return flash_attention(*args, **kwargs)

    monkeypatch.setattr(layers, "flash_attention", counted)
    model = Transformer(CONFIG, key=jax.random.key(0))
    tokens, mask, segments = _batch()
    kwargs = {"plain": {}, "attention_mask": {"attention_mask": mask},
              "segment_ids": {"segment_ids": segments}}[inputs]
    dense = model.with_options(attention="dense")
    flash = model.with_options(attention="flash", attention_tile=8)

    @jax.jit
    def outputs(m):
        targets = jnp.roll(tokens, -1, axis=1)
        value, grads = jax.value_and_grad(loss)(m, tokens, targets=targets, **kwargs)
        return m(tokens, **kwargs), value, grads

    want = outputs(dense)
    assert not calls
    got = outputs(flash)
    assert calls and all(call == {"q_tile": 8, "k_tile": 8} for call in calls)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    for a, b in zip(jax.tree.leaves(got[2]), jax.tree.leaves(want[2]), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", ["llama", "mistral", "qwen3_tied"])
def test_hugging_face_parity_holds_with_flash(family):
    """The committed transformers outputs (left-padded batch) through flash attention."""
    model, _, _ = load_pretrained(FIXTURES / family)
    model = model.with_options(attention="flash", attention_tile=4)
    want = np.load(FIXTURES / family / "expected.npz")
    tokens, mask = jnp.asarray(want["tokens"]), jnp.asarray(want["mask"])
    logits = jax.jit(lambda m: m(tokens, attention_mask=mask))(model)
    logp = jax.jit(lambda m: logprobs(m, tokens[:, :-1], targets=tokens[:, 1:],
                                      attention_mask=mask[:, :-1]))(model)
    real = np.asarray(mask)
    np.testing.assert_allclose(np.asarray(logits)[real], want["logits"][real], atol=1e-4,
                               rtol=1e-4)
    np.testing.assert_allclose(np.asarray(logp)[real[:, :-1]], want["logprobs"][real[:, :-1]],
                               atol=1e-4, rtol=1e-4)


def test_attention_options_are_structure_options_and_checked():
    assert {"attention", "attention_tile"} <= set(STRUCTURE_OPTIONS)
    assert CONFIG.attention == "auto"
    model = Transformer(CONFIG, key=jax.random.key(0))
    assert model.with_options(attention="flash").config.attention == "flash"
    with pytest.raises(ConfigError, match=r"attention='fast'.*'auto', 'dense', 'flash'"):
        TransformerConfig(**{**vars(CONFIG), "attention": "fast"})
    with pytest.raises(ConfigError, match="attention_tile"):
        model.with_options(attention_tile=0)


def test_auto_picks_dense_for_short_inputs_and_flash_for_long_ones_on_cpu():
    def shaped(length):
        return jax.ShapeDtypeStruct((1, length, 4, 8), jnp.float32)

    mask = AttentionMask()
    short, long = shaped(AUTO_FLASH_LENGTH - 1), shaped(AUTO_FLASH_LENGTH)
    if jax.default_backend() == "cpu":
        assert choose_attention("auto", short, short, mask) == "dense"
        assert choose_attention("auto", long, long, mask) == "flash"
    assert choose_attention("dense", long, long, mask) == "dense"
    assert choose_attention("flash", short, short, mask) == "flash"


def test_cudnn_is_refused_where_it_cannot_run():
    """float32 queries: cuDNN's fused attention takes bf16/fp16 only (and needs a GPU)."""
    model = Transformer(CONFIG, key=jax.random.key(0)).with_options(attention="cudnn")
    tokens, _, _ = _batch()
    with pytest.raises(ConfigError, match='attention="cudnn" cannot run here'):
        model(tokens)


@pytest.mark.parametrize("window", [None, 5])
def test_the_cudnn_call_computes_the_causal_windowed_mask(window):
    """The same ``dot_product_attention`` call, through XLA: cuDNN gets the right window."""
    rng = np.random.default_rng(0)
    q = jnp.asarray(rng.normal(size=(2, 19, 4, 8)), jnp.float32)
    k, v = (jnp.asarray(rng.normal(size=(2, 19, 2, 8)), jnp.float32) for _ in range(2))
    mask = AttentionMask(window=window)
    got = cudnn_attention(q, k, v, mask, implementation="xla")
    np.testing.assert_allclose(got, attend(q, k, v, mask.dense(19, 19)), rtol=1e-5, atol=1e-6)

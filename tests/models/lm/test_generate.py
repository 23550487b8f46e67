"""KV-cache decoding against full forward passes, with left padding and LoRA adapters."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.generate import decode_step, generate, prefill, sample
from jaxlean.models.lm.lora import add_lora
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

CONFIG = TransformerConfig(vocab_size=47, hidden_size=32, intermediate_size=40, num_layers=2,
                           num_heads=4, num_kv_heads=2, qk_norm=True)
PROMPT = 4


@pytest.fixture(scope="module")
def model():
    base = Transformer(CONFIG, key=jax.random.key(0))
    adapted = add_lora(base, rank=2, num_adapters=2, key=jax.random.key(1),
                       targets=("q_proj", "v_proj", "down_proj", "lm_head"))
    rng = np.random.default_rng(0)  # non-zero b so the adapters matter
    return jax.tree.map(lambda x: jnp.asarray(x + 0.2 * rng.normal(size=x.shape), x.dtype)
                        if x.ndim >= 3 and x.shape[-2] == 2 else x, adapted)


@pytest.fixture(scope="module")
def batch():
    tokens = jax.random.randint(jax.random.key(2), (3, 7), 0, CONFIG.vocab_size)
    # Row 1 has two pad tokens on the left, row 2 has one.
    mask = jnp.ones(tokens.shape, bool).at[1, :2].set(False).at[2, 0].set(False)
    return tokens, mask, jnp.array([0, 1, 1])


@pytest.fixture(scope="module")
def logits(model, batch):
    """Full-forward and step-by-step logits, computed in one compiled function."""
    tokens, mask, ids = batch

    @eqx.filter_jit
    def run(model):
        full = model(tokens, mask=mask, adapter_ids=ids)
        alone = model(tokens[1:2, 2:], adapter_ids=ids[1:2])  # row 1 without its pads
        step, cache = prefill(model, tokens[:, :PROMPT], mask[:, :PROMPT],
                              max_length=tokens.shape[1], adapter_ids=ids)
        steps = [step]
        for t in range(PROMPT, tokens.shape[1] - 1):
            step, cache = decode_step(model, cache, tokens[:, t], ids)
            steps.append(step)
        return full, alone, jnp.stack(steps, axis=1)

    return run(model)


def test_step_by_step_logits_equal_full_forward(logits):
    full, _, stepped = logits
    np.testing.assert_allclose(stepped, full[:, PROMPT - 1:-1], rtol=1e-4, atol=1e-4)


def test_left_padding_does_not_change_a_row(logits):
    full, alone, _ = logits
    np.testing.assert_allclose(full[1, 2:], alone[0], rtol=1e-4, atol=1e-4)


def test_greedy_generate_equals_argmax_of_full_forward(model, batch):
    tokens, mask, ids = batch
    prompt, prompt_mask = tokens[:, :PROMPT], mask[:, :PROMPT]
    out = generate(model, prompt, prompt_mask, max_new_tokens=3, adapter_ids=ids)
    # Greedy means: each new token is the argmax of a full forward pass over everything before it.
    seq = jnp.concatenate([prompt, out], axis=1)
    seq_mask = jnp.concatenate([prompt_mask, jnp.ones(out.shape, bool)], axis=1)
    logits = eqx.filter_jit(lambda m: m(seq, mask=seq_mask, adapter_ids=ids))(model)
    np.testing.assert_array_equal(out, jnp.argmax(logits[:, PROMPT - 1:-1], axis=-1))
    # With an end-of-sequence id, a row repeats it once emitted and is unchanged before.
    eos = int(out[0, 0])
    stopped = np.asarray(generate(model, prompt, prompt_mask, max_new_tokens=3,
                                  adapter_ids=ids, eos_id=eos))
    for row, want in zip(stopped, np.asarray(out), strict=True):
        first = int(np.argmax(want == eos)) if (want == eos).any() else len(want)
        np.testing.assert_array_equal(row[:first + 1], want[:first + 1])
        assert (row[first:] == eos).all()


def test_top_k_sampling_stays_in_top_k():
    logits = jnp.asarray(np.random.default_rng(0).normal(size=(4, 30)), jnp.float32)
    draws = jax.jit(jax.vmap(lambda key: sample(logits, key, temperature=2.0, top_k=3)))(
        jax.random.split(jax.random.key(0), 200))
    allowed = np.argsort(-np.asarray(logits), axis=-1)[:, :3]
    for row in range(4):
        assert set(np.asarray(draws[:, row]).tolist()) == set(allowed[row].tolist())


def test_bad_generation_inputs(model, batch):
    tokens = batch[0]
    with pytest.raises(DataError, match="token id 47"):
        generate(model, tokens.at[0, 0].set(47), max_new_tokens=2)
    with pytest.raises(ConfigError, match="needs a PRNG key"):
        generate(model, tokens, max_new_tokens=2, temperature=1.0)
    with pytest.raises(ConfigError, match="top_k"):
        generate(model, tokens, max_new_tokens=2, temperature=1.0, top_k=0,
                 key=jax.random.key(0))

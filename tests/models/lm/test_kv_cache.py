"""The prompt pass and decoding steps: blockwise (flash) attention over the cache, in chunks,
against dense attention in one pass, on left-padded prompts and a sliding window."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.lm.generate import generate, greedy_program
from jaxlean.models.lm.kv_cache import decode_step, prefill
from jaxlean.models.lm.layers import attend
from jaxlean.models.lm.transformer import Transformer, TransformerConfig
from jaxlean.nn.attention_mask import AttentionMask
from jaxlean.nn.flash import dividing_tile, flash_attention_cached

CONFIG = dict(vocab_size=53, hidden_size=32, intermediate_size=40, num_layers=2, num_heads=4,
              num_kv_heads=2, attention_tile=4)


def _batch(length: int, pads: tuple[int, ...], seed: int = 0):
    tokens = jax.random.randint(jax.random.key(seed), (len(pads), length), 0, 53)
    mask = jnp.arange(length)[None] >= jnp.asarray(pads)[:, None]
    return tokens, mask


def _run(model, tokens, mask, prompt: int, chunk):
    """Prefill ``prompt`` tokens then decode the rest one by one: every step's logits, and the
    cache's keys at the end."""

    @eqx.filter_jit
    def run(model):
        logits, cache = prefill(model, tokens[:, :prompt], mask[:, :prompt],
                                max_length=tokens.shape[1] + 4, prefill_chunk=chunk)
        steps = [logits]
        for t in range(prompt, tokens.shape[1]):
            logits, cache = decode_step(model, cache, tokens[:, t])
            steps.append(logits)
        return jnp.stack(steps, axis=1), cache

    return run(model)


@pytest.mark.parametrize("window", [None, 5])
def test_flash_chunked_prefill_equals_dense_single_pass(window):
    """Float32: blockwise attention in chunks of 4 (a remainder of 2 first, tiles of 4 over 16
    slots) against the dense [T, S] scores in one pass; rows left-padded by 0, 2 and 9."""
    model = Transformer(TransformerConfig(**CONFIG, sliding_window=window), key=jax.random.key(1))
    tokens, mask = _batch(12, (0, 2, 9))
    flash, flash_cache = _run(model.with_options(attention="flash"), tokens, mask, 10, 4)
    dense, dense_cache = _run(model.with_options(attention="dense"), tokens, mask, 10, None)
    np.testing.assert_allclose(flash, dense, rtol=2e-5, atol=2e-5)
    written = np.asarray(dense_cache.valid)  # what the pads hold is never read
    keys = np.moveaxis(np.asarray(flash_cache.keys), 3, 2)[:, written]
    np.testing.assert_allclose(keys, np.moveaxis(np.asarray(dense_cache.keys), 3, 2)[:, written],
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(flash_cache.valid, dense_cache.valid)
    # and both equal one full forward pass of each row (its real tokens only)
    full = model(tokens, attention_mask=mask)
    np.testing.assert_allclose(flash, full[:, 9:], rtol=2e-5, atol=2e-5)


def test_generate_flash_equals_dense_tokens_and_logprobs():
    model = Transformer(TransformerConfig(**CONFIG), key=jax.random.key(2))
    rng = np.random.default_rng(3)
    prompts = [rng.integers(0, 53, size=n).tolist() for n in (13, 5, 1)]
    options = dict(max_new_tokens=[6, 9, 4], prefill_chunk=4, prompt_buckets="exact")
    flash = generate(model.with_options(attention="flash"), prompts, **options)
    dense = generate(model.with_options(attention="dense"), prompts, **options)
    np.testing.assert_array_equal(flash.tokens, dense.tokens)
    np.testing.assert_allclose(flash.logprobs, dense.logprobs, rtol=1e-5, atol=1e-5)


def test_greedy_program_is_what_generate_runs():
    """The program the memory bench compiles gives generate's own rollout."""
    model = Transformer(TransformerConfig(**CONFIG), key=jax.random.key(5))
    prompts = [[3, 1, 4, 1, 5, 9, 2], [6, 5]]
    want = generate(model, prompts, max_new_tokens=5, eos_id=())
    fn, shapes = greedy_program(2, 7, 5)
    assert [s.shape for s in shapes] == [want.prompt.shape, want.prompt_mask.shape, (2,)]
    got = eqx.filter_jit(fn)(model, want.prompt, want.prompt_mask, np.array([5, 5], np.int32))
    np.testing.assert_array_equal(got.tokens, want.tokens)
    np.testing.assert_allclose(got.logprobs, want.logprobs, rtol=1e-6, atol=1e-6)


def test_cache_in_compute_dtype():
    model = Transformer(TransformerConfig(**CONFIG, compute_dtype=jnp.bfloat16),
                        key=jax.random.key(4))
    tokens, mask = _batch(6, (0, 1))
    _, cache = eqx.filter_jit(lambda m: prefill(m, tokens, mask, max_length=8))(model)
    assert cache.keys.dtype == cache.values.dtype == jnp.bfloat16
    assert cache.keys.shape == (2, 2, 2, 8, 8)  # [layers, B, kv_heads, slots, head_dim]


@pytest.mark.parametrize("window, x64", [(None, False), (3, False), (3, True)],
                         ids=["full", "window", "window-x64"])
def test_flash_attention_cached_equals_dense_on_one_layer(window, x64):
    """Random queries at a traced slot offset over layer 1 of a [L, B, Kh, S, d] cache with
    padded slots, against dense softmax attention on that layer alone (float32). ``x64``:
    under ``jax_enable_x64`` (layer and offset int64, the loops' indices int32)."""
    with jax.enable_x64(x64):
        _flash_attention_cached_equals_dense_on_one_layer(window)


def _flash_attention_cached_equals_dense_on_one_layer(window):
    rng = np.random.default_rng(5)
    layers, batch, kv_heads, slots, dim, heads, length = 3, 2, 2, 24, 8, 4, 5
    keys, values = (jnp.asarray(rng.normal(size=(layers, batch, kv_heads, slots, dim)),
                                jnp.float32) for _ in range(2))
    q = jnp.asarray(rng.normal(size=(batch, length, heads, dim)), jnp.float32)
    valid = rng.random((batch, slots)) > 0.25

    @jax.jit
    def both(shift):
        mask = AttentionMask(jnp.asarray(valid), causal=True, window=window, q_shift=shift)
        got = flash_attention_cached(q, keys, values, jnp.asarray(1), mask, tile=4)
        dense = mask.dense(length, slots)
        k, v = (x[1].transpose(0, 2, 1, 3) for x in (keys, values))
        return got, attend(q, k, v, dense), dense

    got, want, dense = both(jnp.asarray(7))
    sees = np.asarray(dense).any(-1)  # a query that sees nothing: 0 here, a mean there
    assert sees.sum() >= 6
    np.testing.assert_allclose(np.asarray(got)[sees], np.asarray(want)[sees], rtol=1e-5,
                               atol=1e-5)
    assert (np.asarray(got)[~sees] == 0).all()


def test_dividing_tile():
    assert [dividing_tile(n, 128) for n in (16, 17408, 136, 7, 300)] == [16, 128, 68, 7, 100]

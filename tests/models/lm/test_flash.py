"""Flash (blockwise) attention equals dense attention: values and gradients, every mask kind."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.lm.layers import attend
from jaxlean.nn.attention_mask import AttentionMask
from jaxlean.nn.flash import flash_attention

B, T, D = 2, 37, 8  # T is not a multiple of either tile
Q_TILE, K_TILE = 8, 16


def _inputs(heads: int, kv_heads: int, length: int = T, kv_length: int = T, seed: int = 0,
            dtype=jnp.float32):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(B, length, heads, D))
    k, v = (rng.normal(size=(B, kv_length, kv_heads, D)) for _ in range(2))
    weights = rng.normal(size=(B, length, heads, D))
    return tuple(jnp.asarray(x, dtype) for x in (q, k, v, weights))


def _padding(length: int = T) -> jax.Array:
    rng = np.random.default_rng(1)
    valid = rng.random((B, length)) < 0.8
    valid[0, :5] = False  # left padding: queries 0..4 of row 0 see no key at all
    valid[1] = True
    return jnp.asarray(valid)


def _segments(length: int = T) -> jax.Array:
    rng = np.random.default_rng(2)
    return jnp.asarray(np.sort(rng.integers(0, 4, (B, length)), axis=1))


MASKS = {
    "causal": lambda: AttentionMask(),
    "sliding window": lambda: AttentionMask(window=6),
    "padding": lambda: AttentionMask(key_valid=_padding()),
    "padding, window": lambda: AttentionMask(key_valid=_padding(), window=9),
    "segment ids": lambda: AttentionMask(q_segments=_segments(), k_segments=_segments()),
    "segments, padding, window": lambda: AttentionMask(
        key_valid=_padding(), q_segments=_segments(), k_segments=_segments(), window=5),
    "bidirectional, padding": lambda: AttentionMask(key_valid=_padding(), causal=False),
    "bidirectional, window": lambda: AttentionMask(causal=False, window=7),
}


def _value_and_grads(attention, q, k, v, weights):
    """``attention``'s output and the gradients of ``sum(output * weights)`` (traceable):
    one forward pass, whose vjp takes the objective's cotangent."""
    out, vjp = jax.vjp(attention, q, k, v)
    return [out, *vjp(weights.astype(jnp.float32).astype(out.dtype))]


@functools.partial(jax.jit, static_argnames=("q_tile", "k_tile", "dense_dtype"))
def _flash_and_dense(cases, mask, q_tile=Q_TILE, k_tile=K_TILE, dense_dtype=None):
    """For each ``(q, k, v, weights)`` in ``cases``: flash's and dense attention's output and
    gradients. One compiled program for all the cases, the mask an argument (its arrays are
    traced), so the tests of one mask share a compile."""
    results = []
    for q, k, v, weights in cases:
        dense_mask = mask.dense(q.shape[1], k.shape[1])
        flash = _value_and_grads(
            lambda q, k, v: flash_attention(q, k, v, mask, q_tile=q_tile, k_tile=k_tile),
            q, k, v, weights)
        cast = (lambda x: x) if dense_dtype is None else (lambda x: x.astype(dense_dtype))
        dense = _value_and_grads(lambda q, k, v, m=dense_mask: attend(q, k, v, m),
                                 cast(q), cast(k), cast(v), weights)
        results.append((flash, dense))
    return results


def _as_numpy(results):
    return [tuple([np.asarray(x, np.float32) for x in xs] for xs in pair) for pair in results]


HEADS = [(4, 2), (2, 2), (4, 1)]


@functools.cache
def _every_heads(kind):
    """Flash and dense for ``MASKS[kind]`` at each of ``HEADS``: one compile per mask kind."""
    results = _flash_and_dense(tuple(_inputs(*h) for h in HEADS), MASKS[kind]())
    return dict(zip(HEADS, _as_numpy(results), strict=True))


@pytest.mark.parametrize("heads, kv_heads", HEADS)
@pytest.mark.parametrize("kind", sorted(MASKS))
def test_values_and_gradients_equal_dense_attention(kind, heads, kv_heads):
    got, want = _every_heads(kind)[heads, kv_heads]
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("q_tile, k_tile", [(1, 1), (5, 3), (64, 64), (37, 12)])
def test_any_tiles_give_the_same_attention(q_tile, k_tile):
    mask = MASKS["segments, padding, window"]()
    [(got, want)] = _as_numpy(_flash_and_dense((_inputs(4, 2),), mask, q_tile, k_tile))
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_float32_attention_under_x64_stays_float32_and_equals_dense_attention():
    """Under ``jax_enable_x64`` (a global setting of many scientific users) float32 flash
    and dense attention compute in float32 (a NumPy float64 scale would widen their scores,
    softmax and flash's loop carries; Python scalars stay weakly typed float64 constants
    until they meet float32 arrays), and flash equals dense, values and gradients."""
    with jax.enable_x64():
        cases, mask = (_inputs(4, 2),), MASKS["segments, padding, window"]()
        lowered = _flash_and_dense.lower(cases, mask)
        [(got, want)] = _as_numpy(lowered.compile()(cases, mask))
    assert not re.findall(r"tensor<[\dx]+xf64>", lowered.as_text())
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=name)


def test_queries_after_a_prefix_of_keys():
    """``q_offset``: 11 queries at slots 30..40 over 41 keys (a prompt continued)."""
    q, k, v, weights = _inputs(4, 2, length=11, kv_length=41)
    valid = jnp.asarray(np.random.default_rng(3).random((B, 41)) < 0.7)
    mask = AttentionMask(key_valid=valid, window=13, q_offset=30)
    [(got, want)] = _as_numpy(_flash_and_dense(((q, k, v, weights),), mask))
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_a_query_that_sees_nothing_gets_the_mean_value_as_dense_attention():
    _, _, v, weights = _inputs(4, 2)
    mask = AttentionMask(key_valid=jnp.zeros((B, T), bool).at[1].set(True))
    # every case of HEADS, as for MASKS["padding"]: the same program (the mask is traced)
    results = _flash_and_dense(tuple(_inputs(*h) for h in HEADS), mask)
    [((out, dq, dk, dv), want), *_] = _as_numpy(results)
    mean = np.repeat(np.asarray(v[0]).mean(axis=0), 2, axis=0)  # [heads, d]
    np.testing.assert_allclose(out[0], np.broadcast_to(mean, out[0].shape), rtol=1e-5,
                               atol=1e-6)
    assert not np.any(dq[0]) and not np.any(dk[0])
    np.testing.assert_allclose(dv[0], np.broadcast_to(
        np.asarray(weights[0]).reshape(T, 2, 2, D).sum(axis=(0, 2)) / T, dv[0].shape),
        rtol=1e-5, atol=1e-6)
    for a, b in zip((out, dq, dk, dv), want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["causal", "segments, padding, window"])
def test_bfloat16_within_bfloat16_tolerance(kind):
    """bf16 flash vs float32 dense: within a few bf16 steps (2^-8) of each array's scale."""
    [(got, want)] = _as_numpy(_flash_and_dense((_inputs(4, 2, dtype=jnp.bfloat16),),
                                               MASKS[kind](), dense_dtype=jnp.float32))
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want, strict=True):
        assert np.max(np.abs(a - b)) <= 2e-2 * np.max(np.abs(b)), name


@pytest.mark.parametrize("kind", sorted(MASKS))
def test_skipped_blocks_hide_every_key(kind):
    """Blocks outside ``key_block_range`` / ``query_block_range`` have no visible entry."""
    mask = MASKS[kind]().padded(40, 48, T)
    dense = np.asarray(mask.dense(40, 48)).any(axis=0)
    for i in range(40 // Q_TILE):
        lo, hi = (int(x) for x in mask.key_block_range(i * Q_TILE, Q_TILE, K_TILE, 3))
        rows = dense[i * Q_TILE:(i + 1) * Q_TILE]
        for j in set(range(3)) - set(range(lo, hi)):
            assert not rows[:, j * K_TILE:(j + 1) * K_TILE].any(), (i, j)
    for j in range(3):
        lo, hi = (int(x) for x in mask.query_block_range(j * K_TILE, K_TILE, Q_TILE, 5))
        columns = dense[:, j * K_TILE:(j + 1) * K_TILE]
        for i in set(range(5)) - set(range(lo, hi)):
            assert not columns[i * Q_TILE:(i + 1) * Q_TILE].any(), (i, j)


def test_causal_visits_about_half_the_blocks_and_a_window_a_band():
    blocks = 16
    causal, window = AttentionMask(), AttentionMask(window=64)
    visits = {name: sum(int(hi - lo) for lo, hi in (
        m.key_block_range(i * 32, 32, 32, blocks) for i in range(blocks)))
        for name, m in (("causal", causal), ("window", window))}
    assert visits["causal"] == blocks * (blocks + 1) // 2
    assert visits["window"] <= 3 * blocks


def test_memory_grows_linearly_in_length():
    """Compiled (not run) loss + gradient: flash temp ~ T, dense temp ~ T^2."""
    def temp(attention, length):
        spec = jax.ShapeDtypeStruct((1, length, 4, 32), jnp.float32)
        mask = AttentionMask()
        step = jax.grad(lambda q, k, v: jnp.sum(attention(q, k, v, mask, length)),
                        argnums=(0, 1, 2))
        compiled = jax.jit(step).lower(spec, spec, spec).compile()
        return compiled.memory_analysis().temp_size_in_bytes

    def flash(q, k, v, mask, length):
        return flash_attention(q, k, v, mask, q_tile=128, k_tile=128)

    def dense(q, k, v, mask, length):
        return attend(q, k, v, mask.dense(length, length))

    assert temp(flash, 2048) / temp(flash, 1024) < 2.5
    assert temp(dense, 2048) / temp(dense, 1024) > 3.5
    assert temp(flash, 2048) < temp(dense, 2048) / 4


def test_refuses_bad_heads_tiles_and_half_segments():
    q, k, v, _ = _inputs(3, 2)
    with pytest.raises(ConfigError, match="multiple of"):
        flash_attention(q, k, v, AttentionMask())
    q, k, v, _ = _inputs(4, 2)
    with pytest.raises(ConfigError, match="q_tile"):
        flash_attention(q, k, v, AttentionMask(), q_tile=0)
    with pytest.raises(ConfigError, match="k_segments"):
        AttentionMask(q_segments=_segments())

"""token_logprobs / cross_entropy against the full-logits reference (``jax.nn.log_softmax``)."""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError, DataError, JaxleanError, StructureError
from jaxlean.loss.chunked import cross_entropy, token_logprobs, token_stats

BATCH, T, H, V = 2, 13, 16, 300  # 26 tokens: ragged for every chunk size used below


def _normal(seed, shape, dtype=jnp.float32):
    """Standard normal numbers made with NumPy (an eager jax.random op is a compile)."""
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), dtype)


@functools.cache  # one set of arrays per dtype, made with NumPy (no eager op, each a compile)
def _data(dtype=jnp.float32, seed=0):
    rng = np.random.default_rng(seed)
    hidden = jnp.asarray(rng.normal(size=(BATCH, T, H)), dtype)
    head = jnp.asarray(0.5 * rng.normal(size=(H, V)), dtype)
    targets = jnp.asarray(rng.integers(0, V, (BATCH, T)), jnp.int32)
    weights = jnp.asarray(rng.normal(size=(2, BATCH, T)), jnp.float32)  # the two cotangents
    return hidden, head, targets, weights


def _ref_logprobs(logits, targets, temperature=1.0, top_k=1):
    """(logprobs, entropy, logsumexp, top-k logprobs, top-k ids) from the full logits."""
    logits = logits.astype(jnp.float32) / temperature
    logprobs = jax.nn.log_softmax(logits, axis=-1)
    entropy = -jnp.sum(jnp.exp(logprobs) * logprobs, axis=-1)
    top, ids = jax.lax.top_k(logprobs, top_k)
    return (jnp.take_along_axis(logprobs, targets[..., None], axis=-1)[..., 0], entropy,
            jax.nn.logsumexp(logits, axis=-1), top, ids)


def _ref_matrix(hidden, head, targets, **kwargs):
    return _ref_logprobs(hidden.astype(jnp.float32) @ head.astype(jnp.float32), targets,
                         **kwargs)


def _close(actual, expected, rtol):
    """Elementwise close, with an absolute floor scaled to the reference's magnitude."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    atol = rtol * max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


CHUNKINGS = [
    dict(),  # defaults: one chunk, one vocabulary block
    dict(chunk_size=8),  # 26 tokens -> 4 chunks of 7 (2 padded)
    dict(chunk_size=5, vocab_chunk=64),  # vocabulary blocks, last one shifted to fit
    dict(chunk_size=26, vocab_chunk=299),  # two blocks overlapping by 298 columns
    dict(chunk_size=1, vocab_chunk=1),
]


def _token_stats_objective(w_top, w):
    def scalar(lp, ent, lse, top):
        return jnp.sum(lp * w[0]) + jnp.sum(ent * w[1]) + jnp.sum(lse) + jnp.sum(top * w_top)

    return scalar


@functools.cache  # one compiled reference per temperature, shared by the chunkings
def _token_stats_reference(temperature):
    hidden, head, targets, w = _data()
    scalar = _token_stats_objective(_normal(5, (BATCH, T, 3)), w)

    def ref(hidden, head):
        lp, ent, lse, top, ids = _ref_matrix(hidden, head, targets, temperature=temperature,
                                             top_k=3)
        return scalar(lp, ent, lse, top), (lp, ent, lse, top, ids, jnp.argmax(hidden @ head, -1))

    return jax.jit(jax.value_and_grad(ref, (0, 1), has_aux=True))(hidden, head)


@functools.cache  # every chunking at one temperature in one program: one compile each
def _token_stats_chunked(temperature):
    hidden, head, targets, w = _data()
    scalar = _token_stats_objective(_normal(5, (BATCH, T, 3)), w)

    def each(chunking, hidden, head):
        def ours(hidden, head):
            s = token_stats(hidden, head, targets=targets, top_k=3, temperature=temperature,
                            **chunking)
            return scalar(s.logprobs, s.entropy, s.logsumexp, s.top_logprobs), s

        return (jax.value_and_grad(ours, (0, 1), has_aux=True)(hidden, head),
                token_logprobs(hidden, head, targets=targets, temperature=temperature, **chunking))

    return jax.jit(lambda h, w: [each(chunking, h, w) for chunking in CHUNKINGS])(hidden, head)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize("chunking", CHUNKINGS, ids=str)
def test_token_stats_match_full_logits(chunking, temperature):
    ((_, s), grads), only_logprobs = _token_stats_chunked(temperature)[
        CHUNKINGS.index(chunking)]
    (_, (lp, ent, lse, top, ids, argmax)), ref_grads = _token_stats_reference(temperature)
    assert s.logprobs.shape == (BATCH, T) and s.logprobs.dtype == jnp.float32
    assert s.top_ids.shape == (BATCH, T, 3) and s.top_ids.dtype == jnp.int32
    np.testing.assert_array_equal(s.top_ids, ids)
    np.testing.assert_array_equal(s.argmax, argmax)
    # 300 one-column blocks merge sequentially: float32 rounding grows with the block count
    rtol = 5e-5 if chunking.get("vocab_chunk") == 1 else 1e-5
    for a, b in zip((s.logprobs, s.entropy, s.logsumexp, s.top_logprobs, *grads),
                    (lp, ent, lse, top, *ref_grads), strict=True):
        _close(a, b, rtol)
    np.testing.assert_allclose(only_logprobs, s.logprobs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("chunking", [dict(chunk_size=8), dict(chunk_size=8, vocab_chunk=70)],
                         ids=str)
def test_bf16_accumulates_in_f32(chunking):
    hidden, head, targets, w = _data(jnp.bfloat16)
    loss = lambda h, W: jnp.sum(token_logprobs(h, W, targets=targets, **chunking) * w[0])
    ref = lambda h, W: jnp.sum(_ref_matrix(h, W, targets)[0] * w[0])
    values, grads = jax.jit(lambda h, W: (token_logprobs(h, W, targets=targets, **chunking),
                                          jax.grad(loss, (0, 1))(h, W)))(hidden, head)
    ref_values, ref_grads = jax.jit(lambda h, W: (_ref_matrix(h, W, targets)[0],
                                                  jax.grad(ref, (0, 1))(h, W)))(hidden, head)
    assert values.dtype == jnp.float32
    # bf16 products are exact in f32: the values match the f32 reference closely.
    _close(values, ref_values, 1e-5)
    assert grads[0].dtype == grads[1].dtype == jnp.bfloat16
    for a, b in zip(grads, ref_grads, strict=True):
        _close(a, b, 2e-2)


def test_bf16_token_stats_entropy_and_top_k():
    hidden, head, targets, w = _data(jnp.bfloat16)

    def ours(h, W):
        s = token_stats(h, W, targets=targets, top_k=2, temperature=0.8, chunk_size=8,
                        vocab_chunk=70)
        return jnp.sum(s.entropy * w[1]) + jnp.sum(s.top_logprobs), s

    def ref(h, W):
        _, ent, _, top, ids = _ref_matrix(h, W, targets, temperature=0.8, top_k=2)
        return jnp.sum(ent * w[1]) + jnp.sum(top), (ent, top, ids)

    (_, s), grads = jax.jit(jax.value_and_grad(ours, (0, 1), has_aux=True))(hidden, head)
    (_, (ent, top, ids)), ref_grads = jax.jit(jax.value_and_grad(ref, (0, 1), has_aux=True))(
        hidden, head)
    np.testing.assert_array_equal(s.top_ids, ids)
    _close(s.entropy, ent, 1e-5)
    _close(s.top_logprobs, top, 1e-5)
    assert grads[1].dtype == jnp.bfloat16
    for a, b in zip(grads, ref_grads, strict=True):
        _close(a, b, 2e-2)


def test_float64_gradients_are_exact():
    with jax.enable_x64():
        hidden, head, targets, w = _data(jnp.float64)
        w = w.astype(jnp.float64)

        def ours(h, W):
            s = token_stats(h, W, targets=targets, chunk_size=6, vocab_chunk=41)
            lp, ent = s.logprobs, s.entropy
            return jnp.sum(lp * w[0] + ent * w[1])

        def ref(h, W):
            logprobs = jax.nn.log_softmax(h @ W, axis=-1)
            ent = -jnp.sum(jnp.exp(logprobs) * logprobs, axis=-1)
            lp = jnp.take_along_axis(logprobs, targets[..., None], axis=-1)[..., 0]
            return jnp.sum(lp * w[0] + ent * w[1])

        grads = jax.jit(jax.grad(ours, (0, 1)))(hidden, head)
        ref_grads = jax.jit(jax.grad(ref, (0, 1)))(hidden, head)
        assert grads[0].dtype == jnp.float64
        for a, b in zip(grads, ref_grads, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- callable heads


class LoRAHead(eqx.Module):
    """A frozen head matrix plus a low-rank update and a bias, soft-capped like Gemma."""

    weight: jax.Array
    a: jax.Array
    b: jax.Array
    bias: jax.Array
    cap: float = eqx.field(static=True, default=5.0)

    def __call__(self, chunk):
        logits = chunk @ self.weight + (chunk @ self.a) @ self.b + self.bias
        return self.cap * jnp.tanh(logits / self.cap)


def _lora_head(dtype=jnp.float32):
    _, head, _, _ = _data(dtype)
    rng = np.random.default_rng(1)
    return LoRAHead(head, jnp.asarray(0.3 * rng.normal(size=(H, 4)), dtype),
                    jnp.asarray(0.3 * rng.normal(size=(4, V)), dtype),
                    jnp.asarray(rng.normal(size=(V,)), dtype))


def test_equinox_module_head_gradients_reach_its_params():
    hidden, _, targets, w = _data()
    module = _lora_head()

    def ours(module, hidden):
        s = token_stats(hidden, module, targets=targets, chunk_size=7, temperature=1.5)
        lp, ent = s.logprobs, s.entropy
        return jnp.sum(lp * w[0] + ent * w[1])

    def ref(module, hidden):
        lp, ent = _ref_logprobs(module(hidden), targets, temperature=1.5)[:2]
        return jnp.sum(lp * w[0] + ent * w[1])

    grads = jax.jit(jax.grad(ours, (0, 1)))(module, hidden)
    ref_grads = jax.jit(jax.grad(ref, (0, 1)))(module, hidden)
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(ref_grads), strict=True):
        _close(a, b, 1e-5)
    assert np.max(np.abs(np.asarray(grads[0].a))) > 0  # the LoRA factors do get gradients


def test_closure_head_gradients_reach_closed_over_arrays():
    """A plain function closing over differentiated arrays (hoisted by closure_convert)."""
    hidden, head, targets, w = _data()
    bias = jnp.linspace(-1.0, 1.0, V)

    def ours(head, bias):
        softcapped = lambda chunk: 4.0 * jnp.tanh((chunk @ head + bias) / 4.0)
        return jnp.sum(token_logprobs(hidden, softcapped, targets=targets, chunk_size=4) * w[0])

    def ref(head, bias):
        return jnp.sum(_ref_logprobs(4.0 * jnp.tanh((hidden @ head + bias) / 4.0),
                                     targets)[0] * w[0])

    grads = jax.jit(jax.grad(ours, (0, 1)))(head, bias)
    for a, b in zip(grads, jax.jit(jax.grad(ref, (0, 1)))(head, bias), strict=True):
        _close(a, b, 1e-5)


def test_tied_embedding_head_via_partial():
    hidden, head, targets, w = _data()
    embedding = head.T  # [V, H], as in tied input/output embeddings
    tied = lambda emb: jax.tree_util.Partial(lambda e, chunk: chunk @ e.T, emb)
    ours = lambda emb: jnp.sum(cross_entropy(hidden, tied(emb), targets=targets,
                                             reduction="none") * w[0])
    ref = lambda emb: -jnp.sum(_ref_logprobs(hidden @ emb.T, targets)[0] * w[0])
    _close(jax.jit(jax.grad(ours))(embedding), jax.jit(jax.grad(ref))(embedding), 1e-5)


def test_bf16_callable_head():
    hidden, _, targets, w = _data(jnp.bfloat16)
    module = _lora_head(jnp.bfloat16)
    ours = lambda m: jnp.sum(token_logprobs(hidden, m, targets=targets, chunk_size=8) * w[0])
    ref = lambda m: jnp.sum(_ref_logprobs(m(hidden), targets)[0] * w[0])
    grads, ref_grads = jax.jit(jax.grad(ours))(module), jax.jit(jax.grad(ref))(module)
    assert grads.a.dtype == jnp.bfloat16
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(ref_grads), strict=True):
        _close(a, b, 3e-2)


# ----------------------------------------------------------------------------- cross_entropy


@pytest.mark.parametrize(("reduction", "z_loss"), [("mean", 0.0), ("sum", 1e-2), ("none", 1e-2)])
def test_cross_entropy_mask_reduction_z_loss(reduction, z_loss):
    hidden, head, targets, w = _data()
    mask = jnp.asarray(np.random.default_rng(7).random((BATCH, T)) < 0.6)
    targets = jnp.where(mask, targets, -100)  # ignored positions may hold any id

    def ref(hidden, head):
        logits = hidden @ head
        lse = jax.nn.logsumexp(logits, axis=-1)
        safe = jnp.where(mask, targets, 0)
        nll = lse - jnp.take_along_axis(logits, safe[..., None], axis=-1)[..., 0]
        per_token = jnp.where(mask, nll + z_loss * lse**2, 0)
        return {"none": per_token, "sum": per_token.sum(),
                "mean": per_token.sum() / mask.sum()}[reduction]

    def ours(hidden, head):
        return cross_entropy(hidden, head, targets=targets, mask=mask, reduction=reduction,
                             z_loss=z_loss, chunk_size=6, vocab_chunk=77)

    scalar = (lambda f: lambda *a: jnp.sum(f(*a) * w[0])) if reduction == "none" else (
        lambda f: f)
    # value and gradients in one program each (one compile, not two)
    both = lambda f: jax.jit(lambda *a: (f(*a), jax.grad(scalar(f), (0, 1))(*a)))
    (value, grads), (ref_value, ref_grads) = both(ours)(hidden, head), both(ref)(hidden, head)
    _close(value, ref_value, 1e-5)
    for a, b in zip(grads, ref_grads, strict=True):
        _close(a, b, 1e-5)


@pytest.mark.parametrize("head_kind", ["matrix", "callable"])
def test_label_smoothing_matches_full_logits(head_kind):
    hidden, head, targets, _ = _data()
    mask = jnp.asarray(np.random.default_rng(8).random((BATCH, T)) < 0.7)
    eps = 0.2
    make = (lambda W: W) if head_kind == "matrix" else (
        lambda W: (lambda chunk: 3.0 * jnp.tanh(chunk @ W / 3.0)))
    chunking = dict(chunk_size=6, vocab_chunk=77) if head_kind == "matrix" else dict(chunk_size=6)

    def ours(hidden, head):
        return cross_entropy(hidden, make(head), targets=targets, mask=mask, label_smoothing=eps,
                             **chunking)

    def ref(hidden, head):
        logits = hidden @ head if head_kind == "matrix" else 3.0 * jnp.tanh(hidden @ head / 3)
        logp = jax.nn.log_softmax(logits, axis=-1)
        smooth = (1 - eps) * jax.nn.one_hot(targets, V) + eps / V
        per_token = -jnp.sum(smooth * logp, axis=-1)
        return jnp.sum(jnp.where(mask, per_token, 0)) / jnp.sum(mask)

    # the forward-only value and the gradients' value in one program
    value, (grad_value, grads) = jax.jit(lambda *a: (ours(*a), jax.value_and_grad(
        ours, (0, 1))(*a)))(hidden, head)
    ref_value, ref_grads = jax.jit(jax.value_and_grad(ref, (0, 1)))(hidden, head)
    _close(value, ref_value, 1e-5)
    _close(grad_value, ref_value, 1e-5)
    for a, b in zip(grads, ref_grads, strict=True):
        _close(a, b, 1e-5)


def test_cross_entropy_float_weights_and_empty_mask():
    hidden, head, targets, _ = _data()
    weights = jnp.asarray(np.abs(np.random.default_rng(3).normal(size=(BATCH, T))), jnp.float32)
    empty = jnp.zeros((BATCH, T), bool)

    def losses(hidden, head):  # one program: one compile, not one per eager op
        nll = -_ref_matrix(hidden, head, targets)[0]
        return (cross_entropy(hidden, head, targets=targets, mask=weights),
                jnp.sum(nll * weights) / jnp.sum(weights),
                cross_entropy(hidden, head, targets=targets, mask=empty),
                jax.value_and_grad(lambda h: cross_entropy(h, head, targets=targets,
                                                           mask=empty))(hidden))

    weighted, want, empty_value, (empty_grad_value, grads) = jax.jit(losses)(hidden, head)
    _close(weighted, want, 1e-5)
    assert float(empty_value) == 0.0 and float(empty_grad_value) == 0.0
    assert not np.any(np.asarray(grads))


def test_memory_does_not_hold_the_logits():
    """Compiled loss+grad keeps far less than one [T, V] float32 logits array."""
    tokens, width, vocab = 1024, 32, 8192
    specs = (jax.ShapeDtypeStruct((tokens, width), jnp.float32),
             jax.ShapeDtypeStruct((width, vocab), jnp.float32),
             jax.ShapeDtypeStruct((tokens,), jnp.int32))
    loss = lambda h, W, t: cross_entropy(h, W, targets=t, chunk_size=128, vocab_chunk=1024)
    compiled = jax.jit(jax.value_and_grad(loss, (0, 1))).lower(*specs).compile()
    temp = compiled.memory_analysis().temp_size_in_bytes
    assert temp < tokens * vocab * 4 / 8


# ----------------------------------------------------------------------------- errors


def test_errors_name_the_problem():
    hidden, head, targets, _ = _data()
    with pytest.raises(StructureError, match=r"H = hidden's last dim 16"):
        token_logprobs(hidden, head[:8], targets=targets)
    with pytest.raises(StructureError, match="targets shape"):
        token_logprobs(hidden, head, targets=targets[:, :5])
    with pytest.raises(StructureError, match="integer"):
        token_logprobs(hidden, head, targets=targets.astype(jnp.float32))
    with pytest.raises(StructureError, match="mask shape"):
        cross_entropy(hidden, head, targets=targets, mask=jnp.ones((BATCH,), bool))
    with pytest.raises(StructureError, match="callable head must map"):
        token_logprobs(hidden, lambda chunk: jnp.sum(chunk @ head, axis=-1), targets=targets)
    with pytest.raises(StructureError, match=r"callable head fails on a chunk .*\[26, 16\]"):
        token_logprobs(hidden, lambda chunk: chunk @ head[:5], targets=targets)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ConfigError, match="chunk_size must be a positive integer"):
            token_logprobs(hidden, head, targets=targets, chunk_size=bad)
    with pytest.raises(ConfigError, match="vocab_chunk"):
        token_logprobs(hidden, head, targets=targets, vocab_chunk=0)
    with pytest.raises(ConfigError, match="matrix head"):
        token_logprobs(hidden, lambda chunk: chunk @ head, targets=targets, vocab_chunk=64)
    with pytest.raises(ConfigError, match="unknown reduction 'avg'"):
        cross_entropy(hidden, head, targets=targets, reduction="avg")
    with pytest.raises(DataError, match=r"target id 300 at index \(1, 2\)"):
        token_logprobs(hidden, head, targets=targets.at[1, 2].set(V))
    with pytest.raises(JaxleanError):
        token_logprobs(hidden, "not a head", targets=targets)
    for bad in (0, -1.0, float("nan"), "hot"):
        with pytest.raises(ConfigError, match="temperature must be a finite number > 0"):
            token_stats(hidden, head, targets=targets, temperature=bad)
    with pytest.raises(ConfigError, match="temperature"):
        token_logprobs(hidden, head, targets=targets, temperature=0.0)
    with pytest.raises(ConfigError, match=f"top_k={V + 1} is larger than the vocabulary size "
                                          f"V={V}"):
        token_stats(hidden, lambda chunk: chunk @ head, targets=targets, top_k=V + 1)
    with pytest.raises(ConfigError, match="top_k must be an integer >= 1"):
        token_stats(hidden, head, targets=targets, top_k=0)
    with pytest.raises(ConfigError, match=r"label_smoothing must be a number in \[0, 1\]"):
        cross_entropy(hidden, head, targets=targets, label_smoothing=1.5)

"""distill_loss against full-logits divergences (values and gradients, both heads)."""

from __future__ import annotations

import functools
import re
import textwrap

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError, StructureError
from jaxlean.loss.chunked import VocabParallel
from jaxlean.loss.distill import distill_loss

BATCH, T, HS, HT, V = 2, 13, 12, 20, 300  # 26 tokens: ragged for the chunk sizes below


@functools.cache  # one set of arrays per dtype, made with NumPy (no eager op, each a compile)
def _data(dtype=jnp.float32):
    rng = np.random.default_rng(0)
    draw = lambda *shape, scale=1.0: jnp.asarray(scale * rng.normal(size=shape), dtype)
    hs, ws = draw(BATCH, T, HS), draw(HS, V, scale=0.5)
    ht, wt = draw(BATCH, T, HT), draw(HT, V, scale=0.5)
    mask = jnp.asarray(rng.random((BATCH, T)) < 0.7)
    cotangents = jnp.asarray(np.random.default_rng(9).normal(size=(BATCH, T)), jnp.float32)
    return hs, ws, ht, wt, mask, cotangents


def _reference(logits_s, logits_t, divergence, temperature, beta=0.5, top_k=None):
    """Per-token divergence from the full ``[T, V]`` logits."""
    a = jax.nn.log_softmax(logits_s.astype(jnp.float32) / temperature, axis=-1)
    b = jax.nn.log_softmax(logits_t.astype(jnp.float32) / temperature, axis=-1)
    if divergence == "forward_kl":
        return jnp.sum(jnp.exp(b) * (b - a), -1)
    if divergence == "reverse_kl":
        return jnp.sum(jnp.exp(a) * (a - b), -1)
    if divergence == "top_k_kl":
        _, ids = jax.lax.top_k(b, top_k)
        terms = jnp.exp(b) * (b - a)
        return jnp.sum(jnp.take_along_axis(terms, ids, axis=-1), -1)
    m = jnp.log(beta * jnp.exp(b) + (1 - beta) * jnp.exp(a))
    return beta * jnp.sum(jnp.exp(b) * (b - m), -1) + (1 - beta) * jnp.sum(
        jnp.exp(a) * (a - m), -1)


def _close(actual, expected, rtol):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    atol = rtol * max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


CASES = [
    dict(divergence="forward_kl"),
    dict(divergence="reverse_kl", temperature=0.7),
    dict(divergence="jsd", beta=0.3, temperature=2.0),
    dict(divergence="top_k_kl", top_k=5),
]
CHUNKINGS = [dict(), dict(chunk_size=5, vocab_chunk=64), dict(chunk_size=26, vocab_chunk=299)]


def _per_token_objective(per_token_loss):
    """(sum of per-token values times fixed cotangents, the per-token values)."""
    g = _data()[5]

    def objective(*args):
        per_token = per_token_loss(*args)
        return jnp.sum(per_token * g), per_token

    return objective


@functools.cache  # one compiled reference per case, shared by the chunkings
def _reference_values_and_grads(case_index):
    opts = dict(temperature=1.0) | CASES[case_index]
    ref_opts = {k: v for k, v in opts.items() if k != "divergence"}
    ref = _per_token_objective(
        lambda hs, ws, ht, wt: _reference(hs @ ws, ht @ wt, opts["divergence"], **ref_opts))
    return jax.jit(jax.value_and_grad(ref, (0, 1, 2, 3), has_aux=True))(*_data()[:4])


@functools.cache  # every chunking of one case in one program: one compile per case
def _values_and_grads(case_index):
    opts = dict(temperature=1.0) | CASES[case_index]

    def each(chunking, *args):
        ours = _per_token_objective(
            lambda hs, ws, ht, wt: distill_loss(hs, ws, ht, wt, reduction="none",
                                                teacher_grad=True, **opts, **chunking))
        return jax.value_and_grad(ours, (0, 1, 2, 3), has_aux=True)(*args)

    return jax.jit(lambda *args: [each(chunking, *args) for chunking in CHUNKINGS])(
        *_data()[:4])


@pytest.mark.parametrize("chunking", CHUNKINGS, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_full_logits_with_teacher_gradients(case, chunking):
    (_, values), grads = _values_and_grads(CASES.index(case))[CHUNKINGS.index(chunking)]
    (_, ref_values), ref_grads = _reference_values_and_grads(CASES.index(case))
    assert np.min(np.asarray(ref_values)) >= -1e-6 and np.max(np.asarray(ref_values)) > 1e-2
    for a, b in zip((values, *grads), (ref_values, *ref_grads), strict=True):
        _close(a, b, 2e-5)


def test_teacher_is_constant_by_default_and_mask_mean():
    hs, ws, ht, wt, mask, _ = _data()

    def ours(ws, wt):
        return distill_loss(hs, ws, ht, wt, divergence="jsd", mask=mask, chunk_size=8)

    def ref(ws, wt):
        per_token = _reference(hs @ ws, ht @ wt, "jsd", 1.0)
        return jnp.sum(jnp.where(mask, per_token, 0)) / jnp.sum(mask)

    value, (dws, dwt) = jax.jit(jax.value_and_grad(ours, (0, 1)))(ws, wt)
    ref_value, ref_dws = jax.jit(jax.value_and_grad(ref))(ws, wt)
    _close(value, ref_value, 1e-5)
    _close(dws, ref_dws, 2e-5)
    assert not np.any(np.asarray(dwt))


class SoftCapped(eqx.Module):
    weight: jax.Array
    bias: jax.Array

    def __call__(self, chunk):
        return 4.0 * jnp.tanh((chunk @ self.weight + self.bias) / 4.0)


@pytest.mark.parametrize("divergence", ["reverse_kl", "top_k_kl"])
def test_callable_heads(divergence):
    """A module student and a closure teacher; gradients reach both (teacher_grad=True)."""
    hs, ws, ht, wt, *_ = _data()
    bias = jnp.linspace(-1.0, 1.0, V)
    student = SoftCapped(ws, bias)

    def ours(student, wt):
        teacher = lambda chunk: chunk @ wt + bias
        return distill_loss(hs, student, ht, teacher, divergence=divergence, top_k=7,
                            temperature=1.3, chunk_size=6, teacher_grad=True)

    def ref(student, wt):
        extra = dict(top_k=7) if divergence == "top_k_kl" else {}
        return jnp.mean(_reference(student(hs), ht @ wt + bias, divergence, 1.3, **extra))

    # the forward-only value and the gradients' value in one program
    value, (grad_value, grads) = jax.jit(lambda *a: (ours(*a), jax.value_and_grad(
        ours, (0, 1))(*a)))(student, wt)
    ref_value, ref_grads = jax.jit(jax.value_and_grad(ref, (0, 1)))(student, wt)
    _close(value, ref_value, 1e-5)
    _close(grad_value, ref_value, 1e-5)
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(ref_grads), strict=True):
        _close(a, b, 2e-5)


def test_bf16_inputs_accumulate_in_f32():
    hs, ws, ht, wt, *_ = _data(jnp.bfloat16)
    ours = lambda hs, ws: distill_loss(hs, ws, ht, wt, chunk_size=8, vocab_chunk=70)
    ref = lambda hs, ws: jnp.mean(_reference(hs.astype(jnp.float32) @ ws.astype(jnp.float32),
                                             ht.astype(jnp.float32) @ wt.astype(jnp.float32),
                                             "forward_kl", 1.0))
    # the forward-only value and the gradients' value in one program
    value, (grad_value, grads) = jax.jit(lambda *a: (ours(*a), jax.value_and_grad(
        ours, (0, 1))(*a)))(hs, ws)
    ref_value, ref_grads = jax.jit(jax.value_and_grad(ref, (0, 1)))(hs, ws)
    assert value.dtype == jnp.float32
    _close(value, ref_value, 1e-4)
    _close(grad_value, ref_value, 1e-4)
    assert grads[0].dtype == grads[1].dtype == jnp.bfloat16
    for a, b in zip(grads, ref_grads, strict=True):
        _close(a, b, 2e-2)


def test_memory_does_not_hold_the_logits():
    tokens, width, vocab = 1024, 32, 8192
    specs = (jax.ShapeDtypeStruct((tokens, width), jnp.float32),
             jax.ShapeDtypeStruct((width, vocab), jnp.float32),
             jax.ShapeDtypeStruct((tokens, 2 * width), jnp.float32),
             jax.ShapeDtypeStruct((2 * width, vocab), jnp.float32))
    loss = lambda *a: distill_loss(*a, divergence="jsd", chunk_size=128, vocab_chunk=1024)
    compiled = jax.jit(jax.value_and_grad(loss, (0, 1))).lower(*specs).compile()
    assert compiled.memory_analysis().temp_size_in_bytes < tokens * vocab * 4 / 8


def test_a_closed_over_teacher_is_not_folded_at_compile_time():
    """jit makes a closed-over teacher's arrays constants; XLA must not fold the teacher's
    computation into new constants (at T=1024, V=32,000 that folding took 17 s)."""
    hs, ws, ht, wt, *_ = _data()
    loss = lambda w: distill_loss(hs, w, ht, wt, divergence="jsd", chunk_size=8)
    hlo = jax.jit(jax.value_and_grad(loss)).lower(ws).compile().as_text()
    teacher_shaped = {shape for shape in re.findall(r"= f32\[([\d,]*)\]\S* constant\(", hlo)
                      if str(HT) in shape.split(",")}
    assert teacher_shaped == {f"{BATCH},{T},{HT}", f"{HT},{V}"}, teacher_shaped


def test_errors_name_the_problem():
    hs, ws, ht, wt, *_ = _data()
    with pytest.raises(ConfigError, match=r"student's vocabulary \(V=300\) and the teacher's "
                                          r"\(V=299\) differ"):
        distill_loss(hs, ws, ht, wt[:, :299])
    with pytest.raises(ConfigError, match="temperature must be a finite number > 0"):
        distill_loss(hs, ws, ht, wt, temperature=0.0)
    with pytest.raises(ConfigError, match=f"top_k={V + 1} is larger than the vocabulary"):
        distill_loss(hs, ws, ht, wt, divergence="top_k_kl", top_k=V + 1)
    with pytest.raises(ConfigError, match="needs top_k"):
        distill_loss(hs, ws, ht, wt, divergence="top_k_kl")
    with pytest.raises(ConfigError, match=r"beta must be a number in \(0, 1\)"):
        distill_loss(hs, ws, ht, wt, divergence="jsd", beta=1.0)
    with pytest.raises(ConfigError, match="unknown divergence 'kl'"):
        distill_loss(hs, ws, ht, wt, divergence="kl")
    with pytest.raises(StructureError, match="same tokens"):
        distill_loss(hs, ws, ht[:, :5], wt)


def test_one_device_mesh_matches_unsharded():
    hs, ws, ht, wt, mask, _ = _data()
    hs, ht, mask = hs.reshape(BATCH * T, HS), ht.reshape(BATCH * T, HT), mask.reshape(-1)
    vp = VocabParallel(jax.make_mesh((1,), ("model",)), "model")
    loss = lambda ws, vp: distill_loss(hs, ws, ht, wt, divergence="top_k_kl", top_k=4,
                                       mask=mask, chunk_size=8, vocab_chunk=70,
                                       vocab_parallel=vp)
    got = jax.jit(jax.value_and_grad(lambda ws: loss(ws, vp)))(ws)
    want = jax.jit(jax.value_and_grad(lambda ws: loss(ws, None)))(ws)
    for a, b in zip(got, want, strict=True):
        _close(a, b, 1e-5)
    with pytest.raises(ConfigError, match="matrix heads for both"):
        distill_loss(hs, lambda c: c @ ws, ht, wt, vocab_parallel=vp)


# run on 4 devices by tests/loss/test_four_devices.py, with the other losses' checks
SHARDED_SCRIPT = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    from jaxlean._random import normal
    from jax.sharding import NamedSharding, PartitionSpec as P
    from jaxlean.loss.chunked import VocabParallel
    from jaxlean.loss.distill import distill_loss

    # 13 tokens per data shard: ragged for chunk_size 5; 160 columns per vocab shard:
    # ragged for vocab_chunk 30
    N, HS, HT, V = 26, 12, 20, 320
    k = jax.random.split(jax.random.key(0), 5)
    hs, ht = normal(k[0], (N, HS)), normal(k[1], (N, HT))
    ws, wt = normal(k[2], (HS, V)) * 0.5, normal(k[3], (HT, V)) * 0.5
    mask = jax.random.bernoulli(k[4], 0.7, (N,))
    mesh = jax.make_mesh((2, 2), ("data", "model"))  # both axes split
    vp = VocabParallel(mesh, "model", "data")
    put = lambda x, spec: jax.device_put(x, NamedSharding(mesh, spec))

    for opts in (dict(divergence="jsd", beta=0.3, temperature=1.5),
                 dict(divergence="top_k_kl", top_k=6), dict(divergence="reverse_kl")):
        def run(vocab_parallel, *args):
            loss = lambda hs, ws, ht, wt: distill_loss(
                hs, ws, ht, wt, mask=mask, teacher_grad=True, chunk_size=5, vocab_chunk=30,
                vocab_parallel=vocab_parallel, **opts)
            return jax.jit(jax.value_and_grad(loss, (0, 1, 2, 3)))(*args)

        got = run(vp, put(hs, P("data")), put(ws, P(None, "model")), put(ht, P("data")),
                  put(wt, P(None, "model")))
        want = run(None, hs, ws, ht, wt)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4,
                                       atol=1e-5 * max(1, float(np.abs(b).max())))
        assert got[1][1].sharding.is_equivalent_to(NamedSharding(mesh, P(None, "model")), 2)
    print("ok")
""")

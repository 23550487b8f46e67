"""Vocabulary-parallel token_logprobs / cross_entropy against the unsharded full-logits reference.

Multi-device checks run in a subprocess with 4 forced host devices (a 2 x 2 mesh: data and
vocabulary axes both split; tests/loss/test_four_devices.py, with the other losses' checks),
so the rest of the suite keeps a single device.
"""

from __future__ import annotations

import functools
import textwrap

import jax
import numpy as np
import pytest

from jaxlean._random import normal
from jaxlean.errors import ConfigError, DataError
from jaxlean.loss.chunked import VocabParallel, cross_entropy, token_logprobs, token_stats

N, H, V = 26, 16, 64


@functools.cache  # one set of arrays (and one compile of the ops making them)
def _data():
    k = jax.random.split(jax.random.key(0), 3)
    hidden = normal(k[0], (N, H))
    head = normal(k[1], (H, V)) * 0.5
    return hidden, head, jax.random.randint(k[2], (N,), 0, V)


def test_one_device_mesh_matches_unsharded():
    hidden, head, targets = _data()
    vp = VocabParallel(jax.make_mesh((1,), ("model",)), "model")
    got = jax.jit(lambda h, w: token_stats(h, w, targets=targets, chunk_size=8, vocab_chunk=24,
                                           top_k=4,
                                           vocab_parallel=vp))(hidden, head)
    want = jax.jit(lambda h, w: token_stats(h, w, targets=targets, top_k=4))(hidden, head)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_errors_name_the_problem():
    hidden, head, targets = _data()
    mesh = jax.make_mesh((1,), ("model",))
    with pytest.raises(ConfigError, match=r"vocab axis 'vocab' is not an axis of the mesh "
                                          r"\(mesh axes: 'model'\)"):
        token_logprobs(hidden, head, targets=targets, vocab_parallel=VocabParallel(mesh, "vocab"))
    with pytest.raises(ConfigError, match=r"batch axis 'data' is not an axis of the mesh"):
        cross_entropy(hidden, head, targets=targets,
                      vocab_parallel=VocabParallel(mesh, "model", ("data",)))
    with pytest.raises(ConfigError, match="distinct mesh axes"):
        token_logprobs(hidden, head, targets=targets, vocab_parallel=VocabParallel(mesh, "model",
                                                                                   "model"))
    with pytest.raises(ConfigError, match="matrix head"):
        token_logprobs(hidden, lambda chunk: chunk @ head, targets=targets,
                       vocab_parallel=VocabParallel(mesh, "model"))
    with pytest.raises(DataError, match=f"target id {V} at index"):
        token_logprobs(hidden, head, targets=targets.at[3].set(V),
                       vocab_parallel=VocabParallel(mesh, "model"))


# run on 4 devices by tests/loss/test_four_devices.py, with the other losses' checks
SHARDED_SCRIPT = textwrap.dedent("""
    import re
    import jax, jax.numpy as jnp, numpy as np, pytest
    from jaxlean._random import normal
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    from jaxlean.errors import ConfigError
    from jaxlean.loss.chunked import VocabParallel, cross_entropy, token_stats

    # 26 tokens, 13 per data shard: ragged for chunk_size 4 and 5; V / 2 = 40 columns per shard
    # ragged for vocab_chunk 14, V / 4 = 20 for vocab_chunk 8
    B, T, H, V = 2, 13, 16, 80

    def close(got, want, rtol):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1, np.abs(want).max()))

    def gathers_vocab(hlo):
        # result shapes of every all-gather; True if one has the full vocabulary as a dim
        shapes = re.findall(r"= ([^=]*?) all-gather(?:-start)?\\(", hlo)
        return any(str(V) in re.findall(r"\\d+", s) for s in shapes)

    def reference(h, w, targets, mask, weights):
        logp = jax.nn.log_softmax(h @ w / 0.8, axis=-1)
        lp = jnp.take_along_axis(logp, jnp.where(mask, targets, 0)[..., None], -1)[..., 0]
        ent = -jnp.sum(jnp.exp(logp) * logp, -1)
        top, ids = jax.lax.top_k(logp, 3)
        full = jax.nn.log_softmax(h @ w, axis=-1)
        lse = jax.nn.logsumexp(h @ w, axis=-1)
        nll = -jnp.take_along_axis(full, jnp.where(mask, targets, 0)[..., None], -1)[..., 0]
        smooth = 0.9 * nll - 0.1 * jnp.mean(full, -1)
        ce = jnp.sum(jnp.where(mask, smooth + 1e-2 * lse ** 2, 0)) / jnp.sum(mask)
        loss = jnp.sum(lp * weights[0]) + jnp.sum(ent * weights[1]) + 3 * ce + jnp.sum(top)
        return loss, (lp, ent, top, ids, ce)

    def check(mesh, vp, hidden_shape, chunking, head_spec):
        k = jax.random.split(jax.random.key(1), 5)
        hidden = normal(k[0], hidden_shape)
        head = normal(k[1], (H, V)) * 0.5
        targets = jax.random.randint(k[2], hidden_shape[:-1], 0, V)
        mask = jax.random.bernoulli(k[3], 0.7, hidden_shape[:-1])
        targets = jnp.where(mask, targets, -100)  # masked ids are out of range everywhere
        weights = normal(k[4], (2, *hidden_shape[:-1]))

        def ours(h, w):
            safe = jnp.where(mask, targets, 0)
            s = token_stats(h, w, targets=safe, top_k=3, temperature=0.8, vocab_parallel=vp,
                            **chunking)
            ce = cross_entropy(h, w, targets=targets, mask=mask, z_loss=1e-2, label_smoothing=0.1,
                               vocab_parallel=vp, **chunking)
            loss = (jnp.sum(s.logprobs * weights[0]) + jnp.sum(s.entropy * weights[1]) + 3 * ce
                    + jnp.sum(s.top_logprobs))
            return loss, (s.logprobs, s.entropy, s.top_logprobs, s.top_ids, ce)

        put = lambda x, spec: jax.device_put(x, NamedSharding(mesh, spec))
        args = (put(hidden, P(vp.batch_axes)), put(head, head_spec))
        # compiled once: run, and its HLO read below
        step = jax.jit(jax.value_and_grad(ours, (0, 1), has_aux=True)).lower(*args).compile()
        (loss, aux), grads = step(*args)
        # jitted: one compile instead of one per eager op; still the full-logits math
        (loss_r, aux_r), grads_r = jax.jit(jax.value_and_grad(reference, (0, 1), has_aux=True))(
            hidden, head, targets, mask, weights)
        for got, want in zip(jax.tree.leaves((loss, aux)), jax.tree.leaves((loss_r, aux_r)),
                             strict=True):
            close(got, want, 1e-5)
        for got, want in zip(grads, grads_r, strict=True):
            close(got, want, 1e-4)
        assert grads[1].sharding.is_equivalent_to(NamedSharding(mesh, head_spec), 2), \\
            grads[1].sharding
        assert not gathers_vocab(step.as_text())

    mesh = jax.make_mesh((2, 2), ("data", "model"))
    # the HLO check can fail: gathering the head shows up as an all-gather to [H, V]
    gather = jax.jit(lambda w: jax.reshard(w, NamedSharding(mesh, P())) * 2)
    w = jax.device_put(jnp.ones((H, V)), NamedSharding(mesh, P(None, "model")))
    assert gathers_vocab(gather.lower(w).compile().as_text())

    check(mesh, VocabParallel(mesh, "model", "data"), (B, T, H),
          dict(chunk_size=5, vocab_chunk=14), P(None, "model"))
    auto = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    check(auto, VocabParallel(auto, ("model", "data")), (B * T, H),
          dict(chunk_size=4, vocab_chunk=8), P(None, ("model", "data")))

    hidden, head = jnp.ones((B * T, H)), jnp.ones((H, V - 1))
    targets = jnp.zeros((B * T,), jnp.int32)
    with pytest.raises(ConfigError, match=r"V=79 is not divisible by the size 2 of the vocab"):
        token_stats(hidden, head, targets=targets,
                    vocab_parallel=VocabParallel(mesh, "model"))
    with pytest.raises(ConfigError, match=r"leading dim 25 is not divisible by the size 2"):
        token_stats(hidden[:25], head[:, :8], targets=targets[:25],
                    vocab_parallel=VocabParallel(mesh, "data", "model"))
    print("ok")
""")

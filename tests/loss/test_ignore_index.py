"""Hugging Face's ``-100`` labels in every chunked loss: the masked full-logits value and
gradient, eager and jitted; any other out-of-range target raises eagerly and is NaN under jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError, DataError
from jaxlean.loss.chunked import VocabParallel, cross_entropy, token_logprobs, token_stats
from jaxlean.loss.distill import distill_loss
from jaxlean.loss.policy import policy_gradient_loss

B, T, H, V = 2, 5, 8, 16
# NumPy inputs: no eager JAX op (each a compile) to make them
_RNG = np.random.default_rng(0)
_normal = lambda *shape: jnp.asarray(_RNG.normal(size=shape), jnp.float32)
HIDDEN = _normal(B, T, H)
HEAD = _normal(H, V) * 0.5
_TARGETS = _RNG.integers(0, V, (B, T)).astype(np.int32)
_IGNORED = np.zeros((B, T), bool)
_IGNORED[0, :2] = _IGNORED[1, 4] = True
TARGETS, IGNORED = jnp.asarray(_TARGETS), jnp.asarray(_IGNORED)
_LABELS = np.where(_IGNORED, -100, _TARGETS).astype(np.int32)
LABELS = jnp.asarray(_LABELS)
KEEP = jnp.asarray((~_IGNORED).astype(np.float32))
OLD = -2.8 + 0.3 * _normal(B, T)
ADV = _normal(B)
TEACHER = _normal(B, T, H)
VP = VocabParallel(jax.make_mesh((1,), ("vocab",)), "vocab")


def _full_logprobs(hidden, head):
    logp = jax.nn.log_softmax(hidden @ head, axis=-1)
    return jnp.take_along_axis(logp, TARGETS[..., None], -1)[..., 0]


def _scalar(out):
    """A scalar of a loss's output, weighting per-token outputs so each token counts."""
    out = out.loss if hasattr(out, "loss") else out
    out = out.logprobs if hasattr(out, "logprobs") else out
    return out if out.ndim == 0 else jnp.sum(out * jnp.arange(1, out.size + 1).reshape(out.shape))


# name -> (loss of (hidden, head, targets), the masked computation on full logits or the
# same loss masked by mask= instead of by the labels)
CASES = {
    "token_logprobs": (lambda h, w, t: token_logprobs(h, w, targets=t, chunk_size=3),
                       lambda h, w: jnp.where(IGNORED, 0, _full_logprobs(h, w))),
    "token_stats": (lambda h, w, t: token_stats(h, w, targets=t, chunk_size=4, vocab_chunk=6),
                    lambda h, w: jnp.where(IGNORED, 0, _full_logprobs(h, w))),
    "cross_entropy": (lambda h, w, t: cross_entropy(h, w, targets=t, chunk_size=3),
                      lambda h, w: -jnp.sum(KEEP * _full_logprobs(h, w)) / jnp.sum(KEEP)),
    "cross_entropy_vocab_parallel": (
        lambda h, w, t: cross_entropy(h, w, targets=t, z_loss=0.1, vocab_parallel=VP),
        lambda h, w: cross_entropy(h, w, targets=TARGETS, z_loss=0.1, mask=KEEP)),
    "callable_head": (lambda h, w, t: cross_entropy(h, lambda c: jnp.tanh(c @ w), targets=t),
                      lambda h, w: cross_entropy(h, lambda c: jnp.tanh(c @ w), targets=TARGETS,
                                                 mask=KEEP)),
    "policy_gradient_loss": (
        lambda h, w, t: policy_gradient_loss(h, w, targets=t, old_logprobs=OLD, advantages=ADV,
                                             chunk_size=3),
        lambda h, w: policy_gradient_loss(h, w, targets=TARGETS, old_logprobs=OLD, advantages=ADV,
                                          mask=KEEP, chunk_size=3)),
    "distill_loss": (lambda h, w, t: distill_loss(h, w, TEACHER, HEAD[::-1], targets=t),
                     lambda h, w: distill_loss(h, w, TEACHER, HEAD[::-1], mask=KEEP)),
}
# The eager path differs from the jitted one only in the range check (the same code makes
# the ids safe), so its value is compared on one loss of each kind; every loss is checked
# to raise eagerly.
EAGER_VALUE = ("cross_entropy", "policy_gradient_loss", "distill_loss")


@pytest.mark.parametrize("name", list(CASES))
def test_ignored_targets_equal_the_masked_computation(name):
    loss, reference = CASES[name]

    def value_and_grads(hidden, head, targets):
        return jax.value_and_grad(lambda h, w: _scalar(loss(h, w, targets)), (0, 1))(hidden,
                                                                                     head)

    jitted = jax.jit(value_and_grads)
    value, grads = jitted(HIDDEN, HEAD, LABELS)
    want, want_grads = jax.jit(jax.value_and_grad(lambda h, w: _scalar(reference(h, w)),
                                                  (0, 1)))(HIDDEN, HEAD)
    np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)
    for got, expected in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)
    if name in EAGER_VALUE:
        np.testing.assert_allclose(_scalar(loss(HIDDEN, HEAD, LABELS)), want, rtol=1e-5,
                                   atol=1e-6)
    # any other id outside [0, V): an error naming it eagerly, NaN (never finite) under jit
    for bad in (V, -1, 1000):
        targets = _LABELS.copy()
        targets[1, 2] = bad
        targets = jnp.asarray(targets)
        with pytest.raises(DataError, match=rf" {bad} at index \(1, 2\) is outside the "
                                            rf"vocabulary \[0, {V}\) and is not ignore_index"):
            loss(HIDDEN, HEAD, targets)
        assert np.isnan(jitted(HIDDEN, HEAD, targets)[0])


def test_ignore_index_is_configurable():
    targets = jnp.where(IGNORED, 3, TARGETS)
    got = jax.jit(lambda t: cross_entropy(HIDDEN, HEAD, targets=t, ignore_index=3))(targets)
    keep = (targets != 3).astype(jnp.float32)
    want = -jnp.sum(keep * jnp.take_along_axis(jax.nn.log_softmax(HIDDEN @ HEAD), targets[
        ..., None], -1)[..., 0]) / jnp.sum(keep)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    with pytest.raises(DataError, match=r"target id -100 at index \(0, 0\) is outside the "
                                        r"vocabulary \[0, 16\) \(3 such ids\)"):
        token_logprobs(HIDDEN, HEAD, targets=LABELS, ignore_index=None)
    with pytest.raises(ConfigError, match="ignore_index must be an int"):
        cross_entropy(HIDDEN, HEAD, targets=TARGETS, ignore_index=-100.0)

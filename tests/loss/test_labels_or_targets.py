"""One convention for the losses that take token ids: ``labels=`` (unshifted, Hugging Face's,
``-100`` ignored) or ``targets=`` (shifted), by keyword. A loss given ``labels`` (and its
per-token arrays per label) equals the same loss given the targets shifted here by hand
(and its arrays shifted with them), in value and gradient; a positional array, both or
neither raise errors naming the keywords."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError, StructureError
from jaxlean.loss import (
    cross_entropy,
    distill_loss,
    dpo_loss,
    policy_gradient_loss,
    sequence_logprobs,
    token_logprobs,
    token_stats,
)

B, T, H, V = 4, 6, 8, 16
rng = np.random.default_rng(0)
HIDDEN = jnp.asarray(rng.normal(size=(B, T, H)), jnp.float32)
HEAD = jnp.asarray(rng.normal(size=(H, V)) * 0.5, jnp.float32)
LABELS = rng.integers(0, V, size=(B, T)).astype(np.int32)
LABELS[:, :2] = -100  # the prompt: no loss
LABELS[1, -1] = -100  # padding
PER_LABEL = {"mask": rng.uniform(0.5, 1.5, size=(B, T)).astype(np.float32),
             "old_logprobs": rng.normal(-3, 0.3, size=(B, T)).astype(np.float32),
             "ref_logprobs": rng.normal(-3, 0.3, size=(B, T)).astype(np.float32)}


def _shift(x: np.ndarray, fill) -> np.ndarray:
    """The obvious shift: position t gets x[t + 1], the last one ``fill``."""
    return np.concatenate([x[:, 1:], np.full((x.shape[0], 1), fill, x.dtype)], axis=1)


TARGETS = _shift(LABELS, -100)
WEIGHTS = jnp.asarray(rng.uniform(0.5, 1.5, size=(B, T)), jnp.float32)
PER_TARGET = {k: _shift(v, 0) for k, v in PER_LABEL.items()}


def _policy(h, w, ids, arrays):
    return policy_gradient_loss(h, w, **ids, old_logprobs=arrays["old_logprobs"],
                                advantages=jnp.asarray([1.0, -0.5, 0.3, 2.0]),
                                mask=arrays["mask"], ref_logprobs=arrays["ref_logprobs"],
                                kl_coef=0.1, clip_eps=0.2).loss


# name -> a scalar of (hidden, head, {"labels": ..} or {"targets": ..}, per-token arrays)
LOSSES = {
    # per-position outputs (one per target), weighted per position alike in both calls
    "token_logprobs": lambda h, w, ids, a: jnp.sum(token_logprobs(h, w, **ids) * WEIGHTS),
    "token_stats": lambda h, w, ids, a: jnp.sum(
        token_stats(h, w, **ids, top_k=2).logprobs * WEIGHTS),
    "cross_entropy": lambda h, w, ids, a: cross_entropy(h, w, **ids, mask=a["mask"]),
    "cross_entropy_recomputed": lambda h, w, ids, a: cross_entropy(
        h, w, **ids, mask=a["mask"], vocab_chunk=8, z_loss=0.1),
    "cross_entropy_none": lambda h, w, ids, a: jnp.sum(
        cross_entropy(h, w, **ids, reduction="none") ** 2),
    "sequence_logprobs": lambda h, w, ids, a: jnp.sum(
        sequence_logprobs(h, w, **ids, mask=a["mask"])[0]),
    "dpo_loss": lambda h, w, ids, a: dpo_loss(h, w, **ids, ref_logprobs=a["ref_logprobs"],
                                              mask=a["mask"], beta=0.2).loss,
    "dpo_loss_summed_reference": lambda h, w, ids, a: dpo_loss(
        h, w, **ids, ref_logprobs=jnp.arange(B, dtype=jnp.float32), loss_type="ipo").loss,
    "policy_gradient_loss": _policy,
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_labels_equal_the_shifted_targets_gradients_included(name):
    loss = LOSSES[name]
    grad = jax.value_and_grad(loss, (0, 1))

    @jax.jit  # the three calls in one program (eagerly, one compile per operation)
    def run(h, w, labels, targets, per_label, per_target):
        return (grad(h, w, {"labels": labels}, per_label),
                grad(h, w, {"targets": targets}, per_target),
                loss(h, w, {"targets": labels}, per_label))

    (by_labels, g_labels), (by_targets, g_targets), misread = run(
        HIDDEN, HEAD, LABELS, TARGETS, PER_LABEL, PER_TARGET)
    assert np.isfinite(by_targets) and by_targets != 0
    np.testing.assert_allclose(by_labels, by_targets, rtol=1e-6, atol=1e-7)
    for a, b in zip(g_labels, g_targets, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        assert np.any(np.asarray(b) != 0)
    # the unshifted labels taken as targets are another loss: the shift is not a no-op
    assert not np.isclose(misread, by_targets)


POSITIONAL = {
    "token_logprobs": lambda: token_logprobs(HIDDEN, HEAD, TARGETS),
    "token_stats": lambda: token_stats(HIDDEN, HEAD, TARGETS),
    "cross_entropy": lambda: cross_entropy(HIDDEN, HEAD, TARGETS),
    "sequence_logprobs": lambda: sequence_logprobs(HIDDEN, HEAD, TARGETS),
    "dpo_loss": lambda: dpo_loss(HIDDEN, HEAD, TARGETS, PER_TARGET["ref_logprobs"]),
    "policy_gradient_loss": lambda: policy_gradient_loss(
        HIDDEN, HEAD, TARGETS, PER_TARGET["old_logprobs"], jnp.ones(B)),
}


@pytest.mark.parametrize("name", sorted(POSITIONAL))
def test_a_positional_id_array_is_refused_naming_both_keywords(name):
    with pytest.raises(ConfigError, match=rf"{name} takes the ids to predict by keyword, not "
                                          r"as positional argument 3.*labels=.*targets="):
        POSITIONAL[name]()


BOTH_OR_NEITHER = {
    "token_logprobs": lambda **ids: token_logprobs(HIDDEN, HEAD, **ids),
    "token_stats": lambda **ids: token_stats(HIDDEN, HEAD, **ids),
    "cross_entropy": lambda **ids: cross_entropy(HIDDEN, HEAD, **ids),
    "sequence_logprobs": lambda **ids: sequence_logprobs(HIDDEN, HEAD, **ids),
    "dpo_loss": lambda **ids: dpo_loss(HIDDEN, HEAD, **ids,
                                       ref_logprobs=PER_TARGET["ref_logprobs"]),
    "policy_gradient_loss": lambda **ids: policy_gradient_loss(
        HIDDEN, HEAD, **ids, old_logprobs=PER_TARGET["old_logprobs"], advantages=jnp.ones(B)),
}


@pytest.mark.parametrize("name", sorted(BOTH_OR_NEITHER))
def test_both_or_neither_of_labels_and_targets_is_an_error(name):
    call = BOTH_OR_NEITHER[name]
    with pytest.raises(ConfigError, match=r"labels= \(unshifted\) and targets= \(shifted\), "
                                          r"got both"):
        call(labels=LABELS, targets=TARGETS)
    neither = (TypeError, r"missing required argument.*'labels or targets'") if (
        name == "policy_gradient_loss") else (ConfigError, "got neither labels= nor targets=")
    with pytest.raises(neither[0], match=neither[1]):
        call()
    with pytest.raises(ConfigError, match="labels= need an ignore_index"):
        call(labels=LABELS, ignore_index=None)


def test_dpo_loss_needs_its_reference_by_keyword():
    with pytest.raises(TypeError, match="missing the required argument 'ref_logprobs'"):
        dpo_loss(HIDDEN, HEAD, targets=TARGETS)


def test_distill_loss_takes_shifted_targets_and_refuses_labels():
    """``distill_loss``'s ``labels`` were shifted ids (TRL's GKD); reading them as unshifted
    now would move its mask by one position silently, so the keyword stays an error."""
    teacher = HIDDEN[::-1]
    with pytest.raises(ConfigError, match="'labels' is now called 'targets': ids already "
                                          "shifted"):
        distill_loss(HIDDEN, HEAD, teacher, HEAD, labels=LABELS)
    by_targets, by_mask = jax.jit(lambda h, w, t: (  # one program, not one per operation
        distill_loss(h, w, t, w, targets=TARGETS),
        distill_loss(h, w, t, w, mask=TARGETS != -100)))(HIDDEN, HEAD, teacher)
    np.testing.assert_allclose(by_targets, by_mask, rtol=1e-6)


def test_a_per_token_array_that_only_broadcasts_against_labels_is_refused():
    """A ``[T]`` mask with ``[B, T]`` labels cannot be shifted with them by shape; unshifted
    it would be one position off, so it is an error naming it. A ``[B]`` advantage (one per
    sequence) still passes, even when B equals T."""
    square = LABELS[:, :B]  # [B, B]: a [B] advantage and a [T] mask have one shape
    h = HIDDEN[:, :B]
    with pytest.raises(StructureError, match=r"mask must be \[4, 4\].*got \[4\]"):
        cross_entropy(h, HEAD, labels=square, mask=np.ones(B, np.float32))
    with pytest.raises(StructureError, match=r"old_logprobs must be \[4, 4\]"):
        policy_gradient_loss(h, HEAD, labels=square, old_logprobs=np.zeros(B, np.float32),
                             advantages=np.ones(B, np.float32))
    loss = jax.jit(lambda h, w: policy_gradient_loss(  # one program, not one per operation
        h, w, labels=square, old_logprobs=np.full((B, B), -3.0, np.float32),
        advantages=np.asarray([1.0, -0.5, 0.3, 2.0], np.float32)).loss)(h, HEAD)
    assert np.isfinite(float(loss))
